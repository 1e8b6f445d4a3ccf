from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from citerag.documents.loaders import _as_typeset, load_bytes, load_path, unwrap_lines
from citerag.errors import DocumentError
from citerag.search.sparse import tokenize

from conftest import (
    SAMPLES,
    make_cid_pdf,
    make_encrypted_pdf,
    make_image_only_pdf,
    make_pdf,
    make_raw_pdf,
    make_spaceless_font_pdf,
)


def test_pdf_pages_are_one_based_and_carry_the_title():
    doc = load_path(SAMPLES / "kumo-pure-300-manual-en.pdf")
    assert [s.page for s in doc.sections] == [1, 2, 3, 4, 5]
    assert doc.title == "Kumo Pure 300 Air Purifier - User Manual"
    assert "Error E2 means the air quality sensor is dirty." in doc.sections[4].text
    assert doc.source_uri.startswith("file://")


def test_japanese_pdf_text_is_extracted_and_lines_rejoined():
    doc = load_path(SAMPLES / "kumo-pure-300-manual-ja.pdf")
    assert len(doc.sections) == 5
    # The PDF wraps this sentence over two lines; the loader must give it back whole.
    assert "おやすみモードの運転音は22dBです。" in doc.sections[2].text


def test_unwrap_keeps_short_lines_and_joins_full_ones():
    text = "Heading\n" + "word " * 16 + "end\nof sentence.\nShort line\nAnother."
    out = unwrap_lines(text)
    assert out.startswith("Heading\n")
    assert "end of sentence." in out


def test_markdown_sections_follow_headings():
    doc = load_path(SAMPLES / "faq-en.md")
    assert doc.title == "Kumo Pure 300 FAQ"
    names = [s.section for s in doc.sections]
    assert "Kumo Pure 300 FAQ > Filters > Can I wash the HEPA filter?" in names
    # Headings with no body of their own ("## Filters") do not become sections.
    assert "Kumo Pure 300 FAQ > Filters" not in names


def test_markdown_ignores_hashes_inside_code_fences():
    md = b"# Title\n\n```\n# not a heading\n```\n\nbody text here\n"
    doc = load_bytes(md, "file:///x.md", "x.md")
    assert len(doc.sections) == 1
    assert "# not a heading" in doc.sections[0].text


def test_markdown_html_comments_are_not_document_text():
    # A translated book keeps its original in comments; they would be cited as the page's text otherwise.
    md = ("<!--\n## Data Types\n-->\n\n## データ型\n\n<!--\nEvery value in Rust is of a certain data type.\n-->\n\n"
          "Rustにおける値は全て、何らかのデータ型になります。\nSee [the page][x]<!-- ignore\n--> for more.\n\n"
          "```html\n<!-- kept: code shows it -->\n```\n\n<!-- never closed\ntext after it\n").encode()
    doc = load_bytes(md, "file:///x.md", "x.md")
    text = "\n".join(s.text for s in doc.sections)
    assert "Every value" not in text and "Data Types" not in text and "ignore" not in text
    assert "Rustにおける値は全て" in text and "See the page for more." in text
    assert "<!-- kept: code shows it -->" in text and "text after it" in text
    assert doc.sections[0].section == "データ型"


def test_markdown_link_reference_definitions_are_not_document_text():
    # The Rust book ends each section with its link targets; search found that list for any question on the topic.
    md = (b"# Vectors\n\nSee the [API docs][vec-api] and the [Nomicon][nomicon].\n\n"
          b"[vec-api]: ../std/vec/struct.Vec.html\n  [nomicon]: <../nomicon/vec/vec.html> \"The Rustonomicon\"\n\n"
          b"A vector grows.[^1]\n\n"
          b"[^1]: Footnotes are shown.\n\n```toml\n[dependencies]: not a link here\n```\n")
    text = load_bytes(md, "file:///x.md", "x.md").sections[0].text
    assert "struct.Vec.html" not in text and "nomicon/vec" not in text and "Rustonomicon" not in text
    assert "See the API docs and the Nomicon." in text
    assert "Footnotes are shown." in text and "[dependencies]: not a link here" in text


def test_html_title_and_readable_text_without_scripts_or_nav():
    doc = load_path(SAMPLES / "release-notes.html")
    assert doc.title == "Kumo Pure 300 firmware release notes"
    text = "\n".join(s.text for s in doc.sections)
    assert "child lock now also locks the Wi-Fi button" in text
    assert "console.log" not in text and "Home | Support" not in text
    assert any(s.section and s.section.endswith("Version 2.1 (March 2026)") for s in doc.sections)


def test_an_html_tables_rows_read_a_row_at_a_time_under_their_headers():
    # The Debian Reference's tables of packages, and its notes, which DocBook lays out as tables too: cell by cell,
    # every cell was a paragraph and no statement held a package with the locale it supports.
    page = (b"<html><body><h2>8.2.3. The input method support with IBus</h2>"
            b"<table><tr><th>package</th><th>popcon</th><th>size</th><th>supported locale</th></tr>"
            b"<tr><td><p><a href='x'>ibus-mozc</a></p></td><td><p>V:2, I:3</p></td><td><p>935</p></td>"
            b"<td><p>Japanese</p></td></tr>"
            b"<tr><td>ibus-unikey</td><td>V:0, I:0</td><td>318</td><td>Vietnamese</td></tr></table>"
            b"<table><tr><td rowspan='2'><img src='note.png'/></td><th>Note</th></tr>"
            b"<tr><td><p>For Chinese, \"<code>fcitx5</code>\" may be an alternative.</p><p>Or uim.</p></td></tr>"
            b"</table>"
            b"<p>Text after.</p></body></html>")
    doc = load_bytes(page, "file:///d/ch08.en.html", "ch08.en.html")
    paragraphs = doc.sections[0].text.split("\n\n")
    assert paragraphs[1:] == [
        "package | popcon | size | supported locale",
        "package: ibus-mozc; popcon: V:2, I:3; size: 935; supported locale: Japanese",
        "package: ibus-unikey; popcon: V:0, I:0; size: 318; supported locale: Vietnamese",
        "Note", 'For Chinese, "fcitx5" may be an alternative. Or uim.', "Text after."]


