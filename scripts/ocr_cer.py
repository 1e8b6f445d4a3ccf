"""Character error rate of OCR on the scanned fixtures (tests/fixtures/scanned/, made by make_scanned_fixtures.py):
for each page, the edit distance between what OCR read and the known text, over the known text's length.

Run:  python scripts/ocr_cer.py [--languages eng+jpn] [--json]
Needs the ocr extra and Tesseract (apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-jpn).

Both texts are compared as a reader sees them: NFKC (full-width digits are digits), runs of whitespace as one space,
and for Japanese no spaces at all (Japanese sets none between words; OCR puts some around digits).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import unicodedata
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "scanned"


def normalized(text: str, lang: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return "".join(text.split()) if lang == "ja" else " ".join(text.split())


def distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions), two rows at a time."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def cer(truth: str, read: str, lang: str) -> float:
    t, r = normalized(truth, lang), normalized(read, lang)
    return distance(t, r) / max(1, len(t))


def read_pages(path: Path, languages: str) -> list[str]:
    """What ingest would read: a PDF's pages through the PDF loader (OCR for pages with no text layer), an image's
    frames through OCR. Not the indexed section text: the loader joins lines into paragraphs, which is no error."""
    from citerag.documents.ocr import Ocr, pdf_page_images

    ocr = Ocr(languages)
    if path.suffix == ".pdf":
        from pypdf import PdfReader

        return ["\n".join(ocr.read(i) for i in pdf_page_images(page)) for page in PdfReader(path).pages]
    return ocr.image_pages(path.read_bytes())


def measure(languages: str) -> list[dict]:
    truth = json.loads((FIXTURES / "truth.json").read_text(encoding="utf-8"))
    rows = []
    for name, item in truth.items():
        cpu, wall = _cpu_seconds(), time.perf_counter()
        pages = read_pages(FIXTURES / name, languages)
        rows.append({"file": name, "condition": item["condition"],
                     "pages": [{"lang": p["lang"], "cer": round(cer(p["text"], got, p["lang"]), 4)}
                               for p, got in zip(item["pages"], pages, strict=True)],
                     "wall_s": round(time.perf_counter() - wall, 2),
                     "cpu_s_per_page": round((_cpu_seconds() - cpu) / len(pages), 2)})
    return rows


def _cpu_seconds() -> float:
    """This process's CPU time and its children's: Tesseract runs as a child process."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--languages", default="eng+jpn", help="Tesseract's models, as CITERAG_OCR_LANGUAGES")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-preprocessing", action="store_true",
                    help="Tesseract on the image as it is (greyscale only): what the cleaning and levelling add")
    args = ap.parse_args()
    if args.no_preprocessing:
        from citerag.documents import ocr

        ocr._upright = lambda image: image.convert("L")
    rows = measure(args.languages)
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    print(f"languages {args.languages}{' (no preprocessing)' if args.no_preprocessing else ''}")
    print(f"{'file':32} {'condition':56} {'CPU s/page':>10}  CER by page")
    for r in rows:
        pages = ", ".join(f"{p['lang']} {p['cer']:.1%}" for p in r["pages"])
        print(f"{r['file']:32} {r['condition'][:56]:56} {r['cpu_s_per_page']:>10.2f}  {pages}")
    for lang in ("en", "ja"):
        groups: dict[str, list[float]] = {"clean": [], "degraded": [], "numbered list": []}
        for r in rows:
            group = next((g for g in groups if r["condition"].startswith(g)), "degraded")
            groups[group] += [p["cer"] for p in r["pages"] if p["lang"] == lang]
        print(f"{lang}: " + "; ".join(f"{g} mean {sum(v) / len(v):.1%} (max {max(v):.1%})"
                                      for g, v in groups.items() if v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
