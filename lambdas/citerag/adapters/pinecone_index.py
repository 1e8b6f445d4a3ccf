"""VectorIndex on Pinecone: one dense index (cosine) and one sparse index (dotproduct), plus S3 for parents,
manifests and BM25 statistics.

Two indexes rather than one hybrid dotproduct index, because:
- the sparse query needs no embedding, so it runs while Titan embeds the query, and still answers when
  Titan or the dense index is down (a hybrid index query needs the dense vector);
- fusion happens client-side, with exactly the method `citerag bench` measured (min-max convex or RRF),
  instead of a raw-score weighting whose scale depends on the query.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from citerag.adapters.s3_store import S3DocumentStore
from citerag.errors import DependencyError
from citerag.search.ports import DocumentInfo, Match, Record
from citerag.search.sparse import CorpusStats, SparseVector

MAX_BATCH_RECORDS = 1000
MAX_BATCH_BYTES = 2 * 1024 * 1024
BATCH_BYTES_TARGET = int(MAX_BATCH_BYTES * 0.9)  # headroom for the envelope and number formatting
MAX_METADATA_BYTES = 40 * 1024


class PineconeIndex:
    def __init__(self, dense: Any, sparse: Any, store: S3DocumentStore, ledger: Any = None) -> None:
        self.dense = dense
        self.sparse = sparse
        self.store = store
        # adapters.stats_ledger.DynamoStatsLedger: many writers at once. None: store.apply_stats, one writer.
        self.ledger = ledger

    @classmethod
    def connect(cls, dense_host: str, sparse_host: str, api_key: str, *, timeout_s: float,
                store: S3DocumentStore, ledger: Any = None) -> PineconeIndex:
        """Index clients for both hosts (the SDK sends nothing until the first request)."""
        from pinecone import Index

        dense = Index(host=dense_host, api_key=api_key, timeout=timeout_s, source_tag="citerag")
        sparse = Index(host=sparse_host, api_key=api_key, timeout=timeout_s, source_tag="citerag")
        return cls(dense, sparse, store, ledger)

    # --- writes ---------------------------------------------------------------------------------------------

    def replace_document(self, info: DocumentInfo, records: Sequence[Record], parents: dict[str, str],
                         namespace: str = "") -> None:
        """Upsert the new chunks, then delete the ones the old version had beyond them, then record the
        manifest. Pinecone has no transactions: readers may briefly see a mix of old and new chunks of
        this one document, never a document with no chunks."""
        old = self.store.get_manifest(info.doc_id, namespace)
        self.store.put_parents(parents, namespace)
        dense_rows, sparse_rows = [], []
        added: dict[int, int] = {}
        for r in records:
            md = clean_metadata(r.metadata)
            dense_rows.append({"id": r.id, "values": np.asarray(r.values, dtype=np.float32).tolist(), "metadata": md})
            if r.sparse.indices:
                sparse_rows.append({"id": r.id, "sparse_values": r.sparse.as_pinecone(), "metadata": md})
            for t in r.sparse.indices:
                added[t] = added.get(t, 0) + 1
        try:
            for batch in batches(dense_rows):
                self.dense.upsert(vectors=batch, namespace=namespace)
            for batch in batches(sparse_rows):
                self.sparse.upsert(vectors=batch, namespace=namespace)
        except Exception as exc:
            raise DependencyError(f"Pinecone upsert failed: {_describe(exc)}") from None
        new_ids = [r.id for r in records]
        if old:
            stale = sorted(set(old.get("ids", [])) - set(new_ids))
            self._delete_ids(stale, namespace)
            self.store.delete_parents(sorted(set(old.get("parents", [])) - set(parents)), namespace)
        self._count(namespace, info.doc_id, old, {"n_records": len(records),
                                                  "total_len": sum(r.length for r in records), "df": added})
        manifest = {**info.model_dump(), "n_chunks": len(records), "ids": new_ids, "parents": sorted(parents),
                    "n_records": len(records), "total_len": sum(r.length for r in records),
                    "df": {str(k): v for k, v in added.items()}}
        self.store.put_manifest(info.doc_id, manifest, namespace)

    def delete_document(self, doc_id: str, namespace: str = "") -> int:
        old = self.store.get_manifest(doc_id, namespace)
        if old is None:
            # No manifest: the document may still have vectors from an interrupted ingest; list by id prefix.
            ids = self._list_ids(f"{doc_id}#", namespace)
            self._delete_ids(ids, namespace)
            if self.ledger is not None:  # an ingest stopped after counting the document, before its manifest
                self.ledger.record(namespace, doc_id, None)
            return len(ids)
        self._delete_ids(old.get("ids", []), namespace)
        self.store.delete_parents(old.get("parents", []), namespace)
        self._count(namespace, doc_id, old, None)
        self.store.delete_manifest(doc_id, namespace)
        return len(old.get("ids", []))

    def _count(self, namespace: str, doc_id: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """The document's change of the BM25 statistics, from its old manifest to `new` (None: removed). Written
        before the manifest: a writer killed in between leaves the old manifest, so the message's retry indexes the
        document again, and the ledger's transition (already there) is not counted twice."""
        if self.ledger is not None:
            from citerag.adapters.stats_ledger import Contribution

            def contribution(m):
                return Contribution(m.get("n_records", 0), m.get("total_len", 0),
                                    {int(k): int(v) for k, v in m.get("df", {}).items()})

            self.ledger.record(namespace, doc_id, contribution(new) if new is not None else None,
                               before=contribution(old) if old else None)
            return
        removed = {int(k): v for k, v in (old or {}).get("df", {}).items()}
        added = {int(k): v for k, v in (new or {}).get("df", {}).items()}
        self.store.apply_stats(namespace, added, removed,
                               (new or {}).get("n_records", 0) - (old or {}).get("n_records", 0),
                               (new or {}).get("total_len", 0) - (old or {}).get("total_len", 0))

    def _list_ids(self, prefix: str, namespace: str) -> list[str]:
        ids: list[str] = []
        try:
            for page in self.dense.list(prefix=prefix, namespace=namespace):
                ids.extend(getattr(page, "vector_ids", None) or [v.id for v in getattr(page, "vectors", [])])
        except Exception as exc:
            raise DependencyError(f"Pinecone list failed: {_describe(exc)}") from None
        return ids

    def _delete_ids(self, ids: Sequence[str], namespace: str) -> None:
        try:
            for start in range(0, len(ids), 1000):
                part = list(ids[start : start + 1000])
                self.dense.delete(ids=part, namespace=namespace)
                self.sparse.delete(ids=part, namespace=namespace)
        except Exception as exc:
            raise DependencyError(f"Pinecone delete failed: {_describe(exc)}") from None

    # --- reads ----------------------------------------------------------------------------------------------

    def get_document(self, doc_id: str, namespace: str = "") -> DocumentInfo | None:
        m = self.store.get_manifest(doc_id, namespace)
        return DocumentInfo.model_validate({k: m[k] for k in DocumentInfo.model_fields if k in m}) if m else None

    def list_documents(self, namespace: str = "") -> list[DocumentInfo]:
        return [DocumentInfo.model_validate({k: m[k] for k in DocumentInfo.model_fields if k in m})
                for m in self.store.list_manifests(namespace)]

    def get_parent(self, parent_id: str, namespace: str = "") -> str | None:
        return self.store.get_parent(parent_id, namespace)

    def corpus_stats(self, namespace: str = "") -> CorpusStats:
        return self.store.corpus_stats(namespace)

    def corpus_size(self, namespace: str = "") -> tuple[int, int]:
        stats = self.store.corpus_stats(namespace)
        return stats.n_docs, stats.total_len

    def query_dense(self, vector: np.ndarray, top_k: int, flt: dict | None = None, namespace: str = "") -> list[Match]:
        res = self.dense.query(vector=np.asarray(vector, dtype=np.float32).tolist(), top_k=top_k, filter=flt or None,
                               namespace=namespace, include_metadata=True)
        return _matches(res)

    def query_sparse(self, vector: SparseVector, top_k: int, flt: dict | None = None,
                     namespace: str = "") -> list[Match]:
        if not vector.indices:
            return []
        res = self.sparse.query(sparse_vector=vector.as_pinecone(), top_k=top_k, filter=flt or None,
                                namespace=namespace, include_metadata=True)
        return _matches(res)


