"""Loaders: turn a file's bytes into a LoadedDocument with parent sections (PDF pages, headings).

Every failure raises DocumentError with a message that names the problem and, where there is one, the fix.
"""

from __future__ import annotations

import codecs
import io
import logging
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from citerag.documents.budget import TextBudget, counting, restart_count, take
from citerag.documents.encodings import decode_text
from citerag.documents.model import LoadedDocument, Section, content_hash_of, doc_id_for
from citerag.documents.text import encodable, is_cjk, mark_unmapped_glyphs, resolve_overstrike
from citerag.errors import DocumentError, NeedsOcr

if TYPE_CHECKING:
    from citerag.documents.ocr import Ocr

SUPPORTED_SUFFIXES = {
    ".pdf": "pdf",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".txt": "text",
    ".text": "text",
    ".docx": "docx",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".csv": "csv",
    ".pptx": "pptx",
    ".epub": "epub",
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".tif": "image",
    ".tiff": "image",
}

DEFAULT_MAX_BYTES = 200 * 1024 * 1024
DEFAULT_MAX_PAGES = 5000


def kind_for(name: str) -> str:
    suffix = PurePosixPath(name).suffix.lower()
    kind = SUPPORTED_SUFFIXES.get(suffix)
    if kind is None:
        shown = suffix or "(no extension)"
        raise DocumentError(
            f"unsupported file type {shown}; supported: {', '.join(sorted(set(SUPPORTED_SUFFIXES)))}"
        )
    return kind


def load_path(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, max_pages: int = DEFAULT_MAX_PAGES, ocr=None):
    """Load a local file. The source URI is the absolute file:// URI."""
    kind = kind_for(path.name)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise DocumentError("no such file") from None
    except PermissionError:
        raise DocumentError("cannot read: permission denied") from None
    if size > max_bytes:
        raise DocumentError(f"file is too large ({size:,} bytes; the limit is {max_bytes:,})")
    try:
        data = path.read_bytes()
    except PermissionError:
        raise DocumentError("cannot read: permission denied") from None
    except IsADirectoryError:
        raise DocumentError("is a directory, not a file") from None
    except OSError as exc:
        raise DocumentError(f"cannot read: {exc.strerror or exc}") from None
    return load_bytes(data, path.resolve().as_uri(), path.name, kind=kind, max_pages=max_pages, ocr=ocr)


def load_bytes(
    data: bytes,
    source_uri: str,
    name: str,
    *,
    kind: str | None = None,
    max_pages: int = DEFAULT_MAX_PAGES,
    budget: TextBudget | None = None,
    ocr: Ocr | None = None,
) -> LoadedDocument:
    """Load a document from bytes (used for local files and S3 objects alike). With a budget, the loader counts the
    text it reads against it and stops when it is over (documents/budget.py). `ocr`: read images of text (a scanned
    PDF page, an image file) with it; None leaves them unread."""
    # A file name that is not UTF-8 ("bad_\xff.txt") arrives with surrogate escapes, which no encoder takes: the
    # title made of it failed the embedding cache and stopped the whole ingest. Shown with U+FFFD instead.
    name = encodable(name)
    kind = kind or kind_for(name)
    if not data:
        raise DocumentError("file is empty")
    over = budget.max_bytes(kind) if budget is not None else None
    if over is not None and len(data) > over:
        raise DocumentError(budget.message(f"{len(data):,} bytes of {kind} (over {over:,})"))
    with counting(budget):
        if kind in _READS_IMAGES:
            title, sections = _READS_IMAGES[kind](data, name, max_pages, ocr)
        else:
            loader: Callable[[bytes, str, int], tuple[str | None, list[Section]]] = _LOADERS[kind]
            title, sections = loader(data, name, max_pages)
    sections = [s for s in sections if s.text.strip()]
    if not sections:
        raise DocumentError("no text found in the file")
    stem = PurePosixPath(name).stem
    return LoadedDocument(
        source_uri=source_uri,
        title=(title or stem).strip()[:300] or stem,
        doc_id=doc_id_for(source_uri),
        content_hash=content_hash_of(data),
        kind=kind,
        sections=sections,
    )


# --- PDF ---------------------------------------------------------------------------------------------------


