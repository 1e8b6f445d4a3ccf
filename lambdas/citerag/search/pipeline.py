"""The search pipeline: dense and sparse retrieval in parallel, fusion, optional rerank, relevance
grading, parent expansion. Same code path embedded and in the Lambda; only the adapters differ."""

from __future__ import annotations

import logging
import math
import re
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from citerag.documents.chunking import first_line, line_range
from citerag.documents.text import CJK_RE
from citerag.errors import CiteragError, DependencyError
from citerag.search import filters as flt_mod
from citerag.search import fusion
from citerag.search.passage import Passage
from citerag.search.ports import Embedder, Match, Reranker, VectorIndex
from citerag.search.query import Query, analyze
from citerag.search.resilience import CircuitBreaker, CircuitOpenError
from citerag.search.sparse import DEFAULT_TOKENS, BM25Tokens, CorpusStats, encode_query, term_id, tokenize

logger = logging.getLogger(__name__)


class SearchConfig(BaseModel):
    fusion: Literal["rrf", "convex"] = "convex"
    alpha: float = Field(0.5, ge=0.0, le=1.0, description="dense weight in convex fusion")
    rrf_k: int = Field(60, ge=1)
    candidates: int = Field(100, ge=1, le=1000, description="top-k fetched from each of dense and sparse")
    # Relevance grading: relevance = cosine + coverage_weight * (share of the query's IDF mass present in the
    # passage); a hit is relevant when relevance >= min_relevance. Without a dense score (sparse-only
    # fallback) coverage alone must reach min_coverage. Calibrated on the samples and JaQuAD (README).
    min_relevance: float = 0.85
    # A hit in another language than the query holds none of its words (but names such as "rustup"), and the model's
    # cosines across languages run lower: such a hit is graded against its own bar (None: min_relevance).
    min_relevance_cross: float | None = None
    coverage_weight: float = 0.25
    min_coverage: float = 0.5
    expand_parents: bool = False
    max_parent_chars: int = 3000
    timeout_s: float = 10.0


def _bar(cfg: SearchConfig, q: Query, hit: Passage) -> float:
    """The relevance a hit must reach: a Japanese question over an English manual is graded as such."""
    if cfg.min_relevance_cross is None or hit.lang == q.lang:
        return cfg.min_relevance
    return cfg.min_relevance_cross


