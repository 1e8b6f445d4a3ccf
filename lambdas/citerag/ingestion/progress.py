"""What an ingest reports while it runs: passages embedded out of an estimated total, the file and page being
embedded, and an ETA. Counting files alone is useless when one file holds most of the passages (a bar stuck at
11/18 for minutes), so the unit is the passage, the one thing whose cost is roughly constant."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

# The ETA's rate: seconds a passage, averaged with weights that halve every this many passages. Batch times on a busy
# machine vary fivefold (another process takes the cores), and an ETA from the last batches swung from 21:39 to 3:43;
# from every batch since the start it lags a change of machine load for the whole run.
RATE_HALF_LIFE_PASSAGES = 400


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
    the passages embedded so far, recent ones weighing more (RATE_HALF_LIFE_PASSAGES); cached passages take no
    time, so they are left out of it."""

    def __init__(self, files_total: int, bytes_total: int, clock: Callable[[], float] = time.monotonic,
                 bytes_by_kind: dict[str, int] | None = None) -> None:
        """`bytes_by_kind`: the files' sizes summed by type (suffix): passages a byte differ tenfold between a PDF
        of scans and a text file, so the files not read yet are estimated by the files of their own type."""
        self._clock = clock
        self.files_total = files_total
        self.files_done = 0
        self.bytes_left = dict(bytes_by_kind) if bytes_by_kind is not None else {"": bytes_total}
        self._ratios: dict[str, list[float]] = {}  # passages a byte of each file read that made passages
        self.passages_known = 0
        self.passages_done = 0
        self.embedded = 0
        self.all_chunked = False
        self.current: str | None = None
        self.page: int | None = None
        self.pages: int | None = None
        self._t0 = clock()
        # Seconds and passages embedded, older batches decayed by half every RATE_HALF_LIFE_PASSAGES passages:
        # their ratio is the rate (a plain average until the half-life, then one that follows a change of load).
        self._seconds = 0.0
        self._passages = 0.0
        self._last = self._t0

    def file_read(self, size: int, passages: int, kind: str = "") -> None:
        kind = kind if kind in self.bytes_left else ""
        self.bytes_left[kind] = max(0, self.bytes_left.get(kind, 0) - size)
        if passages:
            self._ratios.setdefault(kind, []).append(passages / max(1, size))
            self.passages_known += passages

    def batch_done(self, passages: int, embedded: int) -> None:
        now = self._clock()
        if embedded:
            decay = math.pow(0.5, embedded / RATE_HALF_LIFE_PASSAGES)
            self._seconds = self._seconds * decay + (now - self._last)
            self._passages = self._passages * decay + embedded
            self.embedded += embedded
        self._last = now
        self.passages_done += passages

    def total(self) -> int:
        """Passages known, plus for the files not read yet their bytes times the median passages a byte of the
        files of their type read so far (of all files read, for a type not seen yet): the median, so one PDF of
        scanned pictures does not make the rest of the run look ten times shorter."""
        known = max(self.passages_known, self.passages_done)
        everything = [r for rs in self._ratios.values() for r in rs]
        if self.all_chunked or not everything:
            return known
        left = sum(size * _median(self._ratios.get(kind) or everything) for kind, size in self.bytes_left.items())
        return self.passages_known + round(left)

    def snapshot(self) -> IngestProgress:
        total = self.total()
        eta = None
        if self.embedded and self._seconds > 0:
            eta = max(0, total - self.passages_done) * self._seconds / self._passages
        return IngestProgress(
            files_total=self.files_total, files_done=self.files_done, passages_done=self.passages_done,
            passages_total=total, passages_exact=self.all_chunked, current=self.current, page=self.page,
            pages=self.pages, elapsed_s=self._clock() - self._t0, eta_s=eta,
        )


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