def _load_pdf(data: bytes, name: str, max_pages: int, ocr: Ocr | None = None) -> tuple[str | None, list[Section]]:
    from pypdf import PdfReader
    from pypdf.errors import DependencyError as PypdfDependencyError
    from pypdf.errors import FileNotDecryptedError, PdfReadError, PdfStreamError

    # pypdf logs recoverable damage as warnings and errors ("Advanced encoding /H not implemented yet", once a run of
    # text: hundreds of lines in one ingest); keep the CLI output clean, errors that stop the reading still raise.
    logging.getLogger("pypdf").setLevel(logging.CRITICAL)
    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise DocumentError("not a PDF file (missing %PDF header); the file is corrupt or misnamed")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            # Many "encrypted" PDFs only restrict printing and open with an empty user password.
            try:
                if not reader.decrypt(""):
                    raise DocumentError("PDF is password-protected; remove the password and ingest it again")
            except (FileNotDecryptedError, NotImplementedError) as exc:
                raise DocumentError(
                    "PDF is password-protected; remove the password and ingest it again"
                ) from exc
        n_pages = len(reader.pages)
    except DocumentError:
        raise
    except PypdfDependencyError as exc:
        raise DocumentError(f"PDF uses encryption this install cannot open ({exc})") from None
    except (PdfReadError, PdfStreamError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DocumentError(f"PDF is corrupt and cannot be read ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # pypdf raises a wide range on damaged files
        raise DocumentError(f"PDF is corrupt and cannot be read ({type(exc).__name__})") from None
    if n_pages == 0:
        raise DocumentError("PDF has no pages")
    if n_pages > max_pages:
        raise DocumentError(f"PDF has {n_pages:,} pages; the limit is {max_pages:,}")
    pages: list[str] = []
    unmapped: list[int] = []  # 0-based pages whose text is in a CJK font without a ToUnicode map
    spaced: set[int] = set()  # fonts _space_by_gaps has seen: most are shared by every page
    for i, page in enumerate(reader.pages, start=1):
        fonts = _page_fonts(page)
        _space_by_gaps(fonts, spaced)
        try:
            pages.append(_tidy(mark_unmapped_glyphs(page.extract_text() or "")))
        except DocumentError:
            raise
        except Exception as exc:
            raise DocumentError(f"PDF page {i} is corrupt ({type(exc).__name__})") from None
        if ocr is not None and not pages[-1].strip():  # a scanned page: its text is in the picture of it
            from citerag.documents.ocr import pdf_page_images

            pages[-1] = "\n\n".join(t for t in map(ocr.read, pdf_page_images(page)) if t)
        take(len(pages[-1]))
        if _unmapped_cjk_font(fonts):
            unmapped.append(i - 1)
    for i, text in zip(unmapped, _pdfminer_pages(data, unmapped) or [], strict=False):  # none, or one a page
        pages[i] = text or pages[i]
    dropped = _running_lines(pages)
    typeset = _carried_over([_as_typeset(text, drop) for text, drop in zip(pages, dropped, strict=True)])
    sections = [Section(text=unwrap_lines(text), page=i) for i, text in enumerate(typeset, 1)]
    if not any(s.text.strip() for s in sections):
        raise DocumentError(
            f"PDF has {n_pages} page(s) but no text layer (scanned images?); "
            + ("OCR found no text in them" if ocr else "ingest it with --ocr (CITERAG_OCR=true) to read it")
        )
    title = None
    try:
        meta = reader.metadata
        if meta and meta.title and str(meta.title).strip():
            title = str(meta.title)
    except Exception:  # a broken info dictionary is not worth losing the document over
        title = None
    return title, sections


_CJK_COLLECTIONS = ("Japan1", "GB1", "CNS1", "Korea1")


def _page_fonts(page: Any) -> list[Any]:
    """The fonts the page and its forms name, read from its resources, not while extracting: a visitor turns off
    pypdf's shortcut past content with no text (a page of drawing took 100 times as long)."""
    try:
        return _fonts(page.get("/Resources"), depth=0)
    except Exception:  # a damaged resource dictionary: pypdf's reading stands
        return []


def _unmapped_cjk_font(fonts: list[Any]) -> bool:
    """Whether the page uses a CJK font without a ToUnicode map, as pLaTeX/dvipdfmx and older Japanese PDFs write
    them: the codes are glyph numbers in one of Adobe's character collections (Adobe-Japan1, and the Chinese and
    Korean ones), which pypdf gives back as if they were Unicode ("ΠϯτϩμΫγϣϯ" for "イントロダクション")."""
    try:
        return any(_is_unmapped_cjk(font) for font in fonts)
    except Exception:  # a damaged font dictionary: pypdf's reading stands
        return False


def _fonts(resources: Any, depth: int) -> list[Any]:
    if resources is None or depth > 3:  # forms inside forms, bounded: a cycle must not hang the loader
        return []
    resources = resources.get_object()
    fonts = [font.get_object() for font in _entry(resources, "/Font").values()]
    for xobject in _entry(resources, "/XObject").values():
        xobject = xobject.get_object()
        if xobject.get("/Subtype") == "/Form":
            fonts += _fonts(xobject.get("/Resources"), depth + 1)
    return fonts


def _entry(dictionary: Any, key: str) -> Any:
    value = dictionary.get(key)  # pypdf's get() leaves a reference unresolved
    return value.get_object() if value is not None else {}


def _is_unmapped_cjk(font: Any) -> bool:
    if font.get("/Subtype") != "/Type0" or "/ToUnicode" in font:
        return False
    encoding = str(font.get("/Encoding"))
    if encoding not in ("/Identity-H", "/Identity-V"):
        # A predefined CMap pypdf has no table for ("H", JIS X 0208 codes, as older Japanese TeX writes): pypdf
        # reads its codes as UTF-16, nonsense. pdfminer.six has all of Adobe's. One pypdf reads (UniJIS-UCS2-H,
        # 90ms-RKSJ-H, …) stays with pypdf.
        return encoding.startswith("/") and not _pypdf_reads_cmap(encoding)
    info = font["/DescendantFonts"][0].get_object()["/CIDSystemInfo"]
    return str(info.get("/Registry")) == "Adobe" and str(info.get("/Ordering")) in _CJK_COLLECTIONS


def _pypdf_reads_cmap(name: str) -> bool:
    """Whether pypdf decodes this predefined CMap itself: its table of them, and the UTF-16 ones, which it reads
    as UTF-16 with or without an entry (pypdf/_cmap.py, build_char_map's encoding lookup: an unknown name falls back
    to UTF-16, right for UniKS-UTF16-H). Without that table (a later pypdf may move it), no other is taken as
    read: pdfminer.six reads them all."""
    if "-UCS2-" in name or "-UTF16-" in name:
        return True
    try:
        from pypdf._cmap import _predefined_cmap
    except ImportError:
        return False
    return name in _predefined_cmap


# The space width (thousandths of an em) a font with no space glyph is read with: pypdf reads a gap in a line of
# text as a space from 0.95 of half of it (142.5): a word space in TeX shrinks to 222 at the least, a thin space is
# 167, a kern stays under 100.
SPACE_WIDTH = 300


def _space_by_gaps(fonts: list[Any], seen: set[int]) -> None:
    """Let pypdf find the spaces of a font that has no glyph for one, as TeX embeds its fonts: words are set apart
    only by moving the pen, and pypdf takes whatever glyph sits at code 32 (an asterisk or "=" in XeTeX's and
    LuaTeX's composite fonts, the visible-space sign "␣" in pdfTeX's T1-encoded ones) for the space, and its width
    for the space's. The gaps of a tightly set line then read as none ("Thiswillleavethecontentfrom", 2.2 pt gaps
    against a 2.4 pt threshold; py-pdf/pypdf#3978). That glyph's width is set to SPACE_WIDTH in the reader's copy of
    the font, in memory; pypdf advances a real glyph 32 by it too (a footnote's "*1" may read "* 1"), as it did by
    the letter's width. A font with no width for code 32 is left alone: pypdf reads it with its own default.
    pdfminer.six measures the gaps too, but reads a justified line's words as boxes apart, and the lines of two
    columns as one."""
    from pypdf.generic import ArrayObject, NameObject, NumberObject

    for font in fonts:
        try:
            # A font written inline in the page's resources has no reference: it is the page's own.
            ref = getattr(font, "indirect_reference", None)
            key = ref.idnum if ref is not None else id(font)
            if key in seen:
                continue
            seen.add(key)
            if font.get("/Subtype") == "/Type0":
                descendant = font["/DescendantFonts"][0].get_object()
                widths = list(_entry(descendant, "/W"))
                if _cid_widths(widths).get(32) and _composite_without_space(font):
                    # A later entry overrides an earlier one (pypdf reads /W in order). A copy: another font may
                    # share the array.
                    descendant[NameObject("/W")] = ArrayObject(
                        [*widths, NumberObject(32), ArrayObject([NumberObject(SPACE_WIDTH)])])
            elif _simple_without_space(font):
                widths = list(_entry(font, "/Widths"))
                widths[32 - int(font["/FirstChar"])] = NumberObject(SPACE_WIDTH)
                font[NameObject("/Widths")] = ArrayObject(widths)
        except Exception:  # a damaged font dictionary: pypdf's reading stands
            continue


def _composite_without_space(font: Any) -> bool:
    if "/ToUnicode" not in font or str(font.get("/Encoding")) not in ("/Identity-H", "/Identity-V"):
        return False
    descendant = font["/DescendantFonts"][0].get_object()
    if _fixed_pitch(_entry(descendant, "/FontDescriptor"), _cid_widths(_entry(descendant, "/W")).values()):
        return False
    from pdfminer.cmapdb import CMapParser, FileUnicodeMap

    unicode_map = FileUnicodeMap()
    CMapParser(unicode_map, io.BytesIO(font["/ToUnicode"].get_object().get_data())).run()
    return " " not in unicode_map.cid2unichr.values()


def _cid_widths(w: Any) -> dict[int, float]:
    """A composite font's widths by glyph, from its /W ("c [w1 w2 …]" or "c_first c_last w"); a later entry wins,
    as in pypdf. Bounded: a range is recorded at its ends only, enough to tell which glyphs have a width and
    whether they all have the same one."""
    out: dict[int, float] = {}
    items = [item.get_object() for item in w]
    i = 0
    while i + 1 < len(items):
        if isinstance(items[i + 1], list):
            out.update((int(items[i]) + k, float(width)) for k, width in enumerate(items[i + 1]))
            i += 2
        else:
            first, last, width = int(items[i]), int(items[i + 1]), float(items[i + 2])
            out.update({first: width, last: width})
            if first <= 32 <= last:
                out[32] = width
            i += 3
    return out


def _simple_without_space(font: Any) -> bool:
    """A simple font whose glyphs (its descriptor's CharSet, which pdfTeX and dvips write for their Type 1 subsets)
    hold no space, with a width given for code 32."""
    descriptor = _entry(font, "/FontDescriptor")
    charset = str(descriptor.get("/CharSet", ""))
    widths = _entry(font, "/Widths")
    first = int(font.get("/FirstChar", 256))
    return bool(charset) and not _SPACE_GLYPH.search(charset) and first <= 32 < first + len(widths) \
        and float(widths[32 - first]) > 0 and not _fixed_pitch(descriptor, widths)


_SPACE_GLYPH = re.compile(r"/space(?![\w.])")


def _fixed_pitch(descriptor: Any, widths: Any) -> bool:
    """Fixed pitch: code 32's glyph is as wide as a space, as every glyph is, and pypdf's reading is right. Code is
    set in such fonts, with gaps around "-" and "/" a tenth of an em would take for spaces ("debian -edu"). pdfTeX
    does not flag its typewriter fonts (CMTT, LMMono and SFTT carry flags 4), whose widths say it, to within a
    rounding (LMMono8: 531.0 and 531.3)."""
    if int(descriptor.get("/Flags", 0)) & 1:
        return True
    sizes = [float(w) for w in widths if float(w) > 0]
    return bool(sizes) and max(sizes) <= 1.01 * min(sizes)


def _pdfminer_pages(data: bytes, numbers: list[int]) -> list[str] | None:
    """Those pages' text as pdfminer.six reads it, which maps Adobe's character collections to Unicode (pypdf, taking
    some glyph numbers for right-to-left letters, also reversed them: "非式公" for "非公式"). Text in forms too
    (all_texts). None when it cannot read the file."""
    if not numbers:
        return None
    try:
        from pdfminer.layout import LAParams

        from citerag.documents.pdf_layout import layout_pages, page_boxes

        logging.getLogger("pdfminer").setLevel(logging.ERROR)
        # A text box is mostly a paragraph, but not always (a page's first line, under a running header): lines are
        # joined or not by unwrap_lines, as pypdf's are.
        pages = [_tidy(mark_unmapped_glyphs("\n".join(page_boxes(page))))
                 for page in layout_pages(data, numbers, LAParams(all_texts=True))]
    except Exception:  # pdfminer raises a wide range on files pypdf opened, or is missing from a stale install
        return None
    return pages if len(pages) == len(numbers) else None


# A page's running header or footer: its page number ("6 / 95", "Page 6 of 95", "iv") changes, the rest does not.
_NUMBER = re.compile(r"\d+")
# A page number in lower-case roman numerals, a word of its own: "iv", not "civil" or "ill".
_ROMAN_PAGE = re.compile(r"(?:^|(?<=\s))(?=[ivxlc])c{0,3}(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})(?=\s|$)")
_PAGE_RANGE = re.compile(r"#(?:\s*(?:/|of|-)\s*#)+")
# A contents entry: its title, a leader of dots and the page it starts on ("8.1 Printers . . . . . . 63").
# pdfminer may put the page on a line of its own. The lookbehind keeps a long run of dots linear to match.
_LEADER = re.compile(r"(?<![.\s])(?:\s?\.){4,}\s*(\d+|[ivxlc]+)?$", re.I)
# Justified Japanese as some typesetters extract it, a space between every character ("ソ ー ス コ ー ド は 通 常 の").
_SPACED_CJK = re.compile(r"(?:[\u3000-\u9fff\uff00-\uffef] ){4,}[\u3000-\u9fff\uff00-\uffef]")
_CJK_GAP = re.compile(r"(?<=[\u3000-\u9fff\uff00-\uffef]) (?=[\u3000-\u9fff\uff00-\uffef])")
_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100}


def _running_lines(pages: list[str]) -> list[set[int]]:
    """Per page, the lines that are its running header or footer ("Debian Edu / Skolelinux 12 Bookworm マニュアル 6 /
    95"): left in, the header opened the first sentence of every page ("…マニュアル 2 / 95図はネットワーク接続形態の例
    です。"). Only a page's first or last two lines, and only where the same line, numbers aside, is on half the pages
    (three or more), in the same place. Its numbers must be the same on every page or one of them must go up with
    the page ("6" on the 12th page, "7" on the 13th): a table's rows, an invoice's number or a step's value differ
    from page to page without being the page's number. Nothing is dropped where most pages would be left empty (a
    notice printed on three pages); a page of a figure under its header is left empty."""
    seen: dict[str, list[tuple[int, int, int, list[int]]]] = {}  # key -> (page, line, place, the line's numbers)
    for p, text in enumerate(pages):
        lines = text.split("\n")
        filled = [i for i, line in enumerate(lines) if line.strip()]
        # Its place on the page: first or second line, or last or last but one. A header keeps its place.
        for place, i in {**{-1 - n: i for n, i in enumerate(filled[::-1][:2])}, **dict(enumerate(filled[:2]))}.items():
            key, numbers = _page_free(lines[i])
            seen.setdefault(key, []).append((p, i, place, numbers))
    floor = max(3, len(pages) / 2)
    dropped: list[set[int]] = [set() for _ in pages]
    for found in seen.values():
        same = len({tuple(numbers) for *_, numbers in found}) == 1
        groups: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        for p, i, place, numbers in found:
            if same:  # the same line on every page
                groups.setdefault((place,), []).append((p, i))
            for k, n in ([] if same else enumerate(numbers)):  # a number that goes up with the page
                groups.setdefault((place, k, n - p), []).append((p, i))
        for group_key, group in groups.items():
            if len({p for p, _ in group}) >= floor and (same or abs(group_key[2]) <= 500):
                for p, i in group:
                    dropped[p].add(i)
    emptied = sum(all(i in dropped[p] for i, line in enumerate(text.split("\n")) if line.strip())
                  for p, text in enumerate(pages))
    if 2 * emptied > len(pages):  # what would be left is mostly nothing: that is the document, not its header
        return [set() for _ in pages]
    return dropped


def _page_free(line: str) -> tuple[str, list[int]]:
    """The line with its numbers as "#" (a range of them, "6 / 95", as one: the front matter's header is the
    body's), and those numbers."""
    numbers = [int(m[0]) if m[0].isdigit() else _roman(m[0])
               for m in sorted([*_NUMBER.finditer(line), *_ROMAN_PAGE.finditer(line)], key=lambda m: m.start())]
    key = _ROMAN_PAGE.sub("#", _NUMBER.sub("#", line))
    return _PAGE_RANGE.sub("#", key), numbers


def _roman(numeral: str) -> int:
    values = [_ROMAN[ch] for ch in numeral]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


def _as_typeset(text: str, dropped: set[int]) -> str:
    """A page's text without its running header and footer, justified Japanese without the spaces between its
    characters, a contents entry's leader shortened to "…" (its dots are no sentence's end), and no zero-width
    marks beside Latin text ("‌tlmgr‌"), which no word starts with; between two letters of a script that writes
    them (Persian, an emoji sequence) they stay."""
    out = []
    for i, line in enumerate(text.split("\n")):
        if i in dropped:
            continue
        if _SPACED_CJK.search(line):
            line = _CJK_GAP.sub("", line)
        line = _ZERO_WIDTH.sub("", line)
        out.append(_LEADER.sub(lambda m: f" … {m[1] or ''}".rstrip(), line))
    return "\n".join(out).strip()


_ZERO_WIDTH = re.compile(r"[\u200b\u2060\ufeff]|[\u200c\u200d](?=[\x00-\x7f]|$)|(?<=[\x00-\x7f])[\u200c\u200d]")


# Where a sentence a page break cut ends on the next page: a Japanese full stop, or a Latin one before a space.
_SENTENCE_END = re.compile(r"[。．！？]|[.!?](?=\s|$)")
_NUMBERED_HEADING = re.compile(r"^\d+(\.\d+)*\.?\s")
CARRIED_MAX_CHARS = 400


def _carried_over(pages: list[str]) -> list[str]:
    """A sentence a page break cuts ends on the page it starts on, where a reader starts reading it and a citation
    sends them: TeX Live's guide ended a page with "…すべてのプログラムが確実に検索パス中で", and the next opened
    with the fragment "TEX Live のバイナリを見つけられるようにします．". Only when the page's last line was full and
    ends no sentence, and the next page goes on with no heading (a numbered one, or a capital after a full line) and
    ends the sentence within a few lines."""
    pages = list(pages)
    for p in range(len(pages) - 1):
        lines = pages[p].split("\n")
        full = _full_line(lines)
        if full is None or not pages[p + 1].strip():
            continue
        # A header left on the page (a chapter's name, on its pages only) opens both pages: the sentence goes on
        # under it.
        top, _, rest = pages[p + 1].partition("\n")
        header = f"{top}\n" if rest and top == lines[0] else ""
        head = pages[p + 1][len(header) :]
        last = lines[-1].rstrip()
        if _width(last) < 0.7 * full or last.endswith(_TERMINAL) or _LEADER_END.search(last) \
                or _NUMBERED_HEADING.match(head) or (head[:1].isupper() and not is_cjk(last[-1])):
            continue
        end = _SENTENCE_END.search(head, 0, CARRIED_MAX_CHARS)
        if end is None or "\n\n" in head[: end.end()]:
            continue
        pages[p] = f"{pages[p]}\n{head[: end.end()]}"
        pages[p + 1] = header + head[end.end() :].lstrip()
    return pages


_TERMINAL = tuple("。．！？.!?:：」』）)")
_HYPHENATED = re.compile(r"[^\W\d_]{2}-\s*$")  # a letter pair then a hyphen ends the line
# "e-" / "mail", "X-" / "2": a compound broken at its own hyphen; not a grade or a charge alone on its line ("A-").
_BROKEN_AT_HYPHEN = re.compile(r"\s\S*\w-$")
# The last word is an option ("--main-") or holds a hyphen of its own ("state-of-the-"): the one at its end is too.
_OWN_HYPHEN = re.compile(r"(?:^|\s)(?:-[\w-]*|[\w]+-[\w-]*)\w-$")


def unwrap_lines(text: str) -> str:
    """Join lines that a PDF wrapped because they were full, so sentences come out whole.

    A line counts as wrapped when it is nearly as long as the page's long lines and does not end a
    sentence; short lines (headings, list items) keep their breaks. Japanese joins without a space. A line ending
    in a hyphenated word continued in lower case on the next line is joined into the word ("manip- ulation" used
    to reach answers).
    """
    lines = text.split("\n")
    full = _full_line(lines)
    if full is None:
        return text
    out: list[str] = []
    # The line above as the page printed it: whether it was full decides, not what it was joined into, and its end
    # is the joined line's (read there, a page of one long paragraph is not read again at every line).
    last = ""
    for line in lines:
        prev = last.rstrip()
        if out and out[-1] and line and _HYPHENATED.search(prev) and line.lstrip()[:1].islower():
            # A word hyphenated at the line's end ("manip-" / "ulation"): one word again, whatever the line length.
            # An option or a compound broken at one of its own hyphens keeps it ("--main-" / "stacksize" is
            # --main-stacksize, which read "--mainstacksize").
            keep = bool(_OWN_HYPHEN.search(prev))
            out[-1] = out[-1].rstrip()[: None if keep else -1] + line.lstrip()
        elif out and out[-1] and line and (_width(last) >= 0.7 * full or _BROKEN_AT_HYPHEN.search(prev)) \
                and not prev.endswith(_TERMINAL) and not _LEADER_END.search(prev) \
                and not (_PAGE_END.search(prev) and _NUMBERED_HEADING.match(line)
                         and (_PAGE_END.search(line.rstrip()) or _LEADER_END.search(line.rstrip()))):
            joiner = "" if (is_cjk(prev[-1]) or is_cjk(line[0]) or prev.endswith("-")) else " "
            out[-1] = out[-1].rstrip() + joiner + line.lstrip()
        else:
            out.append(line)
        last = line
    return "\n".join(out)


def _full_line(lines: list[str]) -> int | None:
    """How long a full line of the page is (its long lines' length, a few longer ones aside); None for a page of
    fewer than two lines."""
    lengths = sorted(_width(line) for line in lines if line.strip())
    return lengths[int(0.9 * (len(lengths) - 1))] if len(lengths) >= 2 else None


def _width(line: str) -> int:
    """A line's length as printed: a Japanese or Chinese character takes the room of two Latin ones, so on a page
    of both a full line of either is full ("…必要があります。インストー" was read as short beside English lines)."""
    return len(line) + sum(1 for ch in line if unicodedata.east_asian_width(ch) in "WF")


_LEADER_END = re.compile(r" …(?: \d+| [ivxlc]+)?$", re.I)  # a contents entry, as _as_typeset writes it, is whole
# A chapter's contents entry has no leader: its page number, then the next entry, a number, a title and a page
# ("1 はじめに 5" / "1.1 背景 … 5"). Two Japanese entries are as wide as a full line.
_PAGE_END = re.compile(r"\s\d+$")


# --- Markdown ------------------------------------------------------------------------------------------------

_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
# CommonMark's link reference definition: up to three spaces, a label, a colon, a destination. Not a footnote
# ("[^1]: …"), which is shown.
_MD_LINK_DEFINITION = re.compile(r"^ {0,3}\[(?!\^)[^\]]{1,999}\]:\s*\S+\s*(?:[\"'(].*)?$")


def _load_markdown(data: bytes, name: str, max_pages: int) -> tuple[str | None, list[Section]]:
    text = decode_text(data)
    take(len(text))  # a Markdown file's text is its source, markup aside: counted before anything is parsed
    text = _strip_html_comments(text)
    title: str | None = None
    path: list[tuple[int, str]] = []
    sections: list[Section] = []
    buf: list[str] = []
    in_fence = False
    # The open paragraph's source lines, joined and read once when it ends: read again at every wrapped line, an
    # 8,000-line paragraph took minutes.
    para: list[str] = []

    def close_paragraph() -> None:
        if para:
            buf[-1] = _strip_md_inline(_inline_html("".join(para)))  # a link or a tag may span its lines
            para.clear()

    def flush() -> None:
        close_paragraph()
        body = _tidy("\n".join(buf))
        # A heading directly followed by a sub-heading has no body of its own: its title lives on in the
        # heading path of the sections below, and a heading-only chunk would only be search noise.
        has_body = any(line.strip() for line in buf[1:]) if path else bool(body.strip())
        if body.strip() and has_body:
            heading = " > ".join(h for _, h in path) or None
            sections.append(Section(text=body, section=heading))
        buf.clear()

    prose_open = False  # the last line in buf is prose a soft-wrapped next line continues
    for line in text.splitlines():
        fence_mark = line.lstrip().startswith(("```", "~~~"))
        if fence_mark:
            in_fence = not in_fence
        m = None if in_fence else _MD_HEADING.match(line)
        if m:
            flush()
            level, heading = len(m.group(1)), _strip_md_inline(m.group(2))
            if level == 1 and title is None:
                title = heading
            path = [(lv, h) for lv, h in path if lv < level] + [(level, heading)]
            # The heading is part of the section text so a search for it finds the section.
            buf.append(heading)
            prose_open = False
            continue
        if fence_mark or line.lstrip().startswith("{{#") or (not in_fence and _MD_LINK_DEFINITION.match(line)):
            close_paragraph()
            # A fence marker, an mdBook include directive or a link reference definition ("[vec-api]:
            # ../std/vec/struct.Vec.html") is markup, not text a reader sees. The Rust book ends its sections with
            # such lists, which search found for any question about the section's topic and a Japanese question
            # about vectors got as its one relevant English passage.
            prose_open = False
            continue
        if not in_fence and line.lstrip().startswith("<"):
            line = _HTML_TAG.sub("", line)  # <span class="filename">Filename: x</span> shows as its text
        quoted = _MD_QUOTE.sub("", line) if not in_fence else line
        prose = not in_fence and _is_prose(quoted)
        # A list item starts a new line, except a number other than 1 (CommonMark: "between 0 and\n255. If" is
        # one paragraph).
        item = _MD_ITEM.match(quoted) and not re.match(r"^\s*(?:[2-9]|\d{2,})[.)]\s", quoted)
        if prose and prose_open and not item:
            # A paragraph wrapped in the source is one line when rendered: sentences must come out whole.
            para[-1] = para[-1].rstrip()
            new = quoted.strip()
            # Decided on the text as shown, markup aside ("**日本語**" / "**です**。" join with none).
            last = _strip_md_inline(_inline_html(para[-1])).rstrip()
            joiner = "" if last and new and (is_cjk(last[-1]) or is_cjk(new[0])) else " "
            para.append(joiner + new)
        elif prose:
            close_paragraph()
            buf.append(quoted)
            para.append(quoted)
        else:
            close_paragraph()
            buf.append(quoted if in_fence else _strip_md_inline(_inline_html(quoted)))  # code is shown as written
        prose_open = prose
    flush()
    return title, sections


_FENCE_SPLIT = re.compile(r"(^[ \t]*(?:```|~~~).*?^[ \t]*(?:```|~~~)[^\n]*$)", re.M | re.S)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)


