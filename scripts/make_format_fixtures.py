"""Generate the Word, Excel, CSV, PowerPoint and EPUB fixtures in tests/fixtures/formats/, in English and Japanese,
and questions.json: for each file, questions whose answers must cite a given place in it.

Run:  python scripts/make_format_fixtures.py   (needs the office extra: python-docx, openpyxl, python-pptx)
Every ZIP member gets a fixed date, so running it again changes no committed byte unless the content changed.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "formats"
FIXED = dt.datetime(2024, 1, 1)

QUESTIONS: list[dict] = []


def ask(file: str, question: str, place: str, answer: str) -> None:
    QUESTIONS.append({"file": file, "question": question, "place": place, "answer": answer})


def fixed_zip(data: bytes) -> bytes:
    """The same package with every member dated FIXED, in its own order (the content types part first)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=FIXED.timetuple()[:6])
            fixed.compress_type = zipfile.ZIP_STORED if info.filename == "mimetype" else zipfile.ZIP_DEFLATED
            body = src.read(info.filename)
            if info.filename == "docProps/core.xml":  # openpyxl stamps the time of saving, whatever it is told
                body = re.sub(rb"(<dcterms:(?:created|modified)[^>]*>)[^<]*", rb"\g<1>2024-01-01T00:00:00Z", body)
            dst.writestr(fixed, body)
    return out.getvalue()


def save(name: str, data: bytes) -> None:
    (OUT / name).write_bytes(fixed_zip(data) if data[:2] == b"PK" else data)


# --- Word --------------------------------------------------------------------------------------------------------


def docx_file(name: str, title: str, blocks: list[tuple]) -> None:
    import docx

    d = docx.Document()
    d.core_properties.title = title
    d.core_properties.created = d.core_properties.modified = FIXED
    d.add_heading(title, level=0)
    for kind, *rest in blocks:
        if kind == "h":
            d.add_heading(rest[1], level=rest[0])
        elif kind == "p":
            d.add_paragraph(rest[0])
        elif kind == "table":
            rows = rest[0]
            t = d.add_table(rows=len(rows), cols=len(rows[0]))
            for r, row in enumerate(rows):
                for c, value in enumerate(row):
                    t.cell(r, c).text = value
    buf = io.BytesIO()
    d.save(buf)
    save(name, buf.getvalue())


def word() -> None:
    docx_file("handbook.docx", "Employee Handbook", [
        ("h", 1, "Leave"),
        ("h", 2, "Annual leave"),
        ("p", "Full-time employees receive 25 days of annual leave per calendar year."),
        ("p", "Up to 5 unused days carry over into the first quarter of the next year."),
        ("h", 2, "Parental leave"),
        ("p", "Parents may take up to 16 weeks of paid parental leave within two years of the birth."),
        ("h", 1, "Equipment"),
        ("p", "Equipment is replaced on a fixed cycle."),
        ("table", [["Item", "Replacement cycle"], ["Laptop", "every 3 years"], ["Mobile phone", "every 2 years"]]),
    ])
    ask("handbook.docx", "How many days of annual leave do full-time employees receive?",
        "Employee Handbook > Leave > Annual leave, ¶ 1", "25 days")
    ask("handbook.docx", "How long is paid parental leave?", "Employee Handbook > Leave > Parental leave, ¶ 1",
        "16 weeks")
    ask("handbook.docx", "How often is a mobile phone replaced?", "Employee Handbook > Equipment, table 1 row 3",
        "every 2 years")
    docx_file("shugyo_kisoku.docx", "就業規則", [
        ("h", 1, "休暇"),
        ("h", 2, "年次有給休暇"),
        ("p", "正社員には年間20日の年次有給休暇が付与されます。"),
        ("p", "未消化の休暇は5日まで翌年に繰り越すことができます。"),
        ("h", 1, "備品"),
        ("p", "備品は決められた周期で交換します。"),
        ("table", [["品目", "交換周期"], ["ノートパソコン", "4年ごと"], ["携帯電話", "2年ごと"]]),
    ])
    ask("shugyo_kisoku.docx", "正社員の年次有給休暇は年間何日ですか？", "就業規則 > 休暇 > 年次有給休暇, ¶ 1", "20日")
    ask("shugyo_kisoku.docx", "ノートパソコンの交換周期は？", "就業規則 > 備品, table 1 row 2", "4年ごと")


