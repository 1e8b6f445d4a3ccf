"""Ingestion: files -> documents -> chunks -> dense + sparse vectors -> atomic replaces in the index.

Unchanged files (same content hash) are skipped before parsing, so re-ingesting embeds nothing.
A failure in one document never touches the index and never stops the rest of a batch.

Many files go through a pipeline that keeps the model busy (the model is ~99% of the cost): a reader thread loads and
chunks files ahead of the model; passages from consecutive files fill the same batches; `workers` batches are
embedded side by side; a document is written as soon as its last passage has its vector (the documents one batch
completes, in one transaction), so a search during a long ingest finds every document already done, and a kill
loses only the documents in progress. Each document is all-or-nothing: written whole, or not at all.
"""

from __future__ import annotations

import hashlib
import json
import queue
import re
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from citerag.documents.budget import TextBudget
from citerag.documents.chunking import chunk_document, parent_id_for
from citerag.documents.loaders import SUPPORTED_SUFFIXES, kind_for, load_bytes
from citerag.documents.model import Chunk, LoadedDocument, content_hash_of, doc_id_for
from citerag.documents.ocr import Ocr
from citerag.documents.text import normalize
from citerag.errors import CiteragError, DependencyError, DiskFullError, DocumentError, NeedsOcr
from citerag.ingestion.files import IngestResult, expand_named_paths, read_regular_file, uri_to_path
from citerag.ingestion.opening import FileTooLarge
from citerag.ingestion.progress import IngestProgress, ProgressTracker
from citerag.search.ports import DocumentInfo, Embedder, Record, VectorIndex
from citerag.search.sparse import DEFAULT_TOKENS, BM25Tokens, CorpusStats, encode_document

# Passages shorter than this (after normalisation) are compared with their title: a short passage's embedding
# depends on its title, a long one's hardly does.
NEAR_DUPLICATE_MIN_CHARS = 200


@dataclass
class _Prepared:
    """A document loaded and chunked, waiting for its vectors."""

    order: int  # position in the ingest, so results come out in file order
    doc: LoadedDocument
    chunks: list[Chunk]
    texts: list[str]
    counts: list[Counter[int]]
    access: dict[str, Any]
    replaced: bool
    size: int
    file_hash: str = ""  # of the bytes read: what a reader of the file checks later
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    ready: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    left: int = 0  # passages still without a vector