def _strip_html_comments(text: str) -> str:
    """Drop <!-- ... --> outside code fences: a renderer never shows them, and translated books keep the whole
    original in them (the Japanese Rust book's English), which would otherwise be cited as the document's text.
    An unclosed comment is left as text rather than hiding the rest of the file."""
    parts = _FENCE_SPLIT.split(text)
    return "".join(p if i % 2 else _HTML_COMMENT.sub("", p) for i, p in enumerate(parts))


_HTML_TAG = re.compile(r"</?[A-Za-z][^>]{0,500}>")
# Inline HTML a renderer shows as text; only these names, so that `Vec<T>` and `Option<&T>` in prose stay.
_INLINE_TAG = re.compile(r"</?(?:span|em|strong|b|i|u|code|kbd|small|a|br|abbr|mark|s|del|ins)(?:\s[^>]{0,300})?/?>",
                         re.I)
_SUP_SUB = re.compile(r"<(sup|sub)>([^<]{1,40})</\1>", re.I)


def _inline_html(line: str) -> str:
    """"2<sup>7</sup> - 1" reads as 2^7 - 1 and "-(2<sup>n - 1</sup>)" as -(2^(n - 1)): stripping the tags alone
    would turn the power into "27"."""
    def power(m: re.Match[str]) -> str:
        mark = "^" if m.group(1).lower() == "sup" else "_"
        inner = m.group(2)
        return f"{mark}{inner}" if re.fullmatch(r"[\w.]+", inner) else f"{mark}({inner})"

    return _INLINE_TAG.sub("", _SUP_SUB.sub(power, line))