def test_a_page_laid_out_in_a_table_keeps_its_sections_and_paragraphs():
    page = (b"<html><body><table><tr><td>Menu</td><td><h1>Guide</h1><p>First paragraph.</p>"
            b"<h2>Setup</h2><p>Plug it in.</p><p>Turn it on.</p>"
            b"<table><tr><th>key</th><th>does</th></tr><tr><td>F1</td><td>help</td></tr></table>"
            b"</td></tr></table></body></html>")
    doc = load_bytes(page, "file:///d/old.html", "old.html")
    assert [(s.section, s.text) for s in doc.sections] == [
        (None, "Menu"), ("Guide", "Guide\n\nFirst paragraph."),
        ("Guide > Setup", "Setup\n\nPlug it in.\n\nTurn it on.\n\nkey | does\n\nkey: F1; does: help")]


def test_a_table_without_end_tags_or_cut_off_loses_no_cell():
    # HTML lets a page leave out "</td>" and "</tr>"; a page may end inside a table; a cell may hold a table.
    page = (b"<table><tr><th>key<th>does<tr><td>F1<td>help<tr><td>F2<td><table><tr><td>save</td></tr></table> now"
            b"<tr><td>F3<td>quit")
    doc = load_bytes(page, "file:///d/keys.html", "keys.html")
    assert doc.sections[0].text.split("\n\n") == [
        "key | does", "key: F1; does: help", "key: F2; does: save now", "key: F3; does: quit"]


def test_a_tables_columns_are_named_only_where_no_cell_spans_and_no_text_is_dropped():
    def read(html: bytes) -> list[str]:
        return load_bytes(html, "file:///d/t.html", "t.html").sections[0].text.split("\n\n")

    # A header that spans two columns names neither surely; nor does a row of headers below the first.
    assert read(b"<table><tr><th colspan=2>Name</th><th>Size</th></tr><tr><td>first</td><td>last</td><td>1</td>"
                b"</tr></table>") == ["Name | Size", "first | last | 1"]
    assert read(b"<table><tr><td>a</td><td>1</td></tr><tr><th>Total</th><th>5</th></tr><tr><td>b</td><td>2</td>"
                b"</tr></table>") == ["a | 1", "Total | 5", "b | 2"]
    # Text between a row's cells is shown (a browser puts it above the table); a <template>'s cells are not.
    assert read(b"<table><tr><td>a</td>stray<td>b</td></tr></table>") == ["stray", "a | b"]
    assert read(b"<table><tr>Hello world</tr></table>") == ["Hello world"]
    assert read(b"<table><tr><td>a<template><td>x</td></template>b</td></tr></table>") == ["a b"]


_WORDS = st.text(alphabet="abcxyz019 ", min_size=1, max_size=12).map(str.strip).filter(bool)


@given(rows=st.lists(st.lists(_WORDS, min_size=1, max_size=4), min_size=1, max_size=5),
       header=st.booleans(), close_cells=st.booleans(), close_rows=st.booleans())
def test_every_cell_of_a_table_is_read_however_it_is_written(rows, header, close_cells, close_rows):
    cell_end, row_end = ("</td>" if close_cells else ""), ("</tr>" if close_rows else "")
    head = "<tr>" + "".join(f"<th>h{i}</th>" for i in range(len(rows[0]))) + "</tr>" if header else ""
    body = "".join("<tr>" + "".join(f"<td>{c}{cell_end}" for c in row) + row_end for row in rows)
    doc = load_bytes(f"<table>{head}{body}</table><p>after</p>".encode(), "file:///d/t.html", "t.html")
    text = "\n".join(s.text for s in doc.sections)
    lines = text.split("\n")
    for row in rows:  # every cell, on its row's line (the loader reads runs of spaces as one)
        assert any(all(" ".join(c.split()) in line for c in row) for line in lines), (row, text)
    assert text.endswith("after")


def test_text_file_is_one_section_and_title_falls_back_to_file_name():
    doc = load_path(SAMPLES / "support-contacts.txt")
    assert doc.title == "support-contacts"
    assert len(doc.sections) == 1 and doc.sections[0].page is None


def test_utf8_bom_is_accepted():
    doc = load_bytes("\ufeffこんにちは。".encode(), "file:///a.txt", "a.txt")
    assert doc.sections[0].text == "こんにちは。"


@pytest.mark.parametrize("codec", ["shift_jis", "cp932", "euc_jp", "utf-16", "utf-32"])
def test_japanese_text_in_a_legacy_encoding_or_with_a_byte_order_mark_is_read(codec):
    # Old Japanese manuals are Shift_JIS or EUC-JP, Notepad's "Unicode" is UTF-16 with a mark: all were refused.
    text = "フィルターは1年ごとに交換してください。\n交換の目安は、ランプが点滅したときです。\n"
    doc = load_bytes(text.encode(codec), "file:///manual.txt", "manual.txt")
    assert doc.sections[0].text.strip() == text.strip()


@pytest.mark.parametrize(("name", "data", "message"), [
    # Bytes after a UTF-16 mark decode to ideographs whatever they are: they must read as text.
    ("guide.md", b"\xff\xfe not utf-8 \xff", "not valid text in a UTF-16 byte-order mark"),
    # UTF-8 cut mid-character, or with one Latin-1 byte, is damaged UTF-8, not Shift_JIS mojibake.
    ("faq.md", "# Kumo Pure 300 よくある質問".encode()[:-1], "not valid UTF-8"),
    ("faq2.md", "# Kumo Pure 300 よくある質問".encode() + "é".encode("latin-1"), "not valid UTF-8"),
    # A codec that is no charset ("hex") is no declaration: one page must not abort a folder's ingest.
    ("hex.html", '<meta charset="hex"><p>café</p>'.encode("latin-1"), "not valid UTF-8"),
    # A page cannot declare UTF-16 in its own bytes: read as UTF-16 it was CJK mojibake.
    ("u16.html", '<meta charset="utf-16"><p>café</p>'.encode("latin-1"), "not valid UTF-8"),
])
def test_bytes_that_only_decode_are_refused_not_read_as_mojibake(name, data, message):
    with pytest.raises(DocumentError, match=message):
        load_bytes(data, f"file:///{name}", name)


