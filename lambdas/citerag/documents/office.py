"""Word, Excel, PowerPoint and CSV files, each passage with a place a person can go to in the file: a heading and
paragraph ("Setup > Network, ¶ 2"), a table's row ("Setup, table 1 row 3"), a sheet's cells ("Prices!A4:C6"), a
slide ("slide 3: Pricing") or its speaker notes.

python-docx, openpyxl and python-pptx read the files (the `office` extra); CSV needs only the standard library.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import zipfile
from collections.abc import Iterable, Iterator
from typing import Any

from citerag.documents.encodings import decode_text
from citerag.documents.model import Mark, Section
from citerag.documents.places import column_letters
from citerag.errors import DocumentError

# A part of a document is one parent: a long heading's part or a long sheet is cut into parents of about this size,
# so the context a passage brings with it stays readable.
PARENT_CHARS = 4000
# Bounds on what a file may make, whatever its size on disk (an XLSX of 1 MB can hold millions of empty-looking
# cells; a ZIP can expand a thousandfold).
MAX_ROWS = 200_000
MAX_CELLS_PER_ROW = 500
MAX_CELL_CHARS = 20_000
MAX_UNZIPPED_BYTES = 1024 * 1024 * 1024
MAX_ZIP_ENTRIES = 20_000


def _needs(extra_module: str, kind: str) -> DocumentError:
    return DocumentError(f"reading {kind} files needs {extra_module}: pip install 'citerag[office]'")


def check_zip(data: bytes, kind: str) -> zipfile.ZipFile:
    """An Office file or EPUB is a ZIP: open it, refusing one that is not or that would expand without bound."""
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise DocumentError(f"not a {kind} file (not a ZIP package); the file is corrupt or misnamed") from None
    infos = z.infolist()
    if len(infos) > MAX_ZIP_ENTRIES:
        raise DocumentError(f"{kind} package has {len(infos):,} parts; the limit is {MAX_ZIP_ENTRIES:,}")
    unzipped = sum(i.file_size for i in infos)
    if unzipped > MAX_UNZIPPED_BYTES:
        raise DocumentError(f"{kind} package expands to {unzipped:,} bytes; the limit is {MAX_UNZIPPED_BYTES:,}")
    return z


class _Parts:
    """Builds a document's sections from its units (paragraphs, rows), each with its place; a new section starts
    at a new heading or when the open one is long enough."""

    def __init__(self) -> None:
        self.sections: list[Section] = []
        self._text: list[str] = []
        self._marks: list[Mark] = []
        self._at = 0
        self._label: str | None = None

    def start(self, label: str | None, first_line: str | None = None) -> None:
        self.close()
        self._label = label
        if first_line:  # a heading or a header row, read with what follows but cited as the first unit
            self._text.append(first_line + "\n")
            self._at = len(first_line) + 1

    def add(self, text: str, place: str) -> None:
        text = " ".join(text.split()) if "\n" not in text else "\n".join(" ".join(t.split()) for t in text.split("\n"))
        text = text.strip()
        if not text:
            return
        if self._at > PARENT_CHARS and self._marks:
            label, self._label = self._label, None
            self.close()
            self._label = label
        self._marks.append(Mark(start=0 if not self._marks else self._at, place=place))
        self._text.append(text + "\n\n")
        self._at += len(text) + 2

    def close(self) -> None:
        if self._marks:
            self.sections.append(Section(text="".join(self._text).rstrip(), section=self._label, marks=self._marks))
        self._text, self._marks, self._at = [], [], 0


# --- Word ------------------------------------------------------------------------------------------------------

_HEADING_STYLE = re.compile(r"^(?:heading|見出し)\s*(\d)$", re.I)


def load_docx(data: bytes, name: str, max_pages: int) -> tuple[str | None, list[Section]]:
    try:
        import docx
        from docx.table import Table
        from docx.text.paragraph import Paragraph
    except ImportError:
        raise _needs("python-docx", "Word (.docx)") from None
    check_zip(data, "Word (.docx)")
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises KeyError, ValueError, lxml errors on damaged packages
        raise DocumentError(f"Word file is corrupt and cannot be read ({type(exc).__name__})") from None
    parts = _Parts()
    path: list[tuple[int, str]] = []
    heading = ""
    paragraph = tables = 0
    for block in _blocks(document.element.body, document, Paragraph, Table):
        if isinstance(block, Paragraph):
            text = block.text.strip()
            level = _heading_level(block)
            if level is not None and text:
                path = [(lv, h) for lv, h in path if lv < level] + [(level, " ".join(text.split()))]
                heading = " > ".join(h for _, h in path)
                paragraph = 0
                parts.start(heading or None, text)
                continue
            if text:
                paragraph += 1
                parts.add(text, f"{heading}, ¶ {paragraph}" if heading else f"¶ {paragraph}")
        elif isinstance(block, Table):
            tables += 1
            where = f"{heading}, table {tables}" if heading else f"table {tables}"
            for n, line in _table_rows(_docx_rows(block)):
                parts.add(line, f"{where} row {n}")
    parts.close()
    props = document.core_properties
    return (props.title or None), parts.sections


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _blocks(container: Any, parent: Any, paragraph: type, table: type) -> Iterator[Any]:
    """Paragraphs and tables in document order, those inside content controls too (a template's title, a form's
    fields): python-docx's own iteration passes over a <w:sdt> and everything in it."""
    for child in container.iterchildren():
        if child.tag == f"{_W}p":
            yield paragraph(child, parent)
        elif child.tag == f"{_W}tbl":
            yield table(child, parent)
        elif child.tag == f"{_W}sdt":
            content = child.find(f"{_W}sdtContent")
            if content is not None:
                yield from _blocks(content, parent, paragraph, table)