_MD_QUOTE = re.compile(r"^\s{0,3}(?:>\s?)+")
_MD_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s")


def _is_prose(line: str) -> bool:
    """A line of running text, which a renderer joins to the next: not blank, a table row, raw HTML, an mdBook
    directive or a link definition."""
    s = line.strip()
    return bool(s) and not s.startswith(("|", "<", "{{#", "#")) and not re.match(r"^\[[^\]]+\]:\s", s)


# MyST (Sphinx's Markdown, as pip's and many Python projects' docs are written): a role over a code span shows its
# text ("{mod}`ensurepip`" -> "ensurepip"), or the title of a titled one ("{ref}`virtual environment <target>`");
# a footnote reference ("module[^python]") is a mark, not a word; an autolink shows its address.
_MYST_ROLE = re.compile(r"\{[\w:.+-]{1,40}\}`([^`\n]*?)(?:\s+<[^`<>\n]*>)?`")
_FOOTNOTE_REF = re.compile(r"\[\^[^\]\s]{1,60}\](?!:)")
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^\s<>]+)>")


# A code span as CommonMark reads it: a run of backticks up to a run of the same length ("``a`b``"); a backtick
# with no partner is text.
_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")


def _outside_code(s: str, change: Callable[[str], str]) -> str:
    """`change` applied to the text between code spans, the spans kept as written (backticks included)."""
    out, at = [], 0
    for m in _CODE_SPAN.finditer(s):
        out += [change(s[at : m.start()]), m.group()]
        at = m.end()
    return "".join([*out, change(s[at:])])


