"""Text utilities shared by chunking, sparse encoding and the answerer: normalisation, sentences, language."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

# Hiragana, katakana, CJK ideographs (incl. ext. A), half/full-width forms used in Japanese text.
_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
CJK_RE = re.compile(f"[{_CJK}]")
_JA_KANA_RE = re.compile(r"[\u3040-\u30ff]")

# A sentence ends after Japanese or Latin terminal punctuation (plus closing quotes/brackets),
# or at a newline. Latin '.', '!' and '?' only count when followed by whitespace: "3.5", "e.g.x", the "?" operator
# in "?演算子は" and the macro in "panic!” section" stay whole. Japanese set with "，．" (much technical and academic
# writing) ends its sentences with the full-width full stop, which is no decimal point ("１．５") and does not end a
# list's number ("1．はじめに").
_SENT_END_RE = re.compile(r"(?:[。！？]|(?<![0-9０-９])．(?![0-9０-９]))+[」』）)”’\"']*|[.!?]+[\"')\]”’]*(?=\s|$)|\n+")


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    text: str


# C0 controls but tab and newline, DEL, and C1 (ESC starts terminal escape sequences; CSI is \x9b).
_CONTROLS_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_controls(text: str) -> str:
    """Text safe to show on a terminal: document text and file names are data, never cursor moves or colours."""
    return _CONTROLS_RE.sub("", text)


# The same but carriage return: in a PDF's text a control character is a glyph with no map to Unicode, read as its
# code (TeX's math fonts: "\x12" or "\x00" for a big parenthesis, "\x88" for a bullet). "\t", "\n" and "\r" may
# be such glyphs too, but cannot be told from spacing.
_GLYPH_CODES_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def mark_unmapped_glyphs(text: str) -> str:
    """A PDF's text with each glyph read as a control character as U+FFFD, Unicode's "unknown"."""
    return _GLYPH_CODES_RE.sub("\ufffd", text)


# A UTF-16 surrogate alone: JSON may escape one ("\ud83d", an emoji cut in half at a model's length limit) and
# Python decodes it, but no UTF-8 encoder writes it, so an event, a log line or a response holding one fails.
_LONE_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(text: str) -> bool:
    return _LONE_SURROGATE_RE.search(text) is not None


def encodable(value: Any) -> Any:
    """The value (a string, or lists and dicts of them) with every lone surrogate as U+FFFD: writable as UTF-8."""
    if isinstance(value, str):
        return _LONE_SURROGATE_RE.sub("\ufffd", value)
    if isinstance(value, list):
        return [encodable(v) for v in value]
    if isinstance(value, dict):
        return {encodable(k): encodable(v) for k, v in value.items()}
    return value


# What a question or search query is cleaned of: control characters, and U+FFFD (a byte a client could not decode).
_NOT_WORDS_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")


def one_line(text: str) -> str:
    """A question as one line of words: control characters and U+FFFD as spaces, each run of space as one."""
    return " ".join(_NOT_WORDS_RE.sub(" ", text).split())


def is_cjk(ch: str) -> bool:
    """A character of CJK text or punctuation, full-width forms included: where a line break or a space between two
    of them is no word's end."""
    return "\u3000" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef"


# A character and a backspace: nroff's overstrike, as `man` writes a page to a pipe ("g\bgr\bre\bep\bp" is a bold
# "grep", "_\bF" an underlined "F"). What was struck over is dropped, as `col -b` does; read any other way the page is
# "ggrreepp", a word no question matches.
_OVERSTRUCK_RE = re.compile(r"[^\n\x08]\x08")


def resolve_overstrike(text: str) -> str:
    """Text as a terminal shows it: each overstruck character replaced by the one printed over it."""
    if "\x08" not in text:
        return text
    return _OVERSTRUCK_RE.sub("", text).replace("\x08", "")


def normalize(text: str) -> str:
    """NFKC + lowercase: full-width Latin and half-width kana fold to one form."""
    return unicodedata.normalize("NFKC", text).lower()


def split_sentences(text: str) -> list[Span]:
    """Split into sentences with character offsets into `text`. Whitespace-only pieces are dropped."""
    spans: list[Span] = []
    start = 0
    for m in _SENT_END_RE.finditer(text):
        if _closes_placeholder(text, m.start(), m.group()) or _ends_ex_command(text, m.start(), m.group()):
            continue
        end = m.end()
        _append(spans, text, start, end)
        start = end
    _append(spans, text, start, len(text))
    return spans


def _closes_placeholder(text: str, at: int, end_mark: str) -> bool:
    """The "?" that closes a man page's optional argument (".tables ?TABLE? List names of tables", ".explain
    ?on|off?"), which asks nothing: split there, the command and what it does were two statements."""
    if end_mark != "?":
        return False
    word = text[max(text.rfind(" ", 0, at), text.rfind("\n", 0, at)) + 1 : at]
    return len(word) >= 2 and word.startswith("?") and "?" not in word[1:]


def _ends_ex_command(text: str, at: int, end_mark: str) -> bool:
    """The "!" of an editor's command (":q!", ":w!"), which forces it and ends nothing: split there, vimtutor's
    "Vim を終了するには <ESC> :q! <ENTER> とタイプします" lost its command to the next statement."""
    if not end_mark.startswith("!"):
        return False
    word = text[max(text.rfind(" ", 0, at), text.rfind("\t", 0, at), text.rfind("\n", 0, at)) + 1 : at]
    return word.startswith(":") and not word.startswith("::")


def _append(spans: list[Span], text: str, start: int, end: int) -> None:
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return
    lead = len(piece) - len(piece.lstrip())
    s = start + lead
    spans.append(Span(s, s + len(stripped), stripped))


def detect_language(text: str) -> str:
    """'ja' when the text is written in Japanese, else 'en'. Kana is the tell; kanji alone could be Chinese."""
    sample = text[:2000]
    if not sample.strip():
        return "en"
    cjk = len(CJK_RE.findall(sample))
    letters = sum(1 for ch in sample if ch.isalpha())
    if letters and cjk / letters >= 0.2 and (_JA_KANA_RE.search(sample) or cjk / letters > 0.5):
        return "ja"
    return "en"
