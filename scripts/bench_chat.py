"""Time to an answer in `citerag chat` (first answer, including the model load, and each follow-up) against
`citerag ask` started as a new process per question, over the bundled samples. Run it, do not test it:

    nice python scripts/bench_chat.py [--runs 10]

It uses a fresh data dir (the samples' index is built once before timing) and the user's embedding cache, so
nothing is embedded twice. Prints medians in seconds and the ratio."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUESTIONS = [
    "What does error E2 mean?",
    "How long is the warranty?",
    "How often should I replace the HEPA filter?",
    "How do I reset the filter indicator?",
    "エラーE2は何を意味しますか？",
    "What is new in the latest firmware?",
    "How do I contact support?",
    "フィルターの交換時期は？",
    "What does error E1 mean?",
    "Can I wash the pre-filter?",
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    citerag = shutil.which("citerag", path=str(Path(sys.executable).parent)) or "citerag"
    data = Path(tempfile.mkdtemp(prefix="citerag-chat-bench-"))
    cache = Path(os.environ.get("CITERAG_EMBEDDING_CACHE_PATH")
                 or Path.home() / ".local/share/citerag/embeddings.sqlite")
    env = {**os.environ, "CITERAG_DATA_DIR": str(data), "CITERAG_EMBEDDING_CACHE_PATH": str(cache)}
    subprocess.run([citerag, "docs", "--json"], env=env, check=True, capture_output=True)  # build the samples' index
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(args.runs)]

    ask_s = []
    for q in questions:
        t = time.perf_counter()
        subprocess.run([citerag, "ask", q, "--json"], env=env, check=True, capture_output=True)
        ask_s.append(time.perf_counter() - t)

    t0 = time.perf_counter()
    proc = subprocess.Popen([citerag, "chat", "--json"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    first = None
    follow = []
    for i, q in enumerate([questions[0], *questions]):
        t = time.perf_counter()
        proc.stdin.write(q + "\n")
        proc.stdin.flush()
        line = json.loads(proc.stdout.readline())
        assert "answer" in line, line
        if i == 0:
            first = time.perf_counter() - t0
        else:
            follow.append(time.perf_counter() - t)
    proc.stdin.close()
    proc.wait()
    shutil.rmtree(data, ignore_errors=True)
    ask_med, follow_med = statistics.median(ask_s), statistics.median(follow)
    print(json.dumps({"runs": args.runs, "ask_new_process_median_s": round(ask_med, 3),
                      "chat_first_answer_s": round(first, 3), "chat_follow_up_median_s": round(follow_med, 3),
                      "ask_over_follow_up": round(ask_med / follow_med, 1)}))


if __name__ == "__main__":
    main()
