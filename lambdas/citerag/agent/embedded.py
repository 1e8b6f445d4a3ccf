"""`citerag ask` on one machine: search, pack exactly as the Lambda would, answer extractively."""

from __future__ import annotations

import time

from citerag.agent.answer import Answer, Citation, Source
from citerag.agent.extractive import NOT_FOUND, Passage, answer_language, pick_sentences
from citerag.search.pipeline import SearchPipeline
from citerag.search.response import pack_hits


class EmbeddedAnswerer:
    def __init__(self, pipeline: SearchPipeline, *, budget_bytes: int = 25_000, top_k: int = 5) -> None:
        self.pipeline = pipeline
        self.budget_bytes = budget_bytes
        self.top_k = top_k

    def ask(self, question: str, *, flt: dict | None = None, namespace: str = "") -> Answer:
        t0 = time.perf_counter()
        outcome = self.pipeline.search(question, top_k=self.top_k, flt=flt, namespace=namespace)
        relevant = outcome.relevant_hits
        _, results = pack_hits(relevant, question, self.budget_bytes)
        by_sid = {r["source_id"]: r for r in results}
        langs = {r["source_id"]: h.lang for r, h in zip(results, relevant, strict=False)}
        passages = [Passage(r["source_id"], r["text"], langs[r["source_id"]]) for r in results]
        picked = pick_sentences(question, passages, self.pipeline._stats_provider(namespace))
        trace = [{"step": "search", "hits": len(outcome.hits), "relevant": len(relevant),
                  "degraded": outcome.degraded, "timings_ms": outcome.timings_ms}]
        if not picked:
            lang = answer_language(question)
            trace.append({"step": "answer", "answered": False, "ms": (time.perf_counter() - t0) * 1000})
            return Answer(text=NOT_FOUND.get(lang, NOT_FOUND["en"]), answered=False, trace=trace)
        return compose(picked, by_sid, trace, t0)


def compose(picked, by_sid: dict[str, dict], trace: list[dict], t0: float) -> Answer:
    """Join picked sentences into one text with [S#] markers; one citation per sentence."""
    text = ""
    citations: list[Citation] = []
    sources: dict[str, Source] = {}
    joiner = ""
    for p in picked:
        r = by_sid[p.source_id]
        src = sources.get(p.source_id) or Source(
            source_id=p.source_id, uri=r["uri"], title=r["title"], page=r.get("page"), excerpt=p.sentence[:300]
        )
        sources.setdefault(p.source_id, src)
        text += joiner
        start = len(text)
        text += p.sentence
        citations.append(Citation(text=p.sentence, start=start, end=len(text), sources=[src]))
        text += f" [{p.source_id}]"
        joiner = " "
    trace.append({"step": "answer", "answered": True, "sentences": len(picked),
                  "ms": (time.perf_counter() - t0) * 1000})
    return Answer(text=text, citations=citations, sources=list(sources.values()), trace=trace)