@dataclass
class SearchOutcome:
    query: Query
    hits: list[Passage]
    degraded: list[str] = field(default_factory=list)  # stages that failed and were skipped
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def relevant_hits(self) -> list[Passage]:
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
        tokens: BM25Tokens = DEFAULT_TOKENS,
    ) -> None:
        self.embedder = embedder
        self.tokens = tokens  # the BM25 token stream the index was built with
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
        query: str | Query,
        *,
        top_k: int = 5,
        flt: dict | None = None,
        namespace: str = "",
        mode: Literal["hybrid", "dense", "bm25"] = "hybrid",
        grade: bool = True,
    ) -> SearchOutcome:
        """Top-k passages best first. `grade=False` skips the relevance grading (benchmarks rank 100 hits)."""
        q = analyze(query)
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
            qv = self._guard("embed", lambda: self.embedder.embed_query(q.text))  # type: ignore[union-attr]
            timings["embed_ms"] = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            res = self._guard("dense", lambda: self.index.query_dense(qv, n_cand, flt, namespace))
            timings["dense_ms"] = (time.perf_counter() - t) * 1000
            return res, qv

        def sparse_branch() -> list[Match]:
            t = time.perf_counter()
            qs = encode_query(q, stats, self.tokens)
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
        # With parents, a hit whose text another hit's window already holds is dropped, so more are looked at.
        wanted = 3 * top_k if cfg.expand_parents else top_k
        load_metadata = getattr(self.index, "load_metadata", None)
        if load_metadata is not None and fused:
            # An index that ranks without metadata reads it for the hits shown (and reranked) only, in one go.
            head = fused[: max(wanted, top_k * 4, 20) if self.reranker is not None else wanted]
            gone = load_metadata([by_id[i] for i, _ in head])
            if gone:
                fused = [f for f in fused if f[0] not in gone]

        if self.reranker is not None and fused:
            t = time.perf_counter()
            head = fused[: max(top_k * 4, 20)]
            texts = [by_id[i].metadata.get("text", "") for i, _ in head]
            try:
                order = self._guard("rerank", lambda: self.reranker.rerank(q.text, texts, len(head)))
                fused = [(head[i][0], s) for i, s in order] + fused[len(head):]
            except Exception:  # rerank is an optional refinement: skip it when it fails
                degraded.append("rerank")
            timings["rerank_ms"] = (time.perf_counter() - t) * 1000

        q_terms = _idf_terms(q, stats) if grade else {}
        hits: list[Passage] = []
        for mid, score in fused[:wanted]:
            md = by_id[mid].metadata
            hit = Passage.from_match(mid, score, md, dense_scores.get(mid))
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
                    hit.relevant = hit.relevance >= _bar(cfg, q, hit)
            hits.append(hit)
        if cfg.expand_parents and hits:
            t = time.perf_counter()
            hits = self._windows(hits, top_k, namespace)
            timings["parents_ms"] = (time.perf_counter() - t) * 1000
        timings["total_ms"] = (time.perf_counter() - t0) * 1000
        return SearchOutcome(query=q, hits=hits, degraded=degraded, timings_ms=timings)

    def stats(self, namespace: str = "") -> CorpusStats:
        """BM25 corpus statistics (IDF weights for sentence selection)."""
        return self._stats_provider(namespace)

    def _windows(self, hits: list[Passage], top_k: int, namespace: str) -> list[Passage]:
        """The first top_k hits, each with its parent's text: the whole parent when it fits, else a window of it
        around the chunk. A long parent (a text file is one) gives a window per hit whose chunk no earlier window
        holds: "Which sqlite3 command lists the tables?" needs the man page's ".tables" lines, 40 lines below the
        window around its best chunk, which one passage per parent left out. Windows of one parent never overlap,
        so no sentence is sent twice."""
        parents: dict[str, str | None] = {}
        sent: dict[str, list[tuple[int, int]]] = {}  # parent id -> windows already sent
        kept: list[Passage] = []
        queue = list(hits)
        while queue and len(kept) < top_k:
            batch, queue = queue[: top_k - len(kept)], queue[top_k - len(kept):]
            missing = list(dict.fromkeys(h.parent_id for h in batch if h.parent_id not in parents))
            # Parent stores may be remote (S3): fetch the pages concurrently.
            for pid, text in zip(missing, self._pool.map(lambda p: self._parent(p, namespace), missing), strict=True):
                parents[pid] = text
            for hit in batch:
                window = self._window(hit, parents[hit.parent_id], sent.setdefault(hit.parent_id, []))
                if window is not None:
                    sent[hit.parent_id].append(window)
                    kept.append(hit)
        return kept

    def _parent(self, parent_id: str, namespace: str) -> str | None:
        get_parent = getattr(self.index, "get_parent", None)
        try:
            return get_parent(parent_id, namespace) if get_parent else None
        except Exception:  # the chunk itself is still a good passage; the parent is an extra
            return None

    def _window(self, hit: Passage, parent: str | None, sent: list[tuple[int, int]]) -> tuple[int, int] | None:
        """Put the hit's window of its parent in hit.text; None when the windows already sent hold its chunk."""
        start, end = hit.char_start, hit.char_end
        if start is not None and end is None:
            end = start + len(hit.text)
        if not parent or len(parent) <= self.config.max_parent_chars or start is None:
            if sent:
                return None
            if parent:
                self._show(hit, parent, 0, len(parent), start, end)
            return 0, len(parent or "")
        if any(b <= start and end <= s for b, s in sent):
            return None
        extra = max(0, self.config.max_parent_chars - (end - start)) // 2
        begin, stop = _on_boundaries(parent, max(0, start - extra), min(len(parent), end + extra), start, end)
        for b, s in sent:  # sent windows end on boundaries too: cut this one where they start or end
            if b <= start:
                begin = max(begin, s)
            else:
                stop = min(stop, b)
        if begin >= stop:  # two windows sent hold the chunk between them
            return None
        self._show(hit, parent, begin, stop, start, end)
        return begin, stop

    @staticmethod
    def _show(hit: Passage, parent: str, begin: int, stop: int, start: int | None, end: int | None) -> None:
        hit.text = parent[begin:stop]
        # Where the chunk search matched lies in what is sent: a response cut to fit keeps it (packing.py).
        if start is not None and end is not None and start < stop and begin < end:
            # A chunk overlaps the one before it: its window may open where an earlier one ends, inside the chunk.
            hit.focus = (max(start, begin) - begin, min(end, stop) - begin)
        if first_line(hit.section, hit.uri) is not None:  # a text file's parent is the whole file: the lines sent
            hit.section = line_range(parent, begin, stop)


