"""Follow-ups in `citerag chat`: is the second turn of a two-turn conversation right (a sentence with the gold fact,
cited to the right file at a page that holds it) when the follow-up is asked as typed, and when it is rewritten from
the first turn (citerag.citations.followup)? Over datasets/followups/followups.jsonl and the bundled samples. Run it,
do not test it:

    nice python scripts/bench_followups.py [--rewriter rule|model] [--json OUT]

Each conversation runs in a fresh answerer session (open_answerer(comps, "local"): the face every command calls).
`--rewriter model` uses the configured chat model (CITERAG_CHAT_MODEL_ID and its provider). Prints right / n for
both, per language, with 95% Wilson intervals, and the CPU seconds the rewrite took."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from citerag.answerers import open_answerer
from citerag.bench.answers import DocTexts, Question, score
from citerag.bench.metrics import wilson_interval
from citerag.citations.followup import Turn, rewrite, rewrite_with_model, subject_of
from citerag.components import Components
from citerag.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "lambdas" / "citerag" / "samples"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", type=Path, default=ROOT / "datasets" / "followups" / "followups.jsonl")
    ap.add_argument("--rewriter", choices=("rule", "model"), default="rule")
    ap.add_argument("--json", type=Path, help="write every conversation's result here")
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.set.read_text(encoding="utf-8").splitlines() if line.strip()]
    cache = Path(os.environ.get("CITERAG_EMBEDDING_CACHE_PATH")
                 or Path.home() / ".local/share/citerag/embeddings.sqlite")
    comps = Components(Settings(data_dir=Path(tempfile.mkdtemp(prefix="citerag-followups-")),
                                embedding_cache_path=cache))
    comps.ingestor().ingest_paths([SAMPLES])
    texts = DocTexts(sorted(p for p in SAMPLES.iterdir() if not p.name.startswith(".")))
    model = comps.chat_model if args.rewriter == "model" else None

    results, rewrite_cpu = [], 0.0
    for n, row in enumerate(rows, 1):
        out = {"id": row["id"], "lang": row["lang"], "second": row["second"]}
        for mode in ("as_typed", "rewritten"):
            ask = open_answerer(comps, "local").ask
            first = ask(row["first"])
            turns = [Turn(question=row["first"], subject=subject_of(row["first"]), answer=first.text)]
            asked = row["second"]
            if mode == "rewritten":
                t = time.process_time()
                turn = rewrite_with_model(model, asked, turns) if model else rewrite(asked, turns)
                rewrite_cpu += time.process_time() - t
                asked = turn.question
            q = Question(id=row["id"], lang=row["lang"], question=asked, answerable=True, answers=row["answers"],
                         file=row["file"], also=row.get("also", []))
            s = score(q, ask(asked), texts)
            out[mode] = {"asked": asked, "right": s["right"], "cited": s["cited"], "answer": s["answer"][:200]}
        results.append(out)
        print(f"\r{n}/{len(rows)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)

    print(f"{'':8} {'as typed':>22} {'rewritten':>22}")
    for lang in ("en", "ja", "all"):
        part = [r for r in results if lang in ("all", r["lang"])]
        cells = []
        for mode in ("as_typed", "rewritten"):
            hits = sum(r[mode]["right"] for r in part)
            lo, hi = wilson_interval(hits, len(part))
            cells.append(f"{hits}/{len(part)} ({hits / len(part):.0%}, {lo:.0%}-{hi:.0%})")
        print(f"{lang:8} {cells[0]:>22} {cells[1]:>22}")
    print(f"rewrite: {rewrite_cpu:.3f} CPU s for {len(rows)} follow-ups ({args.rewriter})")
    if args.json:
        args.json.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in results) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
