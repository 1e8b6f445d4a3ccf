"""What an ingest reports while it runs: passages embedded out of an estimated total, the file and page being
embedded, and an ETA. Counting files alone is useless when one file holds most of the passages (a bar stuck at
11/18 for minutes), so the unit is the passage, the one thing whose cost is roughly constant."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class IngestProgress:
    files_total: int
    files_done: int
    passages_done: int
    # Passages of the files chunked so far, plus an estimate for the files not read yet (from their size).
    passages_total: int
    passages_exact: bool  # every file has been chunked: passages_total is exact
    current: str | None  # source URI of the file being embedded
    page: int | None  # last page (or section) of that file whose passages are all embedded
    pages: int | None
    elapsed_s: float
    eta_s: float | None  # None until there is a rate to go by


class ProgressTracker:
    """Accumulates what the pipeline did and makes IngestProgress snapshots. The rate is the embedding rate over
    the passages embedded so far; cached passages take no time, so they are left out of it."""

    def __init__(self, files_total: int, bytes_total: int) -> None:
        self.files_total = files_total
        self.files_done = 0
        self.bytes_left = bytes_total
        self.bytes_chunked = 0  # bytes of files that made passages
        self.passages_known = 0
        self.passages_done = 0
        self.embedded = 0
        self.all_chunked = False
        self.current: str | None = None
        self.page: int | None = None
        self.pages: int | None = None
        self._t0 = time.monotonic()
        self._embed_s = 0.0
        self._last = self._t0

    def file_read(self, size: int, passages: int) -> None:
        self.bytes_left = max(0, self.bytes_left - size)
        if passages:
            self.bytes_chunked += size
            self.passages_known += passages

    def batch_done(self, passages: int, embedded: int) -> None:
        now = time.monotonic()
        if embedded:
            self._embed_s += now - self._last
            self.embedded += embedded
        self._last = now
        self.passages_done += passages

    def total(self) -> int:
        if self.all_chunked or not self.bytes_chunked:
            return max(self.passages_known, self.passages_done)
        per_byte = self.passages_known / self.bytes_chunked
        return self.passages_known + round(self.bytes_left * per_byte)

    def snapshot(self) -> IngestProgress:
        total = self.total()
        eta = None
        if self.embedded and self._embed_s > 0:
            eta = max(0, total - self.passages_done) * self._embed_s / self.embedded
        return IngestProgress(
            files_total=self.files_total, files_done=self.files_done, passages_done=self.passages_done,
            passages_total=total, passages_exact=self.all_chunked, current=self.current, page=self.page,
            pages=self.pages, elapsed_s=time.monotonic() - self._t0, eta_s=eta,
        )