LINE_SLACK = 200  # how far a window may grow to take a whole line instead of cutting it
_BREAK = re.compile(r"(?<=[ 。．！？])")  # just after a space or a sentence end


def _on_boundaries(parent: str, begin: int, stop: int, start: int, end: int) -> tuple[int, int]:
    """A window of the parent that starts and ends at line breaks (grown by up to LINE_SLACK characters), else at a
    space or sentence end inside it, never into the chunk start..end. A window cut at a character count opened
    mid-word ("nt\nSuppress normal output…" for "-c, --count\nSuppress…"), which the answerer reads as a fragment
    and the user sees as one. Japanese runs long without either: there the cut stays where it was, between two
    characters, rather than losing the window."""
    if begin > 0 and parent[begin - 1] != "\n":
        line = parent.rfind("\n", max(0, begin - LINE_SLACK), begin)
        if line != -1 or begin <= LINE_SLACK:
            begin = line + 1
        else:
            brk = _BREAK.search(parent, begin, start)
            begin = brk.start() if brk else begin if CJK_RE.match(parent, begin) else start
    if stop < len(parent) and parent[stop] != "\n":
        line = parent.find("\n", stop, stop + LINE_SLACK)
        if line != -1 or len(parent) - stop <= LINE_SLACK:
            stop = line if line != -1 else len(parent)
        elif parent[stop] != " ":
            breaks = [m.start() for m in _BREAK.finditer(parent, end, stop + 1)]
            if breaks:  # a space that ends the window is left out
                stop = max(end, breaks[-1] - (parent[breaks[-1] - 1] == " "))
            elif not CJK_RE.match(parent, stop - 1):
                stop = end
    return begin, stop


def _reason(exc: BaseException) -> str:
    """A short reason the model and the user may read: our own messages (already free of ARNs and secrets), or a
    plain word for anything else, never an internal exception name or its args (they may carry request data).
    The details go to the log."""
    if isinstance(exc, (CiteragError, CircuitOpenError)):
        return str(exc)
    logger.warning("search dependency failed: %s", type(exc).__name__)
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, (ConnectionError, OSError)):
        return "could not be reached"
    return "internal error"


def _idf_terms(query: Query, stats: CorpusStats) -> dict[int, float]:
    # Terms the corpus has never seen still count: a query about something absent is not covered.
    return {t: stats.idf(t) if stats.n_docs else 1.0 for t in query.term_ids}


def _coverage(text: str, q_terms: dict[int, float]) -> float:
    total = sum(q_terms.values())
    if total <= 0 or math.isnan(total):
        return 0.0
    present = {term_id(t) for t in tokenize(text)}
    return sum(w for t, w in q_terms.items() if t in present) / total
