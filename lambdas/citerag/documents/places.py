"""A passage's place, named as a reader finds it, from the places of the units it spans: paragraphs "Setup, ¶ 3" to
"Setup, ¶ 5" read "Setup, ¶ 3-5"; spreadsheet rows "Prices!A4:C4" to "Prices!A9:C9" read "Prices!A4:C9"."""

from __future__ import annotations

import re
from bisect import bisect_right

from citerag.documents.model import Mark

# A spreadsheet range: an optional sheet ("Prices!", "'Q1 2024'!") and two cells.
_RANGE = re.compile(r"^(?P<sheet>.*!)?(?P<c1>[A-Z]{1,3})(?P<r1>\d+):(?P<c2>[A-Z]{1,3})(?P<r2>\d+)$")


def span_place(marks: list[Mark], start: int, end: int) -> str | None:
    """The place of characters start..end of a section whose units start at `marks` (in order)."""
    if not marks:
        return None
    starts = [m.start for m in marks]
    first = max(0, bisect_right(starts, start) - 1)
    last = max(first, bisect_right(starts, max(start, end - 1)) - 1)
    return join_places(marks[first].place, marks[last].place)


UNIT_KEY_CHARS = 32  # how much of a unit's text finds it again in a passage (it travels with every passage)


def unit_places(text: str, marks: list[Mark], start: int, end: int) -> list[str]:
    """The units characters start..end of a section span, each as "place\tlength\tits first words" (length
    and words with runs of whitespace as one space): what a citation needs to name the one unit its sentence is in
    (`place_of`), stored with the passage."""
    if not marks:
        return []
    starts = [m.start for m in marks]
    first = max(0, bisect_right(starts, start) - 1)
    last = max(first, bisect_right(starts, max(start, end - 1)) - 1)
    out = []
    for i in range(first, last + 1):
        stop = marks[i + 1].start if i + 1 < len(marks) else len(text)
        unit = " ".join(text[marks[i].start:stop].split())
        out.append(f"{marks[i].place}\t{len(unit)}\t{unit[:UNIT_KEY_CHARS]}")
    return out


def place_of(places: object, text: str, at: int) -> str | None:
    """The place of the unit that holds character `at` of a passage's text (the chunk, its parent or a window of
    it), found by the units' first words in order. None when the passage has no units, none of them is found, or
    `at` lies outside every one found (in a window's text beyond the chunk)."""
    if not isinstance(places, list):
        return None
    flat = " ".join(text.split())
    # Offsets into the whitespace-squashed text, where the units' first words are found.
    squashed_at = len(" ".join(text[:at].split())) + (1 if at and text[:at][-1:].isspace() else 0)
    best, from_ = None, 0
    for item in places:
        parts = item.split("\t", 2) if isinstance(item, str) else []
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2]:
            continue
        place, length, key = parts[0], int(parts[1]), parts[2]
        found = flat.find(key, from_)
        if found == -1:
            continue
        if found > squashed_at:
            break
        best = place if squashed_at < found + length else None
        from_ = found + 1
    return best


def join_places(a: str, b: str) -> str:
    if a == b:
        return a
    ra, rb = _RANGE.match(a), _RANGE.match(b)
    if ra and rb and ra["sheet"] == rb["sheet"]:
        c1 = min(ra["c1"], rb["c1"], key=_column_number)
        c2 = max(ra["c2"], rb["c2"], key=_column_number)
        return f"{ra['sheet'] or ''}{c1}{ra['r1']}:{c2}{rb['r2']}"
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    while n and a[n - 1].isdigit():  # "¶ 13" to "¶ 15" is "¶ 13-15", not "¶ 13-5"
        n -= 1
    head, ta, tb = a[:n], a[n:], b[n:]
    if ta.isdigit() and tb.isdigit():
        return f"{head}{ta}-{tb}"
    cut = head.rfind(", ") + 2 if ", " in head else 0  # what the two share, up to a whole part of the place
    return f"{a} to {b[cut:]}" if cut else f"{a} to {b}"


def _column_number(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n


def column_letters(n: int) -> str:
    """1 -> A, 27 -> AA: a spreadsheet's name for its n-th column."""
    out = ""
    while n > 0:
        n, r = divmod(n - 1, 26)
        out = chr(65 + r) + out
    return out
