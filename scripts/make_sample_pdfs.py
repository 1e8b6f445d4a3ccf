"""Generate the sample manuals (multi-page PDFs) shipped in lambdas/citerag/samples/.

Run:  python scripts/make_sample_pdfs.py   (needs the dev extra: reportlab)
Japanese uses reportlab's built-in CID font, so no font file is needed and text extraction works.
"""

from __future__ import annotations

import sys
from pathlib import Path

from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.cidfonts import UnicodeCIDFont
from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer

sys.path.insert(0, str(Path(__file__).parent))
from sample_manual_text import PAGES_EN, PAGES_JA, TITLE_EN, TITLE_JA

OUT = Path(__file__).resolve().parents[1] / "lambdas" / "citerag" / "samples"


def build(path: Path, title: str, pages, font: str, cjk: bool) -> None:
    body = ParagraphStyle("body", fontName=font, fontSize=11, leading=17, spaceAfter=8,
                          wordWrap="CJK" if cjk else None)
    head = ParagraphStyle("head", parent=body, fontSize=15, leading=22, spaceAfter=12)
    story = []
    for i, (heading, paragraphs) in enumerate(pages):
        if i:
            story.append(PageBreak())
        if i == 0:
            story += [Paragraph(title, head), Spacer(1, 6)]
        story.append(Paragraph(heading, head))
        story += [Paragraph(p, body) for p in paragraphs]
    doc = SimpleDocTemplate(str(path), pagesize=A4, title=title, author="Kumo (sample)",
                            invariant=1)  # invariant: byte-identical output on every run
    doc.build(story)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    pdfmetrics.registerFont(UnicodeCIDFont("HeiseiKakuGo-W5"))
    build(OUT / "kumo-pure-300-manual-en.pdf", TITLE_EN, PAGES_EN, "Helvetica", cjk=False)
    build(OUT / "kumo-pure-300-manual-ja.pdf", TITLE_JA, PAGES_JA, "HeiseiKakuGo-W5", cjk=True)
    print(f"wrote sample manuals to {OUT}")


if __name__ == "__main__":
    main()