class Ingestor:
    def __init__(
        self,
        embedder: Embedder,
        index: VectorIndex,
        *,
        namespace: str = "",
        chunk_chars: int = 600,
        overlap_chars: int = 120,
        max_file_bytes: int = 200 * 1024 * 1024,
        max_pages: int = 5000,
        max_chunks: int = 20_000,
        extra_metadata: dict[str, Any] | None = None,
        workers: int = 1,
        batch_size: int = 16,
        write_batch_passages: int = 2000,
        skip_near_duplicates: bool = True,
        tokens: BM25Tokens = DEFAULT_TOKENS,
        ocr: Ocr | None = None,
    ) -> None:
        self.embedder = embedder
        self.index = index
        self.namespace = namespace
        self.chunk_chars = chunk_chars
        self.overlap_chars = overlap_chars
        self.max_file_bytes = max_file_bytes
        self.max_pages = max_pages
        self.max_chunks = max_chunks
        self.extra_metadata = extra_metadata or {}
        self.workers = max(1, workers)
        self.batch_size = max(1, batch_size)
        self.write_batch_passages = max(1, write_batch_passages)
        self.skip_near_duplicates = skip_near_duplicates
        self.tokens = tokens  # the BM25 token stream; searches of this index must use the same
        self.ocr = ocr  # reads scanned pages and images; None leaves them unread
        self.near_duplicates = 0  # passages that reused the vector of an earlier near-identical passage

    # --- one document -------------------------------------------------------------------------------------

    def ingest_bytes(
        self, data: bytes, source_uri: str, name: str, *, force: bool = False, metadata: dict[str, Any] | None = None
    ) -> IngestResult:
        try:
            prepared = self._prepare(data, source_uri, name, force=force, metadata=metadata)
            if isinstance(prepared, IngestResult):
                return prepared
            prepared.vectors = np.asarray(self.embedder.embed_passages(prepared.texts), dtype=np.float32)
            self._write([prepared])
        except DiskFullError:
            raise
        except CiteragError as exc:
            return _failed(source_uri, exc)
        return _written(prepared)

    def passages_to_embed(self, data: bytes, source_uri: str, name: str, *,
                          metadata: dict[str, Any] | None = None) -> IngestResult | list[str]:
        """The passage texts ingesting this document would embed, or why there are none (unchanged, failed): the
        bulk path stages them for a batch job and writes the document when the job is done."""
        try:
            prepared = self._prepare(data, source_uri, name, metadata=metadata)
        except DiskFullError:
            raise
        except CiteragError as exc:
            return _failed(source_uri, exc)
        return prepared if isinstance(prepared, IngestResult) else prepared.texts

    def ingest_path(self, path: Path) -> IngestResult:
        """One file, as `expand_paths` gives it (resolved): a path that is a link is not followed."""
        got = self._read(path)
        return got if isinstance(got, IngestResult) else self.ingest_bytes(got[0], got[1], path.name)

    def _read(self, path: Path, name: str | None = None) -> IngestResult | tuple[bytes, str]:
        """`name`: the name the file was given (a link's), which says its type."""
        uri = path.resolve().as_uri() if path.exists() else path.absolute().as_uri()
        try:
            kind_for(name or path.name)
            if not path.exists():
                raise DocumentError("no such file")
            if path.is_dir():
                raise DocumentError("is a directory, not a file")
            limit = self.max_bytes_for(name or path.name)
            try:
                data = read_regular_file(path, limit)
            except FileTooLarge as exc:
                raise DocumentError(self.over_budget(name or path.name, exc)) from None
        except PermissionError:
            return IngestResult(source=uri, status="failed", reason="cannot read: permission denied", system=True)
        except OSError as exc:
            return IngestResult(source=uri, status="failed", reason=f"cannot read: {exc.strerror or exc}",
                                system=True)
        except CiteragError as exc:
            return IngestResult(source=uri, status="failed", reason=str(exc))
        return data, uri

    def text_budget(self) -> TextBudget:
        """What one document may hold, counted while its loader reads it (documents/budget.py)."""
        return TextBudget.for_passages(self.max_chunks, self.chunk_chars)

    def max_bytes_for(self, name: str) -> int:
        """The most bytes a file of this name is read for: the size cap, or less for a text format, whose bytes
        alone can prove it holds more text than its passages could (refused before it is read)."""
        kind = SUPPORTED_SUFFIXES.get(PurePosixPath(name).suffix.lower())
        over = self.text_budget().max_bytes(kind) if kind else None
        return min(self.max_file_bytes, over) if over else self.max_file_bytes

    def over_budget(self, name: str, exc: Exception) -> str:
        """Why a file over max_bytes_for(name) is refused: the size cap's message, or the text budget's."""
        limit = self.max_bytes_for(name)
        if limit >= self.max_file_bytes:
            return str(exc)
        return (f"{exc}: a {kind_for(name)} file over {limit:,} bytes holds more text than {self.max_chunks:,} "
                "passages could (CITERAG_MAX_CHUNKS_PER_DOCUMENT); split it into smaller files")

    def passages_of(self, path: Path) -> list[str]:
        """The passage texts ingesting this file would embed (none when it is unchanged or cannot be indexed)."""
        got = self._read(path)
        if isinstance(got, IngestResult):
            return []
        try:
            prepared = self._prepare(got[0], got[1], path.name)
        except CiteragError:
            return []
        return [] if isinstance(prepared, IngestResult) else prepared.texts

    def remove(self, source_uri: str) -> IngestResult:
        n = self.index.delete_document(doc_id_for(source_uri), self.namespace)
        return IngestResult(source=source_uri, status="removed", chunks=n)

    def _prepare(
        self, data: bytes, source_uri: str, name: str, *, force: bool = False,
        metadata: dict[str, Any] | None = None, order: int = 0,
    ) -> _Prepared | IngestResult:
        """Load and chunk one document, or say why it needs no work (unchanged) or cannot be indexed. Reads the
        index (is it unchanged?) but never writes it."""
        kind_for(name)
        if len(data) > self.max_file_bytes:
            raise DocumentError(f"file is too large ({len(data):,} bytes; the limit is {self.max_file_bytes:,})")
        doc_id = doc_id_for(source_uri)
        access = {**self.extra_metadata, **(metadata or {})}
        version = version_of(data, access, reading=f"{READER}/{self.chunk_chars}/{self.overlap_chars}")
        existing = self.index.get_document(doc_id, self.namespace)
        if existing and existing.content_hash == version and not force:
            return IngestResult(source=source_uri, status="unchanged", chunks=existing.n_chunks)
        doc = load_bytes(data, source_uri, name, max_pages=self.max_pages, budget=self.text_budget(), ocr=self.ocr)
        doc = doc.model_copy(update={"content_hash": version})
        chunks = chunk_document(doc, max_chars=self.chunk_chars, overlap_chars=self.overlap_chars)
        if not chunks:
            raise DocumentError("no text found in the file")
        if len(chunks) > self.max_chunks:
            raise DocumentError(f"the document makes {len(chunks):,} passages; the limit is {self.max_chunks:,} "
                                "(CITERAG_MAX_CHUNKS_PER_DOCUMENT): split it into smaller files")
        texts = [passage_text(c.title, c.text) for c in chunks]
        counts = [self.tokens.counts(t) for t in texts]
        return _Prepared(order=order, doc=doc, chunks=chunks, texts=texts, counts=counts, access=access,
                         replaced=existing is not None, size=len(data), left=len(chunks),
                         file_hash=content_hash_of(data))

    def _write(self, docs: Sequence[_Prepared]) -> None:
        """Encode BM25 weights and write the documents in one transaction. Each document is encoded with the
        corpus size as it would be had the documents before it been written one by one (the first document of an
        empty namespace sets the average length itself), so batching does not change the index."""
        n_docs, total_len = self.index.corpus_size(self.namespace)
        batch = []
        for p in docs:
            n_here = len(p.counts)
            len_here = sum(sum(c.values()) for c in p.counts)
            stats = (CorpusStats(n_docs=n_docs, total_len=total_len) if n_docs
                     else CorpusStats(n_docs=n_here, total_len=len_here))  # only the average length is used
            batch.append(self._records(p, stats))
            n_docs, total_len = n_docs + n_here, total_len + len_here
        many = getattr(self.index, "replace_documents", None)
        if many is not None and len(batch) > 1:
            many(batch, self.namespace)
        else:
            for info, records, parents in batch:
                self.index.replace_document(info, records, parents, self.namespace)

    def _records(self, p: _Prepared, stats: CorpusStats) -> tuple[DocumentInfo, list[Record], dict[str, str]]:
        doc = p.doc
        now = _now()
        records = [
            Record(id=c.id, values=v, sparse=encode_document(cnt, stats),
                   metadata={**p.access, **c.metadata(), "ingested_at": now}, length=sum(cnt.values()))
            for c, v, cnt in zip(p.chunks, p.vectors, p.counts, strict=True)
        ]
        parents = {parent_id_for(doc, i): section.text for i, section in enumerate(doc.sections)}
        info = DocumentInfo(
            doc_id=doc.doc_id, source_uri=doc.source_uri, title=doc.title, content_hash=doc.content_hash,
            kind=doc.kind, n_chunks=len(records), ingested_at=now, namespace=self.namespace, file_hash=p.file_hash,
        )
        return info, records, parents

    # --- many paths ---------------------------------------------------------------------------------------

    def ingest_paths(
        self,
        paths: Iterable[Path],
        *,
        sync: bool = False,
        on_start: Callable[[int], None] | None = None,
        on_file: Callable[[IngestResult], None] | None = None,
        on_progress: Callable[[IngestProgress], None] | None = None,
    ) -> list[IngestResult]:
        """Ingest files and folders. `on_file` hears about each file as soon as its outcome is known (failures
        first, as they happen), `on_progress` after every batch of passages."""
        roots = [Path(p) for p in paths]
        files, problems, names = expand_named_paths(roots)
        if on_start:
            on_start(len(files))
        for r in problems:
            if on_file:
                on_file(r)
        run = _PipelineRun(self, files, on_file, on_progress, names)
        results = problems + run.execute()
        if sync and not run.stopped_by_full_disk:
            results.extend(self._sync(roots))
        return results

    def _sync(self, roots: list[Path]) -> list[IngestResult]:
        """Remove documents whose files under the given roots no longer exist."""
        return [self.remove(uri) for uri in self.gone(roots)]

    def gone(self, roots: Iterable[Path]) -> list[str]:
        """The indexed documents under the given files or folders whose files no longer exist (deleted, renamed)."""
        resolved = [Path(r).resolve() for r in roots]
        out = []
        for info in self.index.list_documents(self.namespace):
            path = uri_to_path(info.source_uri)
            if path is None or path.exists():
                continue
            if any(path == r or r in path.parents for r in resolved):
                out.append(info.source_uri)
        return out


