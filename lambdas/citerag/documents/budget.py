"""A document's text budget, counted while its loader reads it, so an object over a limit is refused in bounded time
and memory instead of after it was all read and chunked (a 150 MB one-line Markdown object took 369 s and 2.78 GB
to be refused by the passage limit).

A passage holds at most `chunk_chars` characters, so a document whose text is well over `max_chunks * chunk_chars`
would make more passages than allowed: the budget is twice that, so only text that could never be indexed is
refused early, and the passage limit still decides below it. Loaders call `take` as they produce text (a line, a
page, a run of HTML text); a file whose bytes alone prove it is over (a text format's characters are at least a
quarter of its bytes, in every encoding read) is refused before it is read at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from citerag.errors import DocumentError

# Formats whose text is their bytes decoded, as most of it: what the byte bound applies to.
TEXT_KINDS = {"text", "markdown"}
BYTES_PER_CHAR_MAX = 4  # UTF-8 and UTF-32 at most; UTF-16 and the legacy Japanese encodings 2


@dataclass
class TextBudget:
    max_chars: int
    max_chunks: int = 0  # for the message: the passage limit the budget follows from
    used: int = 0

    @classmethod
    def for_passages(cls, max_chunks: int, chunk_chars: int) -> TextBudget:
        return cls(max_chars=2 * max_chunks * chunk_chars, max_chunks=max_chunks)

    def take(self, chars: int) -> None:
        self.used += chars
        if self.used > self.max_chars:
            raise DocumentError(self.message(f"more than {self.max_chars:,} characters of text"))

    def max_bytes(self, kind: str) -> int | None:
        """The size above which a file of this kind is over the budget whatever it holds; None: no such bound."""
        return self.max_chars * BYTES_PER_CHAR_MAX if kind in TEXT_KINDS else None

    def message(self, held: str) -> str:
        limit = f"the limit is {self.max_chunks:,} passages (CITERAG_MAX_CHUNKS_PER_DOCUMENT)" if self.max_chunks \
            else f"the limit is {self.max_chars:,} characters"
        return f"the document holds {held}, more than its passages could hold; {limit}: split it into smaller files"


_current: ContextVar[TextBudget | None] = ContextVar("citerag_text_budget", default=None)


@contextmanager
def counting(budget: TextBudget | None) -> Iterator[None]:
    """Loaders called inside count against `budget` (None: nothing is counted)."""
    token = _current.set(budget)
    try:
        yield
    finally:
        _current.reset(token)


def restart_count() -> None:
    """The loader reads the document again from its start (in another encoding): count its text afresh."""
    budget = _current.get()
    if budget is not None:
        budget.used = 0


def take(chars: int) -> None:
    """Count `chars` characters of text a loader has read; DocumentError once the document is over its budget."""
    budget = _current.get()
    if budget is not None:
        budget.take(chars)
