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
    readings = [(label, text) for codec, label in _LEGACY_JAPANESE if (text := _japanese(data, codec)) is not None]
    if len(readings) == 1:
        return readings[0][1]
    source = readings[0][0] if readings else "its encoding (SHIFT_JIS, EUC-JP, LATIN1...)"
    raise DocumentError(f"not valid UTF-8 (byte 0x{data[utf8_error.start]:02x} at offset {utf8_error.start}); "
                        f"convert it first, e.g. iconv -f {source} -t UTF-8")


def _declared_charset(data: bytes) -> str | None:
    m = _META_CHARSET.search(data[:SNIFF_BYTES])
    if not m:
        return None
    try:
        name = codecs.lookup(m.group(1).decode("ascii")).name
    except LookupError:
        return None
    return None if name == "utf-8" else name  # a page that says UTF-8 and is not: the UTF-8 error stands


def _strict(data: bytes, codec: str, why: str) -> str:
    for attempt in (codec, _SUPERSETS.get(codecs.lookup(codec).name)):
        if attempt:
            try:
                return data.decode(attempt).removeprefix("\ufeff")
            except UnicodeDecodeError:
                continue
    raise DocumentError(f"not valid text in {why}; convert it to UTF-8 first")


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
