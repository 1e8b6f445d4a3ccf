"""The excerpt under a cited source: the sentence the answer shows, checked against the passage it is cited to, and
for a text file the lines that sentence is on."""

from __future__ import annotations

from collections.abc import Callable

from citerag.citations.graders import anchors
from citerag.citations.pii import MASK_LABEL, PiiMasker
from citerag.citations.statements import split_statements
from citerag.documents.chunking import first_line, line_bounds, line_range, lines_label
from citerag.documents.places import place_of
from citerag.documents.text import detect_language
from citerag.search.passage import Passage
from citerag.search.sparse import tokenize

EXCERPT_CHARS = 300
# A quote is cut between sentences, never inside one ("…for an ASN." of "ASN.1"): a first sentence longer than
# EXCERPT_CHARS is shown whole, up to this, and so is all a citation quotes from its passage.
SENTENCE_CHARS = 1200
# Between two sentences one source is cited for, in its quote.
QUOTE_JOINER = " … "
MASKED_VALUE_CHARS = 80  # a masked value (an address, a number) is short
MASK_MARGIN = 320  # longer than any value a rule masks (an e-mail address is at most 254 characters)


def excerpt(shown: str, passage: str, limit: int = EXCERPT_CHARS, mask: Callable[[str], str] | None = None) -> str:
    """The cited sentence as the answer shows it (masked values stay masked) when the passage holds it; else the
    passage's statement a sentence in the other language translates (`translated`); else (a model's paraphrase)
    the passage's start. Passage text is masked like the answer (`mask`, else the default rules): what the answer
    hides must not appear under its source. Masked before it is cut, so a value the cut splits is whole when the
    rules read it."""
    return _excerpt(shown, passage, _find(passage, shown) is not None, mask, limit)


def as_source(passage: Passage, shown: str, mask: Callable[[str], str] | None = None, *,
              earlier: Passage | None = None, sentence: str | None = None) -> Passage:
    """The passage as the source of a sentence the answer shows: that sentence as its excerpt (see `excerpt`; or
    `sentence`, when the caller picked it from the passage itself) and, for a text file, the lines the sentence
    is on rather than every line the passage holds. `earlier`: the source this passage already is for an earlier
    sentence of the answer, the one the answer's list of sources shows: it keeps that sentence as its excerpt, and
    its lines grow to take this one in; the citation of this sentence gets its own sentence and lines (a link from
    it opened the document at the first sentence's lines, under the first sentence)."""
    first = first_line(passage.section, passage.uri)
    found = _find(passage.text, shown) if first is not None or sentence is None else None
    span = found or (translated(shown, passage.text) if first is not None or sentence is None else None)
    lines = line_range(passage.text, *span, first_line=first) if span and first is not None else None
    if earlier is not None and first is not None:  # a sentence not found in the passage is somewhere in its lines
        earlier.section = spanning(earlier.section, lines or passage.section or "")
    text = cut(sentence, SENTENCE_CHARS) if sentence is not None else \
        _excerpt(shown, passage.text, found is not None, mask, span=span)
    if earlier is not None and text and text not in earlier.excerpt.split(QUOTE_JOINER):
        # The source listed once shows every sentence it is cited for (its first alone hid the others).
        earlier.excerpt = earlier.excerpt + QUOTE_JOINER + text if earlier.excerpt else text
    return passage.model_copy(update={"excerpt": text, "section": lines or _unit(passage, sentence or shown)
                                      or passage.section})


def _unit(passage: Passage, sentence: str) -> str | None:
    """For a passage made of units (a Word paragraph, a sheet's row, a table's row), the place of the one that
    holds the sentence ("Plans!A3:C3" rather than the passage's "Plans!A2:C9")."""
    places = passage.places
    if not places:
        return None
    span = _find(passage.text, sentence)
    return place_of(places, passage.text, span[0]) if span else None


def cut(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The text on one line, cut at the last sentence end within `limit` characters (the text as written up to
    there); a first sentence longer than that whole, up to SENTENCE_CHARS."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    end = at = 0
    for statement in split_statements(text, lines_wrap=False):
        found = text.find(statement, at)
        if found < 0:
            break
        at = found + len(statement)
        if end and at > limit:
            break
        end = at
        if end > limit:
            break
    kept = text[: end or limit]
    return kept if len(kept) <= SENTENCE_CHARS else kept[: SENTENCE_CHARS - 1] + "…"


def _excerpt(shown: str, passage: str, held: bool, mask: Callable[[str], str] | None,
             limit: int = EXCERPT_CHARS, *, span: tuple[int, int] | None = None) -> str:
    """`span`: where the passage states what `shown` translates, when the caller looked it up already."""
    if held:  # every sentence the answer cites is quoted: a pair over `limit` lost its second, often the fact
        return cut(shown, max(limit, SENTENCE_CHARS))
    span = span or translated(shown, passage)
    start = " ".join((passage[span[0]:span[1]] if span else passage).split())[: SENTENCE_CHARS + MASK_MARGIN]
    return cut((mask or _default_mask)(start), limit)


def translated(shown: str, passage: str) -> tuple[int, int] | None:
    """Where the passage states what a sentence in the other language says ("エラーE2は、センサーが汚れていることを
    意味します。" from "Error E2 means the air quality sensor is dirty."): the statement that holds the most of the
    sentence's anchors (its numbers and identifiers, graders.anchors), the first of equals. None when the two are in
    one language, or no statement holds an anchor: a paraphrase, whose excerpt is the passage's start."""
    lang = detect_language(shown)
    if lang == detect_language(passage):
        return None
    wanted = set(anchors(tokenize(shown), lang))
    best, held = None, 0
    for statement in split_statements(passage, lines_wrap=False) if wanted else ():
        n = len(wanted & set(tokenize(statement)))
        if n > held:
            best, held = statement, n
    return _find(passage, best) if best else None


def spanning(section: str | None, lines: str | None) -> str | None:
    """Two line ranges of one text file as the one that holds both; anything else (a page's, a heading path) is
    left as the first."""
    a, b = line_bounds(section), line_bounds(lines)
    if a is None or b is None:
        return section
    return lines_label(min(a[0], b[0]), max(a[1], b[1]))


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
    text = "".join(passage.split())
    if len(pieces) == 1:
        j = text.find(pieces[0])
        return None if j < 0 else _in_passage(passage, j, j + len(pieces[0]))
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
    if end is None:
        return None
    start, stop = _in_passage(passage, ends[end], end)
    if not pieces[0]:  # a masked value opens the sentence: the word before the first piece, in its paragraph
        gap = start
        while gap > 0 and passage[gap - 1].isspace():
            gap -= 1
        if "\n\n" not in passage[gap:start]:
            start = gap
            while start > 0 and not passage[start - 1].isspace():
                start -= 1
    if not pieces[-1]:  # one closes it: the word its first character begins
        while stop < len(passage) and not passage[stop].isspace():
            stop += 1
    return start, stop


def _in_passage(passage: str, start: int, end: int) -> tuple[int, int]:
    """The passage's offsets of characters start..end of its text without whitespace."""
    read, first, last = 0, 0, len(passage)
    for i, ch in enumerate(passage):
        if ch.isspace():
            continue
        if read == start:
            first = i
        read += 1
        if read == end:
            last = i + 1
            break
    return first, last


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
