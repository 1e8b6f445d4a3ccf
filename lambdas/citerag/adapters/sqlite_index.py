"""The embedded index: one SQLite file that reproduces Pinecone's data model with exact search.

Records (dense + sparse + metadata) live in namespaces; a document's records are replaced in one
transaction, so an interrupted ingest leaves the previous state intact. BM25 totals and parent texts (full
pages/sections, compressed) are kept in the same file and change in the same transactions. Dense and sparse vectors
are the exception: each is kept once, in the mapped files beside the database (the vector file and the BM25
postings, written and flushed before the transaction that adds its record commits); SQLite keeps the record's id,
length and metadata (what all chunks of a document share once, in its `documents` row).

Searches scan a read structure derived from the file (citerag.adapters.index_store): memory-mapped vectors,
BM25 postings and columnar metadata beside it, which every commit extends (the rows it wrote, tombstones for the
rows it deleted) instead of reloading, and which a new process maps instead of rebuilding. Filters become one
numpy mask per query over the metadata columns; texts and the rest of the metadata are read from SQLite for the
returned hits only. Each record has a `seq` (AUTOINCREMENT, never reused) that ties the two together, and each
namespace a generation that says whether the read structure is current.
"""

from __future__ import annotations

import errno
import json
import logging
import shutil
import sqlite3
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from citerag.adapters.index_store import METADATA_SQL as _METADATA
from citerag.adapters.index_store import PARENT_JOIN_SQL as _PARENT_JOIN
from citerag.adapters.index_store import (
    VECTOR_TYPES,
    Delta,
    IndexStore,
    Snapshot,
    Source,
    assemble_metadata,
    compress_text,
    decompress_text,
    scan,
)
from citerag.adapters.index_store import WITH_PARENT_SQL as _WITH_PARENT
from citerag.errors import DiskFullError, IndexError_
from citerag.search import filters
from citerag.search.ports import DocumentInfo, Match, Record, VectorProfile
from citerag.search.sparse import CorpusStats, SparseVector

# 4: sparse vectors only in the postings, what a document's chunks share kept once, page texts compressed (3 kept
# each sparse vector in records too; 2 each dense vector)
SCHEMA_VERSION = 4
log = logging.getLogger(__name__)

