"""The embedded index's read structure: what a search scans, kept on disk beside the SQLite file and mapped into
memory, so a new process opens a million-chunk index in milliseconds and a commit appends instead of reloading.

SQLite is the durable, transactional store of everything but the dense vectors, which are kept once, here: a write
appends its vectors (and their sequence numbers) past what the manifest covers and flushes them to disk before its
SQLite commit, and the manifest is extended after it. Everything else here is derived from SQLite, per namespace,
keyed by the database's id and the namespace's generation, and rebuilt from it whenever they disagree (a crash
between a commit and the append, an index written by an older citerag), taking the vectors from the previous
files. Vectors that are gone (a deleted folder) cannot be rebuilt: the index is refused, naming the command that
builds it again. Layout of `<index>-snapshot/<ns key>/`:

    manifest.json           generation, rows, postings segments, metadata keys; replaced atomically, written last
    e<epoch>/dense.f32      row-major float32 vectors (dense.f16: float16, CITERAG_INDEX_VECTORS=float16),
                            appended before the commit that adds their rows
    e<epoch>/seq.i64        each row's SQLite `records.seq` (increasing), appended
    e<epoch>/ids.bin        each row's record id (UTF-8, concatenated) and ids.end its end offset: a search ranks
                            and breaks ties by id without reading SQLite
    e<epoch>/dead.i64       rows deleted since the epoch began (tombstones), appended
    e<epoch>/p<a>-<b>.*     BM25 postings of rows [a, b), term-major: terms, starts, rows, vals. The sparse vectors'
                            only copy: a commit's segment is written before it commits, like its vectors
    e<epoch>/m<key>.*       one metadata key, dictionary-encoded: distinct values (JSON lines), (row, code) of each
                            scalar element, rows that have the key

Files only grow past what the manifest covers, so a reader that mapped an older manifest keeps a consistent view.
Writers (any process, under an exclusive lock on `lock`) append a commit's rows, tombstone the rows it deleted, add
one postings segment and merge segments like a binary counter (every row is rewritten O(log n) times: linear
ingest). When a third of the rows are dead the namespace is rebuilt into a new epoch. Texts and other metadata are
not here: a search reads them from SQLite for the hits it returns.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sqlite3
import threading
import uuid
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from citerag.errors import IndexError_
from citerag.search import filters
from citerag.search.ports import VectorProfile

# Metadata keys not dictionary-encoded: the chunk text is unique per row and as large as everything else together.
# A filter on one of them is still exact, evaluated record by record from SQLite (slow, and rare).
UNINDEXED_KEYS = frozenset({"text"})
MANIFEST_VERSION = 3  # 3: the dense file's type in "vectors"; postings are the sparse vectors' only copy
VECTOR_TYPES = {"float32": (np.float32, "dense.f32"), "float16": (np.float16, "dense.f16")}

# A record's metadata as stored: what its document's chunks share (documents.shared), its own keys (records.metadata)
# and its page (parents.text, zlib-compressed), whose slice its text is when it is kept as [start, end] offsets.
# `r`, `d` and `p` as joined by WITH_PARENT_SQL; assemble_metadata() puts the four columns together.
METADATA_SQL = "r.metadata, d.shared, p.parent_id, p.text"
PARENT_JOIN_SQL = ("LEFT JOIN parents p ON p.namespace = r.namespace AND p.parent_id = "
                   "coalesce(json_extract(r.metadata, '$.parent_id'), json_extract(d.shared, '$.parent_id'))")
WITH_PARENT_SQL = f"records r JOIN documents d ON d.docno = r.docno {PARENT_JOIN_SQL}"


def compress_text(text: str) -> bytes:
    return zlib.compress(text.encode("utf-8"), 6)


def decompress_text(blob: bytes | str) -> str:
    if isinstance(blob, str):
        return blob
    try:
        return zlib.decompress(blob).decode("utf-8")
    except (zlib.error, UnicodeDecodeError) as exc:
        raise IndexError_(f"a page of text kept in the index is damaged ({exc}); build the index again: citerag reset "
                          "--index INDEX, then citerag ingest PATH --index INDEX") from None


def assemble_metadata(own: str, shared: str, parent_id: str | None, page: bytes | None,
                      pages: dict[str, str] | None = None) -> dict[str, Any]:
    """A record's metadata from its stored parts; `pages` keeps the pages one call decompressed (a search's hits
    share a few)."""
    md = json.loads(shared) if shared and shared != "{}" else {}
    md.update(json.loads(own))
    span = md.get("text")
    if isinstance(span, list) and page is not None and parent_id is not None:
        pages = {} if pages is None else pages
        text = pages.get(parent_id)
        if text is None:
            text = pages[parent_id] = decompress_text(page)
        md["text"] = text[span[0]:span[1]]
    return md

_PURGE_DEAD_SHARE = 1 / 3
_READ_BATCH = 5000


@dataclass
class Delta:
    """Rows a commit added (in sequence order) and the sequence numbers of rows it deleted."""

    seqs: list[int] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    dense: list[np.ndarray] = field(default_factory=list)
    sparse_idx: list[np.ndarray] = field(default_factory=list)
    sparse_val: list[np.ndarray] = field(default_factory=list)
    metadata: list[dict[str, Any]] = field(default_factory=list)
    dead_seqs: list[int] = field(default_factory=list)
    # The vectors are already in the files past what the manifest covers (staged before the commit, or rows read
    # back from SQLite, which keeps no vectors): they are checked there, not written again.
    staged: bool = False

    def add(self, seq: int, rid: str, dense: np.ndarray | None, idx: np.ndarray | None, val: np.ndarray | None,
            md: dict[str, Any]) -> None:
        """`dense` None: the vector is staged in the files; `idx` None: so is the sparse vector (a postings
        segment written before the commit)."""
        self.seqs.append(seq)
        self.ids.append(rid)
        self.dense.append(dense)
        self.sparse_idx.append(idx)
        self.sparse_val.append(val)
        self.metadata.append(md)

    def extend(self, other: Delta) -> None:
        for mine, theirs in ((self.seqs, other.seqs), (self.ids, other.ids), (self.dense, other.dense),
                             (self.sparse_idx, other.sparse_idx), (self.sparse_val, other.sparse_val),
                             (self.metadata, other.metadata)):
            mine.extend(theirs)
        self.dead_seqs.extend(other.dead_seqs)
        self.staged = self.staged or other.staged

    def drop(self, seq: int) -> None:
        """A row deleted in the same transaction that added it never reaches the read structure."""
        i = self.seqs.index(seq)
        for lst in (self.seqs, self.ids, self.dense, self.sparse_idx, self.sparse_val, self.metadata):
            del lst[i]


# --- the dense scan ----------------------------------------------------------------------------------------------

_blas = None


def scan(matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
    """matrix @ q on one BLAS thread. A matrix-vector product is memory-bound, and the search runs it beside the
    sparse half on the other core: OpenBLAS's second thread only waits for a busy core (on the shared 2-core machine
    a 100k-row scan took 31 ms on two threads, 21 ms on one)."""
    global _blas
    if _blas is None:
        try:
            from threadpoolctl import ThreadpoolController

            _blas = ThreadpoolController()
        except ImportError:  # the base install: BLAS's own threading
            _blas = False
    if not _blas:
        return np.asarray(matrix @ q)
    with _blas.limit(limits=1, user_api="blas"):
        return np.asarray(matrix @ q)


# --- files ---------------------------------------------------------------------------------------------------------

def _stem(key: str) -> str:
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]


def _append(path: Path, data: bytes, offset: int, durable: bool = False) -> None:
    """Write at `offset` (what the manifest covers), dropping anything a crashed writer left past it; `durable`:
    on disk before the manifest that covers it is published."""
    with open(path, "ab") as fh:
        fh.truncate(offset)
        fh.write(data)
        if durable:
            fh.flush()
            os.fsync(fh.fileno())


def _write_durably(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _fsync_dir(path: Path) -> None:
    """Make the names created in (or removed from) a folder survive a power loss."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _map(path: Path, dtype, count: int, shape: tuple[int, ...] | None = None) -> np.ndarray:
    shape = shape or (count,)
    if count == 0:
        return np.zeros(shape, dtype=dtype)
    # A plain array over the mapping: numpy's memmap subclass adds a Python call to every slice and result.
    return np.memmap(path, dtype=dtype, mode="r", shape=shape).view(np.ndarray)