def _strip_md_inline(s: str) -> str:
    s = _MYST_ROLE.sub(r"`\1`", s)
    # Not inside a code span: "`[^0-9]`" is a regular expression, "`<https://…>`" printed as written.
    s = _outside_code(s, lambda t: _AUTOLINK.sub(r"\1", _FOOTNOTE_REF.sub("", t)))
    s = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", s)
    s = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", s)
    s = re.sub(r"\[([^\]]+)\]\[[^\]]*\]", r"\1", s)  # reference-style link: [text][label]
    # Emphasis outside code spans ("_two's complement wrapping_", "ここで*n*は"); "_" never inside a word
    # (snake_case), as in CommonMark.
    s = _outside_code(s, lambda t: _MD_STRONG.sub("", _MD_EMPHASIS.sub(lambda m: m.group(2) or m.group(4), t))
                      .replace("`", ""))
    # A code span is shown as written, without its backticks: "`__attrs_post_init__`" lost its underscores.
    return _CODE_SPAN.sub(lambda m: m.group(2), s)


# Strong emphasis marks, "**" anywhere and "__" at a word's edge only (CommonMark: "snake__case" is a word).
_MD_STRONG = re.compile(r"\*\*|(?<!\w)__(?=\S)|(?<=\S)__(?!\w)")