# Schema 1's records, as schema 2 had them: what an upgrade from 1 goes through.
_RECORDS_V2 = """
CREATE TABLE IF NOT EXISTS records (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL, id TEXT NOT NULL, doc_id TEXT NOT NULL,
    dense BLOB NOT NULL, sparse_idx BLOB NOT NULL, sparse_val BLOB NOT NULL, length INTEGER NOT NULL,
    metadata TEXT NOT NULL, UNIQUE (namespace, id));
CREATE INDEX IF NOT EXISTS records_doc ON records (namespace, doc_id);
"""
# A document's records have consecutive sequence numbers (first_seq..last_seq: one replace writes them), which is
# how a replace finds them without an index; parents_doc keeps a replace independent of the index's size; `removed`
# lists deleted rows per generation so a read structure that missed a commit catches up without a rebuild.
_TABLES = """
CREATE TABLE IF NOT EXISTS documents (
    docno INTEGER PRIMARY KEY, namespace TEXT NOT NULL, doc_id TEXT NOT NULL, source_uri TEXT NOT NULL,
    title TEXT NOT NULL, content_hash TEXT NOT NULL, kind TEXT NOT NULL, n_chunks INTEGER NOT NULL,
    ingested_at TEXT NOT NULL, file_hash TEXT NOT NULL DEFAULT '', first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL, shared TEXT NOT NULL, UNIQUE (namespace, doc_id));
CREATE INDEX IF NOT EXISTS documents_uri ON documents (namespace, source_uri);
CREATE TABLE IF NOT EXISTS records (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL, id TEXT NOT NULL, docno INTEGER NOT NULL,
    length INTEGER NOT NULL, metadata TEXT NOT NULL, UNIQUE (namespace, id));
CREATE TABLE IF NOT EXISTS parents (
    namespace TEXT NOT NULL, parent_id TEXT NOT NULL, docno INTEGER NOT NULL, text BLOB NOT NULL,
    PRIMARY KEY (namespace, parent_id));
CREATE INDEX IF NOT EXISTS parents_doc ON parents (docno);
"""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS bm25_totals (
    namespace TEXT PRIMARY KEY, n_docs INTEGER NOT NULL, total_len INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS ns_state (
    namespace TEXT PRIMARY KEY, generation INTEGER NOT NULL, pruned_through INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS removed (namespace TEXT NOT NULL, generation INTEGER NOT NULL, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS removed_gen ON removed (namespace, generation);
"""
_HITS_KEPT = 20_000  # parsed metadata of recently returned records (a few KB each)
_MASKS_KEPT = 4
# A filtered exact search scores only the allowed rows when they are at most this share of the namespace (gathering
# rows costs more per row than the contiguous scan; below this share it costs less in all).
_SUBSET_SCAN = 0.3  # filter masks cached per index: one query's dense and sparse halves share one, a session reuses it


class SqliteIndex:
    """Embedded VectorIndex. Safe to share between threads of one process, and between processes."""

    def __init__(self, path: Path, *, dim: int | None = None, model_id: str | None = None, timeout: float = 5.0,
                 ann: str = "exact", ann_ef_search: int = 64, vectors: str = "float32", resident: str = "auto"):
        """`ann="hnsw"`: dense searches of namespaces with at least `ann.MIN_ROWS` rows go through an HNSW graph
        (citerag.adapters.ann) instead of the exact scan. `vectors`: the vector file's type of a new index
        (float32 or float16; an existing index keeps its own). `resident`: when the exact scan reads a copy of the
        vectors in this process's memory instead of the mapped file: "auto" from a namespace's second dense search
        on (a one-shot search reads the mapping), "always", or "never" (a float16 index is always widened into
        memory)."""
        if vectors not in VECTOR_TYPES:
            raise IndexError_(f"unknown vector type {vectors!r}; use float32 or float16")
        if resident not in ("auto", "always", "never"):
            raise IndexError_(f"unknown resident option {resident!r}; use auto, always or never")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._timeout = timeout
        self._lock = threading.RLock()  # the write connection
        self._snap_lock = threading.Lock()
        self._snapshots: dict[str, Snapshot] = {}
        self._stats: dict[str, tuple[int, CorpusStats]] = {}
        self._masks: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._hit_cache: dict[int, tuple[str, dict]] = {}
        self._hit_lock = threading.Lock()
        self._mask_lock = threading.Lock()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._resident = resident
        self._dense_searches: dict[str, int] = {}
        if self.path.exists() and index_file_state(self.path) == "other":
            # Opening would write this index's tables into another program's database (or fail on a document).
            raise IndexError_(not_an_index(self.path))
        try:
            self._conn = sqlite3.connect(str(self.path), timeout=timeout, check_same_thread=False,
                                         isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
            legacy = self._check_meta(dim, model_id, vectors)
            self._source = Source(self.path, timeout)
        except sqlite3.DatabaseError as exc:
            raise self._translate(exc) from None
        self._store = IndexStore(self.path, self._source)
        self._store.vectors = self.vectors
        if legacy:
            self._migrate_v4()
        self._ann = None
        if ann == "hnsw":
            from citerag.adapters.ann import HnswDense

            self._ann = HnswDense(self._store, ef_search=ann_ef_search)
        elif ann != "exact":
            raise IndexError_(f"unknown approximate search {ann!r}; use exact or hnsw")

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

    def _check_meta(self, dim: int | None, model_id: str | None, vectors: str) -> bool:
        """Create a new index's tables, or check an existing one's; True when it is of an older schema that
        _migrate_v4 upgrades once the read structure can be built."""
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        rows = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        if "records" not in tables:  # a new index
            with self._tx():
                self._create(_TABLES)
                for key, value in (("schema_version", str(SCHEMA_VERSION)), ("generation", "0"),
                                   ("vectors", vectors), ("db_id", uuid.uuid4().hex)):
                    # db_id ties the read structure to this database: a new file at the same path never reuses it.
                    self._conn.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)", (key, value))
            rows = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        version = int(rows.get("schema_version", 3))
        columns = {r[1] for r in self._conn.execute("PRAGMA table_info(documents)")}
        if "file_hash" not in columns:  # an index from before files' hashes were kept: they read as unknown
            with self._tx():
                self._conn.execute("ALTER TABLE documents ADD COLUMN file_hash TEXT NOT NULL DEFAULT ''")
        if version == 1:
            self._migrate_v1()
        elif version not in (2, 3, SCHEMA_VERSION):
            raise IndexError_(
                f"the index {self.path} has schema version {version}; this citerag reads {SCHEMA_VERSION} (and "
                f"upgrades 1-3). Build it again with this citerag: citerag reset --index {self.path}, then "
                f"citerag ingest PATH --index {self.path}"
            )
        if rows.get("dim") and dim and int(rows["dim"]) != dim:
            raise IndexError_(
                f"the index {self.path} holds {rows['dim']}-dimensional vectors from {rows.get('model_id')}, "
                f"but the configured embedder {model_id} makes {dim}; use another --index or the same embedder"
            )
        if "db_id" not in rows or (dim and "dim" not in rows):  # (no write otherwise: another may hold the lock)
            with self._tx():
                self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('db_id', ?)", (uuid.uuid4().hex,))
                if dim and "dim" not in rows:
                    self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('dim', ?)", (str(dim),))
                    self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('model_id', ?)", (model_id or "",))
        meta = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        self._db_id = meta["db_id"]
        self._dim = int(meta.get("dim", 0))
        # An index keeps the vector type it was made with (an older one: float32).
        self.vectors = meta.get("vectors", "float32")
        return version < SCHEMA_VERSION

    def _create(self, script: str) -> None:
        # Statement by statement: executescript would commit the transaction this runs in.
        for stmt in script.split(";"):
            if stmt.strip():
                self._conn.execute(stmt)

    def _migrate_v1(self) -> None:
        """Schema 1 (records keyed by (namespace, id), one generation for the file) -> 2, in one transaction."""
        with self._tx():
            self._conn.execute("ALTER TABLE records RENAME TO records_v1")
            self._conn.execute("DROP INDEX IF EXISTS records_doc")
            self._create(_RECORDS_V2)
            self._conn.execute(
                "INSERT INTO records (namespace, id, doc_id, dense, sparse_idx, sparse_val, length, metadata) "
                "SELECT namespace, id, doc_id, dense, sparse_idx, sparse_val, length, metadata FROM records_v1 "
                "ORDER BY namespace, id")
            self._conn.execute("DROP TABLE records_v1")
            self._conn.execute("INSERT OR IGNORE INTO ns_state (namespace, generation) "
                               "SELECT DISTINCT namespace, 1 FROM documents")
            self._conn.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('db_id', ?)", (uuid.uuid4().hex,))

    def _migrate_v4(self) -> None:
        """Schemas 2 and 3 -> 4, in place: every namespace's read structure is rebuilt from what SQLite holds (the
        sparse vectors, and schema 2's dense vectors) and the previous vector files, then SQLite's tables are
        rewritten without the vectors, with page texts compressed, and the file compacted. In one write
        transaction, so no commit can add a row between the two; an interrupted upgrade leaves the index as it
        was."""
        self._source.legacy = True
        try:
            with self._lock, self._tx():
                version = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
                if version is not None and int(version[0]) >= SCHEMA_VERSION:
                    return  # another process upgraded it since this one read the version
                namespaces = [r[0] for r in self._conn.execute("SELECT DISTINCT namespace FROM records")]
                for ns in namespaces:
                    with self._store.locked(ns):
                        self._store.sync(ns, self._db_id, self._dim)
                self._rewrite_tables()
                self._conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
        except OSError as exc:
            raise IndexError_(f"the index {self.path} could not be upgraded to this citerag's format: "
                              f"{exc.strerror or exc}") from None
        finally:
            self._source.legacy = False
        # The previous format's files: no process of the previous release can read the upgraded database anyway.
        for ns in namespaces:
            self._store.drop_older_epochs(ns, self._db_id, self._dim)
        self._vacuum()

    def _rewrite_tables(self) -> None:
        conn = self._conn
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name='records'").fetchone()
        last_seq = int(row[0]) if row else 0
        for table in ("documents", "records", "parents"):
            conn.execute(f"ALTER TABLE {table} RENAME TO old_{table}")
        for index in ("documents_uri", "parents_doc"):  # names the new tables' indexes take (records_doc, kept
            conn.execute(f"DROP INDEX IF EXISTS {index}")  # until its table goes, finds each document's records)
        self._create(_TABLES)
        conn.execute(
            "INSERT INTO documents (namespace, doc_id, source_uri, title, content_hash, kind, n_chunks, ingested_at, "
            "file_hash, first_seq, last_seq, shared) SELECT d.namespace, d.doc_id, d.source_uri, d.title, "
            "d.content_hash, d.kind, d.n_chunks, d.ingested_at, d.file_hash, coalesce(min(r.seq), 0), "
            "coalesce(max(r.seq), -1), '{}' FROM old_documents d LEFT JOIN old_records r ON r.namespace = d.namespace "
            "AND r.doc_id = d.doc_id GROUP BY d.namespace, d.doc_id")
        # Document by document: what its records share goes to its row, as a replace would have written it.
        cur = conn.execute("SELECT d.docno, r.seq, r.namespace, r.id, r.length, r.metadata FROM old_records r JOIN "
                           "documents d ON d.namespace = r.namespace AND d.doc_id = r.doc_id ORDER BY d.docno, r.seq")
        pending: list[tuple] = []

        def flush() -> None:
            stored = [json.loads(row[5]) for row in pending]
            shared = _shared(stored)
            conn.execute("UPDATE documents SET shared=? WHERE docno=?", (_compact(shared), pending[0][0]))
            conn.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?)",
                             [(seq, ns, rid, docno, length, _compact({k: v for k, v in md.items() if k not in shared}))
                              for (docno, seq, ns, rid, length, _), md in zip(pending, stored, strict=True)])
            pending.clear()

        while batch := cur.fetchmany(5000):
            for row in batch:
                if pending and row[0] != pending[0][0]:
                    flush()
                pending.append(row)
        if pending:
            flush()
        cur = conn.execute("SELECT p.namespace, p.parent_id, d.docno, p.text FROM old_parents p JOIN documents d ON "
                           "d.namespace = p.namespace AND d.doc_id = p.doc_id")
        while batch := cur.fetchmany(1000):
            conn.executemany("INSERT INTO parents VALUES (?, ?, ?, ?)",
                             [(ns, pid, docno, compress_text(text)) for ns, pid, docno, text in batch])
        for table in ("old_documents", "old_records", "old_parents", "bm25_df"):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        # Sequence numbers are never reused (the read structure names rows by them), deleted last rows included.
        conn.execute("DELETE FROM sqlite_sequence WHERE name='records'")
        conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('records', max(?, coalesce((SELECT max(seq) "
                     "FROM records), 0)))", (last_seq,))

    def _vacuum(self) -> None:
        try:
            self._conn.execute("VACUUM")  # give the freed pages back to the file system
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # VACUUM wrote the compacted file to the WAL
        except sqlite3.OperationalError as exc:  # another process has it open: the pages are reused by later writes
            log.info("the index %s was not compacted (%s)", self.path, exc)

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
            self._source.close()
            for conn in self._readers:
                conn.close()
            self._readers.clear()

    def _reader(self) -> sqlite3.Connection:
        """This thread's read connection: searches and lookups never wait for a write transaction."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(str(self.path), timeout=self._timeout, check_same_thread=False,
                                   isolation_level=None)
            self._local.conn = conn
            self._readers.append(conn)
        return conn

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        try:
            return self._reader().execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._translate(exc) from None

    # --- writes ---------------------------------------------------------------------------------------------

    def replace_document(
        self, info: DocumentInfo, records: Sequence[Record], parents: dict[str, str], namespace: str = ""
    ) -> None:
        self.replace_documents([(info, records, parents)], namespace)

    def replace_documents(
        self, batch: Sequence[tuple[DocumentInfo, Sequence[Record], dict[str, str]]], namespace: str = ""
    ) -> None:
        """Several documents in one transaction (bulk loads such as benchmark corpora)."""
        with self._lock:
            with self._tx():
                write = _Write(self, namespace)
                for info, records, parents in batch:
                    self._replace_locked(info, records, parents, namespace, write)
                self._bump(namespace, write)
                self._stage(namespace, write)
            self._publish(namespace, write)

    def _replace_locked(
        self, info: DocumentInfo, records: Sequence[Record], parents: dict[str, str], namespace: str,
        write: _Write | None = None,
    ) -> None:
        write = write or _Write(self, namespace)
        self._delete_locked(info.doc_id, namespace, write)
        cursors: dict[str, int] = {}
        stored = [_text_as_offsets(r.metadata, parents, cursors) for r in records]
        # What SQLite stores is what filters see: the JSON, read back (tuples become lists; the text, which no
        # column holds, may be offsets).
        stored = json.loads(json.dumps(stored, ensure_ascii=False))
        shared = _shared(stored)
        seqs = [write.next_seq() for _ in records]
        if records and not self._dim:
            self._dim = len(np.asarray(records[0].values).reshape(-1))
            self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('dim', ?)", (str(self._dim),))
        docno = self._conn.execute(
            "INSERT INTO documents (namespace, doc_id, source_uri, title, content_hash, kind, n_chunks, ingested_at, "
            "file_hash, first_seq, last_seq, shared) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (namespace, info.doc_id, info.source_uri, info.title, info.content_hash, info.kind, len(records),
             info.ingested_at, info.file_hash, seqs[0] if seqs else 0, seqs[-1] if seqs else -1,
             _compact(shared)),
        ).lastrowid
        rows = []
        total_len = 0
        for seq, r, md in zip(seqs, records, stored, strict=True):
            own = {k: v for k, v in md.items() if k not in shared}
            rows.append((seq, namespace, r.id, docno, r.length, _compact(own)))
            # The vector and the sparse vector are written to the mapped files before the commit (_stage).
            write.delta.add(seq, r.id, np.asarray(r.values, np.float32), np.asarray(r.sparse.indices, np.uint32),
                            np.asarray(r.sparse.values, np.float32), md)
            total_len += r.length
        self._conn.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?)", rows)
        self._conn.executemany(
            "INSERT INTO parents VALUES (?, ?, ?, ?)",
            [(namespace, pid, docno, compress_text(text)) for pid, text in parents.items()],
        )
        self._apply_stats(namespace, len(records), total_len, sign=1)

    def delete_document(self, doc_id: str, namespace: str = "") -> int:
        with self._lock:
            with self._tx():
                write = _Write(self, namespace)
                n = self._delete_locked(doc_id, namespace, write)
                self._bump(namespace, write)
            self._publish(namespace, write)
            return n

    def _delete_locked(self, doc_id: str, namespace: str, write: _Write | None = None) -> int:
        doc = self._conn.execute("SELECT docno, first_seq, last_seq FROM documents WHERE namespace=? AND doc_id=?",
                                 (namespace, doc_id)).fetchone()
        if doc is None:
            return 0
        docno, first, last = doc
        found = self._conn.execute("SELECT seq, length FROM records WHERE seq BETWEEN ? AND ? AND docno=?",
                                   (first, last, docno)).fetchall()
        if found:
            self._apply_stats(namespace, len(found), sum(length for _, length in found), sign=-1)
            if write is not None:
                write.removed([seq for seq, _ in found])
        self._conn.execute("DELETE FROM records WHERE seq BETWEEN ? AND ? AND docno=?", (first, last, docno))
        self._conn.execute("DELETE FROM parents WHERE docno=?", (docno,))
        self._conn.execute("DELETE FROM documents WHERE docno=?", (docno,))
        return len(found)

    def _apply_stats(self, namespace: str, n_docs: int, total_len: int, sign: int) -> None:
        # Document frequencies are not kept here: they are counted from the postings when a query asks.
        self._conn.execute(
            "INSERT INTO bm25_totals VALUES (?, ?, ?) ON CONFLICT(namespace) DO UPDATE SET "
            "n_docs = max(0, n_docs + excluded.n_docs), total_len = max(0, total_len + excluded.total_len)",
            (namespace, sign * n_docs, sign * total_len),
        )

    def _bump(self, namespace: str, write: _Write) -> None:
        self._conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")
        self._conn.execute(
            "INSERT INTO ns_state (namespace, generation) VALUES (?, ?) "
            "ON CONFLICT(namespace) DO UPDATE SET generation = excluded.generation", (namespace, write.generation))
        if write.delta.dead_seqs:
            self._conn.executemany("INSERT INTO removed VALUES (?, ?, ?)",
                                   [(namespace, write.generation, s) for s in write.delta.dead_seqs])
        if write.persisted:
            # Deletions the read structure already has are needed by nobody; a structure older than the last one
            # dropped here cannot catch up from the log any more (it is rebuilt).
            self._conn.execute(
                "UPDATE ns_state SET pruned_through=max(pruned_through, coalesce((SELECT max(generation) FROM removed "
                "WHERE namespace=?1 AND generation<=?2), 0)) WHERE namespace=?1", (namespace, write.persisted))
            self._conn.execute("DELETE FROM removed WHERE namespace=? AND generation<=?", (namespace, write.persisted))

    def _stage(self, namespace: str, write: _Write) -> None:
        """Write the transaction's vectors to the mapped file before it commits: after the commit they are their
        rows' only copy. A failure here rolls the transaction back."""
        try:
            self._store.stage(namespace, self._db_id, self._dim, write.delta)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise DiskFullError(f"the disk holding {self.path} is full; free some space and run the command "
                                    "again (every document that finished is kept)") from None
            raise IndexError_(f"the index {self.path} cannot be written: {exc.strerror or exc}") from None

    def _publish(self, namespace: str, write: _Write) -> None:
        """After the commit: append what it wrote to the read structure (no SQLite read when that structure was
        current before the commit). A failure here loses nothing: the next search catches up from SQLite."""
        try:
            with self._store.locked(namespace):
                self._store.sync(namespace, self._db_id, self._dim, delta=write.delta, delta_from=write.generation - 1,
                                 generation=write.generation)
        except (OSError, sqlite3.Error, ValueError, IndexError_) as exc:
            log.warning("the read structure of %s was not updated after a commit (%s); the next search catches up",
                        self.path, exc)

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
        rows = self._read(
            "SELECT namespace, doc_id, source_uri, title, content_hash, kind, n_chunks, ingested_at, file_hash "
            f"FROM documents {where}", args
        )
        return [
            DocumentInfo(namespace=r[0], doc_id=r[1], source_uri=r[2], title=r[3], content_hash=r[4],
                         kind=r[5], n_chunks=r[6], ingested_at=r[7], file_hash=r[8])
            for r in rows
        ]

    def document_metadata(self, doc_id: str, namespace: str = "") -> dict:
        """One chunk's metadata, for what every chunk of the document shares (tenant, groups, --meta)."""
        rows = self._document_rows(doc_id, namespace, limit=1)
        return assemble_metadata(*rows[0][1:]) if rows else {}

    def _document_rows(self, doc_id: str, namespace: str, limit: int = -1) -> list[tuple]:
        """(seq, the stored parts of its metadata) of a document's records, in order."""
        return self._read(
            f"SELECT r.seq, {_METADATA} FROM documents d JOIN records r ON r.seq BETWEEN d.first_seq AND d.last_seq "
            f"AND r.docno = d.docno {_PARENT_JOIN} WHERE d.namespace=? AND d.doc_id=? ORDER BY r.seq LIMIT ?",
            (namespace, doc_id, limit))

    def document_parts(self, doc_id: str, namespace: str = "") -> list[tuple[int | None, str | None, str]]:
        """(page, section, text) of every page or section of a document, in document order: the text search cites,
        as it was indexed (the file on disk may have changed since)."""
        parts: dict[str, tuple] = {}
        pages: dict[str, str] = {}
        for _, own, shared, pid, blob in self._document_rows(doc_id, namespace):
            if pid is None:
                continue
            md = assemble_metadata(own, shared, None, None)
            first = md.get("chunk_index")
            have = parts.get(pid)
            if have is None or (first is not None and (have[0] is None or first < have[0])):
                parts[pid] = (first, md.get("page"), md.get("section"))
            if pid not in pages:
                pages[pid] = decompress_text(blob)
        order = sorted(parts, key=lambda p: (parts[p][0] is not None, parts[p][0] or 0))
        return [(parts[p][1], parts[p][2], pages[p]) for p in order]

    def get_parent(self, parent_id: str, namespace: str = "") -> str | None:
        rows = self._read("SELECT text FROM parents WHERE namespace=? AND parent_id=?", (namespace, parent_id))
        return decompress_text(rows[0][0]) if rows else None

    def fetch(self, ids: Sequence[str], namespace: str = "") -> dict[str, dict]:
        out: dict[str, dict] = {}
        ids = list(ids)
        pages: dict[str, str] = {}
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            for rid, *stored in self._read(
                f"SELECT r.id, {_METADATA} FROM {_WITH_PARENT} WHERE r.namespace=? AND r.id IN "
                f"({','.join('?' * len(part))})",
                (namespace, *part),
            ):
                out[rid] = assemble_metadata(*stored, pages)
        return out

    def metadata_keys(self, namespace: str = "") -> list[str]:
        """Every metadata key the namespace's records have (what a filter can test), from the read structure."""
        return self._snapshot(namespace).keys

    def corpus_stats(self, namespace: str = "") -> CorpusStats:
        gen = self._generation(namespace)
        cached = self._stats.get(namespace)
        if cached is not None and cached[0] == gen:
            return cached[1]
        n_docs, total_len = self.corpus_size(namespace)
        # Document frequencies are counted from the postings per term when a query needs them, not loaded: at a
        # million chunks the vocabulary is as large as the index.
        stats = CorpusStats(n_docs=n_docs, total_len=total_len, df=_DocFreqs(self, namespace))  # type: ignore[arg-type]
        self._stats[namespace] = (gen, stats)
        return stats

    def vector_profile(self, namespace: str = "") -> VectorProfile | None:
        """Where the namespace's vectors point (`VectorProfile`), once per generation."""
        return self._snapshot(namespace).profile()

    def corpus_size(self, namespace: str = "") -> tuple[int, int]:
        """(documents, total tokens) for BM25 length normalisation, without loading the search snapshot, which
        ingestion would otherwise rebuild after every document."""
        rows = self._read("SELECT n_docs, total_len FROM bm25_totals WHERE namespace=?", (namespace,))
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    def namespaces(self) -> dict[str, dict[str, int]]:
        rows = self._read("SELECT namespace, COUNT(*), SUM(n_chunks) FROM documents GROUP BY namespace")
        return {r[0]: {"documents": r[1], "chunks": int(r[2] or 0)} for r in rows}

    def size_bytes(self) -> int:
        """The SQLite file (with its WAL) and the read structure beside it."""
        total = 0
        for p in index_files(self.path):
            if p.is_dir():
                total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
            elif p.exists():
                total += p.stat().st_size
        return total

    def prepare_search(self) -> list[dict]:
        """What ingest does once its documents are written: with the HNSW option, build or extend each large
        namespace's graph (a search never builds one; it scans the rows the graph does not cover). Returns what was
        built: namespace, rows, rows added, seconds."""
        if self._ann is None:
            return []
        built = []
        for (ns,) in self._read("SELECT namespace FROM ns_state ORDER BY namespace"):
            snap = self._snapshot(ns)
            if snap.n >= _ann_min_rows():
                done = self._ann.build(snap)
                if done:
                    built.append({"namespace": ns, **done})
        return built

    # --- search ---------------------------------------------------------------------------------------------

    def query_dense(self, vector: np.ndarray, top_k: int, flt: dict | None = None, namespace: str = "") -> list[Match]:
        snap = self._snapshot(namespace)
        if not snap.n or top_k <= 0:
            return []
        q = np.asarray(vector, dtype=np.float32)
        if self._ann is not None and snap.n >= _ann_min_rows():
            rows, scores = self._ann.search(snap, q, top_k, self._allowed(snap, flt))
            return self._best(snap, rows, scores, top_k)
        allowed = self._allowed(snap, flt)
        dense = self._dense(snap)
        if allowed is not None:
            rows = np.flatnonzero(allowed)
            if len(rows) <= _SUBSET_SCAN * snap.n:
                # A selective filter (a tenant's share): only its rows are read and scored.
                return self._best(snap, rows, scan(dense[rows], q) if len(rows) else rows, top_k)
        return self._top(snap, scan(dense, q), top_k, allowed)

    def _dense(self, snap: Snapshot) -> np.ndarray:
        """The vectors the exact scan reads: from a namespace's second search in this process on ("auto"), its own
        copy in memory, which the kernel backs with huge pages (a process that searches once, such as `citerag
        search`, reads the mapped file and copies nothing)."""
        if self._resident != "never":
            n = self._dense_searches[snap.namespace] = self._dense_searches.get(snap.namespace, 0) + 1
            if self._resident == "always" or n >= 2:
                snap.make_resident()
        return snap.dense

    def query_sparse(
        self, vector: SparseVector, top_k: int, flt: dict | None = None, namespace: str = ""
    ) -> list[Match]:
        snap = self._snapshot(namespace)
        if not snap.n or top_k <= 0 or not vector.indices:
            return []
        scores = np.zeros(snap.n, dtype=np.float32)
        q_terms = np.asarray(vector.indices, dtype=np.uint32)
        found = []
        for seg in snap.postings:
            pos = np.searchsorted(seg.terms, q_terms)
            hit = pos < len(seg.terms)
            hit[hit] = seg.terms[pos[hit]] == q_terms[hit]
            found.append((seg, pos, hit))
        # Term by term in the query's order, as one float32 sum per row: the same scores as one postings list.
        for i, w in enumerate(vector.values):
            for seg, pos, hit in found:
                if hit[i]:
                    s, e = seg.starts[pos[i]], seg.starts[pos[i] + 1]
                    scores[seg.rows[s:e]] += w * seg.vals[s:e]
        # Pinecone's sparse search only returns records that share a term with the query: those are the candidates
        # (a few percent of the rows), so ranking costs what the query's postings cost.
        rows = np.flatnonzero(scores > 0)
        allowed = self._allowed(snap, flt)
        if allowed is not None:
            rows = rows[allowed[rows]]
        return self._best(snap, rows, scores[rows], top_k)

    def _allowed(self, snap: Snapshot, flt: dict | None) -> np.ndarray | None:
        """Rows a search may return: live ones that pass the filter (None: all of them)."""
        if not flt:
            return snap.live if snap.manifest["n_dead"] else None
        key = (snap.namespace, snap.epoch, snap.generation, json.dumps(flt, sort_keys=True, default=str))
        with self._mask_lock:
            mask = self._masks.get(key)
            if mask is None:
                mask = filters.compile_mask(filters.validate(flt), snap.column, snap.n) & snap.live
                self._masks[key] = mask
                while len(self._masks) > _MASKS_KEPT:
                    self._masks.popitem(last=False)
            else:
                self._masks.move_to_end(key)
        return mask

    def _top(self, snap: Snapshot, scores: np.ndarray, top_k: int, allowed: np.ndarray | None) -> list[Match]:
        if allowed is not None:
            scores[~allowed] = -np.inf
        n = len(scores)
        k = min(top_k, n)
        if k >= n:
            cand = np.arange(n)
            runner_up = None
        else:
            # The top k and the best row left out: a tie across the cut is seen without another pass over n scores.
            part = np.argpartition(scores, n - k - 1)[n - k - 1:]
            cand, runner_up = part[1:], scores[part[0]]
        if allowed is not None:
            cand = cand[np.isfinite(scores[cand])]
        if runner_up is not None and len(cand) == k and runner_up >= scores[cand].min():
            cand = self._ties_by_id(snap, scores, cand, k)
        return self._matches(snap, cand, scores[cand])

    def _best(self, snap: Snapshot, rows: np.ndarray, scores: np.ndarray, top_k: int) -> list[Match]:
        """The top k of candidate rows (an approximate search's), ties at the k-th score by id."""
        k = min(top_k, len(rows))
        if k < len(rows):
            n = len(rows)
            part = np.argpartition(scores, n - k)[n - k:]
            kth = scores[part].min()
            inside, tied = part[scores[part] > kth], np.flatnonzero(scores == kth)
            if len(tied) == len(part) - len(inside):
                pick = part
            else:
                ids = self._ids(snap, rows[tied])
                chosen = [t for _, t in sorted(zip(ids, tied.tolist(), strict=True))[: k - len(inside)]]
                pick = np.concatenate([inside, np.asarray(chosen, dtype=np.int64)])
            rows, scores = rows[pick], scores[pick]
        return self._matches(snap, rows, scores)

    def _matches(self, snap: Snapshot, rows: np.ndarray, scores: np.ndarray) -> list[Match]:
        """Ranked matches whose metadata is read when first asked for (load_metadata reads many at once): a
        retriever ranks a hundred candidates, a search shows a few of them."""
        ids = snap.ids(rows)
        seqs = snap.seq[rows].tolist()
        # Ties broken by id so the same index and query always give the same order.
        order = sorted(range(len(ids)), key=lambda i: (-float(scores[i]), ids[i]))
        return [_Deferred.of(self, ids[i], float(scores[i]), seqs[i]) for i in order]

    def load_metadata(self, matches: Sequence[Match]) -> set[str]:
        """Read the metadata of these matches (this index's) in one query. Returns the ids of those a commit deleted
        since they were ranked (their metadata is empty): a search leaves them out."""
        deferred = [m for m in matches if isinstance(m, _Deferred) and "metadata" not in m.__dict__]
        if not deferred:
            return set()
        found = self._metadata([m.__dict__["_seq"] for m in deferred])
        gone = set()
        for m in deferred:
            md = found.get(m.__dict__["_seq"])
            m.__dict__["metadata"] = md or {}
            if md is None:
                gone.add(m.id)
        return gone

    def _ties_by_id(self, snap: Snapshot, scores: np.ndarray, cand: np.ndarray, k: int) -> np.ndarray:
        """When the k-th score is shared by rows left out, keep those with the smallest ids, whatever the order
        the rows were written in."""
        kth = scores[cand].min()
        tied = np.flatnonzero(scores == kth)
        inside = int(np.count_nonzero(scores[cand] == kth))
        if len(tied) == inside:
            return cand
        above = cand[scores[cand] > kth]
        ids = self._ids(snap, tied)
        chosen = sorted(zip(ids, tied.tolist(), strict=True))[: k - len(above)]
        return np.concatenate([above, np.asarray([r for _, r in chosen], dtype=np.int64)])

    def _ids(self, snap: Snapshot, rows: np.ndarray) -> list[str]:
        return snap.ids(rows)

    def _metadata(self, seqs: list[int]) -> dict[int, dict]:
        """Metadata of the given records (a record a later commit deleted is left out). A record never changes
        under its seq (a replace writes new seqs), so recently read ones are kept parsed."""
        cache = self._hit_cache
        with self._hit_lock:
            found = {s: cache[s] for s in seqs if s in cache}
        missing = [s for s in seqs if s not in found]
        pages: dict[str, str] = {}  # each page the hits share decompressed once
        for i in range(0, len(missing), 500):
            part = missing[i : i + 500]
            got = {s: assemble_metadata(*stored, pages) for s, *stored in self._read(
                f"SELECT r.seq, {_METADATA} FROM {_WITH_PARENT} WHERE r.seq IN ({','.join('?' * len(part))})",
                tuple(part))}
            found.update(got)
            with self._hit_lock:
                cache.update(got)
                while len(cache) > _HITS_KEPT:  # oldest first
                    cache.pop(next(iter(cache)))
        return found

    def _generation(self, namespace: str) -> int:
        rows = self._read("SELECT generation FROM ns_state WHERE namespace=?", (namespace,))
        return int(rows[0][0]) if rows else 0

    def _snapshot(self, namespace: str) -> Snapshot:
        gen = self._generation(namespace)
        snap = self._snapshots.get(namespace)
        if snap is not None and snap.generation >= gen:
            return snap
        with self._snap_lock:
            snap = self._snapshots.get(namespace)
            if snap is not None and snap.generation >= gen:
                return snap
            try:
                snap = self._store.open(namespace, gen, self._db_id, self._dim, previous=snap)
            except sqlite3.DatabaseError as exc:
                raise self._translate(exc) from None
            self._snapshots[namespace] = snap
            return snap


