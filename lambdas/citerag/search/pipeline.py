"""The search pipeline: dense and sparse retrieval in parallel, fusion, optional rerank, relevance
grading, parent expansion. Same code path embedded and in the Lambda; only the adapters differ."""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from citerag.errors import DependencyError, QueryError
from citerag.search import filters as flt_mod
from citerag.search import fusion
from citerag.search.embedders import Embedder
from citerag.search.ports import Match, Reranker, VectorIndex
from citerag.search.resilience import CircuitBreaker
from citerag.search.sparse import CorpusStats, encode_query, term_id, tokenize

MAX_QUERY_CHARS = 2000


class SearchConfig(BaseModel):
    fusion: Literal["rrf", "convex"] = "convex"
    alpha: float = Field(0.5, ge=0.0, le=1.0, description="dense weight in convex fusion")
    rrf_k: int = Field(60, ge=1)
    candidates: int = Field(100, ge=1, le=1000, description="top-k fetched from each of dense and sparse")
    # Relevance grading: relevance = cosine + coverage_weight * (share of the query's IDF mass present in the
    # passage); a hit is relevant when relevance >= min_relevance. Without a dense score (sparse-only
    # fallback) coverage alone must reach min_coverage. Calibrated on the samples and JaQuAD (README).
    min_relevance: float = 0.85
    coverage_weight: float = 0.25
    min_coverage: float = 0.5
    expand_parents: bool = False
    max_parent_chars: int = 3000
    timeout_s: float = 10.0


class Hit(BaseModel):
    id: str
    doc_id: str
    parent_id: str
    text: str
    score: float
    uri: str
    title: str
    page: int | None = None
    section: str | None = None
    lang: str = "en"
    dense_score: float | None = None
    coverage: float = 0.0
    relevance: float | None = None
    relevant: bool = True
    metadata: dict[str, Any] = Field(default_factory=dict)


class SearchOutcome(BaseModel):
    hits: list[Hit]
    degraded: list[str] = Field(default_factory=list, description="stages that failed and were skipped")
    timings_ms: dict[str, float] = Field(default_factory=dict)

    @property
    def relevant_hits(self) -> list[Hit]:
        return [h for h in self.hits if h.relevant]