# --- Excel and CSV -----------------------------------------------------------------------------------------------


def xlsx_file(name: str, title: str, sheets: dict[str, list[list]]) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    book.properties.title = title
    book.properties.created = book.properties.modified = FIXED
    for sheet, rows in sheets.items():
        ws = book.create_sheet(sheet)
        for row in rows:
            ws.append(row)
    buf = io.BytesIO()
    book.save(buf)
    save(name, buf.getvalue())


def excel() -> None:
    xlsx_file("plans.xlsx", "Plans and support", {
        "Plans": [["Plan", "Monthly price", "Storage"], ["Basic", "10 USD", "50 GB"], ["Pro", "30 USD", "1 TB"],
                  ["Enterprise", "99 USD", "10 TB"]],
        "Support": [["Region", "Phone", "Hours"], ["Europe", "+44 20 7946 0000", "08:00-18:00 CET"],
                    ["Japan", "+81 3 1234 5678", "09:00-17:00 JST"]],
    })
    ask("plans.xlsx", "How much storage does the Pro plan include?", "Plans!A3:C3", "1 TB")
    ask("plans.xlsx", "What are the support hours in Japan?", "Support!A3:C3", "09:00-17:00 JST")
    xlsx_file("ryokin.xlsx", "料金表", {
        "料金": [["プラン", "月額料金", "容量"], ["ライト", "500円", "10GB"], ["スタンダード", "1500円", "100GB"],
               ["プレミアム", "3000円", "1TB"]],
    })
    ask("ryokin.xlsx", "スタンダードプランの月額料金はいくらですか？", "料金!A3:C3", "1500円")
    (OUT / "offices.csv").write_text(
        "City,Address,Opened\nLisbon,Rua Augusta 100,2019\nOsaka,2-1 Umeda Kita-ku,2021\nToronto,200 King St W,2016\n",
        encoding="utf-8")
    ask("offices.csv", "When did the Osaka office open?", "A3:C3", "2021")
    (OUT / "jigyosho.csv").write_text(
        "都市,住所,開設年\n札幌,北1条西2丁目,2015\n福岡,天神1丁目,2020\n", encoding="utf-8")
    ask("jigyosho.csv", "福岡の開設年は？", "A3:C3", "2020")


# --- PowerPoint --------------------------------------------------------------------------------------------------


def pptx_file(name: str, title: str, slides: list[tuple[str, list[str], str]]) -> None:
    import pptx

    deck = pptx.Presentation()
    deck.core_properties.title = title
    deck.core_properties.created = deck.core_properties.modified = FIXED
    for heading, bullets, notes in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = heading
        body = slide.placeholders[1].text_frame
        body.text = bullets[0] if bullets else ""
        for b in bullets[1:]:
            body.add_paragraph().text = b
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    buf = io.BytesIO()
    deck.save(buf)
    save(name, buf.getvalue())


def powerpoint() -> None:
    pptx_file("roadmap.pptx", "Product roadmap", [
        ("Product roadmap 2025", ["Four goals for the year"], ""),
        ("First quarter", ["Launch offline mode in the mobile app", "Halve cold start time"],
         "The offline mode launch depends on the rewrite of the sync engine."),
        ("Second quarter", ["Open a data centre in Frankfurt", "Reach 99.95% availability"], ""),
    ])
    ask("roadmap.pptx", "Where will the new data centre open?", "slide 3: Second quarter", "Frankfurt")
    ask("roadmap.pptx", "What does the offline mode launch depend on?", "slide 2: First quarter, speaker notes",
        "sync engine")
    pptx_file("roadmap_ja.pptx", "製品ロードマップ", [
        ("2025年 製品ロードマップ", ["今年の目標"], ""),
        ("第1四半期", ["モバイルアプリにオフラインモードを追加する"],
         "オフラインモードは同期エンジンの刷新が前提です。"),
        ("第2四半期", ["大阪に新しいデータセンターを開設する"], ""),
    ])
    ask("roadmap_ja.pptx", "新しいデータセンターはどこに開設しますか？", "slide 3: 第2四半期", "大阪")
    ask("roadmap_ja.pptx", "オフラインモードの前提は何ですか？", "slide 2: 第1四半期, speaker notes", "同期エンジン")