_set = object.__setattr__


class _Deferred(Match):
    """A match of this index whose metadata is read from SQLite when first used."""

    @classmethod
    def of(cls, index: SqliteIndex, rid: str, score: float, seq: int) -> _Deferred:
        # What model_construct does, without its per-field walk (a search makes a hundred of these per retriever).
        m = cls.__new__(cls)
        _set(m, "__dict__", {"id": rid, "score": score, "_index": index, "_seq": seq})
        _set(m, "__pydantic_fields_set__", {"id", "score"})
        _set(m, "__pydantic_extra__", None)
        _set(m, "__pydantic_private__", None)
        return m

    def __getattr__(self, name: str):
        if name == "metadata":
            d = self.__dict__
            d["metadata"] = d["_index"]._metadata([d["_seq"]]).get(d["_seq"], {})
            return d["metadata"]
        return super().__getattr__(name)  # type: ignore[misc]

    def model_dump(self, **kwargs):  # type: ignore[override]
        _ = self.metadata
        return {k: v for k, v in super().model_dump(**kwargs).items() if not k.startswith("_")}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Match):
            return NotImplemented
        return (self.id, self.score, self.metadata) == (other.id, other.score, other.metadata)

    __hash__ = None  # type: ignore[assignment]


def _ann_min_rows() -> int:
    from citerag.adapters import ann

    return ann.MIN_ROWS


