"""The embedded index: one SQLite file that reproduces Pinecone's data model with exact search.

Records (dense + sparse + metadata) live in namespaces; a document's records are replaced in one
transaction, so an interrupted ingest leaves the previous state intact. BM25 corpus statistics and parent
texts (full pages/sections) are kept in the same file and change in the same transactions.
Searches run on an in-memory copy of a namespace that is rebuilt only when the file changes.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from citerag.errors import DiskFullError, IndexError_
from citerag.search import filters
from citerag.search.ports import DocumentInfo, Match, Record
from citerag.search.sparse import CorpusStats, SparseVector

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    namespace TEXT NOT NULL, id TEXT NOT NULL, doc_id TEXT NOT NULL,
    dense BLOB NOT NULL, sparse_idx BLOB NOT NULL, sparse_val BLOB NOT NULL, length INTEGER NOT NULL,
    metadata TEXT NOT NULL, PRIMARY KEY (namespace, id));
CREATE INDEX IF NOT EXISTS records_doc ON records (namespace, doc_id);
CREATE TABLE IF NOT EXISTS documents (
    namespace TEXT NOT NULL, doc_id TEXT NOT NULL, source_uri TEXT NOT NULL, title TEXT NOT NULL,
    content_hash TEXT NOT NULL, kind TEXT NOT NULL, n_chunks INTEGER NOT NULL, ingested_at TEXT NOT NULL,
    PRIMARY KEY (namespace, doc_id));
CREATE TABLE IF NOT EXISTS parents (
    namespace TEXT NOT NULL, parent_id TEXT NOT NULL, doc_id TEXT NOT NULL, text TEXT NOT NULL,
    PRIMARY KEY (namespace, parent_id));
CREATE TABLE IF NOT EXISTS bm25_df (
    namespace TEXT NOT NULL, term INTEGER NOT NULL, df INTEGER NOT NULL, PRIMARY KEY (namespace, term));
CREATE TABLE IF NOT EXISTS bm25_totals (
    namespace TEXT PRIMARY KEY, n_docs INTEGER NOT NULL, total_len INTEGER NOT NULL);
"""


@dataclass
class _Snapshot:
    generation: int
    ids: list[str]
    metadata: list[dict]
    dense: np.ndarray
    # Sparse postings: term ids sorted, and for each term a slice into (rows, vals).
    terms: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    rows: np.ndarray
    vals: np.ndarray
    stats: CorpusStats


