"""Word, Excel, CSV, PowerPoint and EPUB files through the ingest and ask a user runs: each answer cites the place a
person opens the file at (a heading's paragraph, a table's row, a sheet's cells, a slide or its notes, a chapter's
section). The fixtures and their questions are made by scripts/make_format_fixtures.py."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path
from urllib.parse import quote

import pytest
from typer.testing import CliRunner

from citerag.cli import app, opener
from citerag.documents.chunking import chunk_document
from citerag.documents.loaders import load_bytes, load_path
from citerag.documents.model import Mark
from citerag.documents.places import join_places, place_of, span_place
from citerag.errors import DocumentError

FIXTURES = Path(__file__).parent / "fixtures" / "formats"
QUESTIONS = json.loads((FIXTURES / "questions.json").read_text(encoding="utf-8"))
runner = CliRunner()


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> dict[str, str]:
    """The fixtures copied to a folder and ingested with `citerag ingest` (hashing embedder: the real pipeline
    without model weights)."""
    root = tmp_path_factory.mktemp("formats")
    folder = root / "docs"
    shutil.copytree(FIXTURES, folder, ignore=shutil.ignore_patterns("*.json"))
    env = {"CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(root / "data")}
    r = runner.invoke(app, ["ingest", str(folder), "--json"], env=env)
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)["summary"]
    assert summary["added"] == len(list(folder.iterdir())) and not summary["failed"]
    return {**env, "folder": str(folder)}


def _env(indexed: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in indexed.items() if k != "folder"}


@pytest.mark.parametrize("agent", ["local", "none"])
@pytest.mark.parametrize("q", QUESTIONS, ids=[f"{q['file']}:{q['place']}" for q in QUESTIONS])
def test_an_answer_cites_the_place_in_the_file(indexed, q, agent):
    r = runner.invoke(app, ["ask", q["question"], "--json", "--agent", agent], env=_env(indexed))
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["answered"], out["answer"]
    first = out["citations"][0]
    assert first["uri"].endswith("/" + q["file"])
    assert first["section"] == q["place"]
    assert q["answer"] in out["answer"]


def test_human_output_and_open_give_the_file_at_its_place(indexed, monkeypatch):
    seen: list[str] = []
    monkeypatch.setattr(opener, "open_uri", seen.append)
    r = runner.invoke(app, ["ask", "How much storage does the Pro plan include?", "--open", "1"],
                      env={**_env(indexed), "COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "plans.xlsx, Plans!A3:C3" in r.stdout
    assert seen == [(Path(indexed["folder"]) / "plans.xlsx").resolve().as_uri()]


def test_search_shows_each_result_with_its_place(indexed):
    r = runner.invoke(app, ["search", "speaker notes sync engine offline mode", "--json"], env=_env(indexed))
    hits = json.loads(r.stdout)
    notes = next(h for h in hits if h["uri"].endswith("/roadmap.pptx"))
    assert notes["section"] == "slide 2: First quarter, speaker notes"


def test_the_web_page_names_the_place_of_an_office_file(indexed, monkeypatch):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from citerag.cli.common import open_index
    from citerag.cli.serve import build_app

    for k, v in _env(indexed).items():
        monkeypatch.setenv(k, v)
    client = TestClient(build_app(open_index(None, quiet=True)), base_url="http://127.0.0.1")
    uri = (Path(indexed["folder"]) / "plans.xlsx").resolve().as_uri()
    page = client.get(f"/source?uri={quote(uri, safe='')}&section={quote('Plans!A3:C3')}")
    assert page.status_code == 200 and "plans.xlsx, Plans!A3:C3</h2>" in page.text
    lines = client.get(f"/api/ask?q={quote('How often is a mobile phone replaced?')}").text.splitlines()
    sources = [s for e in map(json.loads, lines) for s in e.get("citations", []) or e.get("sources", [])]
    assert any(s.get("section") == "Employee Handbook > Equipment, table 1 row 3" for s in sources), lines[-1][:500]


# --- what the loaders read --------------------------------------------------------------------------------------


def test_every_row_of_a_sheet_carries_its_header():
    doc = load_path(FIXTURES / "plans.xlsx")
    text = "\n".join(s.text for s in doc.sections)
    assert "Plan: Enterprise; Monthly price: 99 USD; Storage: 10 TB" in text
    assert [s.section for s in doc.sections] == ["Plans", "Support"]


def test_a_csv_with_semicolons_and_quoted_line_breaks_keeps_its_cells():
    data = b'Name;Note\n"Ada";"first line\nsecond line"\nBob;short\n'
    doc = load_bytes(data, "file:///t.csv", "t.csv")
    chunks = chunk_document(doc)
    assert "Name: Ada; Note: first line second line" in chunks[0].text
    assert chunks[0].section == "A2:B3"  # the second row is row 3 of the sheet, its quoted line break aside


def test_an_excel_sheet_skips_empty_rows_in_its_count_and_leaves_hidden_sheets_out():
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    ws = book.active
    ws.title = "Q1 sales"
    ws.append(["Month", "Units"])
    ws.append(["January", 1200.0])
    ws.append([None, None])
    ws.append(["March", 900])
    hidden = book.create_sheet("secret")
    hidden.append(["Password", "hunter2"])
    hidden.sheet_state = "hidden"
    buf = io.BytesIO()
    book.save(buf)
    doc = load_bytes(buf.getvalue(), "file:///s.xlsx", "s.xlsx")
    chunks = chunk_document(doc)
    assert [c.section for c in chunks] == ["'Q1 sales'!A2:B4"]
    assert "Month: January; Units: 1200" in chunks[0].text and "hunter2" not in chunks[0].text


def test_a_word_heading_path_follows_levels_and_a_table_is_read_by_rows():
    doc = load_path(FIXTURES / "handbook.docx")
    chunks = chunk_document(doc)
    assert chunks[0].section == "Employee Handbook > Leave > Annual leave, ¶ 1-2"
    assert "Item: Laptop; Replacement cycle: every 3 years" in chunks[-1].text


def test_places_join_as_a_reader_counts_them():
    assert join_places("Setup, ¶ 13", "Setup, ¶ 15") == "Setup, ¶ 13-15"
    assert join_places("Prices!A2:C2", "Prices!B9:D9") == "Prices!A2:D9"
    assert join_places("Setup, ¶ 2", "Setup, table 1 row 3") == "Setup, ¶ 2 to table 1 row 3"
    marks = [Mark(start=0, place="¶ 1"), Mark(start=10, place="¶ 2"), Mark(start=20, place="¶ 3")]
    assert span_place(marks, 12, 25) == "¶ 2-3" and span_place(marks, 0, 5) == "¶ 1"
    places = ["A2:B2\t9\tName: Ada", "A3:B3\t9\tName: Bob"]
    assert place_of(places, "Name: Ada\n\nName: Bob", 12) == "A3:B3"
    assert place_of(places, "Name: Ada\n\nName: Bob\n\nA row beyond the passage's units", 25) is None
    assert place_of(places, "…something else", 3) is None


@pytest.mark.parametrize("name", ["bad.docx", "bad.xlsx", "bad.pptx", "bad.epub"])
def test_a_file_that_is_not_its_format_gets_a_message(name):
    with pytest.raises(DocumentError, match=r"not a .* file .*corrupt or misnamed"):
        load_bytes(b"this is not a zip package", f"file:///{name}", name)


def test_a_package_that_would_expand_without_bound_is_refused(monkeypatch):
    from citerag.documents import office

    monkeypatch.setattr(office, "MAX_UNZIPPED_BYTES", 1000)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("word/document.xml", "<a/>" + " " * 5000)
    with pytest.raises(DocumentError, match="expands to 5,004 bytes; the limit is 1,000"):
        load_bytes(buf.getvalue(), "file:///x.docx", "x.docx")


def test_an_epub_without_its_package_document_says_so():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
    with pytest.raises(DocumentError, match=r"EPUB is incomplete: it names 'META-INF/container\.xml'"):
        load_bytes(buf.getvalue(), "file:///b.epub", "b.epub")


def test_without_the_office_extra_the_message_says_what_to_install(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_docx(name, *args, **kwargs):
        if name == "docx" or name.startswith("docx."):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_docx)
    with pytest.raises(DocumentError, match=r"pip install 'citerag\[office\]'"):
        load_bytes((FIXTURES / "handbook.docx").read_bytes(), "file:///h.docx", "h.docx")


def test_word_text_inside_a_content_control_is_read():
    docx = pytest.importorskip("docx")
    from docx.oxml import parse_xml

    d = docx.Document()
    d.add_heading("Contract", level=1)
    d.add_paragraph("The parties agree as follows.")
    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    d.element.body.insert(-1, parse_xml(f'<w:sdt {w}><w:sdtContent><w:p><w:r><w:t>The notice period is ninety '
                                        'days.</w:t></w:r></w:p></w:sdtContent></w:sdt>'))
    buf = io.BytesIO()
    d.save(buf)
    chunks = chunk_document(load_bytes(buf.getvalue(), "file:///c.docx", "c.docx"))
    assert "The notice period is ninety days." in chunks[0].text
    assert chunks[0].section == "Contract, ¶ 1-2"


def test_an_epub_2_book_names_its_chapters_from_the_ncx():
    ncx = ('<?xml version="1.0"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><navMap>'
           '<navPoint id="n1"><navLabel><text>Chapter One: Setup</text></navLabel><content src="one.html"/>'
           '</navPoint></navMap></ncx>')
    opf = ('<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="2.0"><metadata '
           'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Old book</dc:title></metadata><manifest>'
           '<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
           '<item id="c1" href="one.html" media-type="application/xhtml+xml"/></manifest>'
           '<spine toc="ncx"><itemref idref="c1"/></spine></package>')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        z.writestr("META-INF/container.xml", '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
                   '<rootfiles><rootfile full-path="content.opf"/></rootfiles></container>')
        z.writestr("content.opf", opf)
        z.writestr("toc.ncx", ncx)
        z.writestr("one.html", "<html><body><h2>Network</h2><p>Set a static address first.</p></body></html>")
    doc = load_bytes(buf.getvalue(), "file:///old.epub", "old.epub")
    assert doc.title == "Old book"
    assert [s.section for s in doc.sections] == ["Chapter One: Setup > Network"]
