"""Which files an ingest reads (folders walked, hidden entries skipped) and the per-file result it reports."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlparse

from pydantic import BaseModel

from citerag.documents.loaders import SUPPORTED_SUFFIXES
from citerag.errors import DocumentError

Status = Literal["added", "unchanged", "replaced", "failed", "removed", "skipped"]


class IngestResult(BaseModel):
    source: str
    status: Status
    chunks: int = 0
    reason: str | None = None
    transient: bool = False  # a dependency failed: retrying later may succeed


def expand_paths(roots: list[Path]) -> tuple[list[Path], list[IngestResult]]:
    """Files to ingest and results for paths that cannot be. Folders are walked without following links out of
    them (a link to ~/.aws/credentials inside a folder must not make it searchable); hidden entries are skipped;
    only regular files are read (a FIFO would hang, /dev/zero never ends)."""
    files: list[Path] = []
    results: list[IngestResult] = []
    for root in roots:
        if root.is_dir():
            walked, problems = _walk(root)
            files.extend(walked)
            results.extend(problems)
        elif root.exists() or root.is_symlink() or root.suffix:
            files.append(root)  # named by the user: checked when it is read
        else:
            results.append(IngestResult(source=str(root), status="failed", reason="no such file or folder"))
    # A document is its resolved file: a link beside its target, or a file named twice (a folder and a file in it),
    # is read once, not once per name (it was reported "added" twice and counted as two).
    seen: set[Path] = set()
    unique = []
    for f in files:
        key = f.resolve() if f.exists() else f
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique, results


def _walk(root: Path) -> tuple[list[Path], list[IngestResult]]:
    files: list[Path] = []
    results: list[IngestResult] = []
    top = root.resolve()
    errors: list[OSError] = []
    for folder, dirs, names in os.walk(root, onerror=errors.append):  # os.walk never descends into linked folders
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.startswith("."):
                continue
            p = Path(folder) / name
            if p.is_symlink():
                target = p.resolve()
                if top not in target.parents:
                    results.append(IngestResult(source=p.absolute().as_uri(), status="skipped",
                                                reason="a link to a file outside the folder; not followed"))
                    continue
            if p.suffix.lower() not in SUPPORTED_SUFFIXES:
                results.append(IngestResult(source=p.absolute().as_uri(), status="skipped",
                                            reason=f"unsupported file type {p.suffix or '(no extension)'}"))
                continue
            files.append(p)
    for exc in errors:
        if isinstance(exc, PermissionError):
            where = exc.filename or str(root)
            results.append(IngestResult(source=str(where), status="failed",
                                        reason="cannot read folder: permission denied"))
    return files, results


def read_regular_file(path: Path, max_bytes: int) -> bytes:
    """The bytes of a regular file, at most max_bytes. Opened without blocking, so a FIFO or a device is refused
    instead of hanging or reading forever; the size is checked on the open file, not on a name that may change."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise DocumentError("not a regular file (a device, pipe or socket); only files are ingested")
        if info.st_size > max_bytes:
            raise DocumentError(f"file is too large ({info.st_size:,} bytes; the limit is {max_bytes:,})")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise DocumentError(f"file is too large (more than {max_bytes:,} bytes)")
    return data


def page_uri(uri: str, page: int | None) -> str:
    """`file:///…/manual.pdf#page=5`: the PDF open parameter that browsers' PDF readers and most viewers honour
    (RFC 8118 §3, the `page` fragment identifier of application/pdf)."""
    if page and urlparse(uri).path.lower().endswith(".pdf"):
        return f"{uri.split('#', 1)[0]}#page={int(page)}"
    return uri


def uri_to_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))
