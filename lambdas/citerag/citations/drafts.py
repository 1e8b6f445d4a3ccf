"""The answer as a model writes it, before it is checked: the words of its `<answer_part><text>` elements as they
stream in, for a reader to watch (`citerag serve`). What is shown in the end is the checked answer with its
citations; a draft is never cited and is replaced by it.

A model adapter that streams tells `heard` each piece of text of an orchestration step; whoever wants the draft
listens with `drafts_to` on the thread that asks (the answerer runs the model on that thread)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from html import unescape

_local = threading.local()
_TEXT = re.compile(r"<text>(.*?)(?:</text>|$)", re.S)
_PARTIAL_TAG = re.compile(r"<[^>]*$")
_PARTIAL_ENTITY = re.compile(r"&[#\w]*$")


@contextmanager
def drafts_to(listener: Callable[[str | None], None]) -> Iterator[None]:
    """Until the block ends, `listener` hears each new piece of the draft on this thread, and None when a model
    step starts a draft afresh (a re-prompted answer)."""
    before = getattr(_local, "listener", None)
    _local.listener = listener
    try:
        yield
    finally:
        _local.listener = before


def listening() -> DraftText | None:
    """A new draft for a model step about to stream, when anyone on this thread listens."""
    listener = getattr(_local, "listener", None)
    if listener is None:
        return None
    listener(None)
    return DraftText(listener)


class DraftText:
    """The visible words of one model output as it grows: the contents of its <text> elements inside <answer>,
    unescaped, parts joined by a space; a tag or an entity cut by a chunk boundary waits for its end."""

    def __init__(self, listener: Callable[[str | None], None]) -> None:
        self._listener = listener
        self._raw = ""
        self._said = ""

    def heard(self, piece: str) -> None:
        self._raw += piece
        start = self._raw.find("<answer>")
        if start < 0:
            return
        parts = [m.group(1) for m in _TEXT.finditer(self._raw, start)]
        if parts and not self._raw.endswith("</text>"):
            last = parts[-1]
            last = _PARTIAL_TAG.sub("", last)
            parts[-1] = _PARTIAL_ENTITY.sub("", last)
        shown = " ".join(unescape(" ".join(p.split())) for p in parts if p.strip())
        if shown.startswith(self._said) and len(shown) > len(self._said):
            self._listener(shown[len(self._said):])
            self._said = shown