def _heading_level(paragraph: Any) -> int | None:
    """A heading's level from its style ("Heading 2", or the Japanese "見出し 2"), or from the outline level a custom
    heading style sets; "Title" is level 0 (above every heading)."""
    style = paragraph.style
    names = []
    while style is not None and len(names) < 5:  # a style based on a heading style is a heading
        names.append(style.name or "")
        pPr = style.element.pPr
        outline = pPr.find("{http://schemas.openxmlformats.org/wordprocessingml/2006/main}outlineLvl") \
            if pPr is not None else None
        if outline is not None:
            value = outline.get("{http://schemas.openxmlformats.org/wordprocessingml/2006/main}val", "")
            if value.isdigit() and int(value) < 9:
                return int(value) + 1
        style = style.base_style
    for n in names:
        if n.lower() == "title":
            return 0
        m = _HEADING_STYLE.match(n.strip())
        if m:
            return int(m.group(1))
    return None


def _docx_rows(table: Any) -> Iterator[list[str]]:
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:  # a merged cell is given once for every column it spans
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            cells.append(cell.text)
        yield cells


def _table_rows(rows: Iterable[list[str]]) -> Iterator[tuple[int, str]]:
    """(1-based row number, text) of a table's rows after its first, each cell under its column's header from the
    first row ("Plan: Pro; Price: 30"), as HTML tables are read; a table of one row is that row."""
    headers: list[str] = []
    for n, cells in enumerate(rows, start=1):
        cells = [" ".join(c.split()) for c in cells]
        if n == 1:
            headers = cells
            continue
        if len(cells) == len(headers) and all(headers):
            line = "; ".join(f"{h}: {c}" for h, c in zip(headers, cells, strict=True) if c)
        else:
            line = " | ".join(c for c in cells if c)
        if line:
            yield n, line
    if headers and n == 1:
        yield 1, " | ".join(c for c in headers if c)


# --- Excel and CSV ---------------------------------------------------------------------------------------------


def load_xlsx(data: bytes, name: str, max_pages: int) -> tuple[str | None, list[Section]]:
    try:
        import openpyxl
    except ImportError:
        raise _needs("openpyxl", "Excel (.xlsx)") from None
    check_zip(data, "Excel (.xlsx)")
    try:
        # data_only: the value a formula last computed, as the sheet shows it (not "=SUM(B2:B9)").
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:
        raise DocumentError(f"Excel file is corrupt and cannot be read ({type(exc).__name__})") from None
    parts = _Parts()
    budget = [MAX_ROWS]
    try:
        for sheet in book.worksheets:
            if getattr(sheet, "sheet_state", "visible") != "visible":
                continue  # a hidden sheet is not what a reader sees
            _sheet_rows(parts, _sheet_name(sheet.title), sheet.iter_rows(values_only=True), budget)
        title = book.properties.title if book.properties else None
    finally:
        book.close()
    return title or None, parts.sections