def test_an_html_page_is_read_in_the_charset_it_declares():
    page = ('<html><head><meta http-equiv="Content-Type" content="text/html; charset=EUC-JP">'
            "<title>取扱説明書</title></head><body><h1>お手入れ</h1><p>フィルターは1年ごとに交換します。</p>"
            "</body></html>")
    doc = load_bytes(page.encode("euc_jp"), "file:///guide.html", "guide.html")
    assert doc.title == "取扱説明書" and "フィルターは1年ごとに交換します。" in doc.sections[0].text
    # ISO-8859-1 as browsers read it, windows-1252: its curly quotes are not C1 controls.
    latin = '<meta charset="iso-8859-1"><p>It\x92s \x93ready\x94: café.</p>'.encode("latin-1")
    assert load_bytes(latin, "file:///c.html", "c.html").sections[0].text == "It’s “ready”: café."
    # A page that declares a charset it is not written in is refused, not shown as mojibake.
    with pytest.raises(DocumentError, match="declared charset shift_jis"):
        load_bytes('<meta charset="Shift_JIS"><p>\x80\x81</p>'.encode("latin-1"), "file:///b.html", "b.html")


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("empty.pdf", b"", "file is empty"),
        ("encrypted.pdf", None, "password-protected"),
        ("corrupt.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\ngarbage", "PDF is corrupt"),
        ("not-a-pdf.pdf", b"PK\x03\x04 this is a zip file", "not a PDF file"),
        ("scan.pdf", None, "no text layer"),
        ("latin1.txt", "Le café est prêt à être servi.".encode("latin-1"), "not valid UTF-8.*iconv -f its encoding"),
        ("empty.txt", b"", "file is empty"),
        ("blank.txt", b"  \n\t\n", "only whitespace"),
        ("binary.txt", b"\x00\x01\x02binary", "binary file"),
        ("slides.key", b"whatever", "unsupported file type .key"),
        ("README", b"no extension", r"unsupported file type \(no extension\)"),
    ],
)
def test_bad_documents_get_specific_messages(name, data, message):
    if name == "encrypted.pdf":
        data = make_encrypted_pdf()
    elif name == "scan.pdf":
        data = make_image_only_pdf()
    with pytest.raises(DocumentError, match=message):
        load_bytes(data, f"file:///{name}", name)