class _PipelineRun:
    """One ingest of many files: a reader thread, `workers` embedding threads, and the calling thread, which
    hands out batches, collects vectors in order and writes finished documents."""

    _DONE = object()

    def __init__(self, ing: Ingestor, files: list[Path], on_file, on_progress,
                 names: dict[Path, str] | None = None) -> None:
        self.names = names or {}  # the name a file was given, where it differs (a link's)
        self.ing = ing
        self.files = files
        self.on_file = on_file
        self.on_progress = on_progress
        self.results: dict[int, IngestResult] = {}
        self.stopped_by_full_disk = False
        sizes = []
        for f in files:
            try:
                sizes.append(f.stat().st_size)
            except OSError:
                sizes.append(0)
        self.sizes = sizes
        by_kind: dict[str, int] = {}
        for f, size in zip(files, sizes, strict=True):
            by_kind[f.suffix.lower()] = by_kind.get(f.suffix.lower(), 0) + size
        self.tracker = ProgressTracker(len(files), sum(sizes), bytes_by_kind=by_kind)
        # The reader stays at most this many documents ahead of the pipeline.
        self.ahead: queue.Queue = queue.Queue(maxsize=4)
        self.stop = threading.Event()
        self.pending: deque[tuple[_Prepared, int]] = deque()  # passages not yet handed to a worker
        self.inflight: deque[tuple[list[tuple[_Prepared, int]], Future]] = deque()
        self.leaders: dict[bytes, tuple[_Prepared, int]] = {}  # near-duplicate key -> first passage with it
        # (id(leader document), leader passage) -> passages waiting for its vector
        self.followers: dict[tuple[int, int], list[tuple[_Prepared, int]]] = {}
        self.unwritten: list[_Prepared] = []
        self.open_docs: deque[_Prepared] = deque()  # documents with passages in flight, in order
        self.reader_done = False
        self.misses_seen = getattr(ing.embedder, "misses", 0)

    # --- reader thread --------------------------------------------------------------------------------------

    def _reader(self) -> None:
        try:
            for n, path in enumerate(self.files):
                if self.stop.is_set():
                    break
                name = self.names.get(path, path.name)
                got = self.ing._read(path, name)
                if isinstance(got, tuple):
                    data, uri = got
                    try:
                        got = self.ing._prepare(data, uri, name, order=n)
                    except CiteragError as exc:
                        got = _failed(uri, exc)
                    if isinstance(got, IngestResult):
                        got = (n, got)
                else:
                    got = (n, got)
                self._put(got)
        except BaseException as exc:  # a bug or an unexpected error: re-raised on the calling thread
            self._put(exc)
        self._put(self._DONE)

    def _put(self, item) -> None:
        while not self.stop.is_set():
            try:
                self.ahead.put(item, timeout=0.2)
                return
            except queue.Full:
                continue

    # --- calling thread -------------------------------------------------------------------------------------

    def execute(self) -> list[IngestResult]:
        reader = threading.Thread(target=self._reader, name="citerag-ingest-reader", daemon=True)
        pool = ThreadPoolExecutor(self.ing.workers, thread_name_prefix="citerag-embed")
        reader.start()
        try:
            self._loop(pool)
        except DiskFullError as exc:
            self._disk_full(exc)
        except BaseException:
            # Ctrl-C or a bug: keep the documents that are complete (each whole), drop the rest.
            self.stop.set()
            pool.shutdown(wait=False, cancel_futures=True)
            self._flush_quietly()
            raise
        finally:
            self.stop.set()
            pool.shutdown(wait=False, cancel_futures=True)
        return [self.results[n] for n in sorted(self.results)]

    def _loop(self, pool: ThreadPoolExecutor) -> None:
        ing = self.ing
        capacity = ing.workers * 2  # a batch running and one waiting per worker
        while True:
            self._take_from_reader(block=not self.inflight and not self.pending)
            while self.pending and len(self.inflight) < capacity:
                if len(self.pending) < ing.batch_size and not self.reader_done and len(self.inflight) >= ing.workers:
                    break  # wait for a full batch unless a worker would idle
                batch = [self.pending.popleft() for _ in range(min(ing.batch_size, len(self.pending)))]
                texts = [p.texts[i] for p, i in batch]
                self.inflight.append((batch, pool.submit(ing.embedder.embed_passages, texts)))
            if not self.inflight:
                if self.reader_done and not self.pending:
                    break
                continue
            batch, fut = self.inflight[0]
            done, _ = wait_futures([fut], timeout=0.2)
            if done:
                self.inflight.popleft()
                self._collect(batch, fut.result())
        self._flush()
        self._report()

    def _take_from_reader(self, block: bool) -> None:
        # Passages ready to hand out are bounded (plus the reader's queue of documents), so memory is too.
        limit = self.ing.workers * 4 * self.ing.batch_size
        while not self.reader_done and len(self.pending) < limit:
            try:
                item = self.ahead.get(timeout=0.2) if block else self.ahead.get_nowait()
            except queue.Empty:
                if block:
                    continue
                return
            if item is self._DONE:
                self.reader_done = True
                self.tracker.all_chunked = True
                return
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, tuple):
                n, result = item
                self.tracker.file_read(self.sizes[n], 0, self.files[n].suffix.lower())
                self._finish(n, result)
            else:
                self._enqueue(item)
            block = block and not self.pending  # one document is enough to start a batch

    def _enqueue(self, p: _Prepared) -> None:
        self.tracker.file_read(self.sizes[p.order], len(p.texts), self.files[p.order].suffix.lower())
        p.vectors = np.zeros((len(p.texts), self.ing.embedder.dim), dtype=np.float32)
        p.ready = np.zeros(len(p.texts), dtype=bool)
        self.open_docs.append(p)
        for i, text in enumerate(p.texts):
            if self.ing.skip_near_duplicates:
                key = near_duplicate_key(p.chunks[i].text, text)
                leader = self.leaders.get(key)
                if leader is not None:
                    # Same text up to case, spacing and punctuation: reuse the vector, keep the passage (it is
                    # still searchable and citable where it is).
                    self.ing.near_duplicates += 1
                    lp, li = leader
                    if lp.ready[li]:
                        self._assign(p, i, lp.vectors[li])
                    else:
                        self.followers.setdefault((id(lp), li), []).append((p, i))
                    continue
                self.leaders[key] = (p, i)
            self.pending.append((p, i))
        self._complete_docs()

    def _assign(self, p: _Prepared, i: int, vec: np.ndarray) -> None:
        p.vectors[i] = vec
        p.ready[i] = True
        p.left -= 1
        for fp, fi in self.followers.pop((id(p), i), []):
            self._assign(fp, fi, vec)

    def _collect(self, batch: list[tuple[_Prepared, int]], vectors: np.ndarray) -> None:
        for (p, i), v in zip(batch, vectors, strict=True):
            self._assign(p, i, v)
        misses = getattr(self.ing.embedder, "misses", None)
        if misses is None:
            embedded = len(batch)
        else:  # passages the cache already had took no model time: left out of the rate behind the ETA
            embedded, self.misses_seen = max(0, misses - self.misses_seen), misses
        self.tracker.batch_done(len(batch), embedded=embedded)
        self._complete_docs()

    def _complete_docs(self) -> None:
        """Documents whose passages all have vectors, in file order, are written now: searchable at once, and
        each with the time it was done."""
        while self.open_docs and self.open_docs[0].left == 0:
            p = self.open_docs.popleft()
            self.unwritten.append(p)
            if sum(len(d.texts) for d in self.unwritten) >= self.ing.write_batch_passages:
                self._flush()
        self._flush()
        self._report()

    def _report(self) -> None:
        t = self.tracker
        if self.open_docs:
            p = self.open_docs[0]
            t.current = p.doc.source_uri
            t.pages = len(p.doc.sections)
            first_missing = int(np.argmin(p.ready)) if p.left else len(p.chunks)
            # The page (or section) before the first passage still waiting is complete.
            t.page = _section_number(p, first_missing - 1) if first_missing else None
        else:
            t.current, t.page, t.pages = None, None, None
        if self.on_progress:
            self.on_progress(t.snapshot())
    # --- endings ----------------------------------------------------------------------------------------------

    def _finish(self, n: int, result: IngestResult) -> None:
        self.results[n] = result
        self.tracker.files_done += 1
        if self.on_file:
            self.on_file(result)

    def _flush(self) -> None:
        """Write the finished documents in one transaction. When it fails for a reason other than a full disk,
        each document is tried alone, so one document's problem does not fail the others."""
        docs, self.unwritten = self.unwritten, []
        if not docs:
            return
        try:
            self.ing._write(docs)
        except DiskFullError:
            self.unwritten = docs
            raise
        except CiteragError as exc:
            if len(docs) == 1:
                self._finish(docs[0].order, _failed(docs[0].doc.source_uri, exc))
                return
            # One at a time, so one document's problem fails only that document. When two in a row fail with the
            # batch's message, the cause is not in the documents (a lock, say): the rest would fail alike.
            shared, strikes = str(exc), 0
            for n, p in enumerate(docs):
                try:
                    self.ing._write([p])
                except DiskFullError:
                    self.unwritten = docs[n:]
                    raise
                except CiteragError as one:
                    strikes = strikes + 1 if str(one) == shared else 0
                    self._finish(p.order, _failed(p.doc.source_uri, one))
                    if strikes >= 2:
                        for q in docs[n + 1 :]:
                            self._finish(q.order, _failed(q.doc.source_uri, one))
                        return
                    continue
                strikes = 0
                self._finish(p.order, _written(p))
            return
        for p in docs:
            self._finish(p.order, _written(p))

    def _flush_quietly(self) -> None:
        try:
            self._complete_docs_only()
            self._flush()
        except Exception:  # interrupted anyway: what could not be written stays as it was
            pass

    def _complete_docs_only(self) -> None:
        while self.open_docs and self.open_docs[0].left == 0:
            self.unwritten.append(self.open_docs.popleft())

    def _disk_full(self, exc: DiskFullError) -> None:
        """Every later write would fail the same way: the unwritten documents fail, the rest are not attempted."""
        self.stop.set()
        self.stopped_by_full_disk = True
        for p in self.unwritten:
            self._finish(p.order, IngestResult(source=p.doc.source_uri, status="failed", reason=str(exc),
                                               system=True))
        self.unwritten = []
        for n, path in enumerate(self.files):
            if n not in self.results:
                self.results[n] = IngestResult(source=path.absolute().as_uri(), status="skipped",
                                               reason="not attempted: the disk is full", system=True)


