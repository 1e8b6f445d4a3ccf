"""A random signing key kept in a file only this user can read (the embedded path's source-id key), so no two
installations share a key and nobody can mint ids from a known default."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from citerag.errors import CiteragError


def local_key(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_urlsafe(32))
    try:
        key = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise CiteragError(f"cannot read the source-id key {path}: {exc}") from None
    if len(key) < 16:
        raise CiteragError(f"the source-id key {path} is too short; delete it and a new one is made")
    return key
