"""`citerag bench`: retrieval quality and latency on a BEIR-layout dataset (corpus.jsonl, queries.jsonl,
qrels.tsv). Each corpus document is indexed whole (as in BEIR/MTEB) with the same embedder, BM25 encoder
and pipeline that `citerag search` uses. Passage embeddings come from the shared cache."""

from __future__ import annotations

import fcntl
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from citerag.bench.metrics import Qrels, evaluate, percentile
from citerag.errors import CiteragError
from citerag.search import fusion
from citerag.search.pipeline import SearchConfig, SearchPipeline
from citerag.search.ports import DocumentInfo, Embedder, Record, VectorIndex
from citerag.search.sparse import DEFAULT_TOKENS, BM25Tokens, CorpusStats, encode_document

MODES = ("bm25", "dense", "hybrid")


class Dataset(BaseModel):
    name: str
    corpus: list[dict[str, str]]
    queries: dict[str, str]
    qrels: Qrels


def load_dataset(root: Path, qrels_file: Path | None = None) -> Dataset:
    root = Path(root)
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (root / name).is_file():
            raise CiteragError(f"{root} is not a benchmark dataset: {name} is missing")
    qrels_path = Path(qrels_file) if qrels_file else root / "qrels.tsv"
    if not qrels_path.is_file():
        raise CiteragError(f"qrels file not found: {qrels_path}")
    corpus = [
        {"_id": str(d["_id"]), "title": str(d.get("title") or ""), "text": str(d.get("text") or "")}
        for d in _jsonl(root / "corpus.jsonl")
    ]
    queries = {str(q["_id"]): str(q["text"]) for q in _jsonl(root / "queries.jsonl")}
    qrels: Qrels = {}
    with qrels_path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            parts = line.rstrip("\n").split("\t")
            if n == 1 and not parts[-1].lstrip("-").isdigit():
                continue  # header
            if len(parts) < 3:
                raise CiteragError(f"{qrels_path}:{n}: expected query-id, corpus-id, score separated by tabs")
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return Dataset(name=root.name, corpus=corpus, queries=queries, qrels=qrels)


def _jsonl(path: Path):
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise CiteragError(f"{path}:{n}: not valid JSON ({exc.msg})") from None


def doc_text(d: dict[str, str]) -> str:
    return f"{d['title']} {d['text']}".strip()


def remove_index(path: Path) -> None:
    """Delete an embedded index (its WAL and read structure too) so a benchmark builds it from scratch."""
    from citerag.adapters.sqlite_index import remove_index_files

    remove_index_files(path)


