"""Documents added from serve's page: stored under the data folder, ingested one at a time in a background thread
(the same Ingestor, limits and refusals as `citerag ingest`) while the page keeps answering, listed, and removed."""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from queue import SimpleQueue
from typing import Any

from citerag.documents.loaders import kind_for
from citerag.errors import CiteragError, DocumentError
from citerag.ingestion.files import IngestResult, uri_to_path

NAME_MAX_BYTES = 200  # of a stored file's name; ext4 allows 255, and " (12)" may be added to it
JOBS_KEPT = 50  # finished ingests the page can still show
_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"|?*\\/]')  # control characters, and what Windows or a path would read


class UploadRefused(CiteragError):
    """An upload that is not stored; `status` is the HTTP status that says why."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def safe_name(filename: str) -> str:
    """The name a file is stored under: its last path component only (a browser or a script may send
    "C:\\Users\\a\\report.pdf" or "../../.bashrc"), NFC, without control characters, leading dots or spaces, at
    most NAME_MAX_BYTES bytes with its extension kept. Refused when nothing is left of it."""
    name = re.split(r"[\\/]", filename or "")[-1]
    name = _UNSAFE.sub("_", unicodedata.normalize("NFC", name)).strip().lstrip(". ").rstrip(". ")
    if not name or not Path(name).stem:
        raise UploadRefused("the file has no usable name", 400)
    stem, suffix = _split(name)
    while len((stem + suffix).encode("utf-8")) > NAME_MAX_BYTES and stem:
        stem = stem[:-1]
    return (stem.rstrip() or "document") + suffix


def _split(name: str) -> tuple[str, str]:
    suffix = Path(name).suffix
    return (name[: -len(suffix)], suffix) if suffix and len(suffix) < len(name) else (name, "")


@dataclass
class Job:
    """One file being ingested, as the page shows it."""

    id: int
    name: str
    uri: str
    note: str = ""  # what storing it did that the user should know (a name already taken)
    state: str = "queued"  # queued, running, preparing (the answerer's statements), done
    passages_done: int = 0
    passages_total: int = 0
    result: IngestResult | None = None
    future: Future | None = field(default=None, repr=False)

    def wire(self) -> dict[str, Any]:
        r = self.result
        return {"id": self.id, "name": self.name, "uri": self.uri, "note": self.note, "state": self.state,
                "passages_done": self.passages_done, "passages_total": self.passages_total,
                "status": r.status if r else None, "reason": r.reason if r else None,
                "passages": r.chunks if r else None}


class Uploads:
    """The documents folder and the ingests of what is added to it. `comps()` gives the Components uploads are
    written into; `on_written` hears each document ingested (serve switches from the bundled samples to the user's
    own index after the first)."""

    def __init__(self, comps: Callable[[], Any], folder: Path, max_upload_bytes: int,
                 on_written: Callable[[], None] | None = None) -> None:
        self._comps = comps
        self.folder = folder
        self.max_upload_bytes = max_upload_bytes
        self._on_written = on_written
        # One ingest at a time, on a daemon thread: stopping the server is not held up by a long ingest (a
        # document is written whole or not at all, so one cut short is simply not there).
        self._queue: SimpleQueue = SimpleQueue()
        self._worker = threading.Thread(target=self._work, name="citerag-serve-ingest", daemon=True)
        self._worker.start()
        self._jobs: OrderedDict[int, Job] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # --- limits, before a byte is stored ---------------------------------------------------------------------

    def limit_for(self, name: str) -> int:
        """The most bytes a file of this name may have: the upload cap, or less where ingest would refuse it."""
        return min(self.max_upload_bytes, self._comps().ingestor().max_bytes_for(name))

    def check_type(self, name: str) -> None:
        try:
            kind_for(name)
        except DocumentError as exc:  # ingest's own message, listing what is supported
            raise UploadRefused(str(exc), 415) from None

    def too_large(self, name: str, size: int | None) -> str:
        """Why a file of `size` bytes (None: more than the upload cap) is refused, as ingest says it."""
        ingestor = self._comps().ingestor()
        if size is None or size > self.max_upload_bytes:
            said = f"{size:,} bytes" if size is not None else f"more than {self.max_upload_bytes:,} bytes"
            return (f"file is too large ({said}; the limit for a file added from this page is "
                    f"{self.max_upload_bytes:,}, CITERAG_SERVE_MAX_UPLOAD_BYTES)")
        from citerag.ingestion.opening import FileTooLarge

        limit = ingestor.max_bytes_for(name)
        return ingestor.over_budget(name, FileTooLarge(f"file is too large ({size:,} bytes; the limit is {limit:,})"))

    # --- storing ----------------------------------------------------------------------------------------------

    def store(self, name: str, spooled, replace: bool = False) -> tuple[Path, str, bool]:
        """Write the uploaded bytes (a file object at its start) into the folder under `name`: (path, a note for
        the user, whether the file is new). A file of that name with other bytes is never overwritten unless
        `replace`: this one is stored as "name (2).ext" and the note says so."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = _temporary(self.folder)
        digest = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as out:
                while chunk := spooled.read(1024 * 1024):
                    digest.update(chunk)
                    out.write(chunk)
            stem, suffix = _split(name)
            for n in itertools.count(1):
                candidate = self.folder / (name if n == 1 else f"{stem} ({n}){suffix}")
                if n > 1000:
                    raise UploadRefused(f"too many files named {name} are stored already", 409)
                try:
                    _place(tmp, candidate)  # never replaces a file: fails when the name is taken
                    note = "" if n == 1 else (f"a different file named {name} was added before; this one is stored "
                                              f"as {candidate.name}")
                    return candidate, note, True
                except FileExistsError:
                    if _sha256(candidate) == digest.hexdigest():
                        return candidate, "" if n == 1 else f"the same file is stored as {candidate.name}", False
                    if replace and n == 1:
                        os.replace(tmp, candidate)
                        return candidate, f"replaced the earlier file named {name}", False
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        raise AssertionError("unreachable")

    # --- ingesting --------------------------------------------------------------------------------------------

    def submit(self, path: Path, note: str, new: bool) -> Job:
        job = Job(id=next(self._ids), name=path.name, uri=path.resolve().as_uri(), note=note)
        with self._lock:
            self._jobs[job.id] = job
            while len(self._jobs) > JOBS_KEPT:
                oldest = next(iter(self._jobs.values()))
                if oldest.state != "done":
                    break
                self._jobs.popitem(last=False)
        job.future = Future()
        self._queue.put((job, path, new))
        return job

    def _work(self) -> None:
        while True:
            job, path, new = self._queue.get()
            self._run(job, path, new)
            job.future.set_result(job)

    def _run(self, job: Job, path: Path, new: bool) -> Job:
        job.state = "running"

        def progress(p) -> None:
            job.passages_done, job.passages_total = p.passages_done, p.passages_total

        try:
            results = self._comps().ingestor().ingest_paths([path], on_progress=progress)
            result = next((r for r in results if r.source == job.uri), None) or (results[0] if results else None)
            job.result = result or IngestResult(source=job.uri, status="failed", reason="nothing was read")
        except CiteragError as exc:
            job.result = IngestResult(source=job.uri, status="failed", reason=str(exc), system=True)
        except Exception as exc:  # a bug: said on the page, never a traceback
            job.result = IngestResult(source=job.uri, status="failed", reason=f"ingest failed: {type(exc).__name__}",
                                      system=True)
        if job.result.status in ("failed", "skipped") and new:
            path.unlink(missing_ok=True)  # refused: nothing of it is kept
        elif job.result.status in ("added", "replaced"):
            if self._on_written:
                self._on_written()
            self._prepare_answers(job)
        job.state = "done"
        return job

    def _prepare_answers(self, job: Job) -> None:
        """As `citerag ingest` does: the answerer's statements of the document embedded now, so its first answer
        embeds only the question. The document is searchable already; a failure here costs only that speed."""
        from citerag.cli.common import answer_statements, prepares_answers

        comps = self._comps()
        if not prepares_answers(comps):
            return
        try:
            texts = answer_statements([job.uri], comps.settings.chunk_chars)
            if not texts:
                return
            job.state, job.passages_done, job.passages_total = "preparing", 0, len(texts)

            def advance(n: int) -> None:
                job.passages_done += n

            comps.embedder.embed_passages(texts, progress=advance)
        except Exception:  # the document is indexed: a first answer embeds its statements itself
            return

    def jobs(self) -> list[dict[str, Any]]:
        with self._lock:
            return [j.wire() for j in self._jobs.values()]

    def busy_with(self, uri: str) -> bool:
        with self._lock:
            return any(j.uri == uri and j.state != "done" for j in self._jobs.values())

    # --- listing and removing ---------------------------------------------------------------------------------

    def holds(self, uri: str) -> bool:
        """Is this document's file one stored from the page (removing it deletes the file too)?"""
        path = uri_to_path(uri)
        return path is not None and path.parent == self.folder.resolve()

    def remove(self, comps, uri: str) -> int:
        """Take the document out of the index (and a stored file off the disk): the passages removed."""
        n = comps.ingestor().remove(uri).chunks
        if self.holds(uri):
            path = uri_to_path(uri)
            if path is not None:
                path.unlink(missing_ok=True)
        return n


def _place(tmp: str, target: Path) -> None:
    """The temporary file under its name, FileExistsError when the name is taken: a hard link, or a copy into a file
    created exclusively where the file system has no hard links."""
    try:
        os.link(tmp, target)
        return
    except FileExistsError:
        raise
    except OSError:
        pass
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as out, open(tmp, "rb") as src:
            while chunk := src.read(1024 * 1024):
                out.write(chunk)
    except BaseException:
        target.unlink(missing_ok=True)
        raise


def _temporary(folder: Path) -> tuple[int, str]:
    """A new hidden file in the folder (an ingest of the folder skips hidden names), opened for writing."""
    for _ in range(100):
        path = folder / f".upload-{os.urandom(6).hex()}"
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), str(path)
        except FileExistsError:
            continue
    raise UploadRefused("cannot create a temporary file in the documents folder", 500)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1024 * 1024):
            h.update(chunk)
    return h.hexdigest()