def _read_rows(snap: Snapshot, buf: np.ndarray, start: int) -> None:
    """Rows [start, snap.n) of the snapshot's vector file into `buf` as float32: read in large slices (a read is
    cheaper than a page fault per 4 KB of the mapping), a float16 file widened slice by slice."""
    dtype, name = VECTOR_TYPES[snap.manifest.get("vectors", "float32")]
    row_bytes = snap.dim * np.dtype(dtype).itemsize
    step = max(1, (32 << 20) // row_bytes)
    scratch = None if dtype == np.float32 else np.empty((step, snap.dim), dtype)
    with open(snap.root / name, "rb", buffering=0) as fh:
        for a in range(start, snap.n, step):
            b = min(snap.n, a + step)
            target = buf[a:b] if scratch is None else scratch[: b - a]
            fh.seek(a * row_bytes)
            view = memoryview(target).cast("B")
            got = 0
            while got < len(view):
                k = fh.readinto(view[got:])
                if not k:
                    raise OSError(f"{snap.root / name} ends before row {b}")
                got += k
            if scratch is not None:
                buf[a:b] = target


def _atomic_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    _write_durably(tmp, json.dumps(obj).encode("utf-8"))
    os.replace(tmp, path)
    _fsync_dir(path.parent)  # before the files the previous manifest named are unlinked


# --- postings --------------------------------------------------------------------------------------------------------

@dataclass
class Postings:
    """Term-major BM25 postings of rows [start, stop): for terms[i], rows[starts[i]:starts[i+1]] and vals."""

    start: int
    stop: int
    terms: np.ndarray
    starts: np.ndarray
    rows: np.ndarray
    vals: np.ndarray

    @classmethod
    def build(cls, start: int, stop: int, term_arr: np.ndarray, row_arr: np.ndarray, val_arr: np.ndarray) -> Postings:
        # Stable: within a term, rows stay in row order, as the old in-memory index had them.
        order = np.argsort(term_arr, kind="stable")
        t, r, v = term_arr[order], row_arr[order], val_arr[order]
        terms, first = np.unique(t, return_index=True)
        starts = np.append(first, len(t)).astype(np.int64)
        return cls(start, stop, terms.astype(np.uint32), starts, r.astype(np.int32), v.astype(np.float32))

    def expanded_terms(self) -> np.ndarray:
        return np.repeat(self.terms, np.diff(self.starts))

    @staticmethod
    def merge(a: Postings, b: Postings) -> Postings:
        return Postings.build(a.start, b.stop, np.concatenate([a.expanded_terms(), b.expanded_terms()]),
                              np.concatenate([a.rows, b.rows]), np.concatenate([a.vals, b.vals]))

    def files(self, root: Path) -> dict[str, Path]:
        stem = root / f"p{self.start}-{self.stop}"
        return {k: stem.with_suffix(f".{k}") for k in ("terms", "starts", "rows", "vals")}

    def save(self, root: Path) -> None:
        """Write the segment to disk before a manifest names it: it may be the sparse vectors' only copy once the
        segments it replaces are unlinked."""
        for name, path in self.files(root).items():
            _write_durably(path, getattr(self, name).tobytes())
        _fsync_dir(root)

    @classmethod
    def load_files(cls, root: Path, start: int, stop: int) -> Postings:
        """A segment whose sizes are its files' (one staged before its commit, which no manifest names yet)."""
        f = cls(start, stop, *(np.zeros(0) for _ in range(4))).files(root)
        return cls.load(root, start, stop, f["terms"].stat().st_size // 4, f["rows"].stat().st_size // 4)

    @classmethod
    def load(cls, root: Path, start: int, stop: int, n_terms: int, n_post: int) -> Postings:
        p = cls(start, stop, np.zeros(0, np.uint32), np.zeros(0, np.int64), np.zeros(0, np.int32),
                np.zeros(0, np.float32))
        f = p.files(root)
        return cls(start, stop, _map(f["terms"], np.uint32, n_terms), _map(f["starts"], np.int64, n_terms + 1),
                   _map(f["rows"], np.int32, n_post), _map(f["vals"], np.float32, n_post))


def _segment(n0: int, d: Delta) -> Postings:
    """The postings of a delta's rows, numbered from n0."""
    lens = np.fromiter((len(i) for i in d.sparse_idx), dtype=np.int64, count=len(d.sparse_idx))
    terms = np.concatenate(d.sparse_idx) if len(lens) and lens.sum() else np.zeros(0, np.uint32)
    vals = np.concatenate(d.sparse_val) if len(lens) and lens.sum() else np.zeros(0, np.float32)
    rows = np.repeat(np.arange(n0, n0 + len(lens), dtype=np.int32), lens)
    return Postings.build(n0, n0 + len(lens), terms, rows, vals)


# --- the mapped view a search uses ---------------------------------------------------------------------------------

class _KeyValues:
    """A metadata key's distinct values and their codes, shared by the snapshots of one epoch (append-only)."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.lookup: dict[tuple[str, Any], int] = {}

    def extend_from(self, path: Path, count: int) -> None:
        """Read the values another process appended, up to `count`."""
        if len(self.values) >= count:
            return
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh):
                if n >= count:
                    break
                if n >= len(self.values):
                    self._add(json.loads(line))

    def truncate(self, count: int) -> None:
        """Forget values past what the manifest covers (left by a write that never committed its manifest)."""
        if len(self.values) > count:
            del self.values[count:]
            self.lookup = {}
            for c, v in enumerate(self.values):
                self.lookup.setdefault((filters.scalar_kind(v), v), c)  # type: ignore[arg-type]

    def _add(self, v: Any) -> int:
        code = len(self.values)
        self.values.append(v)
        self.lookup.setdefault((filters.scalar_kind(v), v), code)  # type: ignore[arg-type]
        return code


class Snapshot:
    """One namespace at one generation: vectors, postings, tombstones and metadata columns, mostly memory-mapped.
    Immutable once made: a search holds it while a commit makes the next one."""

    def __init__(self, store: IndexStore, namespace: str, manifest: dict[str, Any], live: np.ndarray) -> None:
        self.store = store
        self.namespace = namespace
        self.manifest = manifest
        self.generation: int = manifest["generation"]
        self.epoch: int = manifest["epoch"]
        self.n: int = manifest["n_rows"]
        self.dim: int = manifest["dim"]
        root = store.epoch_dir(namespace, self.epoch)
        self.root = root
        dtype, name = VECTOR_TYPES[manifest.get("vectors", "float32")]
        self.mapped = _map(root / name, dtype, self.n * self.dim, (self.n, self.dim))
        self._dense: np.ndarray | None = None
        self.seq = _map(root / "seq.i64", np.int64, self.n)
        self._id_end = _map(root / "ids.end", np.int64, self.n)
        self._id_bytes = _map(root / "ids.bin", np.uint8, manifest["id_bytes"])
        self.live = live
        self.postings = [Postings.load(root, a, b, nt, npost) for a, b, nt, npost in manifest["segments"]]
        self._columns: dict[str, filters.Column | None] = {}
        self._profile: VectorProfile | None = None

    @property
    def dense(self) -> np.ndarray:
        """The float32 vectors a search scans: the mapped file, or the process's own copy once it has one (always,
        for a float16 file, which is widened once: numpy has no fast float16 product)."""
        if self._dense is None:
            self._dense = self.store.resident(self) if self.mapped.dtype != np.float32 else self.mapped
        return self._dense

    def profile(self, block: int = 65536) -> VectorProfile | None:
        """The live vectors' `VectorProfile`, computed once per snapshot (two passes over the vectors, a block at a
        time: about two exact searches); None when the namespace holds none."""
        if self._profile is None and self.n:
            dense, dead = self.dense, bool(self.manifest["n_dead"])
            blocks = [(s, min(s + block, self.n)) for s in range(0, self.n, block)]

            def rows(s: int, e: int) -> np.ndarray:
                return dense[s:e][self.live[s:e]] if dead else dense[s:e]

            total, count = np.zeros(self.dim, dtype=np.float64), 0
            for s, e in blocks:
                part = rows(s, e)
                total += part.sum(axis=0, dtype=np.float64)
                count += len(part)
            norm = float(np.linalg.norm(total))
            if not count or norm <= 0.0:
                return None
            mean, direction = total / count, (total / norm).astype(np.float32)
            cosines = np.concatenate([rows(s, e) @ direction for s, e in blocks]).astype(np.float64)
            self._profile = VectorProfile(mean=mean.astype(np.float32), spread_mean=float(cosines.mean()),
                                          spread_std=float(cosines.std()))
        return self._profile

    def make_resident(self) -> None:
        """Scan the process's own copy of the vectors from now on (anonymous memory the kernel backs with huge
        pages; the mapped file's page cache is not): at a million rows the exact search costs 1.01x numpy's product and
        top-k over it, 1.06x over the mapping (docs/performance.md)."""
        if self._dense is None or self._dense is self.mapped:
            self._dense = self.store.resident(self)

    @property
    def resident_bytes(self) -> int:
        return 0 if self._dense is None or self._dense is self.mapped else self.n * self.dim * 4

    def df(self, term: int) -> int:
        """Live rows whose sparse vector has this term (BM25's document frequency, from the postings)."""
        n = 0
        for seg in self.postings:
            i = int(np.searchsorted(seg.terms, term))
            if i < len(seg.terms) and int(seg.terms[i]) == term:
                s, e = int(seg.starts[i]), int(seg.starts[i + 1])
                n += (e - s) if not self.manifest["n_dead"] else int(np.count_nonzero(self.live[seg.rows[s:e]]))
        return n

    def terms(self) -> np.ndarray:
        """Every term of the postings (a term whose rows are all deleted included, until the next rebuild)."""
        if not self.postings:
            return np.zeros(0, np.uint32)
        return np.unique(np.concatenate([seg.terms for seg in self.postings]))

    @property
    def keys(self) -> list[str]:
        return sorted(self.manifest["keys"])

    def column(self, key: str) -> filters.Column | None:
        if key not in self._columns:
            self._columns[key] = self._load_column(key)
        return self._columns[key]

    def _load_column(self, key: str) -> filters.Column | None:
        info = self.manifest["keys"].get(key)
        if info is None:
            return None
        if not info["indexed"]:
            return _ScanColumn(self, key)
        try:
            return self._map_column(key, info)
        except ValueError as exc:  # a file shorter than the manifest says
            raise self.store.lost(f"the column of {key!r} in {self.root}: {exc}") from None

    def _map_column(self, key: str, info: dict[str, Any]) -> filters.Column:
        stem = self.root / f"m{info['stem']}"
        kv = self.store.key_values(self.namespace, self.epoch, key)
        kv.extend_from(stem.with_suffix(".values"), info["values"])
        if info.get("rowwise"):
            present, erows = np.ones(self.n, dtype=bool), np.arange(self.n, dtype=np.int32)
        else:
            present = np.zeros(self.n, dtype=bool)
            present[_map(stem.with_suffix(".prows"), np.int32, info["present"])] = True
            erows = _map(stem.with_suffix(".erows"), np.int32, info["elems"])
        return filters.ValueColumn(
            self.n, present, erows,
            _map(stem.with_suffix(".codes"), np.int32, info["elems"]), kv.values,
            lookup=kv.lookup, n_values=info["values"], single=not info["multi"])

    def ids(self, rows: Sequence[int] | np.ndarray) -> list[str]:
        """The record ids of the given rows."""
        r = np.asarray(rows, dtype=np.int64)
        ends = self._id_end[r].tolist()
        starts = np.where(r > 0, self._id_end[np.maximum(r - 1, 0)], 0).tolist()
        raw = self._id_bytes
        return [raw[a:b].tobytes().decode("utf-8") for a, b in zip(starts, ends, strict=True)]

    def rows_of(self, seqs: Sequence[int]) -> np.ndarray:
        """Row numbers of the given sequence numbers (-1 where the snapshot has no such row)."""
        s = np.asarray(seqs, dtype=np.int64)
        pos = np.searchsorted(self.seq, s)
        ok = pos < self.n
        ok[ok] = self.seq[pos[ok]] == s[ok]
        return np.where(ok, pos, -1)


class _ScanColumn:
    """A key kept out of the columns (UNINDEXED_KEYS): each test reads every record's metadata from SQLite."""

    def __init__(self, snap: Snapshot, key: str) -> None:
        self.snap, self.key = snap, key

    def mask(self, op: str, arg: Any) -> np.ndarray:
        out = np.zeros(self.snap.n, dtype=bool)
        max_seq = int(self.snap.seq[-1]) if self.snap.n else 0
        for batch in self.snap.store.source.metadata_rows(self.snap.namespace, max_seq):
            seqs = [s for s, _ in batch]
            hit = [filters._test(op, arg, md.get(self.key, filters.MISSING)) for _, md in batch]
            rows = self.snap.rows_of(seqs)
            keep = rows >= 0
            out[rows[keep]] = np.asarray(hit, dtype=bool)[keep]
        return out


# --- the store: keeps the files in step with SQLite ----------------------------------------------------------------

class Source:
    """What the store reads from the SQLite file (the adapter provides it, on a connection of the store's own)."""

    def __init__(self, path: Path, timeout: float) -> None:
        self.conn = sqlite3.connect(str(path), timeout=timeout, check_same_thread=False, isolation_level=None)
        self._lock = threading.RLock()
        # Schema 3 and before (read once, while the index is upgraded): each record's sparse vector in SQLite, and
        # no documents.docno.
        self.legacy = False

    @contextlib.contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: the generation and the rows it reads belong to the same commit."""
        with self._lock:
            self.conn.execute("BEGIN")
            try:
                yield self.conn
            finally:
                self.conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def state(self, conn: sqlite3.Connection, namespace: str) -> tuple[int, int]:
        row = conn.execute("SELECT generation, pruned_through FROM ns_state WHERE namespace=?",
                           (namespace,)).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def db_id(self, conn: sqlite3.Connection) -> str:
        return conn.execute("SELECT value FROM meta WHERE key='db_id'").fetchone()[0]

    def rows(self, conn: sqlite3.Connection, namespace: str, after_seq: int) -> Iterator[Delta]:
        """The records past `after_seq`, in batches; their vectors (and, from schema 4, their sparse vectors) are
        in the files, not here."""
        if not self.legacy:
            cur = conn.execute(
                "SELECT r.seq, r.id, r.metadata, d.shared FROM records r JOIN documents d ON d.docno = r.docno "
                "WHERE r.namespace=? AND r.seq>? ORDER BY r.seq", (namespace, after_seq))
            while batch := cur.fetchmany(_READ_BATCH):
                d = Delta(staged=True)
                for seq, rid, md, shared in batch:
                    d.add(seq, rid, None, None, None, assemble_metadata(md, shared, None, None))
                yield d
            return
        cur = conn.execute(
            "SELECT seq, id, dense, sparse_idx, sparse_val, metadata FROM records WHERE namespace=? AND seq>? "
            "ORDER BY seq", (namespace, after_seq))
        while batch := cur.fetchmany(_READ_BATCH):
            d = Delta()
            for seq, rid, dense, idx, val, md in batch:
                # An index of schema 2 kept each vector in SQLite too (read once, when it is upgraded).
                vec = np.frombuffer(dense, np.float32) if dense else None
                d.add(seq, rid, vec, np.frombuffer(idx, np.uint32), np.frombuffer(val, np.float32), json.loads(md))
            d.staged = any(v is None for v in d.dense)
            yield d

    def removed(self, conn: sqlite3.Connection, namespace: str, after_generation: int) -> list[int]:
        return [r[0] for r in conn.execute("SELECT seq FROM removed WHERE namespace=? AND generation>?",
                                           (namespace, after_generation))]

    def metadata_rows(self, namespace: str, max_seq: int) -> Iterator[list[tuple[int, dict]]]:
        with self.read() as conn:
            cur = conn.execute(f"SELECT r.seq, {METADATA_SQL} FROM {WITH_PARENT_SQL} WHERE r.namespace=? AND r.seq<=? "
                               "ORDER BY r.seq", (namespace, max_seq))
            while batch := cur.fetchmany(_READ_BATCH):
                pages: dict[str, str] = {}
                yield [(s, assemble_metadata(*rest, pages)) for s, *rest in batch]


class IndexStore:
    """The read structures of every namespace of one index file."""

    def __init__(self, index_path: Path, source: Source) -> None:
        self.source = source
        self.index_path = index_path
        self.root = Path(str(index_path) + "-snapshot")
        self.writable = True
        try:
            self.root.mkdir(exist_ok=True)
            (self.root / ".probe").touch()
        except OSError:
            # A read-only index (a baked image, a read-only mount): read in place, as it was written.
            self.writable = False
        self._values: dict[tuple[str, int, str], _KeyValues] = {}
        self._values_lock = threading.Lock()
        self.vectors = "float32"  # the type of the vector file of a new epoch (the index's setting)
        self._resident: dict[str, tuple[int, np.ndarray, int]] = {}  # namespace: (epoch, buffer, rows filled)
        self._resident_lock = threading.Lock()

    def resident(self, snap: Snapshot) -> np.ndarray:
        """The snapshot's vectors as float32 in this process's memory. One buffer per namespace and epoch, grown as
        commits append rows (rows never change within an epoch, so a snapshot keeps a valid view of an older
        buffer); only the rows not copied yet are read from the file."""
        with self._resident_lock:
            epoch, buf, filled = self._resident.get(snap.namespace, (-1, np.zeros((0, snap.dim), np.float32), 0))
            if epoch != snap.epoch:
                buf, filled = np.zeros((0, snap.dim), np.float32), 0
            if len(buf) < snap.n:
                # numpy asks the kernel for huge pages for an allocation this large (MADV_HUGEPAGE).
                grown = np.empty((max(snap.n, len(buf) + len(buf) // 4), snap.dim), np.float32)
                grown[:filled] = buf[:filled]
                buf = grown
            if filled < snap.n:
                try:
                    _read_rows(snap, buf, filled)
                except OSError as exc:
                    raise self.lost(f"{exc.strerror or exc}") from None
            filled = max(filled, snap.n)
            self._resident[snap.namespace] = (snap.epoch, buf, filled)
            return buf[: snap.n]

    # --- paths and manifest ------------------------------------------------------------------------------------

    def ns_dir(self, namespace: str) -> Path:
        return self.root / ("ns-" + hashlib.sha1(namespace.encode("utf-8")).hexdigest()[:16])

    def epoch_dir(self, namespace: str, epoch: int) -> Path:
        return self.ns_dir(namespace) / f"e{epoch}"

    def key_values(self, namespace: str, epoch: int, key: str) -> _KeyValues:
        k = (namespace, epoch, key)
        with self._values_lock:
            if k not in self._values:
                self._values = {kk: v for kk, v in self._values.items() if kk[:2] != (namespace, epoch - 1)}
                self._values[k] = _KeyValues()
            return self._values[k]

    def manifest(self, namespace: str, db_id: str, dim: int) -> dict[str, Any] | None:
        """The persisted manifest if it belongs to this database and its files are all there."""
        try:
            m = json.loads((self.ns_dir(namespace) / "manifest.json").read_text(encoding="utf-8"))
            ok = (m.get("version") == MANIFEST_VERSION and m.get("db_id") == db_id and m.get("namespace") == namespace
                  and m.get("dim") == dim and self._files_ok(namespace, m))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        return m if ok else None

    def _files_ok(self, namespace: str, m: dict[str, Any]) -> bool:
        dim = m["dim"]
        root = self.epoch_dir(namespace, m["epoch"])
        n = m["n_rows"]
        dtype, name = VECTOR_TYPES[m["vectors"]]
        if ((root / name).stat().st_size < n * dim * np.dtype(dtype).itemsize
                or (root / "seq.i64").stat().st_size < n * 8):
            return False
        if n and ((root / "ids.end").stat().st_size < n * 8 or (root / "ids.bin").stat().st_size < m["id_bytes"]):
            return False
        # A torn append shows as a wrong last sequence number.
        if n and int(np.fromfile(root / "seq.i64", np.int64, count=1, offset=(n - 1) * 8)[0]) != m["max_seq"]:
            return False
        # A file shorter than the manifest says (a write lost in a power cut): tombstones or postings would be lost.
        if (root / "dead.i64").stat().st_size < m["n_dead"] * 8:
            return False
        for a, b, n_terms, n_post in m["segments"]:
            stem = root / f"p{a}-{b}"
            for ext, size in (("terms", n_terms * 4), ("starts", (n_terms + 1) * 8), ("rows", n_post * 4),
                              ("vals", n_post * 4)):
                if stem.with_suffix(f".{ext}").stat().st_size < size:
                    return False
        return True

    def lost(self, why: str) -> IndexError_:
        p = self.index_path
        return IndexError_(f"the vectors of the index {p} are missing or damaged ({why}); they are kept only in "
                           f"{self.root}. Build the index again: citerag reset --index {p}, then citerag ingest PATH "
                           f"--index {p}")

    @contextlib.contextmanager
    def locked(self, namespace: str) -> Iterator[None]:
        if not self.writable:  # nothing is written; a read-only folder takes no lock file
            yield
            return
        d = self.ns_dir(namespace)
        d.mkdir(parents=True, exist_ok=True)
        with open(d / "lock", "a+b") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    # --- reading --------------------------------------------------------------------------------------------------

    def open(self, namespace: str, generation: int, db_id: str, dim: int,
             previous: Snapshot | None = None) -> Snapshot:
        """A snapshot at `generation` (the caller read it from SQLite) or newer, bringing the files up to date
        first when they are behind."""
        for attempt in range(3):
            m = self.manifest(namespace, db_id, dim)
            if m is None or m["generation"] < generation:
                with self.locked(namespace):
                    m = self.sync(namespace, db_id, dim)
            try:
                return self._snapshot(namespace, m, previous)
            except FileNotFoundError:  # a writer merged segments after we read the manifest: read it again
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _snapshot(self, namespace: str, m: dict[str, Any], previous: Snapshot | None) -> Snapshot:
        root = self.epoch_dir(namespace, m["epoch"])
        dead = np.fromfile(root / "dead.i64", np.int64, count=m["n_dead"]) if m["n_dead"] else np.zeros(0, np.int64)
        if len(dead) != m["n_dead"]:  # (fromfile returns what there is: deleted rows would come back)
            raise self.lost(f"{root / 'dead.i64'} holds {len(dead)} of its {m['n_dead']} deleted rows")
        if previous is not None and previous.epoch == m["epoch"] and previous.n <= m["n_rows"]:
            # Extend the previous tombstones: a commit costs its own rows, not the index's size.
            live = np.ones(m["n_rows"], dtype=bool)
            live[: previous.n] = previous.live
            live[dead[previous.manifest["n_dead"]:]] = False
        else:
            live = np.ones(m["n_rows"], dtype=bool)
            live[dead] = False
        try:
            return Snapshot(self, namespace, m, live)
        except ValueError as exc:  # numpy: "mmap length is greater than file size"
            raise self.lost(f"a file in {root} is shorter than its manifest says: {exc}") from None

    # --- writing (always under `locked`) ---------------------------------------------------------------------------

    def sync(self, namespace: str, db_id: str, dim: int, delta: Delta | None = None,
             delta_from: int | None = None, generation: int | None = None) -> dict[str, Any]:
        """Bring the namespace's files to SQLite's committed state and return the new manifest. With `delta` (what
        the commit that moved the generation from `delta_from` to `generation` wrote), no SQLite read is needed."""
        m = self.manifest(namespace, db_id, dim)
        if delta is not None and m is not None and m["generation"] == delta_from and generation is not None:
            m = self._apply(namespace, m, delta, generation)
        else:
            m = self.current(namespace, db_id, dim, m)
        if m["n_dead"] > _PURGE_DEAD_SHARE * max(m["n_rows"], 1) and m["n_rows"] > 1000:
            with self.source.read() as conn:
                gen, _ = self.source.state(conn, namespace)
                m = self._rebuild(namespace, db_id, dim, conn, gen, m)
        return m

    def current(self, namespace: str, db_id: str, dim: int, m: dict[str, Any] | None = None) -> dict[str, Any]:
        """The manifest at SQLite's committed state, catching up (or rebuilding) first when the files are behind."""
        m = m or self.manifest(namespace, db_id, dim)
        with self.source.read() as conn:
            gen, pruned = self.source.state(conn, namespace)
            if m is not None and m["generation"] == gen:
                return m
            if not self.writable:
                raise IndexError_(f"the index {self.index_path} is read-only and its folder {self.root} is not up to "
                                  "date with it; open it once where it can be written")
            if m is None or pruned > m["generation"] or m["n_dead"] > _PURGE_DEAD_SHARE * max(m["n_rows"], 1):
                return self._rebuild(namespace, db_id, dim, conn, gen, m)
            # What the structure missed is one commit (every write catches up before it stages its own): its
            # vectors and postings segment are in the files, staged before it committed.
            missed = Delta(dead_seqs=self.source.removed(conn, namespace, m["generation"]))
            for d in self.source.rows(conn, namespace, m["max_seq"]):
                missed.extend(d)
            try:
                m = self._apply(namespace, m, missed, gen)
            except IndexError_:
                # Rows of the missed commit were deleted since (by a commit that stages nothing, before the
                # structure caught up): its staged rows and segment no longer line up with what SQLite holds. A
                # rebuild finds each remaining row's vectors by its sequence number.
                return self._rebuild(namespace, db_id, dim, conn, gen, m)
        return m

    def stage(self, namespace: str, db_id: str, dim: int, delta: Delta) -> None:
        """Before a commit (inside its transaction): bring the files up to date, then append the commit's vectors and
        sequence numbers past what the manifest covers and flush them to disk. After the commit they are the rows'
        only copy; a commit that never happens leaves them to be overwritten by the next one."""
        with self.locked(namespace):
            m = self.current(namespace, db_id, dim)
            if not delta.seqs:
                return
            root = self.epoch_dir(namespace, m["epoch"])
            n0 = m["n_rows"]
            dtype, name = VECTOR_TYPES[m["vectors"]]
            dense = np.stack([np.asarray(v, dtype=np.float32).reshape(dim) for v in delta.dense]).astype(dtype)
            named = {f"p{a}-{b}" for a, b, _, _ in m["segments"]}  # (an empty one at n0 included)
            for stale in root.glob(f"p{n0}-*.*"):  # a segment staged by a commit that never happened
                if stale.stem not in named:
                    stale.unlink(missing_ok=True)
            seg = _segment(n0, delta)
            writes = [(root / name, dense.tobytes(), n0 * dense.itemsize * dim),
                      (root / "seq.i64", np.asarray(delta.seqs, np.int64).tobytes(), n0 * 8)]
            writes += [(path, getattr(seg, k).tobytes(), 0) for k, path in seg.files(root).items()]
            for path, data, offset in writes:
                with open(path, "ab") as fh:
                    fh.truncate(offset)
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
            _fsync_dir(root)  # the staged segment's new files
            delta.staged = True

    def _staged(self, root: Path, n0: int, seqs: Sequence[int], dim: int, vectors: str) -> None:
        """Check that rows [n0, n0 + len(seqs)) of the files hold these sequence numbers and their vectors."""
        k = len(seqs)
        dtype, name = VECTOR_TYPES[vectors]
        try:
            have = np.fromfile(root / "seq.i64", np.int64, count=k, offset=n0 * 8)
            size = (root / name).stat().st_size // np.dtype(dtype).itemsize
        except OSError as exc:
            raise self.lost(f"{exc.strerror or exc}") from None
        if len(have) != k or not np.array_equal(have, np.asarray(seqs, np.int64)) or size < (n0 + k) * dim:
            raise self.lost(f"rows {n0}-{n0 + k} of {root} do not hold the vectors the database names")

    def _newest(self, namespace: str, db_id: str, dim: int) -> tuple[dict[str, Any], Path] | None:
        """The namespace's newest manifest (of any version) and its epoch folder, if they belong to this database."""
        try:
            m = json.loads((self.ns_dir(namespace) / "manifest.json").read_text(encoding="utf-8"))
            if m.get("db_id") != db_id or m.get("dim") != dim:
                return None
            return m, self.epoch_dir(namespace, int(m["epoch"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def _vectors_of(self, namespace: str, db_id: str, dim: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(sequence numbers, vectors) of every row the namespace's newest files hold, staged tail included, whatever
        state their manifest is in; None when there are none."""
        newest = self._newest(namespace, db_id, dim)
        if newest is None:
            return None
        m, root = newest
        try:
            dtype, name = VECTOR_TYPES[m.get("vectors", "float32")]
            n = min((root / "seq.i64").stat().st_size // 8,
                    (root / name).stat().st_size // (dim * np.dtype(dtype).itemsize))
        except (OSError, KeyError):
            return None
        return _map(root / "seq.i64", np.int64, n), _map(root / name, dtype, n * dim, (n, dim))

    def _postings_of(self, namespace: str, db_id: str, dim: int) -> tuple[np.ndarray, Postings] | None:
        """(sequence number of each row, every posting) of the namespace's newest files, the segment staged past
        their manifest included: the sparse vectors' only copy, which a rebuild keeps."""
        newest = self._newest(namespace, db_id, dim)
        if newest is None:
            return None
        m, root = newest
        try:
            n_seq = (root / "seq.i64").stat().st_size // 8
            segs = [Postings.load(root, *s) for s in m["segments"]]
            staged = root / f"p{m['n_rows']}-{n_seq}.rows"
            if n_seq > m["n_rows"] and staged.exists():
                segs.append(Postings.load_files(root, m["n_rows"], n_seq))
        except (OSError, KeyError, ValueError, TypeError):
            return None
        if not segs:
            return _map(root / "seq.i64", np.int64, n_seq), Postings.build(0, 0, *(np.zeros(0, t) for t in (
                np.uint32, np.int32, np.float32)))
        merged = Postings.build(0, n_seq, np.concatenate([s.expanded_terms() for s in segs]),
                                np.concatenate([s.rows for s in segs]), np.concatenate([s.vals for s in segs]))
        return _map(root / "seq.i64", np.int64, n_seq), merged

    def _rebuild(self, namespace: str, db_id: str, dim: int, conn: sqlite3.Connection, gen: int,
                 old: dict[str, Any] | None) -> dict[str, Any]:
        """A new epoch from every record in SQLite (inside the caller's read transaction), with the vectors of the
        previous files."""
        ns_dir = self.ns_dir(namespace)
        source = self._vectors_of(namespace, db_id, dim)
        epoch = (old["epoch"] + 1) if old else _next_epoch(ns_dir)
        root = self.epoch_dir(namespace, epoch)
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        sparse = None if self.source.legacy else self._postings_of(namespace, db_id, dim)
        m: dict[str, Any] = {"version": MANIFEST_VERSION, "db_id": db_id, "namespace": namespace, "dim": dim,
                             "vectors": self.vectors, "epoch": epoch, "generation": gen, "n_rows": 0, "max_seq": 0,
                             "n_dead": 0, "id_bytes": 0, "segments": [], "keys": {}, "build": uuid.uuid4().hex}
        all_seqs = []
        for d in self.source.rows(conn, namespace, 0):
            if d.staged:
                if source is None:
                    raise self.lost(f"no vector files in {ns_dir}")
                seqs, vectors = source
                want = np.asarray(d.seqs, np.int64)
                pos = np.minimum(np.searchsorted(seqs, want), max(len(seqs) - 1, 0))
                if not len(seqs) or not np.array_equal(seqs[pos], want):
                    raise self.lost(f"{int(np.count_nonzero(seqs[pos] != want)) if len(seqs) else len(want)} rows "
                                    f"have no vector in {ns_dir}")
                d.dense, d.staged = list(vectors[pos]), False
            all_seqs.extend(d.seqs)
            m = self._apply(namespace, m, d, gen, write_manifest=False, postings=sparse is None)
        if sparse is not None and all_seqs:  # the sparse vectors of the rows kept, from the previous postings
            old_seqs, p = sparse
            new_seqs = np.asarray(all_seqs, np.int64)
            seq = old_seqs[p.rows] if len(p.rows) else np.zeros(0, np.int64)
            pos = np.minimum(np.searchsorted(new_seqs, seq), max(len(new_seqs) - 1, 0))
            keep = new_seqs[pos] == seq if len(new_seqs) else np.zeros(len(seq), bool)
            seg = Postings.build(0, len(new_seqs), p.expanded_terms()[keep], pos[keep], p.vals[keep])
            seg.save(root)
            m["segments"] = [[seg.start, seg.stop, len(seg.terms), len(seg.rows)]]
        # A namespace with no row left has files all the same: without them every open would rebuild it again.
        for f in (VECTOR_TYPES[m["vectors"]][1], "seq.i64", "ids.bin", "ids.end", "dead.i64"):
            (root / f).touch()
        # The new epoch's files before the manifest naming it: the epoch before the previous one is removed below.
        for f in root.iterdir():
            if f.is_file():
                with open(f, "rb+") as fh:
                    os.fsync(fh.fileno())
        _fsync_dir(root)
        self._publish(namespace, m)
        # The previous epoch stays one rebuild longer: a reader that mapped it may still load a column from it.
        for stale in ns_dir.glob("e*"):
            if stale.is_dir() and stale.name[1:].isdigit() and int(stale.name[1:]) < epoch - 1:
                shutil.rmtree(stale, ignore_errors=True)
        return m

    def drop_older_epochs(self, namespace: str, db_id: str, dim: int) -> None:
        """Delete the namespace's epochs before its current one."""
        m = self.manifest(namespace, db_id, dim)
        if m is None:
            return
        for stale in self.ns_dir(namespace).glob("e*"):
            if stale.is_dir() and stale.name[1:].isdigit() and int(stale.name[1:]) < m["epoch"]:
                shutil.rmtree(stale, ignore_errors=True)

    def _apply(self, namespace: str, m: dict[str, Any], d: Delta, generation: int,
               write_manifest: bool = True, postings: bool = True) -> dict[str, Any]:
        m = json.loads(json.dumps(m))  # a copy: the caller's manifest stays what readers may have mapped
        root = self.epoch_dir(namespace, m["epoch"])
        n0, k, dim = m["n_rows"], len(d.seqs), m["dim"]
        if d.dead_seqs:
            dead = np.asarray(d.dead_seqs, dtype=np.int64)
            seqs = _map(root / "seq.i64", np.int64, n0)
            pos = np.minimum(np.searchsorted(seqs, dead), max(n0 - 1, 0))
            rows = pos[seqs[pos] == dead] if n0 else np.zeros(0, np.int64)
            _append(root / "dead.i64", rows.astype(np.int64).tobytes(), m["n_dead"] * 8, durable=True)
            m["n_dead"] += len(rows)
        if k and d.staged:
            self._staged(root, n0, d.seqs, dim, m["vectors"])
        elif k:
            dtype, name = VECTOR_TYPES[m["vectors"]]
            dense = np.stack([np.asarray(v, dtype=np.float32).reshape(dim) for v in d.dense]).astype(dtype)
            _append(root / name, dense.tobytes(), n0 * dim * dense.itemsize)
            _append(root / "seq.i64", np.asarray(d.seqs, dtype=np.int64).tobytes(), n0 * 8)
        if k:
            ids = [i.encode("utf-8") for i in d.ids]
            ends = m["id_bytes"] + np.cumsum([len(i) for i in ids], dtype=np.int64)
            _append(root / "ids.bin", b"".join(ids), m["id_bytes"])
            _append(root / "ids.end", ends.tobytes(), n0 * 8)
            m["id_bytes"] = int(ends[-1])
            if postings:
                self._append_postings(root, m, n0, d)
            self._append_metadata(namespace, root, m, n0, d.metadata)
            m["n_rows"] = n0 + k
            m["max_seq"] = int(d.seqs[-1])
        m["generation"] = generation
        if write_manifest:
            self._publish(namespace, m)
        return m

    def _publish(self, namespace: str, m: dict[str, Any]) -> None:
        """Write the manifest (readers switch to it), then drop the segment files it no longer names."""
        obsolete = m.pop("_obsolete", [])
        _atomic_json(self.ns_dir(namespace) / "manifest.json", m)
        for path in obsolete:
            Path(path).unlink(missing_ok=True)

    def _append_postings(self, root: Path, m: dict[str, Any], n0: int, d: Delta) -> None:
        obsolete = m.setdefault("_obsolete", [])
        staged = Postings.build(n0, n0 + len(d.seqs), *(np.zeros(0, t) for t in (np.uint32, np.int32, np.float32)))
        if d.staged and staged.files(root)["rows"].exists():  # written before the commit
            seg = on_disk = Postings.load_files(root, n0, n0 + len(d.seqs))
        elif any(i is None for i in d.sparse_idx):
            raise self.lost(f"the postings of rows {n0}-{n0 + len(d.seqs)} are not in {root}")
        else:
            seg, on_disk = _segment(n0, d), None
        obsolete.extend(str(p) for p in staged.files(root).values())
        segs = [Postings.load(root, *s) for s in m["segments"]]
        # Binary-counter merging: a segment absorbs the next while it is less than twice its size.
        while segs and (segs[-1].stop - segs[-1].start) < 2 * (seg.stop - seg.start):
            prev = segs.pop()
            obsolete.extend(str(p) for p in prev.files(root).values())
            seg = Postings.merge(prev, seg)
        if seg is not on_disk:  # (a staged segment left as it is was written and flushed before its commit)
            seg.save(root)
        segs.append(seg)
        m["segments"] = [[s.start, s.stop, len(s.terms), len(s.rows)] for s in segs]
        keep = {str(p) for s in segs for p in s.files(root).values()}
        m["_obsolete"] = [p for p in obsolete if p not in keep]

    def _append_metadata(self, namespace: str, root: Path, m: dict[str, Any], n0: int,
                         metadata: list[dict[str, Any]]) -> None:
        per_key: dict[str, tuple[list[int], list[int], list[int], list[Any]]] = {}
        for r, md in enumerate(metadata, start=n0):
            for key, value in md.items():
                info = m["keys"].get(key)
                if info is None:
                    # "rowwise": every row so far has one scalar of this key, so the codes are one per row and
                    # which rows have it (prows, erows) goes without saying, until a row breaks the rule.
                    info = m["keys"][key] = {"stem": _stem(key), "indexed": key not in UNINDEXED_KEYS, "values": 0,
                                             "vbytes": 0, "elems": 0, "present": 0, "multi": False,
                                             "rowwise": n0 == 0 and r == 0}
                if not info["indexed"]:
                    continue
                if key not in per_key:
                    kv = self.key_values(namespace, m["epoch"], key)
                    kv.truncate(info["values"])
                    kv.extend_from(root / f"m{info['stem']}.values", info["values"])
                    per_key[key] = ([], [], [], [], kv)
                prows, erows, codes, new_values, kv = per_key[key]
                prows.append(r)
                elems = filters.elements(value)
                if len(elems) > 1:
                    info["multi"] = True
                for v in elems:
                    code = kv.lookup.get((filters.scalar_kind(v), v))  # type: ignore[arg-type]
                    if code is None:
                        code = kv._add(v)
                        new_values.append(v)
                    erows.append(r)
                    codes.append(code)
        for key, info in m["keys"].items():  # a rowwise key that none of these rows has
            if info.get("rowwise") and key not in per_key and metadata:
                per_key[key] = ([], [], [], [], None)
        for key, (prows, erows, codes, new_values, _) in per_key.items():
            info = m["keys"][key]
            stem = root / f"m{info['stem']}"
            data = "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in new_values).encode("utf-8")
            _append(stem.with_suffix(".values"), data, info["vbytes"])
            info["vbytes"] += len(data)
            if info.get("rowwise") and not (len(prows) == len(erows) == len(metadata)):
                # A row without the key, or with several values: from now on each row and element is listed.
                info["rowwise"] = False
                every = np.arange(info["present"], dtype=np.int32).tobytes()
                _append(stem.with_suffix(".prows"), every, 0)
                _append(stem.with_suffix(".erows"), every, 0)
            if not info.get("rowwise"):
                _append(stem.with_suffix(".prows"), np.asarray(prows, np.int32).tobytes(), info["present"] * 4)
                _append(stem.with_suffix(".erows"), np.asarray(erows, np.int32).tobytes(), info["elems"] * 4)
            _append(stem.with_suffix(".codes"), np.asarray(codes, np.int32).tobytes(), info["elems"] * 4)
            info["values"] += len(new_values)
            info["elems"] += len(erows)
            info["present"] += len(prows)


def _next_epoch(ns_dir: Path) -> int:
    epochs = [int(p.name[1:]) for p in ns_dir.glob("e*") if p.name[1:].isdigit()]
    return max(epochs, default=0) + 1
