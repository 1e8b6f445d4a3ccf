"""Counts in words a person reads: `1 turn`, `2 turns` (the trace and CLI printed "1 turns", "1 sources")."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"
