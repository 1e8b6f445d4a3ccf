"""Which files an ingest reads (folders walked, hidden entries skipped) and the per-file result it reports."""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlparse

from pydantic import BaseModel

from citerag.documents.loaders import SUPPORTED_SUFFIXES

Status = Literal["added", "unchanged", "replaced", "failed", "removed", "skipped"]


class IngestResult(BaseModel):
    source: str
    status: Status
    chunks: int = 0
    reason: str | None = None
    transient: bool = False  # a dependency failed: retrying later may succeed


def expand_paths(roots: list[Path]) -> tuple[list[Path], list[IngestResult]]:
    """Files to ingest (folders walked, hidden entries skipped) and results for paths that cannot be."""
    files: list[Path] = []
    results: list[IngestResult] = []
    for root in roots:
        if root.is_dir():
            try:
                entries = sorted(p for p in root.rglob("*") if p.is_file())
            except PermissionError:
                results.append(
                    IngestResult(source=str(root), status="failed", reason="cannot read folder: permission denied")
                )
                continue
            for p in entries:
                rel = p.relative_to(root)
                if any(part.startswith(".") for part in rel.parts):
                    continue
                if p.suffix.lower() in SUPPORTED_SUFFIXES:
                    files.append(p)
                else:
                    results.append(IngestResult(source=p.resolve().as_uri(), status="skipped",
                                                reason=f"unsupported file type {p.suffix or '(no extension)'}"))
        elif root.exists() or root.suffix:
            files.append(root)
        else:
            results.append(IngestResult(source=str(root), status="failed", reason="no such file or folder"))
    return files, results


def uri_to_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))