def test_truncated_pdf_is_reported_as_corrupt():
    data = make_pdf(["page one text", "page two text"])
    with pytest.raises(DocumentError, match="corrupt"):
        load_bytes(data[: len(data) // 3], "file:///t.pdf", "t.pdf")


def test_huge_pdf_is_refused_by_page_and_byte_limits(tmp_path):
    data = make_pdf([f"page {i}" for i in range(6)])
    with pytest.raises(DocumentError, match="6 pages; the limit is 5"):
        load_bytes(data, "file:///big.pdf", "big.pdf", max_pages=5)
    path = tmp_path / "big.pdf"
    path.write_bytes(data)
    with pytest.raises(DocumentError, match="too large"):
        load_path(path, max_bytes=1000)


def test_unreadable_and_missing_paths(tmp_path):
    with pytest.raises(DocumentError, match="no such file"):
        load_path(tmp_path / "missing.txt")
    secret = tmp_path / "secret.txt"
    secret.write_text("hidden")
    secret.chmod(0)
    try:
        if os.geteuid() == 0:
            pytest.skip("root can read any file")
        with pytest.raises(DocumentError, match="permission denied"):
            load_path(secret)
    finally:
        secret.chmod(0o600)


def test_words_hyphenated_at_a_pdf_line_end_come_back_whole():
    # Issue 11: "manip- ulation" reached answers. Lines as a PDF typesetter wraps them, hyphens included.
    page = ("Sensor readings are stored every minute, and their manip-\n"
            "ulation is logged. Replace the filter after twelve months of oper-\n"
            "ation in dusty rooms. The e-\n"
            "mail address and the well-\n"
            "Known X-\n"
            "2 model stay as written. Set the --main-\n"
            "stacksize option for a state-of-the-\n"
            "art build.")
    doc = load_bytes(make_pdf([page]), "file:///manual.pdf", "manual.pdf")
    text = doc.sections[0].text
    assert "their manipulation is logged." in text and "of operation in dusty rooms." in text
    assert "manip-" not in text and "e-mail" in text and "well-Known X-2" in text
    # An option or a compound broken at one of its own hyphens keeps it (Valgrind's "--mainstacksize").
    assert "the --main-stacksize option for a state-of-the-art build." in text


def test_text_files_are_cited_by_line_range(tmp_path):
    # Issue 11: text files were cited with no location at all.
    from citerag.documents.chunking import chunk_document

    path = tmp_path / "notes.txt"
    path.write_text("Kumo support notes\n\n\n\nThe warranty lasts two years.\nRegister within 30 days.\n\n\n\n"
                    "Filters are consumables.\n", encoding="utf-8")
    chunks = chunk_document(load_path(path), max_chars=40, overlap_chars=0)
    assert [(c.text, c.section) for c in chunks] == [
        ("Kumo support notes", "line 1"), ("The warranty lasts two years.", "line 5"),
        ("Register within 30 days.", "line 6"), ("Filters are consumables.", "line 10")]
    lines = path.read_text(encoding="utf-8").split("\n")
    assert all(c.text in lines[int(c.section.split()[-1]) - 1] for c in chunks)  # the line is in the file


def _markdown_text(md: str) -> str:
    return load_bytes(md.encode(), "file:///x.md", "x.md").sections[0].text


def test_markdown_paragraphs_wrapped_in_the_source_read_as_one_line():
    # Sentences used to end at each source line break ("it returns" / "None without panicking.").
    md = ("# Vectors\n\nWhen the get method is passed an index outside the vector, it returns\n`None` without "
          "panicking. A u8 holds values between 0 and\n255. See [the book][book] for\nmore.\n\n"
          "> Note: a quoted\n> paragraph wraps too.\n\n- one item\n- another item\n\n"
          "Rustは*静的型付き*言語であることを弁えておいてください。つまり、\nコンパイル時に型が判明している必要があります。\n\n"
          "```rust\nlet v = vec![1, 2];\nv.len()\n```\n\n{{#include ../listing.rs}}\n")
    text = _markdown_text(md)
    assert "it returns None without panicking." in text
    assert "between 0 and 255. See the book for more." in text
    assert "Note: a quoted paragraph wraps too." in text
    assert "- one item\n- another item" in text
    assert "つまり、コンパイル時に" in text
    assert "let v = vec![1, 2];\nv.len()" in text and "```" not in text and "{{#" not in text


def test_markdown_inline_html_and_emphasis_read_as_rendered():
    # "2<sup>7</sup>" is a power, not "27"; a power may wrap over source lines; generic types in prose stay.
    md = ("# Integers\n\nAn _i8_ stores numbers from −(2<sup>n −\n1</sup>) to 2<sup>7</sup> − 1, which equals "
          "−128 to 127.\nUse <span class=\"x\">Vec<T></span> and `*ptr`; snake_case_name stays.\n\n"
          "ここで*n*はビット数です。\n\n```rust\nlet x = a * b; // _not emphasis_ <sup>\n```\n")
    text = _markdown_text(md)
    assert "An i8 stores numbers from −(2^(n − 1)) to 2^7 − 1, which equals −128 to 127." in text
    assert "Use Vec<T> and *ptr; snake_case_name stays." in text
    assert "ここでnはビット数です。" in text
    assert "let x = a * b; // _not emphasis_ <sup>" in text


def test_myst_roles_footnote_marks_and_autolinks_read_as_rendered():
    # pip's docs (MyST): the answer quoted "an {mod}ensurepip module[^python]", neither the source nor its text.
    md = ("# Installation\n\nPython comes with an {mod}`ensurepip` module[^python], which can install pip.\n\n"
          "- working in a {ref}`virtual environment <pypug:Creating and using Virtual Environments>`\n"
          "- Download the script, from <https://bootstrap.pypa.io/get-pip.py>.\n\n"
          "```{pip-cli}\n$ python -m ensurepip --upgrade\n```\n\n[^python]: If installed from python.org.\n")
    text = _markdown_text(md)
    assert "Python comes with an ensurepip module, which can install pip." in text
    assert "working in a virtual environment" in text and "pypug" not in text
    assert "from https://bootstrap.pypa.io/get-pip.py." in text
    assert "$ python -m ensurepip --upgrade" in text and "[^python]: If installed from python.org." in text
    # In a code span it is what the document prints: a regular expression, an address written as is.
    text = _markdown_text("# Regex\n\nUse `[^0-9]` to match anything but a digit, not `<https://x.example>`; "
                          "``[^a`b]`` holds a backtick.\n")
    assert "Use [^0-9] to match anything but a digit, not <https://x.example>; [^a`b] holds a backtick." in text


def _bold(word: str) -> str:
    return "".join(f"{ch}\b{ch}" for ch in word)


def _underlined(word: str) -> str:
    return "".join(f"_\b{ch}" for ch in word)


def test_a_man_page_saved_from_a_pipe_is_read_as_it_shows(tmp_path):
    # `man -P cat grep > grep.txt` keeps nroff's overstrike: bold is "g\bg", underline "_\bF". Read as bytes, every
    # bold word was doubled ("ggrreepp", "----iiggnnoorree--ccaassee") and no question matched it.
    page = (f"{_bold('NAME')}\n {_bold('grep')} - print lines that match patterns\n\n"
            f" {_bold('-i')}, {_bold('--ignore-case')}\n Ignore case distinctions in {_underlined('PATTERNS')}.\n")
    (tmp_path / "grep.txt").write_text(page, encoding="utf-8")
    doc = load_path(tmp_path / "grep.txt")
    text = doc.sections[0].text
    assert "grep - print lines that match patterns" in text
    assert "-i, --ignore-case\nIgnore case distinctions in PATTERNS." in text
    assert "\b" not in text and "ggrreepp" not in text
    assert text.count("\n") == page.count("\n") - 1  # the same lines, so line citations point into the file

    from citerag.cli.serve import numbered_lines

    shown = numbered_lines(page.encode(), 4, 4)
    assert "<span id='L4' class='cited'><i>4</i> -i, --ignore-case</span>" in shown


def test_a_word_a_man_page_hyphenated_at_a_lines_end_is_read_whole_on_the_same_lines(tmp_path):
    # "gzip uses the .tgz extension instead of trun‐ cating a file" was the answer: man breaks words with U+2010.
    page = ("When compressing, gzip uses the .tgz extension if necessary instead of trun\u2010\n"
            "       cating a file with a .tar extension.\n"
            "This is a per-\nhost setting of the Selbst\u2010\nVerständnis kind. Use -z to call gzip transpar\u2010\n"
            "ently.\nIt is fast and works on trun\u2010\ncat\u2010\ning files.\n")
    (tmp_path / "gzip.txt").write_text(page, encoding="utf-8")
    text = load_path(tmp_path / "gzip.txt").sections[0].text
    assert text.split("\n") == ["When compressing, gzip uses the .tgz extension if necessary instead of",
                                "truncating a file with a .tar extension.", "This is a per-",
                                "host setting of the Selbst\u2010", "Verständnis kind. Use -z to call gzip",
                                "transparently.", "It is fast and works on", "", "truncating files."]


def test_a_pdfs_running_header_and_footer_are_not_read_into_its_pages():
    # A manual prints its title and "6 / 95" on every page; left in, the header opened the first sentence of each
    # page ("…マニュアル 2 / 95図はネットワーク接続形態の例です。") and a page of only a figure became a passage of it.
    body = ["The main server hands out addresses in 10.0.0.0/8.", "Printers are set up in the web interface.",
            "3.1.2 Main server", "Backups are kept in /skole/backup."]
    pages = [f"Kumo Pure 300 User Manual {i}\n{text}\nPage {i} of 4" for i, text in enumerate(body, 1)]
    pages[1] = "Kumo Pure 300 User Manual ii\nPrinters are set up in the web interface.\nPage 2 of 4"  # roman
    doc = load_bytes(make_pdf(pages), "file:///manual.pdf", "manual.pdf")
    texts = [s.text for s in doc.sections]
    assert texts == body
    # What only looks like a header is kept: a value beside the page number, a table's rows, an invoice's number
    # (numbers that change from page to page without being the page's), and a page with nothing else on it.
    values = ["4200", "17", "8", "950"]
    pages = [f"Invoice No. {1000 + i}\nPump {'ABCD'[i - 1]} delivered, in litres:\n{v}\n{i}"
             for i, v in enumerate(values, 1)]
    doc = load_bytes(make_pdf(pages), "file:///invoices.pdf", "invoices.pdf")
    assert [(s.text.startswith(f"Invoice No. {1000 + i}"), s.text.endswith(f"litres:\n{v}"))
            for i, (s, v) in enumerate(zip(doc.sections, values, strict=True), 1)] == [(True, True)] * 4
    rows = [f"{r} {12.5 * r} {7 * r}" for r in range(1, 5)]
    doc = load_bytes(make_pdf(["\n".join(rows)] * 4), "file:///table.pdf", "table.pdf")
    assert all(s.text.split() == " ".join(rows).split() for s in doc.sections)
    # A heading that happens to open two pages is the document's own text, not a running header.
    twice = ["Safety\nDo not open the case.", "Safety\nKeep away from water.", "Cleaning\nWipe it dry."]
    doc = load_bytes(make_pdf(twice), "file:///manual.pdf", "manual.pdf")
    assert [s.text[:8] for s in doc.sections] == ["Safety D", "Safety K", "Cleaning"]


def test_a_short_line_after_a_wrapped_one_keeps_its_break():
    # A heading under a paragraph's last line ran into the sentence under it ("3.1.2 主サーバーA Skolelinux network
    # needs…"): whether a line was full is read from the line as printed, not from the lines already joined to it.
    full = "The default network needs one main server and at most one gateway, and the"
    text = f"{full}\nworkstations get their addresses\n3.1.2 Main server\n{full}\nservers are set up first."
    assert unwrap_lines(text).split("\n") == [f"{full} workstations get their addresses", "3.1.2 Main server",
                                              f"{full} servers are set up first."]


def test_justified_japanese_and_a_table_of_contents_come_out_as_text():
    # Some typesetters space out a justified Japanese line; the extracted text had a space between every character
    # ("ソ ー ス コ ー ド は 通 常 の"), which no question's words match. A contents entry's leader dots were read as
    # sentence ends, and ". 63 8 プリンタ管理 63 8.1 ワークステーションに…" answered a question.
    page = ("目次\n8.1 ワークステーションに接続されたプリンターの利用方法 . . . . . . . . . . . . . . 64\n"
            "8.2 ネットワークプリンタ . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . 64\n"
            "ソ ー ス コ ー ド は 通 常 の Debian ア ー カ イ ブ と 同 様 に 入 手 で き ま す。")
    doc = load_bytes(make_pdf([page], japanese=True), "file:///edu.pdf", "edu.pdf")
    assert doc.sections[0].text.split("\n") == [
        "目次", "8.1 ワークステーションに接続されたプリンターの利用方法 … 64", "8.2 ネットワークプリンタ … 64",
        "ソースコードは通常の Debian アーカイブと同様に入手できます。"]


@pytest.mark.parametrize("in_form", [False, True])
def test_japanese_in_a_cid_font_without_a_unicode_map_is_read_as_japanese(in_form):
    # TeX Live's Japanese guide (dvipdfmx) names its glyphs by their Adobe-Japan1 numbers with no ToUnicode map;
    # pypdf read "イントロダクション" as "ΠϯτϩμΫγϣϯ" (these glyph numbers are that PDF's own), took some numbers for
    # right-to-left letters and reversed them ("非式公" for "非公式"), and none of 14 questions on it was answered.
    introduction = [928, 1007, 964, 1001, 956, 939, 947, 995, 1007]
    sentence = [945, 985, 660, 964, 888, 3463, 1964, 2268, 880, 866, 637, 2286, 2022, 1878, 1910, 923, 1877, 2151]
    pdf = make_cid_pdf([(72.0, 760.0, introduction), (72.0, 600.0, sentence)], in_form=in_form)
    doc = load_bytes(pdf, "file:///g.pdf", "g.pdf")
    text = doc.sections[0].text
    assert text.startswith("イントロダクション") and text.endswith("サポートは非公式です．実行権限を検索")


def test_japanese_in_a_predefined_cmap_pypdf_cannot_decode_is_read_as_japanese_without_log_noise(caplog):
    # ChaSen's Japanese manual (pLaTeX, 2007) sets its text in the "H" CMap (two-byte JIS X 0208 codes) with no
    # ToUnicode map: pypdf, which has no table for it, read the codes as UTF-16 ("䍣搥" for "茶筌"), the whole manual
    # was indexed as nonsense and no Japanese question found it, and pypdf logged "Advanced encoding /H not
    # implemented yet" on the terminal once a run of text, hundreds of lines during one ingest.
    def jis(text: str) -> list[int]:
        raw = text.encode("iso2022_jp").replace(b"\x1b$B", b"").replace(b"\x1b(B", b"")
        return [int.from_bytes(raw[i:i + 2], "big") for i in range(0, len(raw), 2)]

    pdf = make_cid_pdf([(72.0, 760.0, jis("茶筌を使う")), (72.0, 600.0, jis("辞書を作成する"))], encoding="H")
    text = load_bytes(pdf, "file:///manual-j.pdf", "manual-j.pdf").sections[0].text
    assert text.startswith("茶筌を使う") and text.endswith("辞書を作成する")
    assert [r.getMessage() for r in caplog.records if r.name.startswith("pypdf")] == []


def test_a_page_pdfminer_lays_out_reads_the_same_on_every_run(monkeypatch):
    # pdfminer.six groups equally close text boxes in the order of their memory addresses: TeX Live's Japanese guide
    # loaded its emphasis dots as "・ さ ・ れ" in some runs and "・ れ ・ さ" in others. Five characters on a grid,
    # several pairs of them equally close; two runs are played by taking the addresses in opposite orders.
    import io

    import pdfminer.layout
    from pdfminer.high_level import extract_pages

    cells = [(1, 0), (2, 0), (1, 2), (0, 0), (1, 1)]
    glyphs = [928, 1007, 964, 1001, 956]
    pdf = make_cid_pdf([(100.0 + 100 * x, 700.0 - 100 * y, [g]) for (x, y), g in zip(cells, glyphs, strict=True)])

    def run(order: int) -> tuple[str, str]:
        first_seen: dict[int, int] = {}  # an address order: objects in the order the layout first meets them
        monkeypatch.setattr(pdfminer.layout, "id", lambda o: order * first_seen.setdefault(id(o), len(first_seen)),
                            raising=False)
        own = next(extract_pages(io.BytesIO(pdf), laparams=pdfminer.layout.LAParams(all_texts=True)))
        loaded = load_bytes(pdf, "file:///g.pdf", "g.pdf").sections[0].text
        return "".join(box.get_text().strip() for box in own), loaded

    (own_first, loaded_first), (own_second, loaded_second) = run(1), run(-1)
    assert own_first != own_second  # the tie is real: pdfminer's own reading changes with the addresses
    assert loaded_first == loaded_second == "ロンイダト"


def test_a_glyph_pdfminer_cannot_map_reads_as_unicodes_unknown_character_not_as_words():
    # pdfminer wrote such a glyph as "(cid:9999)", which search indexed as the words "cid" and "9999": pTeX's
    # manuals, which discuss CID fonts, held 886 of them (bullets and math symbols).
    pdf = make_cid_pdf([(72.0, 700.0, [928, 9999, 1007])])  # イ, a glyph number Adobe-Japan1 maps to nothing, ン
    text = load_bytes(pdf, "file:///g.pdf", "g.pdf").sections[0].text
    assert text == "イ\ufffdン"
    assert "cid" not in tokenize(text)


def test_a_glyph_pypdf_reads_as_a_control_character_is_unicodes_unknown_character():
    # TeX's math fonts have no map to Unicode: pypdf gave a big parenthesis as "\x12" or "\x00", a bullet as "\x88",
    # 1,304 control characters in LaTeX's own manuals, which went on into passages, JSON and prompts ("\x00" was
    # dropped, and the glyph with it).
    content = "BT /F1 12 Tf 72 700 Td (The sum \\000n\\023 is bounded \\210 here.) Tj ET\n"
    pdf = make_raw_pdf([
        "<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 5 0 R >> >> "
        "/Contents 4 0 R >>",
        f"<< /Length {len(content)} >>\nstream\n{content}endstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /CMEX10 >>"])
    assert load_bytes(pdf, "file:///m.pdf", "m.pdf").sections[0].text == "The sum \ufffdn\ufffd is bounded \ufffd here."


def test_zero_width_marks_beside_latin_text_are_dropped_and_kept_where_a_script_needs_them():
    # TeX Live's guide wraps command names in zero-width non-joiners ("‌tlmgr‌"); Persian writes one inside a word.
    page = "Run \u200ctlmgr\u200c update to update.\nمی\u200cخواهم \U0001f468\u200d\U0001f469"
    assert _as_typeset(page, set()) == "Run tlmgr update to update.\nمی\u200cخواهم \U0001f468\u200d\U0001f469"


def test_a_sentence_a_page_break_cuts_ends_on_the_page_it_starts_on():
    # TeX Live's guide broke "…すべてのプログラムが確実に検索パス中で" / "TEX Live のバイナリを見つけられるように
    # します．" over two pages; the second page opened with a fragment, which was quoted as an answer.
    first = ["The filter should be replaced every twelve months in homes with pets or",
             "smokers, and every eighteen months in other homes; the indicator on the",
             "panel turns red when the filter has been in use for longer than its rated"]
    second = ["life, whatever the air quality has been.", "Cleaning", "Wipe the case with a dry cloth."]
    doc = load_bytes(make_pdf(["\n".join(first), "\n".join(second)]), "file:///m.pdf", "m.pdf")
    assert doc.sections[0].text.endswith("longer than its rated life, whatever the air quality has been.")
    assert doc.sections[1].text.startswith("Cleaning")
    # Not a page that ends a sentence, nor one whose next page opens with a heading.
    doc = load_bytes(make_pdf(["\n".join(first[:2]) + "\nsmokers.", "\n".join(second)]), "file:///m.pdf", "m.pdf")
    assert doc.sections[1].text.startswith("life, whatever")
    ja = ["フィルターはペットのいる家庭では十二か月ごとに、それ以外の家庭では十八か月ごと",
          "に交換してください。表示ランプは、フィルターの使用時間が定格の寿命を超えると赤く"]
    doc = load_bytes(make_pdf(["\n".join(ja), "点灯します。\nお手入れ\n乾いた布で拭いてください。"], japanese=True),
                     "file:///m.pdf", "m.pdf")
    assert doc.sections[0].text.endswith("定格の寿命を超えると赤く点灯します。")
    assert doc.sections[1].text.startswith("お手入れ")


@pytest.mark.parametrize("simple", [False, True])
def test_words_set_apart_only_by_the_pen_are_read_with_spaces(simple):
    # TeX embeds fonts with no space glyph, and pypdf took code 32's glyph for the space: the Debian Edu manual
    # (XeTeX, composite Latin Modern fonts) read as "Thiswillleavethecontentfrom/skole/tjener/home0/user…", and
    # pdfTeX's T1-encoded fonts (code 32 is the visible-space sign) as "customizethepagelayout" (fancyhdr's manual).
    words = ["This", "will", "leave", "the", "content", "from", "/skole/tjener/home0/user", "for", "<date>."]
    kerned = ["By", "default", "Icinga", "does", "not", "send", "em", -49, "ail", "to", "the", "admin", -100, "."]
    thin = ["The", "filter", "holds", "10", -167, "g", "of", "carbon."]  # a thin space reads as one
    doc = load_bytes(make_spaceless_font_pdf([words, kerned, thin], simple=simple), "file:///m.pdf", "m.pdf")
    assert doc.sections[0].text.split("\n") == [
        "This will leave the content from /skole/tjener/home0/user for <date>.",
        "By default Icinga does not send email to the admin.", "The filter holds 10 g of carbon."]
    # A monospaced font's code 32 is as wide as its space: code keeps its reading ("debian -edu" with the gap a
    # proportional font's space would take).
    code = ["sudo", "dd", "if=debian", -150, "-edu-amd64.iso"]
    pdf = make_spaceless_font_pdf([code], gap=-525, fixed_pitch=True, simple=simple)
    assert load_bytes(pdf, "file:///m.pdf", "m.pdf").sections[0].text == "sudo dd if=debian-edu-amd64.iso"


def test_a_japanese_line_is_full_at_half_the_characters_of_an_english_one():
    # The Japanese Debian Edu manual leaves paragraphs in English; a Japanese line is full at half the characters
    # of an English one, and was read as a short line that ends a paragraph ("…必要があります。インストー" / "ル時に…").
    english = "The PXE installation uses the preseeding file debian-edu-install.dat, which can be changed as needed"
    ja = ["PXE を経由したインストールでプロキシを変更あるいは無効化するには、次のファイルを編集します。インストー",
          "ル時にプロキシの利用を無効化するには最初の 2 行の冒頭に「#」を付加します。"]
    doc = load_bytes(make_pdf(["\n".join([english] * 8 + ja)], japanese=True), "file:///m.pdf", "m.pdf")
    assert doc.sections[0].text.endswith("次のファイルを編集します。インストール時にプロキシの利用を無効化するには"
                                         "最初の 2 行の冒頭に「#」を付加します。")


def test_a_chapters_contents_entry_keeps_its_line():
    # A chapter's entry has no leader, only its page: as wide as a full line, it ran into the next entry ("6
    # インストールとダウンロードの選択肢 8 6.1 追加情報のありか … 8").
    page = "\n".join(["目次", "6 インストールとダウンロードの選択肢 8", "6.1 追加情報のありか … 8",
                      "6.2 Debian Edu 12 コード名 bookworm のインストールメディアのダウンロード … 8",
                      "7 はじめの一歩 51", "7.1 開始するための最小限のステップ … 51"])
    assert unwrap_lines(page) == page
    # Prose that wraps after a number still joins, a number opening the next line too.
    assert unwrap_lines("The main server needs a disk of at least 60 GiB and 16 GiB of memory, or 20\nmore.") \
        == "The main server needs a disk of at least 60 GiB and 16 GiB of memory, or 20 more."
    wrapped = "The main server needs a disk of at least 60 GiB, and its memory is at least 2\n4 GiB for a school."
    assert unwrap_lines(wrapped) == wrapped.replace("\n", " ")


_EITHER_FONT = [(b"/Resources << /Font << /F1 5 0 R >> >>", b"/Resources << /Font 42 >>"), (b"/F1 5 0 R", b"/F1 42"),
                (b"/F1 5 0 R", b"/F1 null"), (b"/F1 5 0 R", b"/F1 [1 2]"), (b"/F1 5 0 R", b"/F1 77 0 R")]
_COMPOSITE_FONT = [(b"/DescendantFonts [6 0 R]", b"/DescendantFonts []"), (b"/W [30 [", b"/W [30 /x ["),
                   (b"/W [30 [", b"/W [0 65535 500 30 ["), (b"/ToUnicode 8 0 R", b"/ToUnicode 99 0 R")]
_SIMPLE_FONT = [(b"/FirstChar 32", b"/FirstChar /x"), (b"/FirstChar 32", b"/FirstChar 30"),
                (b"/Widths [", b"/Widths 99 0 R /X [")]


@pytest.mark.parametrize(("simple", "damage"), [(False, d) for d in _EITHER_FONT + _COMPOSITE_FONT]
                         + [(True, d) for d in _EITHER_FONT + _SIMPLE_FONT])
def test_a_damaged_font_dictionary_is_an_error_message_or_the_text_not_a_traceback(simple, damage):
    pdf = make_spaceless_font_pdf([["This", "will", "leave", "the", "content."]], simple=simple)
    assert damage[0] in pdf
    pdf = pdf.replace(*damage)
    try:
        doc = load_bytes(pdf, "file:///m.pdf", "m.pdf")
    except DocumentError as exc:
        assert "PDF" in str(exc)
    else:
        assert [s.page for s in doc.sections] == [1]


def test_a_font_written_inline_in_the_page_is_read():
    # pypdf gives no reference for a font written in the page's own resources ("… /Font << /F1 << /Type /Font …").
    text = "BT /F1 12 Tf 72 700 Td (Hello world) Tj ET\n"
    pdf = make_raw_pdf([
        "<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 << /Type /Font "
        "/Subtype /Type1 /BaseFont /Helvetica >> >> >> /Contents 4 0 R >>",
        f"<< /Length {len(text)} >>\nstream\n{text}endstream"])
    assert load_bytes(pdf, "file:///d.pdf", "d.pdf").sections[0].text == "Hello world"


def test_a_typewriter_font_pdftex_does_not_flag_keeps_its_reading():
    # pdfTeX writes flags 4 for CMTT, LMMono and SFTT: their widths, all one (to a rounding: LMMono8 has 531.0 and
    # 531.3), say they are fixed pitch, and code 32's width is a space's.
    code = ["sudo", "dd", "if=debian", -150, "-edu-amd64.iso"]
    pdf = make_spaceless_font_pdf([code], gap=-525, simple=True)
    pdf = pdf.replace(b"/Widths [513 ", b"/Widths [531.3 ").replace(b" 500", b" 531")
    assert load_bytes(pdf, "file:///m.pdf", "m.pdf").sections[0].text == "sudo dd if=debian-edu-amd64.iso"


def test_a_paragraphs_short_last_line_keeps_its_break_on_a_japanese_page():
    # A full line of Japanese is as wide as one of twice the Latin characters: measured in characters, a page of
    # Japanese took a line at two thirds of the width for a full one, and ran the next paragraph into it.
    full = "フィルターはペットのいる家庭では十二か月ごとに、それ以外の家庭では十八か月ごとに交換"
    page = "\n".join([full] * 8 + ["してください。表示ランプは赤く点灯しま", "お手入れの前に電源を切ってください。"])
    assert unwrap_lines(page).endswith("赤く点灯しま\nお手入れの前に電源を切ってください。")


def test_a_sphinx_pages_sidebar_bars_and_permalinks_are_not_content():
    # The Debian Developer's Reference (Sphinx): "前のトピックへ" and "このページ ソースコードを表示" were indexed
    # under the last real section, filled "Where to look", and every section path ended in "¶".
    page = """<html><head><title>Duties</title></head><body>
<div class="related" role="navigation" aria-label="Related"><ul><li><a href="a.html">前のトピックへ</a></li></ul></div>
<div class="body" role="main"><section id="x"><h1>3.2. 管理者的な責務<a class="headerlink" href="#x">¶</a></h1>
<p>年会費はありません。</p><section id="y"><h2>目的<a class="headerlink" href="#y">¶</a></h2>
<div><div><p>本文です。</p></div></div><p>続きです。</p></section></section></div>
<div class="sphinxsidebar" role="navigation"><h3>目次</h3><ul><li>このページ ソースコードを表示</li></ul>
<div id="searchbox" role="search"><input type="text" name="q"></div></div>
<p aria-hidden="true">装飾</p><p>最後の段落です。</p></body></html>"""
    doc = load_bytes(page.encode(), "file:///d.html", "d.html")
    text = "\n".join(s.text for s in doc.sections)
    assert [s.section for s in doc.sections] == ["3.2. 管理者的な責務", "3.2. 管理者的な責務 > 目的"]
    assert "本文です。" in text and "続きです。" in text and "最後の段落です。" in text
    assert not any(w in text for w in ("前のトピックへ", "ソースコード", "目次", "¶", "装飾"))


@pytest.mark.parametrize("page", [
    "<p aria-hidden='true'>*<p>Replace the filter every year.<p>Clean it monthly.",
    "<ul><li role='search'>Search<li>Item</ul><p>Replace the filter every year.</p>",
    "<table><tr><td aria-hidden='true'>x<td>y</table><p>Replace the filter every year.</p>",
    "<div><span aria-hidden='true'>icon</div><p>Replace the filter every year.</p>",
    "<div role='navigation'>Home | Next<p>Replace the filter every year.</p>",
    "<div class='related'></nav></div><h1>Guide</h1><p>Replace the filter every year.</p>",
])
def test_navigation_left_open_never_takes_the_rest_of_the_page(page):
    # HTML lets <p>, <li> and <td> go unclosed, and pages leave others open: a skip that waited for the end tag
    # dropped every word after it (and a stray </nav> ended a skip that had not begun).
    doc = load_bytes(page.encode(), "file:///x.html", "x.html")
    assert "Replace the filter every year." in " ".join(s.text for s in doc.sections)


def test_a_definition_lists_term_stays_with_its_description():
    # man2html writes an option as <dt> and what it does as <dd>: on lines of their own, "which option…" found the
    # description without the option it describes.
    page = ("<html><body><h1>tr</h1><dl><dt>-C | -capitalize</dt>\n<dd>Capitalize the first letter of each word.</dd>"
            "<dt>-d</dt><dd><p>Delete characters.</p><p>A second paragraph.</p></dd>"
            "<dt>終了</dt><dd>プログラムを終了します。</dd></dl><p>After.</p></body></html>")
    doc = load_bytes(page.encode(), "file:///tr.html", "tr.html")
    lines = [line for line in doc.sections[-1].text.splitlines() if line]
    assert "-C | -capitalize: Capitalize the first letter of each word." in lines
    assert "-d: Delete characters." in lines and "A second paragraph." in lines
    assert "終了：プログラムを終了します。" in lines and "After." in lines


def test_a_code_span_keeps_its_underscores_and_strong_marks_go_only_at_word_edges():
    text = ("# t\n\nDefine `__attrs_post_init__` to run code. Also __attrs_pre_init__ runs first. This is **bold**, "
            "a snake__case word and ``a`b``.\n")
    body = load_bytes(text.encode(), "file:///x.md", "x.md").sections[-1].text
    assert "Define __attrs_post_init__ to run code." in body
    assert "Also attrs_pre_init runs first." in body  # CommonMark reads bare __x__ as strong emphasis
    assert "This is bold, a snake__case word and a`b." in body
