"""The excerpt under a cited source: the sentence the answer shows, checked against the passage it is cited to."""

from __future__ import annotations

from collections.abc import Callable

from citerag.citations.pii import MASK_LABEL, PiiMasker

EXCERPT_CHARS = 300
MASKED_VALUE_CHARS = 80  # a masked value (an address, a number) is short
MASK_MARGIN = 320  # longer than any value a rule masks (an e-mail address is at most 254 characters)


def excerpt(shown: str, passage: str, limit: int = EXCERPT_CHARS, mask: Callable[[str], str] | None = None) -> str:
    """The cited sentence as the answer shows it (masked values stay masked) when the passage holds it; else (a
    model's paraphrase) the passage's start, masked like the answer (`mask`, else the default rules): what the
    answer hides must not appear under its source. Masked before it is cut, so a value the cut splits is whole
    when the rules read it."""
    if _holds(passage, shown):
        return " ".join(shown.split())[:limit]
    start = " ".join(passage.split())[: limit + MASK_MARGIN]
    return (mask or _default_mask)(start)[:limit]


def _default_mask(text: str) -> str:
    return PiiMasker().mask(text)[0]


def _holds(passage: str, shown: str) -> bool:
    """Does the passage hold the shown sentence, whitespace aside (the answer joins a Japanese pair with none where
    the document keeps a line break; a text file breaks lines inside sentences), each mask label standing for 1 to
    MASKED_VALUE_CHARS characters? Pieces are matched in order over the positions each can end at, so the cost stays
    linear in the passage for any number of labels (a regex with one lazy gap per label backtracks exponentially)."""
    pieces = ["".join(p.split()) for p in MASK_LABEL.split(shown)]
    if len("".join(pieces)) < 2:
        return False  # labels and punctuation alone would match any passage
    text = "".join(passage.split())
    n = len(text)
    reach: bytearray | None = None  # where the text read so far can end; None: anywhere (nothing read yet)
    for i, piece in enumerate(pieces):
        if i:
            reach = _after_masked_value(reach, n)
        if not piece:
            continue
        ends = bytearray(n + 1)
        j = text.find(piece)
        while j >= 0:
            if reach is None or reach[j]:
                ends[j + len(piece)] = 1
            j = text.find(piece, j + 1)
        if not any(ends):
            return False
        reach = ends
    return reach is None or any(reach)


def _after_masked_value(reach: bytearray | None, n: int) -> bytearray | None:
    """The positions 1..MASKED_VALUE_CHARS characters after any position in `reach`."""
    if reach is None:
        return None
    out = bytearray(n + 1)
    window = 0  # how many reachable positions lie in (p - MASKED_VALUE_CHARS - 1, p - 1]
    for p in range(1, n + 1):
        window += reach[p - 1]
        if p - 1 - MASKED_VALUE_CHARS >= 0:
            window -= reach[p - 1 - MASKED_VALUE_CHARS]
        out[p] = window > 0
    return out
