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


AGENTS = ("local", "agentcore-local", "agentcore-native")


def run(ds: Dataset, answers: dict[str, dict[str, Any]], components_for: Callable[[Path], Any], n: int,
        progress: Callable[[int, int], None] | None = None, agents: tuple[str, ...] = ("local",)) -> dict[str, Any]:
    """Every agent on the same index and the same questions, in one run. One agent: its metrics (the original
    shape); several: {"agents": {name: metrics}} plus the index figures."""
    qids = [q for q in ds.qrels if q in ds.queries and q in answers][:n]
    index_path = components_for(Path()).settings.data_dir / "bench" / f"{ds.name}.sqlite"
    index_path.parent.mkdir(parents=True, exist_ok=True)
    remove_index(index_path)
    comps = components_for(index_path)
    _, build_s, embedded = build_index(ds, comps.embedder, comps.index)
    out: dict[str, dict[str, Any]] = {}
    for k, name in enumerate(agents):
        def tick(i: int, total: int, k: int = k) -> None:
            if progress:
                progress(k * len(qids) + i, len(qids) * len(agents))
        ask = _classic(comps) if name == "local" else _agentcore(comps, native=name == "agentcore-native")
        rows = []
        for i, q in enumerate(qids, start=1):
            t = time.perf_counter()
            answered, returned, cited = ask(ds.queries[q])
            ms = (time.perf_counter() - t) * 1000
            gold = [normalize(a) for a in answers[q]["answers"]]
            hit = any(g and g in normalize(returned.get(s, "")) for s in cited for g in gold)
            rows.append({"id": q, "ms": ms, "answered": answered, "hit": hit, "cited": len(cited),
                         "resolved": sum(1 for s in cited if s in returned)})
            if i % 10 == 0 or i == len(qids):
                tick(i, len(qids))
        out[name] = _summary(rows)
    common = {"index_documents": len(ds.corpus), "index_build_s": build_s, "embedded_now": embedded}
    if len(agents) == 1:
        return {**out[agents[0]], **common}
    return {"agents": out, "questions": len(qids), **common}


Ask = Callable[[str], tuple[bool, dict[str, str], list[str]]]


def _classic(comps) -> Ask:
    """The local Classic agent: cited ids from the raw answer, passages from the action-group observations."""
    from citerag.runtimes.local import local_agent

    runtime = local_agent(comps)
    runtime.invoke("warm up").__next__()

    def ask(question: str) -> tuple[bool, dict[str, str], list[str]]:
        events = list(runtime.invoke(question))
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
        return answer.answered, returned, [s for p in cf.answer(raw_answer) or [] for s in p.sources]

    return ask


def _agentcore(comps, *, native: bool) -> Ask:
    """The AgentCore runtime's handler in-process (payload, access, the Strands turn) with the offline model, in the
    protocol or in native-citations mode. What the search returned is recorded at the search tool; the cited ids
    are those of the answer event's citations."""
    from citerag.agentcore_app import InProcessRuntime
    from citerag.components import Components

    if native:
        comps = Components(comps.settings.model_copy(update={"agentcore_citations": "native"}))
    tool = comps.search_tool()
    returned: dict[str, str] = {}
    original = tool.run

    def recording_run(*args: Any, **kwargs: Any):
        result, body = original(*args, **kwargs)
        returned.update({p.source_id: p.text for p in result.kept if p.source_id})
        return result, body

    tool.run = recording_run  # type: ignore[method-assign]
    runtime = InProcessRuntime(comps)
    runtime.ask("warm up")

    def ask(question: str) -> tuple[bool, dict[str, str], list[str]]:
        returned.clear()
        _, events = runtime.ask(question)
        final = events[-1]
        cited = [s["source_id"] for c in final.get("citations") or [] for s in c["sources"]]
        return bool(final.get("answered")), dict(returned), cited

    return ask


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    cited_total = sum(r["cited"] for r in rows)
    lat = [r["ms"] for r in rows]
    return {
        "questions": len(rows),
        "answered": sum(r["answered"] for r in rows) / len(rows),
        "cited_passage_contains_gold_answer": sum(r["hit"] for r in rows) / len(rows),
        "citations": cited_total,
        "citations_resolved": (sum(r["resolved"] for r in rows) / cited_total) if cited_total else 1.0,
        "p50_ms": percentile(lat, 50), "p95_ms": percentile(lat, 95),
    }