_MD_EMPHASIS = re.compile(r"(?<![\w\\])(_)(?=\S)([^_\n]{1,300}?)(?<=\S)_(?!\w)"
                          r"|(?<![*\\])(\*)(?=[^\s*])([^*\n]{1,300}?)(?<=[^\s*])\*(?!\*)")


# --- HTML ----------------------------------------------------------------------------------------------------

_BLOCK_TAGS = {
    "p", "div", "br", "li", "tr", "section", "article", "header", "footer", "h1", "h2", "h3", "h4", "h5",
    "h6", "pre", "blockquote", "table", "ul", "ol", "dd", "dt",
}
_SKIP_TAGS = {"script", "style", "noscript", "template", "svg", "nav"}
# Elements that are a page's navigation by their attributes, not their tag: Sphinx's sidebar and related-pages bar
# (<div role="navigation">: "前のトピックへ", "このページ ソースコードを表示" were indexed as the section above them), a
# search box, content hidden from readers, and the permalink a heading carries (<a class="headerlink">¶</a>).
_SKIP_ROLES = {"navigation", "search"}
_SKIP_CLASSES = {"headerlink", "sphinxsidebar", "related"}


def _is_navigation(attrs) -> bool:
    for key, value in attrs:
        value = (value or "").strip().lower()
        if (key == "role" and value in _SKIP_ROLES) or (key == "aria-hidden" and value == "true"):
            return True
        if key == "class" and _SKIP_CLASSES.intersection(value.split()):
            return True
    return False
_VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}


@dataclass
class _Table:
    headers: list[str] = field(default_factory=list)  # its first row's, when every cell of it is a header
    rows: int = 0  # rows read so far
    layout: bool = False  # a page laid out in a table (headings in its cells): read as the page, not as rows


# A cell longer than this is a page's column, not a datum: its table is a layout's.
_LAYOUT_CELL_CHARS = 2000


