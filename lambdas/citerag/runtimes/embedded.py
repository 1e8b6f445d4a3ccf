"""`citerag ask --agent none` on one machine: search, pack exactly as the action group would, answer extractively.
No agent steps: the shortest path from a question to a cited answer."""

from __future__ import annotations

import time

from citerag.answerer.extractive import Answering
from citerag.citations.answer import Answer, compose, where_to_look
from citerag.citations.decision import Decision, Reason
from citerag.citations.not_found import in_other_language, not_found
from citerag.citations.payload import pack_passages
from citerag.search.pipeline import SearchPipeline
from citerag.search.query import analyze


class EmbeddedAnswerer:
    def __init__(self, pipeline: SearchPipeline, *, budget_bytes: int = 25_000, top_k: int = 5,
                 answering: Answering | None = None) -> None:
        self.pipeline = pipeline
        self.answering = answering
        self.budget_bytes = budget_bytes
        self.top_k = top_k

    def ask(self, question: str, *, flt: dict | None = None, namespace: str = "") -> Answer:
        t0 = time.perf_counter()
        query = analyze(question)
        outcome = self.pipeline.search(query, top_k=self.top_k, flt=flt, namespace=namespace)
        relevant = outcome.relevant_hits
        _, results = pack_passages(relevant, query, self.budget_bytes)
        answering = self.answering or Answering(stats=lambda: self.pipeline.stats(namespace))
        picked, decision = answering.decide(query, results) if results else ([], Decision(
            answered=False, reason=Reason.NO_RELEVANT_PASSAGE, detail="search found no passage relevant to the "
            "question"))
        trace = [{"step": "search", "hits": len(outcome.hits), "relevant": len(relevant),
                  "degraded": outcome.degraded, "timings_ms": outcome.timings_ms}]
        if not picked:
            if in_other_language(query.lang, results):
                decision = decision.model_copy(update={"reason": Reason.OTHER_LANGUAGE,
                                                       "detail": "the passages search found are in the other "
                                                                 "language"})
            trace.append({"step": "answer", "answered": False, "ms": (time.perf_counter() - t0) * 1000})
            return Answer(text=not_found(query.lang, results), answered=False,
                          related=where_to_look(results) if decision.places else [],
                          trace=trace, decision=decision)
        answer = compose(picked, {p.source_id: p for p in results})
        trace.append({"step": "answer", "answered": True, "sentences": len(picked),
                      "ms": (time.perf_counter() - t0) * 1000})
        return answer.model_copy(update={"trace": trace, "decision": decision})