def load_csv(data: bytes, name: str, max_pages: int) -> tuple[str | None, list[Section]]:
    text = decode_text(data)
    try:
        dialect = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    csv.field_size_limit(MAX_CELL_CHARS)
    parts = _Parts()
    try:
        _sheet_rows(parts, "", csv.reader(io.StringIO(text, newline=""), dialect), [MAX_ROWS])
    except csv.Error as exc:
        raise DocumentError(f"CSV file cannot be read: {exc}") from None
    return None, parts.sections


def _sheet_name(title: str) -> str:
    """A sheet as a formula names it: quoted when it is more than letters, digits and underscores."""
    return f"{title}!" if re.fullmatch(r"\w+", title) else "'" + title.replace("'", "''") + "'!"


def _sheet_rows(parts: _Parts, sheet: str, rows: Iterable[Iterable[Any]], budget: list[int]) -> None:
    """A sheet's rows, each with the header row's cells as its names ("Plan: Pro; Price: 30"), cited by its cells
    ("Prices!A2:C2"). The header row is the first row with a value."""
    headers: list[str] | None = None
    header_at = 0
    for r, row in enumerate(rows, start=1):
        budget[0] -= 1
        if budget[0] < 0:
            raise DocumentError(f"the file has more than {MAX_ROWS:,} rows; split it into smaller files")
        cells = [_cell_text(v) for _, v in zip(range(MAX_CELLS_PER_ROW), row, strict=False)]
        used = [i for i, c in enumerate(cells) if c]
        if not used:
            continue
        if headers is None:
            headers, header_at = cells, r
            parts.start(sheet.rstrip("!") or None)
            continue
        first, last = used[0], used[-1]
        named = [f"{headers[i]}: {cells[i]}" if i < len(headers) and headers[i] else cells[i] for i in used]
        parts.add("; ".join(named), f"{sheet}{column_letters(first + 1)}{r}:{column_letters(last + 1)}{r}")
    if headers is not None and not parts._marks and header_at:
        # A sheet of one row: the row itself is the content.
        used = [i for i, c in enumerate(headers) if c]
        parts.add("; ".join(headers[i] for i in used),
                  f"{sheet}{column_letters(used[0] + 1)}{header_at}:{column_letters(used[-1] + 1)}{header_at}")
    parts.close()


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return " ".join(str(value)[:MAX_CELL_CHARS].split())


# --- PowerPoint ------------------------------------------------------------------------------------------------


def load_pptx(data: bytes, name: str, max_pages: int) -> tuple[str | None, list[Section]]:
    try:
        import pptx
    except ImportError:
        raise _needs("python-pptx", "PowerPoint (.pptx)") from None
    check_zip(data, "PowerPoint (.pptx)")
    try:
        deck = pptx.Presentation(io.BytesIO(data))
    except Exception as exc:
        raise DocumentError(f"PowerPoint file is corrupt and cannot be read ({type(exc).__name__})") from None
    if len(deck.slides) > max_pages:
        raise DocumentError(f"the presentation has {len(deck.slides):,} slides; the limit is {max_pages:,}")
    sections: list[Section] = []
    for number, slide in enumerate(deck.slides, start=1):
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
        place = f"slide {number}: {title}" if title else f"slide {number}"
        body = [t for t in _shape_texts(slide.shapes, skip=title_shape) if t.strip()]
        text = "\n".join([title, *body]).strip() if title else "\n".join(body).strip()
        if text:
            sections.append(Section(text=text, section=place))
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            notes_text = notes.text.strip() if notes is not None else ""
            if notes_text:
                sections.append(Section(text=notes_text, section=f"{place}, speaker notes"))
    return (deck.core_properties.title or None), sections


def _shape_texts(shapes: Iterable[Any], skip: Any = None) -> Iterator[str]:
    """The text of a slide's shapes top to bottom, left to right (the order a reader takes them in), groups and
    tables included."""
    def position(s: Any) -> tuple[int, int]:
        return (s.top or 0, s.left or 0)

    for shape in sorted(shapes, key=position):
        if skip is not None and shape.shape_id == skip.shape_id:
            continue
        if shape.shape_type is not None and getattr(shape, "shapes", None) is not None:  # a group
            yield from _shape_texts(shape.shapes)
        elif getattr(shape, "has_table", False) and shape.has_table:
            rows = ([cell.text for cell in row.cells] for row in shape.table.rows)
            yield from (line for _, line in _table_rows(rows))
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            yield "\n".join(" ".join(p.text.split()) for p in shape.text_frame.paragraphs if p.text.strip())