_FIND_SLACK = 4096  # how far past the previous chunk a chunk's text is looked for in its parent


def _text_as_offsets(md: dict, parents: Mapping[str, str], cursors: dict[str, int]) -> dict:
    """The metadata to store: a chunk's text is kept once, in its parent, when it is a slice of it (the chunker's
    char_start/char_end say where; else it is looked for a little past the previous chunk of the same parent)."""
    text, pid = md.get("text"), md.get("parent_id")
    parent = parents.get(pid) if isinstance(pid, str) else None
    if not isinstance(text, str) or not text or not parent:
        return md
    at = md.get("char_start")
    if not (isinstance(at, int) and parent.startswith(text, at)):
        start = cursors.get(pid, 0)
        at = parent.find(text, start, start + len(text) + _FIND_SLACK)
        if at < 0:
            return md
    cursors[pid] = at
    return {**md, "text": [at, at + len(text)]}


class _DocFreqs(Mapping):
    """BM25 document frequencies of one namespace, counted from its postings per term (and remembered) when asked."""

    def __init__(self, index: SqliteIndex, namespace: str) -> None:
        self.index, self.namespace = index, namespace
        self._known: dict[int, int] = {}

    def __getitem__(self, term: int) -> int:
        if term not in self._known:
            self._known[term] = self.index._snapshot(self.namespace).df(int(term))
        df = self._known[term]
        if not df:
            raise KeyError(term)
        return df

    def __iter__(self) -> Iterator[int]:
        snap = self.index._snapshot(self.namespace)
        return iter([t for t in snap.terms().tolist() if snap.df(t)])

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _compact(md: Mapping) -> str:
    return json.dumps(md, ensure_ascii=False, separators=(",", ":"))