def near_duplicate_key(body: str, passage: str) -> bytes:
    """Passages with the same key are embedded once: the same words up to case, spacing and punctuation. A long
    passage is compared without its title (its embedding hardly depends on it), a short one with it."""
    words = _NON_WORD.sub(" ", normalize(body).casefold()).split()
    key = " ".join(words)
    if len(key) < NEAR_DUPLICATE_MIN_CHARS:
        key = " ".join(_NON_WORD.sub(" ", normalize(passage).casefold()).split())
    return hashlib.blake2b(key.encode("utf-8"), digest_size=16).digest()


_NON_WORD = re.compile(r"[\W_]+")


def _section_number(p: _Prepared, chunk_index: int) -> int:
    """1-based page (PDF) or section number of a chunk."""
    c = p.chunks[chunk_index]
    if c.page is not None:
        return c.page
    return next((n + 1 for n in range(len(p.doc.sections)) if parent_id_for(p.doc, n) == c.parent_id), 1)


def _failed(source_uri: str, exc: CiteragError) -> IngestResult:
    """A document that failed: for what it holds (a DocumentError), or for a reason outside it (the index, a
    dependency), which is the system's. An image with OCR off is passed over, as a file of a type not indexed is."""
    if isinstance(exc, NeedsOcr):
        return IngestResult(source=source_uri, status="skipped", reason=str(exc))
    return IngestResult(source=source_uri, status="failed", reason=str(exc), transient=isinstance(exc, DependencyError),
                        system=not isinstance(exc, DocumentError))


def _written(p: _Prepared) -> IngestResult:
    return IngestResult(source=p.doc.source_uri, status="replaced" if p.replaced else "added", chunks=len(p.chunks))


def _code_digest(package: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(package.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


# How files are read and cut into passages, as the digest of the code that does it (citerag.documents): a file
# ingested by an older reader is read again by a newer one (a PDF font it now decodes, a format's structure it now
# keeps) instead of being skipped as unchanged with the old text.
READER = _code_digest(Path(__file__).resolve().parents[1] / "documents")


def version_of(data: bytes, access: dict[str, Any], reading: str = "") -> str:
    """What decides "unchanged": the content, the access metadata (re-ingesting a file with another tenant must
    replace it, or the old tenant would keep seeing it), and how it is read and cut (`reading`)."""
    canonical = json.dumps(access, sort_keys=True, ensure_ascii=False, default=str) if access else ""
    if not canonical and not reading:
        return content_hash_of(data)
    return content_hash_of(content_hash_of(data).encode() + b"\0" + canonical.encode("utf-8") + b"\0"
                           + reading.encode("utf-8"))


def passage_text(title: str, text: str) -> str:
    """What gets embedded and BM25-encoded: the title gives a chunk its topic."""
    return f"{title}\n{text}" if title else text


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