class SqliteIndex:
    """Embedded VectorIndex. Safe to share between threads of one process."""

    def __init__(self, path: Path, *, dim: int | None = None, model_id: str | None = None, timeout: float = 5.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._snapshots: dict[str, _Snapshot] = {}
        try:
            self._conn = sqlite3.connect(str(self.path), timeout=timeout, check_same_thread=False,
                                         isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
            self._check_meta(dim, model_id)
        except sqlite3.DatabaseError as exc:
            raise self._translate(exc) from None

    # --- lifecycle and errors -------------------------------------------------------------------------------

    def _translate(self, exc: sqlite3.Error) -> IndexError_:
        msg = str(exc)
        if "full" in msg:  # SQLITE_FULL: "database or disk is full"
            return DiskFullError(f"the disk holding {self.path} is full; free some space and run the command again "
                                 "(every document that finished is kept)")
        if "locked" in msg or "busy" in msg:
            return IndexError_(
                f"the index {self.path} is locked by another process; wait for it to finish, or use --index "
                "to pick another index"
            )
        if "not a database" in msg or "malformed" in msg or "corrupt" in msg:
            return IndexError_(
                f"the index {self.path} is corrupt ({msg}); delete it and ingest your documents again"
            )
        return IndexError_(f"the index {self.path} cannot be used: {msg}")

    def _check_meta(self, dim: int | None, model_id: str | None) -> None:
        rows = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        version = int(rows.get("schema_version", SCHEMA_VERSION))
        if version != SCHEMA_VERSION:
            raise IndexError_(
                f"the index {self.path} has schema version {version}; this citerag reads {SCHEMA_VERSION}"
            )
        if rows.get("dim") and dim and int(rows["dim"]) != dim:
            raise IndexError_(
                f"the index {self.path} holds {rows['dim']}-dimensional vectors from {rows.get('model_id')}, "
                f"but the configured embedder {model_id} makes {dim}; use another --index or the same embedder"
            )
        if "schema_version" not in rows:
            with self._tx():
                self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('generation', '0')")
        if dim and "dim" not in rows:
            with self._tx():
                self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('dim', ?)", (str(dim),))
                self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('model_id', ?)", (model_id or "",))

    def recorded_sparse_tokens(self) -> str | None:
        """The BM25 token stream (search.sparse.BM25Tokens.name) this index was built with; None while it is empty
        and nothing is recorded. An index from before this was recorded was built with the default stream."""
        with self._lock:
            try:
                row = self._conn.execute("SELECT value FROM meta WHERE key='sparse_tokens'").fetchone()
                empty = self._conn.execute("SELECT 1 FROM records LIMIT 1").fetchone() is None
            except sqlite3.DatabaseError as exc:
                raise self._translate(exc) from None
        if empty:
            return None
        return row[0] if row else "default"

    def check_sparse_tokens(self, name: str) -> None:
        """Record which BM25 token stream fills this index and refuse another: sparse vectors made by one stream do
        not match queries encoded by another. An empty index takes the stream it is given."""
        recorded = self.recorded_sparse_tokens()
        if recorded is not None and recorded != name:
            raise IndexError_(
                f"the index {self.path} was built with the {recorded!r} BM25 tokenizer, but the configured one is "
                f"{name!r} (CITERAG_SPARSE_TOKENIZER); use the same tokenizer, another --index, or ingest the "
                "documents again into a new index"
            )
        if recorded is None:
            with self._lock, self._tx():
                self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('sparse_tokens', ?)", (name,))

    def _tx(self):
        return _Transaction(self)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # --- writes ---------------------------------------------------------------------------------------------

    def replace_document(
        self, info: DocumentInfo, records: Sequence[Record], parents: dict[str, str], namespace: str = ""
    ) -> None:
        with self._lock, self._tx():
            self._replace_locked(info, records, parents, namespace)
            self._bump()

    def replace_documents(
        self, batch: Sequence[tuple[DocumentInfo, Sequence[Record], dict[str, str]]], namespace: str = ""
    ) -> None:
        """Several documents in one transaction (bulk loads such as benchmark corpora)."""
        with self._lock, self._tx():
            for info, records, parents in batch:
                self._replace_locked(info, records, parents, namespace)
            self._bump()

    def _replace_locked(
        self, info: DocumentInfo, records: Sequence[Record], parents: dict[str, str], namespace: str
    ) -> None:
        self._delete_locked(info.doc_id, namespace)
        rows = []
        added: dict[int, int] = {}
        total_len = 0
        for r in records:
            idx = np.asarray(r.sparse.indices, dtype=np.uint32)
            val = np.asarray(r.sparse.values, dtype=np.float32)
            rows.append((namespace, r.id, info.doc_id, np.asarray(r.values, np.float32).tobytes(),
                         idx.tobytes(), val.tobytes(), r.length,
                         json.dumps(r.metadata, ensure_ascii=False)))
            for t in r.sparse.indices:
                added[t] = added.get(t, 0) + 1
            total_len += r.length
        self._conn.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        self._conn.executemany(
            "INSERT INTO parents VALUES (?, ?, ?, ?)",
            [(namespace, pid, info.doc_id, text) for pid, text in parents.items()],
        )
        self._conn.execute(
            "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (namespace, info.doc_id, info.source_uri, info.title, info.content_hash, info.kind,
             len(records), info.ingested_at),
        )
        self._apply_stats(namespace, added, len(records), total_len, sign=1)

    def delete_document(self, doc_id: str, namespace: str = "") -> int:
        with self._lock, self._tx():
            n = self._delete_locked(doc_id, namespace)
            self._bump()
            return n

    def _delete_locked(self, doc_id: str, namespace: str) -> int:
        removed: dict[int, int] = {}
        total_len = 0
        n = 0
        for idx_blob, length in self._conn.execute(
            "SELECT sparse_idx, length FROM records WHERE namespace=? AND doc_id=?", (namespace, doc_id)
        ):
            for t in np.frombuffer(idx_blob, dtype=np.uint32).tolist():
                removed[t] = removed.get(t, 0) + 1
            total_len += length
            n += 1
        if n:
            self._apply_stats(namespace, removed, n, total_len, sign=-1)
        self._conn.execute("DELETE FROM records WHERE namespace=? AND doc_id=?", (namespace, doc_id))
        self._conn.execute("DELETE FROM parents WHERE namespace=? AND doc_id=?", (namespace, doc_id))
        self._conn.execute("DELETE FROM documents WHERE namespace=? AND doc_id=?", (namespace, doc_id))
        return n

    def _apply_stats(self, namespace: str, dfs: dict[int, int], n_docs: int, total_len: int, sign: int) -> None:
        self._conn.executemany(
            "INSERT INTO bm25_df VALUES (?, ?, ?) ON CONFLICT(namespace, term) DO UPDATE SET df = df + excluded.df",
            [(namespace, t, sign * c) for t, c in dfs.items()],
        )
        if sign < 0:
            self._conn.execute("DELETE FROM bm25_df WHERE namespace=? AND df <= 0", (namespace,))
        self._conn.execute(
            "INSERT INTO bm25_totals VALUES (?, ?, ?) ON CONFLICT(namespace) DO UPDATE SET "
            "n_docs = max(0, n_docs + excluded.n_docs), total_len = max(0, total_len + excluded.total_len)",
            (namespace, sign * n_docs, sign * total_len),
        )

    def _bump(self) -> None:
        self._conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")

    # --- reads ----------------------------------------------------------------------------------------------

    def get_document(self, doc_id: str, namespace: str = "") -> DocumentInfo | None:
        docs = self._docs("WHERE namespace=? AND doc_id=?", (namespace, doc_id))
        return docs[0] if docs else None

    def find_by_uri(self, source_uri: str, namespace: str = "") -> DocumentInfo | None:
        docs = self._docs("WHERE namespace=? AND source_uri=?", (namespace, source_uri))
        return docs[0] if docs else None

    def list_documents(self, namespace: str | None = "") -> list[DocumentInfo]:
        if namespace is None:
            return self._docs("ORDER BY namespace, source_uri", ())
        return self._docs("WHERE namespace=? ORDER BY source_uri", (namespace,))

    def _docs(self, where: str, args: tuple) -> list[DocumentInfo]:
        with self._lock:
            try:
                rows = self._conn.execute(
                    "SELECT namespace, doc_id, source_uri, title, content_hash, kind, n_chunks, ingested_at "
                    f"FROM documents {where}", args
                ).fetchall()
            except sqlite3.DatabaseError as exc:
                raise self._translate(exc) from None
        return [
            DocumentInfo(namespace=r[0], doc_id=r[1], source_uri=r[2], title=r[3], content_hash=r[4],
                         kind=r[5], n_chunks=r[6], ingested_at=r[7])
            for r in rows
        ]

    def get_parent(self, parent_id: str, namespace: str = "") -> str | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT text FROM parents WHERE namespace=? AND parent_id=?", (namespace, parent_id)
            ).fetchone()
        return row[0] if row else None

    def fetch(self, ids: Sequence[str], namespace: str = "") -> dict[str, dict]:
        snap = self._snapshot(namespace)
        pos = {i: n for n, i in enumerate(snap.ids)}
        return {i: snap.metadata[pos[i]] for i in ids if i in pos}

    def corpus_stats(self, namespace: str = "") -> CorpusStats:
        return self._snapshot(namespace).stats

    def corpus_size(self, namespace: str = "") -> tuple[int, int]:
        """(documents, total tokens) for BM25 length normalisation, without loading the search snapshot, which
        ingestion would otherwise rebuild after every document."""
        with self._lock:
            row = self._conn.execute(
                "SELECT n_docs, total_len FROM bm25_totals WHERE namespace=?", (namespace,)
            ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def namespaces(self) -> dict[str, dict[str, int]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT namespace, COUNT(*), SUM(n_chunks) FROM documents GROUP BY namespace"
            ).fetchall()
        return {r[0]: {"documents": r[1], "chunks": int(r[2] or 0)} for r in rows}

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total

    # --- search ---------------------------------------------------------------------------------------------

    def query_dense(self, vector: np.ndarray, top_k: int, flt: dict | None = None, namespace: str = "") -> list[Match]:
        snap = self._snapshot(namespace)
        if not snap.ids or top_k <= 0:
            return []
        scores = snap.dense @ np.asarray(vector, dtype=np.float32)
        return self._top(snap, scores, top_k, flt)

    def query_sparse(
        self, vector: SparseVector, top_k: int, flt: dict | None = None, namespace: str = ""
    ) -> list[Match]:
        snap = self._snapshot(namespace)
        if not snap.ids or top_k <= 0 or not vector.indices:
            return []
        scores = np.zeros(len(snap.ids), dtype=np.float32)
        q_terms = np.asarray(vector.indices, dtype=np.uint32)
        pos = np.searchsorted(snap.terms, q_terms)
        for p, t, w in zip(pos.tolist(), q_terms.tolist(), vector.values, strict=True):
            if p < len(snap.terms) and snap.terms[p] == t:
                s, e = snap.starts[p], snap.ends[p]
                scores[snap.rows[s:e]] += w * snap.vals[s:e]
        # Pinecone's sparse search only returns records that share a term with the query.
        scores[scores <= 0] = -np.inf
        return self._top(snap, scores, top_k, flt)

    def _top(self, snap: _Snapshot, scores: np.ndarray, top_k: int, flt: dict | None) -> list[Match]:
        if flt:
            mask = np.fromiter((filters.matches(flt, md) for md in snap.metadata), dtype=bool,
                               count=len(snap.metadata))
            scores = np.where(mask, scores, -np.inf)
        k = min(top_k, len(scores))
        cand = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        # Ties broken by id so the same index and query always give the same order.
        order = sorted(cand.tolist(), key=lambda i: (-float(scores[i]), snap.ids[i]))
        return [
            Match(id=snap.ids[i], score=float(scores[i]), metadata=snap.metadata[i])
            for i in order
            if np.isfinite(scores[i])
        ]

    def _generation(self) -> int:
        row = self._conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        return int(row[0]) if row else 0

    def _snapshot(self, namespace: str) -> _Snapshot:
        with self._lock:
            try:
                gen = self._generation()
                snap = self._snapshots.get(namespace)
                if snap is not None and snap.generation == gen:
                    return snap
                snap = self._load(namespace, gen)
            except sqlite3.DatabaseError as exc:
                raise self._translate(exc) from None
            self._snapshots[namespace] = snap
            return snap

    def _load(self, namespace: str, gen: int) -> _Snapshot:
        rows = self._conn.execute(
            "SELECT id, dense, sparse_idx, sparse_val, metadata FROM records WHERE namespace=? ORDER BY id",
            (namespace,),
        ).fetchall()
        ids = [r[0] for r in rows]
        metadata = [json.loads(r[4]) for r in rows]
        dim_row = self._conn.execute("SELECT value FROM meta WHERE key='dim'").fetchone()
        dim = int(dim_row[0]) if dim_row else 0
        dense = (
            np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
            if rows else np.zeros((0, dim), dtype=np.float32)
        )
        idx_parts = [np.frombuffer(r[2], dtype=np.uint32) for r in rows]
        val_parts = [np.frombuffer(r[3], dtype=np.float32) for r in rows]
        lens = np.array([len(p) for p in idx_parts], dtype=np.int64)
        cols = np.concatenate(idx_parts) if idx_parts else np.zeros(0, np.uint32)
        vals = np.concatenate(val_parts) if val_parts else np.zeros(0, np.float32)
        row_ids = np.repeat(np.arange(len(rows), dtype=np.int32), lens)
        order = np.argsort(cols, kind="stable")
        cols, vals, row_ids = cols[order], vals[order], row_ids[order]
        terms, starts = np.unique(cols, return_index=True)
        ends = np.append(starts[1:], len(cols))
        stats = CorpusStats()
        tot = self._conn.execute(
            "SELECT n_docs, total_len FROM bm25_totals WHERE namespace=?", (namespace,)
        ).fetchone()
        if tot:
            stats.n_docs, stats.total_len = int(tot[0]), int(tot[1])
            stats.df = dict(self._conn.execute("SELECT term, df FROM bm25_df WHERE namespace=?", (namespace,)))
        return _Snapshot(gen, ids, metadata, dense, terms, starts, ends, row_ids, vals, stats)


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception (including KeyboardInterrupt)."""

    def __init__(self, index: SqliteIndex) -> None:
        self.index = index

    def __enter__(self):
        try:
            self.index._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            raise self.index._translate(exc) from None
        return self

    def __exit__(self, exc_type, exc, tb):
        conn = self.index._conn
        if exc_type is None:
            try:
                conn.execute("COMMIT")
            except sqlite3.DatabaseError as err:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise self.index._translate(err) from None
        else:
            if conn.in_transaction:  # SQLite has already rolled back after SQLITE_FULL and some I/O errors
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):  # a full disk or a lock mid-transaction: a message, not a traceback
                raise self.index._translate(exc) from None
        return False
