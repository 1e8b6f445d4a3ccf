"""Keeping an index in step with folders: what changed in them (watchfiles' batches of (change, path), a burst of
saves already gathered into one batch by its debounce) becomes ingests and removals. A moved file is a removal of the
old name and an ingest of the new one (its passages come from the embedding cache). Starting again catches up with
what changed while nothing watched: an ingest with --sync of the whole folders, unchanged files skipped by hash."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from citerag.documents.loaders import SUPPORTED_SUFFIXES
from citerag.ingestion.files import IngestResult, expand_named_paths
from citerag.ingestion.ingestor import Ingestor

DEBOUNCE_MS = 1600  # a burst of saves closer together than this is one change


class FolderSync:
    def __init__(self, ingestor: Ingestor, roots: Iterable[Path],
                 on_file: Callable[[IngestResult], None] | None = None) -> None:
        self.ingestor = ingestor
        self.roots = [Path(r).resolve() for r in roots]
        self.on_file = on_file

    def catch_up(self, since: float | None = None) -> list[IngestResult]:
        """The folders as they are now: new and changed files ingested, documents whose files are gone removed.
        `since` (a time.time()): only files changed or moved since then are read again (their ctime moves on a
        rename too), for the changes made between an ingest and the watcher's start."""
        if since is None:
            results = self.ingestor.ingest_paths(self.roots, sync=True, on_file=self._heard)
        else:
            files, _, _ = expand_named_paths(self.roots)
            recent = [f for f in files if _changed_since(f, since)]
            results = [r for r in self.ingestor.ingest_paths(recent, on_file=self._heard) if r.status != "skipped"]
            results += [self.ingestor.remove(uri) for uri in self.ingestor.gone(self.roots)]
        for r in results:
            if r.status == "removed" and self.on_file:
                self.on_file(r)
        return results

    def apply(self, changes: Iterable[tuple[Any, str]]) -> list[IngestResult]:
        """One batch of changes. Each path is dealt with once, by what is on disk now: a file saved ten times is
        ingested once, a file created and deleted within the batch is nothing."""
        paths = sorted({Path(p) for _, p in changes})
        present = [p for p in paths if self._indexable(p) and (p.is_file() or p.is_dir())]
        results: list[IngestResult] = []
        if present:
            results += [r for r in self.ingestor.ingest_paths(present, on_file=self._heard) if r.status != "skipped"]
        for p in paths:
            if p.exists() or not self._inside(p):
                continue
            for uri in self.ingestor.gone([p]):  # a file deleted or moved away, or every file of a folder
                removed = self.ingestor.remove(uri)
                results.append(removed)
                if self.on_file:
                    self.on_file(removed)
        return results

    def watch(self, batches: Iterable[Iterable[tuple[Any, str]]], since: float | None = None
              ) -> Iterator[list[IngestResult]]:
        """Apply each batch as it comes (from `changes_of`, whose first batch, empty or not, comes once the
        watcher runs). `since`: when the ingest before the watch started; what changed from then until the watcher
        ran is caught up with at the first batch."""
        for batch in batches:
            if since is not None:
                yield self.catch_up(since)
                since = None
            if batch:
                yield self.apply(batch)

    def _heard(self, r: IngestResult) -> None:
        if self.on_file and r.status != "skipped":  # a temporary file of an editor is no news
            self.on_file(r)

    def _root_of(self, p: Path) -> Path | None:
        p = p.absolute()
        return next((r for r in self.roots if p == r or r in p.parents), None)

    def _inside(self, p: Path) -> bool:
        return self._root_of(p) is not None

    def _indexable(self, p: Path) -> bool:
        """Under a watched folder, not hidden there (as ingest passes over hidden files and folders), and a folder
        or a file of a type ingest reads."""
        root = self._root_of(p)
        if root is None or any(part.startswith(".") for part in p.absolute().relative_to(root).parts):
            return False
        return p.is_dir() or p.suffix.lower() in SUPPORTED_SUFFIXES


def _changed_since(path: Path, since: float) -> bool:
    try:
        st = path.stat()
    except OSError:
        return False
    return max(st.st_mtime, st.st_ctime) >= since


def changes_of(roots: Iterable[Path], stop_event: Any = None, debounce_ms: int = DEBOUNCE_MS):
    """watchfiles' batches of changes under the folders until Ctrl-C or `stop_event` (watchfiles is in the local
    extra); an empty batch every second with no change, the first once the watcher runs."""
    try:
        import watchfiles
    except ImportError:
        from citerag.errors import CiteragError
        from citerag.extras import needs

        raise CiteragError(needs("--watch", "local")) from None
    # Ctrl-C raised, for the command to stop on: told not to, watchfiles logs "KeyboardInterrupt caught, stopping
    # watch" on the terminal above the command's own "Stopped watching".
    return watchfiles.watch(*roots, debounce=debounce_ms, stop_event=stop_event, raise_interrupt=True,
                            yield_on_timeout=True, rust_timeout=1000)
