"""Render the two PDFs of the answer benchmark (datasets/answers/docs) from their real sources, byte-identically:

- mpl-2.0.pdf: the Mozilla Public License 2.0 text as Debian ships it (/usr/share/common-licenses/MPL-2.0);
- rust-book-ja-result.pdf: 「Resultで回復可能なエラー」 of the Japanese Rust book (datasets/answers/sources/).

Run:  python scripts/make_answer_pdfs.py   (needs the dev extra: reportlab)
A PDF is how most users hold documents; the benchmark cites their pages, so the text must span several pages.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.cidfonts import UnicodeCIDFont
from reportlab.platypus import Paragraph, Preformatted, SimpleDocTemplate

ROOT = Path(__file__).resolve().parents[1] / "datasets" / "answers"
MPL = Path("/usr/share/common-licenses/MPL-2.0")


def _styles(font: str, cjk: bool) -> tuple[ParagraphStyle, ParagraphStyle, ParagraphStyle]:
    body = ParagraphStyle("body", fontName=font, fontSize=10.5, leading=15, spaceAfter=6,
                          wordWrap="CJK" if cjk else None)
    head = ParagraphStyle("head", parent=body, fontSize=13, leading=19, spaceBefore=6, spaceAfter=8)
    code = ParagraphStyle("code", fontName="Courier", fontSize=8.5, leading=11, spaceAfter=6)
    return body, head, code


def _build(path: Path, title: str, story: list) -> None:
    doc = SimpleDocTemplate(str(path), pagesize=A4, title=title, invariant=1)
    doc.build(story)


def mpl() -> None:
    body, head, _ = _styles("Helvetica", cjk=False)
    # Sections 6 and 7 are boxed in asterisks in the text file; a PDF shows the words, not the box.
    lines = [re.sub(r"^\*\s?|\s*\*$", "", ln) if ln.startswith("*") else ln
             for ln in MPL.read_text(encoding="utf-8").splitlines()]
    story, para = [], []

    def flush() -> None:
        if para:
            story.append(Paragraph(html.escape(" ".join(s.strip() for s in para)), body))
            para.clear()

    for i, line in enumerate(lines):
        underline = i + 1 < len(lines) and re.fullmatch(r"[-=*]{3,}", lines[i + 1].strip() or "x")
        if re.fullmatch(r"[-=*]{3,}", line.strip()):
            continue
        if underline:
            flush()
            story.append(Paragraph(html.escape(line.strip()), head))
        elif not line.strip():
            flush()
        else:
            para.append(line)
    flush()
    _build(ROOT / "docs" / "mpl-2.0.pdf", "Mozilla Public License Version 2.0", story)


def rust_result_ja() -> None:
    pdfmetrics.registerFont(UnicodeCIDFont("HeiseiKakuGo-W5"))
    body, head, code = _styles("HeiseiKakuGo-W5", cjk=True)
    text = (ROOT / "sources" / "rust-book-ja-result.md").read_text(encoding="utf-8")
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)  # the English original, kept as comments
    story, para, fence = [], [], None

    def flush() -> None:
        if para:
            joined = "".join(s.strip() for s in para)  # Japanese lines wrap without a space
            story.append(Paragraph(html.escape(re.sub(r"[*`]", "", joined)), body))
            para.clear()

    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            if fence is None:
                flush()
                fence = []
            else:
                if not any("{{#" in s for s in fence):
                    story.append(Preformatted("\n".join(fence), code))
                fence = None
            continue
        if fence is not None:
            fence.append(line)
        elif line.startswith("#"):
            flush()
            story.append(Paragraph(html.escape(line.lstrip("#").strip()), head))
        elif not line.strip():
            flush()
        else:
            para.append(line)
    flush()
    _build(ROOT / "docs" / "rust-book-ja-result.pdf", "Resultで回復可能なエラー", story)


if __name__ == "__main__":
    mpl()
    rust_result_ja()
    print(f"wrote {ROOT / 'docs'}/mpl-2.0.pdf and rust-book-ja-result.pdf")