def _shared(stored: list[dict]) -> dict:
    """The metadata every chunk of a document has alike (title, source, tenant, ...), kept once in its documents
    row; never the text. Compared as JSON (1, 1.0 and true are different values)."""
    if not stored:
        return {}
    first = {k: _compact(v) for k, v in stored[0].items() if k != "text"}
    for md in stored[1:]:
        first = {k: v for k, v in first.items() if k in md and _compact(md[k]) == v}
    return {k: stored[0][k] for k in first}


class _Write:
    """One write transaction's bookkeeping: sequence numbers, the namespace's next generation, and the delta the
    read structure gets after the commit."""

    def __init__(self, index: SqliteIndex, namespace: str) -> None:
        conn = index._conn
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name='records'").fetchone()
        self._seq = int(row[0]) if row else 0
        row = conn.execute("SELECT generation FROM ns_state WHERE namespace=?", (namespace,)).fetchone()
        self.generation = (int(row[0]) if row else 0) + 1
        m = index._store.manifest(namespace, index._db_id, index._dim)
        self.persisted = m["generation"] if m else 0
        self.delta = Delta()
        self._added: set[int] = set()

    def next_seq(self) -> int:
        self._seq += 1
        self._added.add(self._seq)
        return self._seq

    def removed(self, seqs: list[int]) -> None:
        for s in seqs:
            if s in self._added:
                self._added.discard(s)
                self.delta.drop(s)
            else:
                self.delta.dead_seqs.append(s)


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


