"""The excerpt under a cited source: the sentence the answer shows, checked against the passage it is cited to."""

from __future__ import annotations

from collections.abc import Callable

from citerag.citations.pii import MASK_LABEL, PiiMasker
from citerag.documents.chunking import first_line, line_range
from citerag.search.passage import Passage

EXCERPT_CHARS = 300
MASKED_VALUE_CHARS = 80  # a masked value (an address, a number) is short
MASK_MARGIN = 320  # longer than any value a rule masks (an e-mail address is at most 254 characters)


def excerpt(shown: str, passage: str, limit: int = EXCERPT_CHARS, mask: Callable[[str], str] | None = None) -> str:
    """The cited sentence as the answer shows it (masked values stay masked) when the passage holds it; else (a
    model's paraphrase) the passage's start, masked like the answer (`mask`, else the default rules): what the
    answer hides must not appear under its source. Masked before it is cut, so a value the cut splits is whole
    when the rules read it."""
    return _excerpt(shown, passage, _find(passage, shown) is not None, limit, mask)


def as_source(passage: Passage, shown: str, mask: Callable[[str], str] | None = None) -> Passage:
    """The passage as the source of a sentence the answer shows: that sentence as its excerpt (see `excerpt`) and,
    for a text file, the lines the sentence is on rather than every line the passage holds."""
    span = _find(passage.text, shown)
    return passage.model_copy(update={"excerpt": _excerpt(shown, passage.text, span is not None, EXCERPT_CHARS, mask),
                                      "section": _lines(passage, span) or passage.section})


def sentence_section(passage: Passage, sentence: str) -> str | None:
    """Where a sentence of the passage is: for a text file its lines, else the passage's own section."""
    return _lines(passage, _find(passage.text, sentence)) or passage.section


def _excerpt(shown: str, passage: str, held: bool, limit: int, mask: Callable[[str], str] | None) -> str:
    if held:
        return " ".join(shown.split())[:limit]
    start = " ".join(passage.split())[: limit + MASK_MARGIN]
    return (mask or _default_mask)(start)[:limit]


def _lines(passage: Passage, span: tuple[int, int] | None) -> str | None:
    first = first_line(passage.section)
    if first is None or span is None:
        return None
    return line_range(passage.text, span[0], span[1], first_line=first)


def _default_mask(text: str) -> str:
    return PiiMasker().mask(text)[0]


def _find(passage: str, shown: str) -> tuple[int, int] | None:
    """Where the passage holds the shown sentence, whitespace aside (the answer joins a Japanese pair with none where
    the document keeps a line break; a text file breaks lines inside sentences), each mask label standing for 1 to
    MASKED_VALUE_CHARS characters: its (start, end) in the passage, or None. Pieces are matched in order over the
    positions each can end at, each remembering where its match began, so the cost stays linear in the passage for
    any number of labels (a regex with one lazy gap per label backtracks exponentially)."""
    pieces = ["".join(p.split()) for p in MASK_LABEL.split(shown)]
    if len("".join(pieces)) < 2:
        return None  # labels and punctuation alone would match any passage
    kept = [i for i, ch in enumerate(passage) if not ch.isspace()]  # the passage's offset of each character read
    text = "".join(passage[i] for i in kept)
    n = len(text)
    reach: list[int] | None = None  # per position the text read so far can end at, where it began (-1: cannot)
    for i, piece in enumerate(pieces):
        if i:
            reach = _after_masked_value(reach, n)
        if not piece:
            continue
        ends = [-1] * (n + 1)
        j = text.find(piece)
        while j >= 0:
            if reach is None or reach[j] >= 0:
                ends[j + len(piece)] = j if reach is None else reach[j]
            j = text.find(piece, j + 1)
        if max(ends) < 0:
            return None
        reach = ends
    ends = reach or []
    end = next((p for p, began in enumerate(ends) if began >= 0), None)
    return None if end is None else (kept[ends[end]], kept[end - 1] + 1)


def _after_masked_value(reach: list[int] | None, n: int) -> list[int] | None:
    """The positions 1..MASKED_VALUE_CHARS characters after a position in `reach`, with where that match began."""
    if reach is None:
        return None
    out = [-1] * (n + 1)
    last = -1  # the latest reachable position before p
    for p in range(1, n + 1):
        if reach[p - 1] >= 0:
            last = p - 1
        if last >= 0 and p - last <= MASKED_VALUE_CHARS:
            out[p] = reach[last]
    return out
