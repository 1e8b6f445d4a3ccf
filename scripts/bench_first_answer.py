"""First answers on a fresh index: the time to answer questions nobody asked before, in a warm process (as `chat`
and `serve` answer) and in a new `citerag ask` process, with the statements embedded at ingest and without. Run
it, do not test it:

    nice python scripts/bench_first_answer.py [--docs DIR ...] [--questions 20]

Each arm gets a fresh data dir and a fresh embedding cache, ingests the same documents (by default three families
of the development pool, 500+ passages; `--min-passages` refuses a smaller index), then asks the same questions.
Prints ingest CPU seconds, and per question wall and CPU seconds (p50, p95); CPU seconds hold on a busy machine,
wall time does not.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DOCS = [ROOT / "datasets" / "pool" / f / "docs" for f in ("en-sqlite", "ja-jlreq", "en-postgresql")]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _questions(docs: list[Path], n: int) -> list[str]:
    per_family = []
    for d in docs:
        qs = []
        for f in sorted(d.parent.glob("questions-*.jsonl")):
            qs += [json.loads(line)["question"] for line in f.read_text(encoding="utf-8").splitlines() if line]
        per_family.append(qs)
    # Round-robin over the families so every language is asked.
    out = [q for row in zip(*per_family, strict=False) for q in row]
    return out[:n]


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def arm(docs: list[Path], questions: list[str], at_ingest: bool, new_process: int, min_passages: int) -> dict:
    citerag = shutil.which("citerag", path=str(Path(sys.executable).parent)) or "citerag"
    data = Path(tempfile.mkdtemp(prefix="citerag-first-answer-"))
    env = {**os.environ, "CITERAG_DATA_DIR": str(data), "CITERAG_EMBEDDING_CACHE_PATH": str(data / "cache.sqlite"),
           "CITERAG_ANSWER_VECTORS_AT_INGEST": "true" if at_ingest else "false"}
    cpu0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run([citerag, "ingest", *map(str, docs), "--json"], env=env, check=True, capture_output=True)
    ingest = {"cpu_s": round(_children_cpu() - cpu0, 1), "wall_s": round(time.perf_counter() - t0, 1)}
    status = json.loads(subprocess.run([citerag, "status", "--json"], env=env, check=True, capture_output=True,
                                       text=True).stdout)
    passages = status.get("chunks") or status.get("passages") or 0
    if passages < min_passages:
        sys.exit(f"the index holds {passages} passages, fewer than --min-passages {min_passages}: add --docs")
    # New processes first (each question asked first there), then the warm process on the rest.
    cold = []
    for q in questions[:new_process]:
        cpu0, t0 = _children_cpu(), time.perf_counter()
        subprocess.run([citerag, "ask", q, "--json"], env=env, check=True, capture_output=True)
        cold.append((time.perf_counter() - t0, _children_cpu() - cpu0))
    os.environ.update(env)
    from citerag.answerers import open_answerer
    from citerag.components import Components
    from citerag.settings import Settings

    comps = Components(Settings())
    answerer = open_answerer(comps, "local")
    answerer.ask("warm up: load the model")
    warm = []
    for q in questions[new_process:]:
        c0, t0 = time.process_time(), time.perf_counter()
        answerer.ask(q)
        warm.append((time.perf_counter() - t0, time.process_time() - c0))
    comps.index.close()
    shutil.rmtree(data, ignore_errors=True)
    summary = {"ingest": ingest, "passages": passages}
    for name, rows in (("warm_process", warm), ("new_process", cold)):
        walls, cpus = [r[0] for r in rows], [r[1] for r in rows]
        summary[name] = {"questions": len(rows), "wall_p50": round(statistics.median(walls), 3),
                         "wall_p95": round(_pct(walls, 95), 3), "cpu_p50": round(statistics.median(cpus), 3),
                         "cpu_p95": round(_pct(cpus, 95), 3)}
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=Path, nargs="+", default=DEFAULT_DOCS)
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--min-passages", type=int, default=500)
    ap.add_argument("--new-process", type=int, default=5, help="how many of them to ask as a new `citerag ask`")
    args = ap.parse_args()
    questions = _questions(args.docs, args.questions + args.new_process)
    out = {"at_ingest": arm(args.docs, questions, True, args.new_process, args.min_passages),
           "at_question": arm(args.docs, questions, False, args.new_process, args.min_passages)}
    a, b = out["at_ingest"], out["at_question"]
    out["ratios"] = {"ingest_cpu": round(a["ingest"]["cpu_s"] / max(b["ingest"]["cpu_s"], 1e-9), 2),
                     "warm_cpu_p95": round(a["warm_process"]["cpu_p95"] / max(b["warm_process"]["cpu_p95"], 1e-9),
                                           3)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