# --- EPUB --------------------------------------------------------------------------------------------------------


def epub_file(name: str, title: str, lang: str, chapters: list[tuple[str, list[tuple[str, str]]]]) -> None:
    """An EPUB 3 book: one XHTML file a chapter, a navigation document, the package document."""
    def xhtml(head: str, body: str) -> str:
        return (f'<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml" '
                f'xmlns:epub="http://www.idpf.org/2007/ops" lang="{lang}"><head><title>{head}</title></head>'
                f"<body>{body}</body></html>")

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        z.writestr("META-INF/container.xml",
                   '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:'
                   'container"><rootfiles><rootfile full-path="OEBPS/content.opf" '
                   'media-type="application/oebps-package+xml"/></rootfiles></container>')
        items, refs, links = [], [], []
        for n, (chapter, parts) in enumerate(chapters, start=1):
            body = f"<h1>{chapter}</h1>" + "".join(f"<h2>{h}</h2><p>{p}</p>" for h, p in parts)
            z.writestr(f"OEBPS/text/ch{n}.xhtml", xhtml(chapter, body))
            items.append(f'<item id="ch{n}" href="text/ch{n}.xhtml" media-type="application/xhtml+xml"/>')
            refs.append(f'<itemref idref="ch{n}"/>')
            links.append(f'<li><a href="text/ch{n}.xhtml">{chapter}</a></li>')
        z.writestr("OEBPS/nav.xhtml", xhtml("Contents", f'<nav epub:type="toc"><ol>{"".join(links)}</ol></nav>'))
        z.writestr("OEBPS/content.opf",
                   '<?xml version="1.0" encoding="utf-8"?><package xmlns="http://www.idpf.org/2007/opf" '
                   'version="3.0" unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
                   f'<dc:identifier id="id">urn:citerag:{name}</dc:identifier><dc:title>{title}</dc:title>'
                   f'<dc:language>{lang}</dc:language></metadata><manifest>'
                   '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
                   f'{"".join(items)}</manifest><spine>{"".join(refs)}</spine></package>')
    save(name, out.getvalue())


def epub() -> None:
    epub_file("server_guide.epub", "Server guide", "en", [
        ("1. Installation", [("System requirements", "The server needs at least 8 GB of memory and 40 GB of disk."),
                             ("Ports", "The web console listens on port 8443.")]),
        ("2. Backups", [("Schedule", "Backups run every night at 02:00 local time."),
                        ("Retention", "Nightly backups are kept for 35 days.")]),
    ])
    ask("server_guide.epub", "How long are nightly backups kept?", "2. Backups > Retention", "35 days")
    ask("server_guide.epub", "Which port does the web console listen on?", "1. Installation > Ports", "8443")
    epub_file("server_guide_ja.epub", "サーバーガイド", "ja", [
        ("第1章 導入", [("動作環境", "サーバーには8GB以上のメモリが必要です。")]),
        ("第2章 バックアップ", [("保存期間", "夜間バックアップは35日間保存されます。")]),
    ])
    ask("server_guide_ja.epub", "夜間バックアップは何日間保存されますか？", "第2章 バックアップ > 保存期間", "35日間")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    word()
    excel()
    powerpoint()
    epub()
    (OUT / "questions.json").write_text(json.dumps(QUESTIONS, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(list(OUT.iterdir()))} files to {OUT}")


if __name__ == "__main__":
    main()
