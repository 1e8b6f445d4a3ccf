"""Which files an ingest reads (folders walked, hidden entries skipped) and the per-file result it reports."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlparse

from pydantic import BaseModel

from citerag.documents.loaders import SUPPORTED_SUFFIXES
from citerag.ingestion.opening import open_no_links, read_fd

Status = Literal["added", "unchanged", "replaced", "failed", "removed", "skipped", "staged"]


class IngestResult(BaseModel):
    source: str
    status: Status
    chunks: int = 0
    reason: str | None = None
    transient: bool = False  # a dependency failed: retrying later may succeed
    # Failed for a reason outside the document (I/O error, no space, permission, the index): `citerag ingest`
    # exits with SYSTEM_FAILURE when any file did, so a scheduled job notices.
    system: bool = False


def expand_paths(roots: list[Path]) -> tuple[list[Path], list[IngestResult]]:
    """Files to ingest (resolved) and results for paths that cannot be; see `expand_named_paths`."""
    files, results, _ = expand_named_paths(roots)
    return files, results


def expand_named_paths(roots: list[Path]) -> tuple[list[Path], list[IngestResult], dict[Path, str]]:
    """Files to ingest, results for paths that cannot be, and the name each file was given where that differs
    (a link's: its type and title come from the name the user sees, not from a content store's "blob1"). Folders
    are walked without following links out of them (a link to ~/.aws/credentials inside a folder must not make it
    searchable); hidden entries are skipped; only regular files are read (a FIFO would hang, /dev/zero never
    ends)."""
    files: list[Path] = []
    names: dict[Path, str] = {}
    results: list[IngestResult] = []
    for root in roots:
        if root.is_dir():
            walked, problems, walked_names = _walk(root)
            files.extend(walked)
            names.update(walked_names)
            results.extend(problems)
        elif root.exists() or root.is_symlink() or root.suffix:
            # Named by the user, a link is followed: to its file, now, so what is read later is never a link
            # (`read_regular_file` opens none). Checked when it is read.
            target = _resolved(root)
            if target is None:
                results.append(IngestResult(source=str(root), status="skipped", reason=LOOP))
            elif target.exists():
                files.append(target)
                names.setdefault(target, root.name)
            else:
                files.append(root)  # reported as "no such file" under the name given
        else:
            results.append(IngestResult(source=str(root), status="failed", reason="no such file or folder"))
    # A document is its resolved file: a link beside its target, or a file named twice (a folder and a file in it),
    # is read once, not once per name (it was reported "added" twice and counted as two).
    return list(dict.fromkeys(files)), results, {f: n for f, n in names.items() if n != f.name}


LOOP = "a link that leads back to itself (a symlink loop); not followed"


def _resolved(path: Path) -> Path | None:
    """The file a path names, links followed; None for a loop of links (Python 3.11 raises RuntimeError)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return None


def _walk(root: Path) -> tuple[list[Path], list[IngestResult], dict[Path, str]]:
    files: list[Path] = []
    given: dict[Path, str] = {}
    results: list[IngestResult] = []
    top = root.resolve()
    errors: list[OSError] = []
    for folder, dirs, names in os.walk(root, onerror=errors.append):  # os.walk never descends into linked folders
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for d in dirs:
            if (Path(folder) / d).is_symlink():  # said, not skipped in silence
                results.append(IngestResult(source=(Path(folder) / d).absolute().as_uri(), status="skipped",
                                            reason="a link to a folder; not followed"))
        for name in sorted(names):
            if name.startswith("."):
                continue
            p = Path(folder) / name
            real = _resolved(p)
            if real is None:
                results.append(IngestResult(source=p.absolute().as_uri(), status="skipped", reason=LOOP))
                continue
            if p.is_symlink() and top not in real.parents:
                results.append(IngestResult(source=p.absolute().as_uri(), status="skipped",
                                            reason="a link to a file outside the folder; not followed"))
                continue
            if p.suffix.lower() not in SUPPORTED_SUFFIXES:
                results.append(IngestResult(source=p.absolute().as_uri(), status="skipped",
                                            reason=f"unsupported file type {p.suffix or '(no extension)'}"))
                continue
            if not real.exists():
                files.append(p)  # a dangling link: "no such file", under its own name
                continue
            # The file itself, never the link: a name swapped for a link to /etc/passwd after this walk is not
            # opened (O_NOFOLLOW), where reading by the name followed it out of the folder.
            files.append(real)
            given.setdefault(real, p.name)
    for exc in errors:
        if isinstance(exc, PermissionError):
            where = exc.filename or str(root)
            results.append(IngestResult(source=str(where), status="failed",
                                        reason="cannot read folder: permission denied", system=True))
    return files, results, given


def read_regular_file(path: Path, max_bytes: int) -> bytes:
    """The bytes of a regular file, at most max_bytes. Every component of the path is opened without following a
    link (`opening.open_no_links`), without blocking, so a FIFO or a device is refused instead of hanging or
    reading forever; the size is checked on the open file, not on a name that may change."""
    fd = open_no_links(path)
    try:
        return read_fd(fd, max_bytes)
    finally:
        os.close(fd)


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
    # As Path.as_uri() quoted it: a name that is not UTF-8 comes back byte for byte (surrogate escapes), so the
    # file is found again (it read as gone, with U+FFFD in its name).
    return Path(unquote(parsed.path, errors="surrogateescape"))
