"""`citerag bench-agent`: the local agent end to end on a QA dataset with gold answers (JaQuAD layout:
answers.jsonl with "answers" and "context_doc"). Measures how often a cited passage contains a gold answer,
whether every citation resolves to a passage the search returned, and answer latency."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from citerag.bench.metrics import percentile
from citerag.bench.retrieval import Dataset, build_index, remove_index
from citerag.citations import claude_format as cf
from citerag.citations.payload import results_of
from citerag.documents.text import normalize
from citerag.errors import CiteragError
from citerag.traces.join import answer_from_events


def load_answers(root: Path) -> dict[str, dict[str, Any]]:
    path = Path(root) / "answers.jsonl"
    if not path.is_file():
        raise CiteragError(f"{root} has no answers.jsonl with gold answers")
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out[str(row["_id"])] = row
    if not all("answers" in r and "context_doc" in r for r in out.values()):
        raise CiteragError(f"{path} needs 'answers' and 'context_doc' for every question")
    return out


def without_answer_documents(ds: Dataset, answers: dict[str, dict[str, Any]], full_qrels: Path) -> Dataset:
    """Every paragraph, but not the answer strings: MTEB's JaQuAD also indexes each question's answer as its
    own 'document' (relevant in qrels.tsv, not a context), which would let an answer cite the answer itself."""
    contexts = {str(a["context_doc"]) for a in answers.values()}
    relevant: set[str] = set()
    if full_qrels.is_file():
        for line in full_qrels.read_text(encoding="utf-8").splitlines()[1:]:
            parts = line.split("\t")
            if len(parts) >= 3 and parts[2].strip() != "0":
                relevant.add(parts[1])
    drop = relevant - contexts
    return ds.model_copy(update={"corpus": [d for d in ds.corpus if d["_id"] not in drop],
                                 "name": f"{ds.name}-contexts"})


def run(ds: Dataset, answers: dict[str, dict[str, Any]], components_for: Callable[[Path], Any], n: int,
        progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    from citerag.handlers.local import local_agent

    qids = [q for q in ds.qrels if q in ds.queries and q in answers][:n]
    index_path = components_for(Path()).settings.data_dir / "bench" / f"{ds.name}.sqlite"
    index_path.parent.mkdir(parents=True, exist_ok=True)
    remove_index(index_path)
    comps = components_for(index_path)
    _, build_s, embedded = build_index(ds, comps.embedder, comps.index)
    runtime = local_agent(comps)
    runtime.invoke("warm up").__next__()
    rows = []
    for i, q in enumerate(qids, start=1):
        t = time.perf_counter()
        events = list(runtime.invoke(ds.queries[q]))
        ms = (time.perf_counter() - t) * 1000
        answer = answer_from_events(events)
        returned: dict[str, str] = {}
        raw_answer = ""
        for ev in events:
            orch = ev.get("trace", {}).get("trace", {}).get("orchestrationTrace", {})
            out = (orch.get("observation") or {}).get("actionGroupInvocationOutput")
            if out:
                returned.update({p.source_id: p.text for p in results_of(out.get("text", "")) if p.source_id})
            raw = (orch.get("modelInvocationOutput") or {}).get("rawResponse", {}).get("content", "")
            if "<answer" in raw:
                raw_answer = raw
        cited = [s for p in cf.answer(raw_answer) or [] for s in p.sources]
        gold = [normalize(a) for a in answers[q]["answers"]]
        hit = any(g and g in normalize(returned.get(s, "")) for s in cited for g in gold)
        rows.append({"id": q, "ms": ms, "answered": answer.answered, "hit": hit, "cited": len(cited),
                     "resolved": sum(1 for s in cited if s in returned)})
        if progress and (i % 10 == 0 or i == len(qids)):
            progress(i, len(qids))
    cited_total = sum(r["cited"] for r in rows)
    lat = [r["ms"] for r in rows]
    return {
        "questions": len(rows),
        "answered": sum(r["answered"] for r in rows) / len(rows),
        "cited_passage_contains_gold_answer": sum(r["hit"] for r in rows) / len(rows),
        "citations": cited_total,
        "citations_resolved": (sum(r["resolved"] for r in rows) / cited_total) if cited_total else 1.0,
        "p50_ms": percentile(lat, 50), "p95_ms": percentile(lat, 95),
        "index_documents": len(ds.corpus), "index_build_s": build_s, "embedded_now": embedded,
    }
