"""A cited web page shown with its cited sentences marked: `<mark>` elements put around the words of the quote in the
page's own text (never inside a tag, a script or a style), the first with an id a link scrolls to. The quote is found
as the PDF page finds it (static/viewer.mjs): whitespace, case, hyphens and Unicode compatibility forms set aside;
a quote of several sentences (" … " between them) marks each one found."""

from __future__ import annotations

import re
import unicodedata
from html import unescape
from html.parser import HTMLParser

MARK_ID = "citerag-cited"
_IGNORED = re.compile(r"[\s\-\u00ad\u2010\u2011]")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")
_SKIPPED = {"script", "style", "template", "title", "textarea", "noscript"}


def fold(text: str) -> list[tuple[str, int]]:
    """Each kept character of `text`, folded, with the index of the character it came from."""
    out = []
    for i, c in enumerate(text):
        for ch in unicodedata.normalize("NFKC", c).lower():
            if not _IGNORED.match(ch):
                out.append((ch, i))
    return out


class _Text(HTMLParser):
    """The page's text as the reader sees it: (raw start, raw end, text) of each piece of character data or
    character reference, outside the elements that show no text."""

    def __init__(self, raw: str) -> None:
        super().__init__(convert_charrefs=False)
        self.raw = raw
        self.lines = [0]
        for m in re.finditer(r"\r\n|\r|\n", raw):  # getpos() counts lines as the parser does
            self.lines.append(m.end())
        self.pieces: list[tuple[int, int, str]] = []
        self.skipping: list[str] = []

    def _at(self) -> int:
        line, col = self.getpos()
        return self.lines[line - 1] + col if line - 1 < len(self.lines) else len(self.raw)

    def handle_starttag(self, tag, attrs):
        if tag in _SKIPPED:
            self.skipping.append(tag)

    def handle_endtag(self, tag):
        if self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()

    def handle_data(self, data):
        if not self.skipping:
            start = self._at()
            if self.raw.startswith(data, start):
                self.pieces.append((start, start + len(data), data))

    def _reference(self, raw_ref: str) -> None:
        if not self.skipping:
            start = self._at()
            if self.raw.startswith(raw_ref, start):
                self.pieces.append((start, start + len(raw_ref), unescape(raw_ref)))

    def handle_entityref(self, name):
        self._reference(f"&{name};")

    def handle_charref(self, name):
        self._reference(f"&#{name};")


def _spans(flat: str, quote: str) -> list[tuple[int, int]]:
    found = []
    for part in (p.strip() for p in quote.split("…")):
        whole = "".join(c for c, _ in fold(part))
        at = flat.find(whole) if len(whole) > 1 else -1
        if at >= 0:
            found.append((at, at + len(whole)))
            continue
        for sentence in _SENTENCE_END.split(part):
            q = "".join(c for c, _ in fold(sentence))
            i = flat.find(q) if len(q) >= 8 else -1
            if i >= 0:
                found.append((i, i + len(q)))
    return found


def mark_html(raw: str, quote: str) -> tuple[str, int]:
    """The page with the quote's words marked, and how many marks were put in (0: the page as it was)."""
    if not quote.strip():
        return raw, 0
    parser = _Text(raw)
    try:
        parser.feed(raw)
        parser.close()
    except (AssertionError, ValueError):  # markup the parser gives up on: shown unmarked
        return raw, 0
    chars: list[tuple[str, int, int, bool]] = []  # folded char, raw start, raw end, is a reference
    for start, end, text in parser.pieces:
        reference = text != parser.raw[start:end]
        for ch, i in fold(text):
            chars.append((ch, start, end, True) if reference else (ch, start + i, start + i + 1, False))
    flat = "".join(c[0] for c in chars)
    cuts: list[tuple[int, int]] = []  # raw ranges to mark, each inside one piece of text
    for a, b in _spans(flat, quote):
        run_start, run_end = chars[a][1], chars[a][2]
        for ch in chars[a + 1 : b]:
            if ch[1] <= run_end or not _between_has_markup(raw, run_end, ch[1]):
                run_end = max(run_end, ch[2])
            else:
                cuts.append((run_start, run_end))
                run_start, run_end = ch[1], ch[2]
        cuts.append((run_start, run_end))
    if not cuts:
        return raw, 0
    out, at = [], 0
    for n, (a, b) in enumerate(sorted(set(cuts))):
        if a < at:
            continue  # overlapping the cut before (a sentence quoted twice)
        mark_id = f' id="{MARK_ID}"' if n == 0 else ""
        out += [raw[at:a], f'<mark class="{MARK_ID}"{mark_id}>', raw[a:b], "</mark>"]
        at = b
    out.append(raw[at:])
    return "".join(out), len(cuts)


def _between_has_markup(raw: str, a: int, b: int) -> bool:
    """Is there a tag (or a comment) between two pieces of text? Whitespace alone is marked with the words."""
    return "<" in raw[a:b]