@contextmanager
def run_index_path(folder: Path, name: str, chosen: Path | None = None) -> Iterator[Path]:
    """The index file one benchmark run builds. Without `chosen`, a new file of its own, deleted afterwards, so
    runs at the same time never share an index (they used to: one fixed path per dataset, and two runs broke each
    other). A chosen path is kept for inspection and locked while the run uses it."""
    folder.mkdir(parents=True, exist_ok=True)
    if chosen is None:
        fd, tmp = tempfile.mkstemp(prefix=f"{name}-", suffix=".sqlite", dir=folder)
        os.close(fd)
        path = Path(tmp)
        try:
            remove_index(path)
            yield path
        finally:
            remove_index(path)
        return
    chosen.parent.mkdir(parents=True, exist_ok=True)
    with open(str(chosen) + ".lock", "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CiteragError(f"another benchmark is using {chosen}; wait for it or leave out --index") from None
        remove_index(chosen)
        yield chosen


def build_index(
    ds: Dataset, embedder: Embedder | None, index: VectorIndex,
    progress: Callable[[str, int, int], None] | None = None, *, dim: int = 0, tokens: BM25Tokens = DEFAULT_TOKENS,
) -> tuple[VectorIndex, float, int]:
    """Fill an empty index with the corpus, each document whole. Returns (index, build seconds, passages
    embedded now). Two passes: BM25 statistics, then vectors. Without an embedder (BM25 only) nothing is embedded:
    the records get zero vectors of `dim` dimensions, which no BM25 search reads."""
    t0 = time.perf_counter()
    texts = [doc_text(d) for d in ds.corpus]
    total = len(texts)
    done = [0]

    def tick(n: int) -> None:
        done[0] += n
        if progress:
            progress("embed", done[0], total)

    if embedder is None:
        before = 0
        vectors = np.zeros((total, dim), dtype=np.float32)
    else:
        before = embedder.misses
        vectors = embedder.embed_passages(texts, progress=tick)
    counts = [tokens.counts(t) for t in texts]
    stats = CorpusStats()
    for c in counts:
        stats.add(c)
    batch = []
    for d, v, c in zip(ds.corpus, vectors, counts, strict=True):
        md = {"text": d["text"], "title": d["title"], "doc_id": d["_id"], "parent_id": d["_id"],
              "source_uri": f"{ds.name}:{d['_id']}"}
        rec = Record(id=d["_id"], values=v, sparse=encode_document(c, stats), metadata=md, length=sum(c.values()))
        info = DocumentInfo(doc_id=d["_id"], source_uri=md["source_uri"], title=d["title"], content_hash="",
                            kind="bench", n_chunks=1, ingested_at="")
        batch.append((info, [rec], {}))
    index.replace_documents(batch)
    index.corpus_stats()  # load the in-memory snapshot now so it is not counted as query latency
    return index, time.perf_counter() - t0, (embedder.misses - before) if embedder is not None else 0


def run(
    ds: Dataset,
    embedder: Embedder | None,
    index: VectorIndex,
    config: SearchConfig,
    modes: tuple[str, ...],
    progress: Callable[[str, int, int], None] | None = None,
    runs_out: dict[str, dict[str, list[tuple[str, float]]]] | None = None,
    tokens: BM25Tokens = DEFAULT_TOKENS,
) -> dict[str, dict[str, Any]]:
    """Metrics and latency per mode. `runs_out`, when given, receives each mode's ranking (doc id, score) per
    query, for a TREC run file."""
    pipeline = SearchPipeline(embedder, index, config, tokens=tokens)
    qids = [q for q in ds.qrels if q in ds.queries]
    out: dict[str, dict[str, Any]] = {}
    for mode in modes:
        runs: dict[str, list[str]] = {}
        scored: dict[str, list[tuple[str, float]]] = {}
        lat: list[float] = []
        # One warm-up query so imports and first-call costs are not counted.
        pipeline.search(ds.queries[qids[0]], top_k=100, mode=mode, grade=False)
        for i, q in enumerate(qids, start=1):
            t = time.perf_counter()
            res = pipeline.search(ds.queries[q], top_k=100, mode=mode, grade=False)
            lat.append((time.perf_counter() - t) * 1000)
            runs[q] = [h.id for h in res.hits]
            scored[q] = [(h.id, h.score) for h in res.hits]
            if progress and (i % 50 == 0 or i == len(qids)):
                progress(mode, i, len(qids))
        m = evaluate(runs, ds.qrels)
        m.update({"p50_ms": percentile(lat, 50), "p95_ms": percentile(lat, 95), "queries": len(qids)})
        out[mode] = m
        if runs_out is not None:
            runs_out[mode] = scored
    return out


def write_trec_run(path: Path, ranking: dict[str, list[tuple[str, float]]], tag: str) -> None:
    """A TREC run file (`qid Q0 docid rank score tag`), readable by trec_eval, pytrec_eval and ir_measures.
    Evaluators re-sort by score, so tied or rising scores are nudged down to keep citerag's order."""
    lines = []
    for qid in sorted(ranking):
        prev = math.inf
        for rank, (doc, score) in enumerate(ranking[qid], start=1):
            s = score if score < prev else prev - 1e-6
            prev = s
            lines.append(f"{qid} Q0 {doc} {rank} {s:.6f} {tag}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")


def run_file_for(path: Path, mode: str, modes: tuple[str, ...]) -> Path:
    """One run file per mode: the given name for a single mode, NAME-MODE.SUFFIX for several."""
    if len(modes) == 1:
        return path
    return path.with_name(f"{path.stem}-{mode}{path.suffix or '.trec'}")


def fusion_sweep(
    ds: Dataset, embedder: Embedder, index: VectorIndex, candidates: int = 100, tokens: BM25Tokens = DEFAULT_TOKENS,
) -> dict[str, dict[str, float]]:
    """nDCG@10 etc. for RRF and convex fusion at several alphas, from one dense and one sparse run."""
    from citerag.search.sparse import encode_query

    stats = index.corpus_stats()
    qids = [q for q in ds.qrels if q in ds.queries]
    dense_runs, sparse_runs = {}, {}
    for q in qids:
        text = ds.queries[q]
        dense_runs[q] = index.query_dense(embedder.embed_query(text), candidates)
        sparse_runs[q] = index.query_sparse(encode_query(text, stats, tokens), candidates)
    variants: dict[str, Callable] = {"rrf(k=60)": lambda d, s: fusion.rrf([d, s], 60)}
    for alpha in (0.3, 0.4, 0.5, 0.6, 0.7):
        variants[f"convex(alpha={alpha})"] = lambda d, s, a=alpha: fusion.convex(d, s, a)
    out = {}
    for name, fn in variants.items():
        runs = {q: [i for i, _ in fn(dense_runs[q], sparse_runs[q])][:100] for q in qids}
        out[name] = evaluate(runs, ds.qrels)
    return out


def packing_comparison(
    ds: Dataset, embedder: Embedder, index: VectorIndex, config: SearchConfig, *,
    top_k: int = 20, budget: int = 25_000, tokens: BM25Tokens = DEFAULT_TOKENS,
) -> dict[str, Any]:
    """Share of queries whose relevant document survives packing of the top-k hybrid hits into a Lambda
    response of `budget` bytes: citerag's packer vs dropping whole results from the tail."""
    from citerag.citations import source_ids
    from citerag.citations.payload import body_text_cost, build_payload, dumps_body, response_bytes
    from citerag.citations.tool import ACTION_GROUP, FUNCTION_NAME
    from citerag.runtimes.action_group import envelope
    from citerag.search import packing

    pipeline = SearchPipeline(embedder, index, config, tokens=tokens)
    qids = [q for q in ds.qrels if q in ds.queries]
    event = {"messageVersion": "1.0", "actionGroup": ACTION_GROUP, "function": FUNCTION_NAME,
             "sessionAttributes": {"citerag_search_retries": "0"}, "promptSessionAttributes": {}}

    def build(items) -> dict[str, Any]:
        return {"body": dumps_body(build_payload(items))}

    def size(built: dict[str, Any]) -> int:
        return response_bytes(envelope(event, built["body"]))  # the whole response, as the Lambda runtime writes it

    hits_in = {"citerag": 0, "drop_tail": 0, "unpacked": 0}
    kept_counts: dict[str, list[int]] = {"citerag": [], "drop_tail": []}
    for q in qids:
        query = ds.queries[q]
        hits = pipeline.search(query, top_k=top_k, grade=False).hits
        relevant = {d for d, r in ds.qrels[q].items() if r > 0}
        items = source_ids.assign(hits)
        if any(it.doc_id in relevant for it in items):
            hits_in["unpacked"] += 1
        mine_payload, mine = packing.pack(items, build, budget, query, size=size, text_cost=body_text_cost)
        seed_payload, seed = packing.drop_tail(items, build, budget, size=size)
        assert size(mine_payload) <= budget and size(seed_payload) <= budget
        for name, kept in (("citerag", mine), ("drop_tail", seed)):
            kept_counts[name].append(len(kept))
            if any(it.doc_id in relevant and it.text for it in kept):
                hits_in[name] += 1
    n = len(qids)
    return {
        "queries": n, "top_k": top_k, "budget_bytes": budget,
        "relevant_in_top_k": hits_in["unpacked"] / n,
        "relevant_in_payload": {"citerag": hits_in["citerag"] / n, "drop_tail": hits_in["drop_tail"] / n},
        "median_results_kept": {k: sorted(v)[len(v) // 2] for k, v in kept_counts.items()},
    }