def index_files(path: Path) -> list[Path]:
    """Everything one embedded index consists of: the SQLite file, its WAL and shared memory, and the read
    structure folder beside it (adapters/index_store.py)."""
    return [Path(str(path) + suffix) for suffix in ("", "-wal", "-shm", "-snapshot")]


SQLITE_HEADER = b"SQLite format 3\x00"


INDEX_SUFFIXES = ("", ".sqlite", ".sqlite3", ".db")


def index_file_state(path: Path) -> str:
    """"index": an SQLite file with this index's tables (or empty); "in use": an SQLite file another process holds
    locked, which cannot be read to tell; "other": anything else (a folder, a document, another program's
    database, an encrypted or damaged file)."""
    try:
        if not path.is_file():
            return "other"
        with path.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError:
        return "other"
    if not head:
        # SQLite's empty database, nothing in it to lose, when it is named as one; an empty "notes.md" is the
        # user's document (opened as the index, it became a database and gained a snapshot folder).
        return "index" if path.suffix.lower() in INDEX_SUFFIXES else "other"
    if head != SQLITE_HEADER:
        return "other"
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=0.5)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except sqlite3.OperationalError as exc:
        return "in use" if "locked" in str(exc) or "busy" in str(exc) else "other"
    except sqlite3.DatabaseError:
        return "other"
    return "index" if {"meta", "records", "documents"} <= tables else "other"


