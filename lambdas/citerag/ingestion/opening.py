"""The one way an indexed document's file is opened, by every reader (ingest and re-ingest, serve's /file and /lines,
`--open`): each component of its path opened without following links, from the root down, so a file or a folder
swapped for a link after ingest is never followed out of where it was; only a regular file is opened; and before a
byte is served, the file is checked to be the one indexed (the SHA-256 of its content, recorded at ingest).

Paths are resolved when they are ingested (`files.expand_named_paths`), so an indexed path holds no link: one found
on it now was put there since.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from citerag.errors import DocumentError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# O_PATH: a folder is passed through with search permission only, as path lookup would; O_DIRECTORY with
# O_NOFOLLOW fails on a link (ENOTDIR or ELOOP) instead of following it.
_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC | getattr(os, "O_PATH", 0)
_FILE = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NOFOLLOW | _CLOEXEC
READ_CHUNK = 1 << 20


class LinkOnPath(DocumentError):
    """A component of the path is a link now: not followed."""


class FileTooLarge(DocumentError):
    """The open file is over the size it may have."""


class NotIndexedFile(DocumentError):
    """The file at the path is not the one indexed (changed, or replaced since)."""


def open_no_links(path: Path) -> int:
    """A read-only descriptor of the regular file at `path` (made absolute, not resolved), every component opened
    relative to the one before without following a link. DocumentError says why not; OSError for I/O."""
    path = Path(os.path.abspath(path))
    parts = path.parts
    if len(parts) < 2:
        raise DocumentError("is a directory, not a file")
    fd = os.open(parts[0], _FOLDER)
    try:
        for i, name in enumerate(parts[1:-1], start=1):
            try:
                nfd = os.open(name, _FOLDER, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(name, fd):
                    raise LinkOnPath(f"the folder {Path(*parts[: i + 1])} on its path became a link after it was "
                                     "indexed; not followed") from None
                if exc.errno == errno.ENOENT:
                    raise DocumentError("no such file") from None
                raise
            os.close(fd)
            fd = nfd
        try:
            ffd = os.open(parts[-1], _FILE, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and _is_link(parts[-1], fd)):
                raise LinkOnPath("became a link after the folder was read; not followed") from None
            if exc.errno == errno.ENOENT:
                raise DocumentError("no such file") from None
            if exc.errno == errno.EISDIR:
                raise DocumentError("is a directory, not a file") from None
            raise
    finally:
        os.close(fd)
    try:
        mode = os.fstat(ffd).st_mode
        if stat.S_ISDIR(mode):
            raise DocumentError("is a directory, not a file")
        if not stat.S_ISREG(mode):
            raise DocumentError("not a regular file (a device, pipe or socket); only files are ingested")
    except BaseException:
        os.close(ffd)
        raise
    return ffd


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def read_fd(fd: int, max_bytes: int) -> bytes:
    """All of an open file, refused past max_bytes: the size is checked on the open file, and the read stops one
    byte past the limit whatever the size said (a file that grows while read)."""
    size = os.fstat(fd).st_size
    if size > max_bytes:
        raise FileTooLarge(f"file is too large ({size:,} bytes; the limit is {max_bytes:,})")
    # One read of the whole file where it can (one buffer, not pieces joined into a second copy of it), then on
    # until the end, one byte past the limit at most.
    first = os.read(fd, min(size, max_bytes) + 1)
    chunks, total = [first], len(first)
    while total <= max_bytes:
        chunk = os.read(fd, min(READ_CHUNK, max_bytes + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > max_bytes:
        raise FileTooLarge(f"file is too large (more than {max_bytes:,} bytes)")
    return first if len(chunks) == 1 else b"".join(chunks)


def chunks_of(fd: int, size: int) -> Iterator[bytes]:
    """The first `size` bytes of an open file, in pieces (a streamed response reads no more than was checked)."""
    offset = 0
    while offset < size:
        chunk = os.pread(fd, min(READ_CHUNK, size - offset), offset)
        if not chunk:
            return
        offset += len(chunk)
        yield chunk


def file_hash(data: bytes) -> str:
    """What ingest records of a file's content (documents.model.content_hash_of: SHA-256, hex)."""
    return hashlib.sha256(data).hexdigest()


def expected_hashes(doc) -> set[str]:
    """What a document's file must hash to (a search.ports.DocumentInfo): the recorded file hash; for a document
    indexed before it was recorded, the content hash, which equals it when no access metadata was given."""
    return {doc.file_hash} if doc.file_hash else {doc.content_hash}


@dataclass
class Opened:
    """An indexed document's file, open and checked: serve or read `size` bytes from `fd`, then close it."""

    fd: int
    size: int

    def close(self) -> None:
        os.close(self.fd)

    def read(self) -> bytes:
        return b"".join(chunks_of(self.fd, self.size))


class Verifier:
    """Opens indexed files and checks each is the one indexed before anything is read from it. A file's hash is
    kept by its identity (device, inode, size, modification and change times), so a file served again is not read
    twice; any change to the file changes that identity and it is hashed again."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._known: dict[tuple[int, ...], str] = {}
        self._lock = threading.Lock()

    def open(self, path: Path, expected: set[str]) -> Opened:
        """The file at `path`, when its content hashes to one of `expected`; LinkOnPath, NotIndexedFile or
        DocumentError otherwise (the descriptor is closed then)."""
        fd = open_no_links(path)
        try:
            info = os.fstat(fd)
            if info.st_size > self.max_bytes:
                raise DocumentError(f"file is too large ({info.st_size:,} bytes; the limit is {self.max_bytes:,})")
            key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
            with self._lock:
                digest = self._known.get(key)
            if digest is None:
                h = hashlib.sha256()
                for chunk in chunks_of(fd, info.st_size):
                    h.update(chunk)
                digest = h.hexdigest()
                with self._lock:
                    if len(self._known) > 10_000:
                        self._known.clear()
                    self._known[key] = digest
            if digest not in expected:
                raise NotIndexedFile("the file is not the one indexed (it changed or was replaced since it was "
                                     "ingested); ingest it again to read it here")
            return Opened(fd, info.st_size)
        except BaseException:
            os.close(fd)
            raise
