"""Generate the scanned fixtures in tests/fixtures/scanned/: known English and Japanese text rendered as a page
image would be scanned, clean and degraded (turned, noisy, at 150 to 300 dpi), as PNG, JPEG and TIFF images and as
a PDF of page images with no text layer; truth.json holds the text of each page.

Run:  python scripts/make_scanned_fixtures.py   (Pillow; fonts: DejaVu Sans and IPAGothic, from Debian's
      fonts-dejavu-core and fonts-ipafont-gothic). The noise is seeded: the same images every run.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter, ImageFont

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "scanned"
FONTS = {"en": "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
         "ja": "/usr/share/fonts/opentype/ipafont-gothic/ipag.ttf"}

EN = [
    "Warranty service",
    "The air purifier is covered for 24 months from the date of purchase.",
    "To claim warranty service, keep the receipt and the serial number",
    "printed on the label under the filter cover.",
    "Repairs are free of charge when the fault is covered by the warranty.",
    "The filter itself is a consumable and is not covered.",
]
JA = [
    "保証について",
    "本製品の保証期間はお買い上げ日から24か月です。",
    "保証修理を受けるには、領収書とフィルターカバーの下の",
    "ラベルに記載された製造番号が必要です。",
    "保証の対象となる故障の修理は無料です。",
    "フィルターは消耗品のため保証の対象外です。",
]
EN2 = [
    "Cleaning the sensor",
    "Wipe the dust sensor lens with a dry cotton swab once a month.",
    "Error E2 means the sensor is dirty and must be cleaned.",
]


def render(lines: list[str], lang: str, dpi: int) -> Image.Image:
    """A strip of a printed page: 11 pt text (14 pt heading) at `dpi`, black on white, with half-inch margins
    around its longest line."""
    scale = dpi / 72
    body = ImageFont.truetype(FONTS[lang], round(11 * scale))
    head = ImageFont.truetype(FONTS[lang], round(14 * scale))
    width = round(max((head if i == 0 else body).getlength(line) for i, line in enumerate(lines)) + dpi)
    line_h = round(18 * scale)
    height = int(line_h * (len(lines) + 3))
    img = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(img)
    y = line_h
    for i, line in enumerate(lines):
        draw.text((round(0.5 * dpi), y), line, font=head if i == 0 else body, fill=0)
        y += line_h + (round(6 * scale) if i == 0 else 0)
    return img


def degrade(img: Image.Image, *, angle: float, noise: float, seed: int, blur: float = 0.6) -> Image.Image:
    """A worse scan: turned by `angle` degrees, a `noise` share of pixels flipped to random greys, blurred."""
    rng = random.Random(seed)
    img = img.rotate(angle, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=255)
    px = img.load()
    w, h = img.size
    for _ in range(int(w * h * noise)):
        px[rng.randrange(w), rng.randrange(h)] = rng.randrange(0, 256)
    return img.filter(ImageFilter.GaussianBlur(blur))


def png(img: Image.Image, dpi: int) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "PNG", dpi=(dpi, dpi), optimize=True)
    return buf.getvalue()


def scanned_pdf(out: io.BytesIO, pages: list[Image.Image], dpi: int) -> None:
    """A PDF whose pages are the images alone, as a scanner writes one (reportlab, invariant: the same bytes every
    run)."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(out, invariant=1)
    for img in pages:
        w, h = img.width * 72 / dpi, img.height * 72 / dpi
        c.setPageSize((w, h))
        c.drawImage(ImageReader(img), 0, 0, width=w, height=h)
        c.showPage()
    c.save()


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    truth: dict[str, dict] = {}

    def keep(name: str, data: bytes, pages: list[tuple[str, list[str]]], condition: str) -> None:
        (OUT / name).write_bytes(data)
        truth[name] = {"condition": condition, "pages": [{"lang": lang, "text": "\n".join(lines)}
                                                         for lang, lines in pages]}

    for lang, lines in (("en", EN), ("ja", JA)):
        keep(f"{lang}_clean_300dpi.png", png(render(lines, lang, 300), 300), [(lang, lines)], "clean, 300 dpi")
        keep(f"{lang}_clean_200dpi.png", png(render(lines, lang, 200), 200), [(lang, lines)], "clean, 200 dpi")
        worse = degrade(render(lines, lang, 200), angle=1.5, noise=0.02, seed=1)
        keep(f"{lang}_rotated_noisy_200dpi.png", png(worse, 200), [(lang, lines)],
             "turned 1.5°, 2% noise, blurred, 200 dpi")
        low = degrade(render(lines, lang, 150), angle=-1.0, noise=0.01, seed=2)
        buf = io.BytesIO()
        low.save(buf, "JPEG", quality=60, dpi=(150, 150))
        keep(f"{lang}_rotated_150dpi.jpg", buf.getvalue(), [(lang, lines)], "turned -1°, 1% noise, JPEG q60, 150 dpi")
        hard = degrade(render(lines, lang, 150), angle=4.0, noise=0.05, seed=4)
        keep(f"{lang}_rotated4_noisy5_150dpi.png", png(hard, 150), [(lang, lines)],
             "turned 4°, 5% noise, blurred, 150 dpi")
        harsh = degrade(render(lines, lang, 150), angle=-5.0, noise=0.10, seed=5, blur=1.0)
        buf = io.BytesIO()
        harsh.save(buf, "JPEG", quality=40, dpi=(150, 150))
        keep(f"{lang}_harsh_150dpi.jpg", buf.getvalue(), [(lang, lines)],
             "turned -5°, 10% noise, heavy blur, JPEG q40, 150 dpi")
        keep(f"{lang}_upside_down_200dpi.png", png(render(lines, lang, 200).rotate(180), 200), [(lang, lines)],
             "upside down, 200 dpi")
    # A whole A4 page of text (what a page of OCR costs): the paragraphs over again, numbered, to 36 lines.
    for lang, lines in (("en", EN + EN2), ("ja", JA)):
        page = [lines[0]] + [f"{n + 1}. {lines[1 + n % (len(lines) - 1)]}" for n in range(35)]
        img = render(page, lang, 200)
        a4 = Image.new("L", (round(8.27 * 200), round(11.69 * 200)), 255)
        a4.paste(img.crop((0, 0, min(img.width, a4.width), min(img.height, a4.height))), (0, 0))
        keep(f"{lang}_page_a4_200dpi.png", png(a4, 200), [(lang, page)],
             "numbered list: a whole A4 page of 35 items, 200 dpi")
    # A two-page TIFF, as a document scanner saves a stack.
    buf = io.BytesIO()
    first, second = render(EN, "en", 200), render(JA, "ja", 200)
    first.save(buf, "TIFF", save_all=True, append_images=[second], compression="tiff_deflate", dpi=(200, 200))
    keep("stack_en_ja.tiff", buf.getvalue(), [("en", EN), ("ja", JA)], "clean, 200 dpi, two pages")
    # A scanned PDF: page images only, no text layer; the answer to "E2" is on page 3.
    pages = [render(EN, "en", 200), degrade(render(JA, "ja", 200), angle=0.8, noise=0.01, seed=3),
             render(EN2, "en", 200)]
    buf = io.BytesIO()
    buf = io.BytesIO()
    scanned_pdf(buf, pages, 200)
    keep("scanned_manual.pdf", buf.getvalue(), [("en", EN), ("ja", JA), ("en", EN2)],
         "page images, no text layer, 200 dpi (page 2 turned 0.8°, 1% noise)")
    (OUT / "truth.json").write_text(json.dumps(truth, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(truth)} fixtures to {OUT}")


if __name__ == "__main__":
    main()
