"""Circuit breakers for external dependencies (embedding service, vector indexes, rerank).

After `threshold` consecutive failures a breaker opens: calls are refused at once (the pipeline degrades
instead of waiting for a timeout on every request); after `cooldown_s` one trial call is let through and
its outcome closes or re-opens the breaker. Breakers live at module level in a Lambda, so they persist
across warm invocations of the same container.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class CircuitOpenError(RuntimeError):
    """Raised instead of calling a dependency whose breaker is open."""


def _caller_mistake(exc: BaseException) -> bool:
    # A bad query or filter says nothing about the dependency's health; counting it would let one caller
    # open the breaker for every session in the container.
    from citerag.errors import FilterSyntaxError, QueryError

    return isinstance(exc, (QueryError, FilterSyntaxError))


class CircuitBreaker:
    def __init__(
        self, name: str, threshold: int = 5, cooldown_s: float = 30.0, clock: Callable[[], float] = time.monotonic
    ):
        self.name = name
        self.threshold = threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_running = False
        self._lock = threading.Lock()

    @property
    def state(self) -> str:
        with self._lock:
            return self._state()

    def _state(self) -> str:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self.cooldown_s:
            return "half-open"
        return "open"

    def call(self, fn: Callable[[], T]) -> T:
        with self._lock:
            state = self._state()
            if state == "open" or (state == "half-open" and self._trial_running):
                raise CircuitOpenError(f"{self.name} is unavailable (circuit open after repeated failures)")
            if state == "half-open":
                self._trial_running = True
        try:
            result = fn()
        except Exception as exc:
            with self._lock:
                self._trial_running = False
                if _caller_mistake(exc):
                    raise
                self._failures += 1
                if self._failures >= self.threshold or self._opened_at is not None:
                    self._opened_at = self._clock()
            raise
        with self._lock:
            self._trial_running = False
            self._failures = 0
            self._opened_at = None
        return result

    def reset(self) -> None:
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._trial_running = False
