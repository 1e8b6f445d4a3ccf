"""An AIMD limit on calls in flight to a throttled service (Titan embeddings): additive increase, multiplicative
decrease, as TCP's congestion window.

Each success adds 1/limit (about one more call in flight per window of successes); a throttle halves the limit,
once per window: calls already in flight when the limit was cut, throttled too, do not cut it again (a burst of
throttles is one signal, not ten). The limit stays within [minimum, maximum]. botocore's adaptive retry mode sits
beneath it and paces retries of one call; this limit is what keeps many concurrent calls from tripping the quota.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class AdaptiveConcurrency:
    def __init__(self, initial: int, maximum: int, minimum: int = 1,
                 on_change: Callable[[float], None] | None = None) -> None:
        self.minimum = max(1, minimum)
        self.maximum = max(self.minimum, maximum)
        self.limit = float(min(max(initial, self.minimum), self.maximum))
        self.in_flight = 0
        self.decreases = 0  # the window a call started in: a throttle from an older window changes nothing
        self.throttles = 0
        self._cv = threading.Condition()
        self._on_change = on_change

    def acquire(self) -> int:
        """Wait for a slot; returns the window the call starts in (give it back to `release`)."""
        with self._cv:
            while self.in_flight >= int(self.limit):
                self._cv.wait()
            self.in_flight += 1
            return self.decreases

    def release(self, window: int, *, throttled: bool = False, succeeded: bool = True) -> None:
        with self._cv:
            self.in_flight -= 1
            if throttled:
                self.throttles += 1
                if window == self.decreases:
                    self.limit = max(float(self.minimum), self.limit / 2)
                    self.decreases += 1
                    self._changed()
            elif succeeded and self.limit < self.maximum:
                self.limit = min(float(self.maximum), self.limit + 1.0 / self.limit)
                self._changed()
            self._cv.notify_all()

    def _changed(self) -> None:
        if self._on_change:
            self._on_change(self.limit)

    @property
    def slots(self) -> int:
        return int(self.limit)