class _Readable(HTMLParser):
    def __init__(self, *, skip_navigation: bool = True) -> None:
        super().__init__(convert_charrefs=True)
        self.title: str | None = None
        self._in_title = False
        self._skip = 0
        self._heading: int | None = None
        self._heading_text: list[str] = []
        self.sections: list[tuple[list[tuple[int, str]], list[str]]] = [([], [])]
        self._path: list[tuple[int, str]] = []
        # A table is read a row at a time: its cells (and the blocks inside them) on one line, each under its
        # column's header ("package: ibus-unikey; size: 318; supported locale: Vietnamese"). Cell by cell, a row
        # of a manual's table of packages was a paragraph per cell, and no statement held a package and what it
        # is for. A table that lays out a page (a heading or a long text in a cell) is read as before.
        self._tables: list[_Table] = []
        self._row: list[tuple[str, bool, bool]] | None = None  # (cell text, is a header cell, spans cells)
        self._cell: list[str] | None = None
        self._cell_is_header = self._cell_spans = False
        self._nested = 0  # tables open inside the open cell
        self._skipped_tag: str | None = None  # the element skipped for its attributes, while inside it
        self._skipped_depth = 0
        self.skip_navigation = skip_navigation
        self.skipped_navigation = False
        # A definition list's term and its description are one line ("-C | -capitalize: Capitalize the first
        # letter…"): on lines of their own, "which option…" found the description without the option it describes.
        self._term_ended = False
        self._joined = False  # a term was just joined to its description: a block opening inside it adds no break

    @property
    def _skipping(self) -> bool:
        return bool(self._skip) or self._skipped_tag is not None

    def handle_starttag(self, tag: str, attrs) -> None:
        if self._skipped_tag == tag:
            self._skipped_depth += 1
        if tag in _SKIP_TAGS:
            self._skip += 1
        elif self.skip_navigation and self._skipped_tag is None and tag not in _VOID_TAGS and _is_navigation(attrs):
            self._skipped_tag, self._skipped_depth = tag, 1
            self.skipped_navigation = True
        elif tag == "title":
            self._in_title = True
        elif tag in _HEADINGS and not self._skipping:
            if self._cell is not None:
                self._as_layout()
            self._heading = _HEADINGS[tag]
            self._heading_text = []
        if self._skipping and tag in ("table", "tr", "td", "th"):
            pass  # a <template>'s table is not the page's
        elif tag == "table" and self._cell is not None:
            self._nested += 1  # a table inside a cell is read into the cell
        elif tag == "table":
            self._tables.append(_Table())
        elif tag == "tr" and self._tables and not self._nested:
            self._end_row()  # "</tr>" and "</td>" may be left out
            self._row = None if self._tables[-1].layout else []
        elif tag in ("td", "th") and self._row is not None and not self._nested:
            self._end_cell()
            spans = any(k in ("colspan", "rowspan") and (v or "1").strip() not in ("", "1") for k, v in attrs)
            self._cell, self._cell_is_header, self._cell_spans = [], tag == "th", spans
        self._block(tag)

    def handle_endtag(self, tag: str) -> None:
        self._term_ended = tag == "dt"
        if tag == self._skipped_tag:
            self._skipped_depth -= 1
            if not self._skipped_depth:
                self._skipped_tag = None
        if tag in _SKIP_TAGS and self._skip:
            self._skip -= 1
        elif tag == "title":
            self._in_title = False
        elif tag in _HEADINGS and self._heading is not None:
            heading = " ".join("".join(self._heading_text).split())
            level = self._heading
            self._heading = None
            if heading:
                self._path = [(lv, h) for lv, h in self._path if lv < level] + [(level, heading)]
                self.sections.append((list(self._path), [heading, "\n"]))
        if self._skipping and tag in ("table", "tr", "td", "th"):
            pass
        elif tag == "table" and self._nested:
            self._nested -= 1
        elif tag in ("td", "th") and not self._nested:
            self._end_cell()
        elif tag == "tr" and not self._nested:
            self._end_row()
        elif tag == "table" and self._tables:
            self._end_row()
            self._tables.pop()
        self._block(tag)

    def close(self) -> None:
        super().close()
        while self._tables:  # a page cut off inside a table keeps what it holds
            self._end_row()
            self._tables.pop()

    def _end_cell(self) -> None:
        if self._cell is not None and self._row is not None:
            self._row.append(("".join(self._cell), self._cell_is_header, self._cell_spans))
        self._cell = None

    def _block(self, tag: str) -> None:
        if tag == "dd" and self._term_ended and self._cell is None and not self._skipping:
            parts = self.sections[-1][1]
            while parts and parts[-1].isspace():
                parts.pop()
            if parts and parts[-1].rstrip() and not parts[-1].rstrip().endswith((":", "：")):
                parts[-1] = parts[-1].rstrip() + ("：" if is_cjk(parts[-1].rstrip()[-1]) else ": ")
            self._term_ended, self._joined = False, True
            return
        if self._joined and tag in _BLOCK_TAGS:
            return
        if tag in _BLOCK_TAGS or tag in ("td", "th"):
            (self._cell if self._cell is not None else self.sections[-1][1]).append("\n")

    def _as_layout(self) -> None:
        """The open row's cells go to the page as they are, and its table is read as a page from here on."""
        self.sections[-1][1].extend([*(text for text, _, _ in self._row or []), *(self._cell or [])])
        self._tables[-1].layout = True
        self._row = self._cell = None
        self._nested = 0

    def _end_row(self) -> None:
        self._end_cell()
        row, self._row = self._row or [], None
        cells = [" ".join(text.split()) for text, _, _ in row]
        if not any(cells):
            return
        table = self._tables[-1]
        table.rows += 1
        spans = any(s for _, _, s in row)
        if table.rows == 1 and all(h for _, h, _ in row) and all(cells) and not spans:
            table.headers = cells
        # Under headers a cell spans, or none, the columns cannot be named surely: the cells as they stand.
        named = table.rows > 1 and len(table.headers) == len(cells) and not spans
        line = "; ".join(f"{h}: {c}" for h, c in zip(table.headers, cells, strict=True) if c) if named \
            else " | ".join(c for c in cells if c)
        self.sections[-1][1].append(f"\n\n{line}\n\n")

    def handle_data(self, data: str) -> None:
        if not data.isspace():
            self._term_ended = self._joined = False
        if self._in_title or not self._skipping:
            take(len(data))  # the page's text, markup and skipped elements aside, counted as it is read
        if self._in_title:
            self.title = (self.title or "") + data
        elif self._skipping:
            return
        elif self._heading is not None:
            self._heading_text.append(data)
        elif self._cell is not None:
            self._cell.append(data)
            if sum(map(len, self._cell)) > _LAYOUT_CELL_CHARS:
                self._as_layout()
        elif self._row is None or not data.isspace():  # between a row's cells, only markup's whitespace is dropped
            self.sections[-1][1].append(data)