def _matches(res: Any) -> list[Match]:
    out = []
    for m in getattr(res, "matches", None) or []:
        md = getattr(m, "metadata", None) or {}
        out.append(Match(id=str(m.id), score=float(m.score or 0.0), metadata=dict(md)))
    return out


def clean_metadata(md: dict[str, Any]) -> dict[str, Any]:
    """Pinecone metadata: no nulls, values string/number/bool/list[str], at most 40 KB (the text is cut)."""
    out: dict[str, Any] = {}
    for k, v in md.items():
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            out[k] = [str(x) for x in v if x is not None]
        elif isinstance(v, (str, bool, int, float)):
            out[k] = v
        else:
            out[k] = str(v)
    size = len(json.dumps(out, ensure_ascii=False).encode())
    if size > MAX_METADATA_BYTES and isinstance(out.get("text"), str):
        excess = size - MAX_METADATA_BYTES + 64
        text = out["text"].encode("utf-8")
        out["text"] = text[: max(0, len(text) - excess)].decode("utf-8", errors="ignore")
    return out


def batches(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Split upsert rows so each request stays within 1,000 records and 2 MB."""
    out: list[list[dict[str, Any]]] = []
    cur: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        n = len(json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode())
        if cur and (len(cur) >= MAX_BATCH_RECORDS or size + n > BATCH_BYTES_TARGET):
            out.append(cur)
            cur, size = [], 0
        cur.append(row)
        size += n
    if cur:
        out.append(cur)
    return out


def _describe(exc: Exception) -> str:
    status = getattr(exc, "status", None) or getattr(exc, "status_code", None)
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "")
