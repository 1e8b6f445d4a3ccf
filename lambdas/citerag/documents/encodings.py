"""The text of a Markdown, HTML or text file, whatever its encoding: UTF-8 first, then what the file itself says (a
byte-order mark, an HTML page's declared charset), then the two legacy Japanese encodings when exactly one of them
reads the file as Japanese. Anything else is refused with what to convert it from, never read as mojibake.

Old Japanese manuals are Shift_JIS (cp932, Windows' superset) or EUC-JP, and Windows Notepad's "Unicode" is UTF-16
with a byte-order mark: all three were refused before ("not valid UTF-8", "a binary file").
"""

from __future__ import annotations

import codecs
import re

from citerag.errors import DocumentError

# Byte-order marks, longest first (UTF-32's little-endian mark starts with UTF-16's).
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
# <meta charset="EUC-JP"> or <meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">, in the
# page's first bytes (read as ASCII, which every such charset shares).
_META_CHARSET = re.compile(rb"""<meta\b[^>]{0,300}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.I)
# A declared Japanese charset is read as the superset its writers used (Windows-31J for Shift_JIS: "①", "髙").
_SUPERSETS = {"shift_jis": "cp932", "euc_jp": "euc_jis_2004", "iso2022_jp": "iso2022_jp_2004"}
_LEGACY_JAPANESE = (("cp932", "SHIFT_JIS"), ("euc_jp", "EUC-JP"))
_JAPANESE_CHAR = re.compile(r"[\u3000-\u30ff\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")
_HIRAGANA = re.compile(r"[\u3041-\u309f]")
SNIFF_BYTES = 4096


def decode_text(data: bytes, *, html: bool = False) -> str:
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return _strict(data, codec, f"a {codec.upper().removesuffix('-SIG')} byte-order mark")
    if b"\x00" in data[:8192]:
        raise DocumentError("looks like a binary file (contains NUL bytes), not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        utf8_error = exc
    declared = _declared_charset(data) if html else None
    if declared:
        return _strict(data, declared, f"its declared charset {declared}")
    readings = [] if _damaged_utf8(data) else \
        [(label, text) for codec, label in _LEGACY_JAPANESE if (text := _japanese(data, codec)) is not None]
    if len(readings) == 1:
        return readings[0][1]
    source = readings[0][0] if readings else "its encoding (SHIFT_JIS, EUC-JP, LATIN1...)"
    raise DocumentError(f"not valid UTF-8 (byte 0x{data[utf8_error.start]:02x} at offset {utf8_error.start}); "
                        f"convert it first, e.g. iconv -f {source} -t UTF-8")


# What a page's declared charset means, as browsers read it (WHATWG Encoding): ISO-8859-1 and ASCII are windows-1252
# (its curly quotes, not C1 controls), and a page cannot declare UTF-16 in its own bytes.
_AS_BROWSERS_READ = {"iso8859-1": "cp1252", "ascii": "cp1252", "utf-16": None, "utf-16-le": None, "utf-16-be": None,
                     "utf-32": None, "utf-32-le": None, "utf-32-be": None, "utf-8": None}


def _declared_charset(data: bytes) -> str | None:
    m = _META_CHARSET.search(data[:SNIFF_BYTES])
    if not m:
        return None
    try:
        info = codecs.lookup(m.group(1).decode("ascii"))
    except LookupError:
        return None
    if not getattr(info, "_is_text_encoding", True):  # "hex", "base64", "rot13": codecs, not charsets
        return None
    # None for UTF-8 too: a page that says UTF-8 and is not keeps the UTF-8 error.
    return _AS_BROWSERS_READ.get(info.name, info.name)


def _strict(data: bytes, codec: str, why: str) -> str:
    for attempt in (codec, _SUPERSETS.get(codecs.lookup(codec).name)):
        if attempt:
            try:
                text = data.decode(attempt).removeprefix("\ufeff")
            except (UnicodeError, LookupError):
                continue
            if _reads_as_text(text):
                return text
    raise DocumentError(f"not valid text in {why}; convert it to UTF-8 first")


_TEXTUAL = re.compile(r"[\t\n\r\x20-\x7e\u00a0-\u024f\u3000-\u30ff\uff00-\uffef]")
_NOT_TEXT = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ue000-\uf8ff\ufffe\uffff]")


def _reads_as_text(text: str) -> bool:
    """Text, not bytes that happen to decode: no control or private-use characters, and a good share of Latin
    letters, spaces, kana or CJK punctuation (any even-length bytes after a UTF-16 mark decode to some ideographs)."""
    sample = text[:20000]
    if not sample.strip():
        return True
    return not _NOT_TEXT.search(sample) and len(_TEXTUAL.findall(sample)) >= 0.3 * len(sample)


def _damaged_utf8(data: bytes) -> bool:
    """UTF-8 with a few bad bytes (a cut-off last character, one Latin-1 "é"), not a legacy encoding: most of its
    non-ASCII bytes still form UTF-8 characters. Read as cp932, it would be mojibake that passes for Japanese."""
    text = data[:SNIFF_BYTES * 16].decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    good = sum(1 for c in text if ord(c) > 0x7F and c != "\ufffd")
    return good > bad


def _japanese(data: bytes, codec: str) -> str | None:
    """The text in this legacy encoding when it reads as Japanese: decoded strictly, its non-ASCII characters
    nearly all Japanese, hiragana among them (a Latin-1 "é" decodes as some kanji, never as running Japanese)."""
    try:
        text = data.decode(codec)
    except UnicodeDecodeError:
        return None
    wide = [c for c in text if ord(c) > 0x7F]
    if not wide or not _HIRAGANA.search(text):
        return None
    return text if sum(1 for c in wide if _JAPANESE_CHAR.match(c)) >= 0.95 * len(wide) else None