def _load_html(data: bytes, name: str, max_pages: int) -> tuple[str | None, list[Section]]:
    text: bytes | str = data if _plain_utf8_start(data) else decode_text(data, html=True)
    try:
        parser = _read_html(text, skip_navigation=True)
    except UnicodeDecodeError:  # not UTF-8 after all: read as the file says, its text counted afresh
        restart_count()
        text = decode_text(data, html=True)
        parser = _read_html(text, skip_navigation=True)
    if parser.skipped_navigation:
        # An element skipped for its attributes ends at its own end tag: one left open (HTML lets "<p>" and "<li>"
        # go unclosed, and pages leave others open) would take the rest of the page with it. Navigation is a small
        # part of a page; skipping that took most of it is read without skipping.
        whole = _read_html(text, skip_navigation=False)
        if _chars(parser) < NAVIGATION_MAX_SHARE * _chars(whole):
            parser = whole
    sections = []
    for path, parts in parser.sections:
        body = _tidy("".join(parts))
        heading_only = bool(path) and not _tidy("".join(parts[2:])).strip()
        if body.strip() and not heading_only:
            sections.append(Section(text=body, section=" > ".join(h for _, h in path) or None))
    title = " ".join(parser.title.split()) if parser.title else None
    return title, sections


NAVIGATION_MAX_SHARE = 0.5
HTML_FEED_CHARS = 1 << 20


def _read_html(text: bytes | str, *, skip_navigation: bool) -> _Readable:
    """The page read in pieces, so one over its text budget stops being read. Given bytes (plain UTF-8), they are
    decoded piece by piece: a large page is never held a second time as one string (UnicodeDecodeError when it is
    not UTF-8 after all)."""
    parser = _Readable(skip_navigation=skip_navigation)
    if isinstance(text, str):
        for start in range(0, len(text), HTML_FEED_CHARS):
            parser.feed(text[start : start + HTML_FEED_CHARS])
    else:
        decoder = codecs.getincrementaldecoder("utf-8")()
        view = memoryview(text)
        for start in range(0, len(view), HTML_FEED_CHARS):
            parser.feed(decoder.decode(view[start : start + HTML_FEED_CHARS]))
        parser.feed(decoder.decode(b"", final=True))
    parser.close()
    return parser


def _plain_utf8_start(data: bytes) -> bool:
    """Whether decode_text would read the page as UTF-8 from its first bytes on: no byte-order mark, no NUL; the
    rest is checked as it is decoded."""
    return not data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) \
        and b"\x00" not in data[:8192]


def _chars(parser: _Readable) -> int:
    return sum(len("".join(parts).strip()) for _, parts in parser.sections)


# --- plain text ----------------------------------------------------------------------------------------------


def _load_text(data: bytes, name: str, max_pages: int) -> tuple[str | None, list[Section]]:
    # The chunker cites text files by line range; a man page saved from a pipe is read as it shows.
    text = decode_text(data)
    take(len(text))
    text = _join_hyphenated(_tidy(resolve_overstrike(text), keep_lines=True))
    if not text.strip():
        raise DocumentError("text file contains only whitespace")
    return None, [Section(text=text)]


def _join_hyphenated(text: str) -> str:
    """A word nroff hyphenated at a line's end ("trun\u2010" over "cating a file") is whole at the start of the next
    line: every line break stays, so line numbers still hold, and the line it came from only loses its last word.
    U+2010 is the hyphen nroff breaks words with (an ASCII "-" is a compound's own, "per-\nhost"); not before a
    capital ("Selbst\u2010\nVerständnis" is a compound)."""
    if "\u2010\n" not in text:
        return text
    lines = text.split("\n")
    for i in range(len(lines) - 1):
        head, _, word = lines[i].rpartition(" ")
        if len(word) > 1 and word.endswith("\u2010") and word[-2].isalnum() and lines[i + 1][:1].islower():
            lines[i], lines[i + 1] = head, word[:-1] + lines[i + 1]
    return "\n".join(lines)


# --- shared --------------------------------------------------------------------------------------------------


def _tidy(text: str, *, keep_lines: bool = False) -> str:
    """Normalise line endings and runs of blank space, keep paragraph breaks (and, with keep_lines, every line, so
    line numbers still point into the file)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = re.sub(r"[ \t\u00a0]+", " ", text)
    text = re.sub(r" *\n *", "\n", text)
    if keep_lines:  # leading blank lines too: without them every line number would be off
        return text.lstrip(" ").rstrip()
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _elsewhere(module: str, function: str) -> Callable[[bytes, str, int], tuple[str | None, list[Section]]]:
    """A loader in a module of its own, imported on first use (its libraries are an extra)."""
    def load(data: bytes, name: str, max_pages: int) -> tuple[str | None, list[Section]]:
        import importlib

        return getattr(importlib.import_module(f"citerag.documents.{module}"), function)(data, name, max_pages)

    return load


def _load_image(data: bytes, name: str, max_pages: int, ocr: Ocr | None) -> tuple[str | None, list[Section]]:
    """An image of text: each page of it (a TIFF may hold many) read by OCR, cited by page when it has several."""
    if ocr is None:
        raise NeedsOcr("an image; ingest with --ocr (CITERAG_OCR=true) to read its text")
    pages = ocr.image_pages(data)
    if len(pages) > max_pages:
        raise DocumentError(f"the image has {len(pages):,} pages; the limit is {max_pages:,}")
    if not any(p.strip() for p in pages):
        raise DocumentError("OCR found no text in the image")
    return None, [Section(text=t, page=n if len(pages) > 1 else None) for n, t in enumerate(pages, 1)]


_READS_IMAGES = {"pdf": _load_pdf, "image": _load_image}
_LOADERS = {"pdf": _load_pdf, "markdown": _load_markdown, "html": _load_html, "text": _load_text,
            "docx": _elsewhere("office", "load_docx"), "xlsx": _elsewhere("office", "load_xlsx"),
            "csv": _elsewhere("office", "load_csv"), "pptx": _elsewhere("office", "load_pptx"),
            "epub": _elsewhere("epub", "load_epub")}