class SearchPipeline:
    def __init__(
        self,
        embedder: Embedder | None,
        index: VectorIndex,
        config: SearchConfig | None = None,
        reranker: Reranker | None = None,
        stats_provider=None,
        breakers: dict[str, CircuitBreaker] | None = None,
    ) -> None:
        self.embedder = embedder
        self.index = index
        self.config = config or SearchConfig()
        self.reranker = reranker
        # BM25 statistics: from the index (embedded) or from a separate store (Pinecone).
        self._stats_provider = stats_provider or index.corpus_stats
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="citerag-search")
        # Without explicit breakers every call goes straight through (the embedded CLI has nothing to protect).
        self.breakers = breakers or {}

    def _guard(self, name: str, fn):
        breaker = self.breakers.get(name)
        return breaker.call(fn) if breaker else fn()

    def search(
        self,
        query: str,
        *,
        top_k: int = 5,
        flt: dict | None = None,
        namespace: str = "",
        mode: Literal["hybrid", "dense", "bm25"] = "hybrid",
        grade: bool = True,
    ) -> SearchOutcome:
        """Top-k hits best first. `grade=False` skips the relevance grading (benchmarks rank 100 hits)."""
        query = validate_query(query)
        if flt:
            flt_mod.validate(flt)
        cfg = self.config
        timings: dict[str, float] = {}
        degraded: list[str] = []
        t0 = time.perf_counter()
        stats = self._stats_provider(namespace)
        want_dense = mode in ("hybrid", "dense") and self.embedder is not None
        want_sparse = mode in ("hybrid", "bm25")
        n_cand = max(cfg.candidates, top_k)

        def dense_branch() -> tuple[list[Match], np.ndarray]:
            t = time.perf_counter()
            qv = self._guard("embed", lambda: self.embedder.embed_query(query))  # type: ignore[union-attr]
            timings["embed_ms"] = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            res = self._guard("dense", lambda: self.index.query_dense(qv, n_cand, flt, namespace))
            timings["dense_ms"] = (time.perf_counter() - t) * 1000
            return res, qv

        def sparse_branch() -> list[Match]:
            t = time.perf_counter()
            qs = encode_query(query, stats)
            res = self._guard("sparse", lambda: self.index.query_sparse(qs, n_cand, flt, namespace))
            timings["sparse_ms"] = (time.perf_counter() - t) * 1000
            return res

        dense_f = self._pool.submit(dense_branch) if want_dense else None
        sparse_f = self._pool.submit(sparse_branch) if want_sparse else None
        dense: list[Match] = []
        sparse: list[Match] = []
        errors: list[str] = []
        if dense_f is not None:
            try:
                dense, _ = dense_f.result(timeout=cfg.timeout_s)
            except FutureTimeout:
                degraded.append("dense")
                errors.append("dense search timed out")
            except Exception as exc:  # any adapter failure degrades to sparse-only
                degraded.append("dense")
                errors.append(f"dense search failed: {_reason(exc)}")
        if sparse_f is not None:
            try:
                sparse = sparse_f.result(timeout=cfg.timeout_s)
            except FutureTimeout:
                degraded.append("sparse")
                errors.append("sparse search timed out")
            except Exception as exc:
                degraded.append("sparse")
                errors.append(f"sparse search failed: {_reason(exc)}")
        if (want_dense and "dense" in degraded) and (not want_sparse or "sparse" in degraded):
            raise DependencyError("search unavailable: " + "; ".join(errors))
        if want_sparse and not want_dense and "sparse" in degraded:
            raise DependencyError("search unavailable: " + "; ".join(errors))

        t = time.perf_counter()
        by_id: dict[str, Match] = {m.id: m for m in sparse}
        by_id.update({m.id: m for m in dense})
        dense_scores = {m.id: m.score for m in dense}
        if dense and sparse:
            fused = (fusion.rrf([dense, sparse], cfg.rrf_k) if cfg.fusion == "rrf"
                     else fusion.convex(dense, sparse, cfg.alpha))
        else:
            fused = [(m.id, m.score) for m in (dense or sparse)]
        timings["fusion_ms"] = (time.perf_counter() - t) * 1000

        if self.reranker is not None and fused:
            t = time.perf_counter()
            head = fused[: max(top_k * 4, 20)]
            texts = [by_id[i].metadata.get("text", "") for i, _ in head]
            try:
                order = self._guard("rerank", lambda: self.reranker.rerank(query, texts, len(head)))
                fused = [(head[i][0], s) for i, s in order] + fused[len(head):]
            except Exception:  # rerank is an optional refinement: skip it when it fails
                degraded.append("rerank")
            timings["rerank_ms"] = (time.perf_counter() - t) * 1000

        q_terms = _idf_terms(query, stats) if grade else {}
        hits: list[Hit] = []
        seen_parents: set[str] = set()
        for mid, score in fused:
            if len(hits) >= top_k:
                break
            md = by_id[mid].metadata
            parent_id = str(md.get("parent_id", mid))
            if cfg.expand_parents and parent_id in seen_parents:
                continue
            seen_parents.add(parent_id)
            hit = _hit(mid, score, md, dense_scores.get(mid))
            if grade:
                if hit.dense_score is None and dense:
                    # Found by BM25 only: its cosine is below the dense list's last one.
                    hit.dense_score = dense[-1].score
                hit.coverage = _coverage(hit.text, q_terms)
                if hit.dense_score is None:
                    hit.relevance = hit.coverage
                    hit.relevant = hit.coverage >= cfg.min_coverage
                else:
                    hit.relevance = hit.dense_score + cfg.coverage_weight * hit.coverage
                    hit.relevant = hit.relevance >= cfg.min_relevance
            hits.append(hit)
        if cfg.expand_parents and hits:
            t = time.perf_counter()
            # Parent stores may be remote (S3): fetch the pages concurrently.
            list(self._pool.map(lambda h: self._expand(h, namespace), hits))
            timings["parents_ms"] = (time.perf_counter() - t) * 1000
        timings["total_ms"] = (time.perf_counter() - t0) * 1000
        return SearchOutcome(hits=hits, degraded=degraded, timings_ms=timings)

    def _expand(self, hit: Hit, namespace: str) -> None:
        get_parent = getattr(self.index, "get_parent", None)
        try:
            parent = get_parent(hit.parent_id, namespace) if get_parent else None
        except Exception:  # the chunk itself is still a good passage; the parent is an extra
            return
        if not parent:
            return
        if len(parent) <= self.config.max_parent_chars:
            hit.text = parent
            return
        # Too long to send whole: widen the chunk symmetrically inside its parent.
        start = int(hit.metadata.get("char_start", 0))
        end = int(hit.metadata.get("char_end", start + len(hit.text)))
        extra = max(0, self.config.max_parent_chars - (end - start)) // 2
        hit.text = parent[max(0, start - extra) : min(len(parent), end + extra)]


def _reason(exc: BaseException) -> str:
    """A short reason for logs and responses; never the exception's args, which may carry request data."""
    from citerag.errors import CiteragError
    from citerag.search.resilience import CircuitOpenError

    if isinstance(exc, (CiteragError, CircuitOpenError)):
        return str(exc)
    return type(exc).__name__


def validate_query(query: Any) -> str:
    if not isinstance(query, str):
        raise QueryError("the query must be text")
    q = query.replace("\x00", " ").strip()
    if not q:
        raise QueryError("the query is empty; ask a question or give some keywords")
    if len(q) > MAX_QUERY_CHARS:
        # Embedding models read ~512 tokens; a longer "query" is almost always a pasted document.
        raise QueryError(f"the query is {len(q):,} characters long; the limit is {MAX_QUERY_CHARS:,}")
    return q


def _hit(mid: str, score: float, md: dict[str, Any], dense_score: float | None) -> Hit:
    page = md.get("page")
    return Hit(
        id=mid,
        doc_id=str(md.get("doc_id", "")),
        parent_id=str(md.get("parent_id", mid)),
        text=str(md.get("text", "")),
        score=round(float(score), 6),
        uri=str(md.get("source_uri", "")),
        title=str(md.get("title", "")),
        page=int(page) if isinstance(page, (int, float)) and not isinstance(page, bool) else None,
        section=md.get("section") if isinstance(md.get("section"), str) else None,
        lang=str(md.get("lang", "en")),
        dense_score=dense_score,
        metadata=md,
    )


def _idf_terms(query: str, stats: CorpusStats) -> dict[int, float]:
    weights: dict[int, float] = {}
    for tok in tokenize(query):
        t = term_id(tok)
        # Terms the corpus has never seen still count: a query about something absent is not covered.
        weights[t] = stats.idf(t) if stats.n_docs else 1.0
    return weights


def _coverage(text: str, q_terms: dict[int, float]) -> float:
    total = sum(q_terms.values())
    if total <= 0 or math.isnan(total):
        return 0.0
    present = {term_id(t) for t in tokenize(text)}
    return sum(w for t, w in q_terms.items() if t in present) / total