NOT_AN_INDEX = ("{path} is not a citerag index, or is a damaged one; --index names the index file ingest made "
                "(`citerag status` shows the one in use). A damaged index: delete it (and the files beside it named "
                "-wal, -shm, -snapshot) and ingest your documents again")
FOLDER_NOT_INDEX = ("{path} is a folder, not an index file; --index names the index file ingest made (`citerag "
                    "status` shows the one in use), and `citerag ingest {path}` indexes the documents in a folder")


def not_an_index(path: Path) -> str:
    """Why `path` cannot be opened as the index: a folder is no damaged index to delete."""
    return (FOLDER_NOT_INDEX if path.is_dir() else NOT_AN_INDEX).format(path=path)


def check_deletable(path: Path) -> None:
    state = index_file_state(path)
    if state == "in use":
        raise IndexError_(f"{path} is in use by another process; let it finish, then run the command again "
                          "(nothing was deleted)")
    if state != "index":
        raise IndexError_(not_an_index(path) + " (nothing was deleted)")


def remove_index_files(path: Path) -> None:
    """Delete an embedded index and everything beside it (no process may have it open). Refuses any path that is
    not an index: `--index ~/Documents` or `--index notes.html` given to `reset` deleted that folder or file."""
    if not path.exists():
        return
    check_deletable(path)
    for p in index_files(path):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
