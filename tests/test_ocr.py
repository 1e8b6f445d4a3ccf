"""OCR of scanned PDFs and images (Tesseract, the ocr extra): character error rate on the committed scanned fixtures
(scripts/make_scanned_fixtures.py) and an answer from a scanned page cited to that page, through the ingest and ask
a user runs. Skipped where Debian's tesseract-ocr with its English and Japanese models is not installed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citerag.cli import app
from citerag.documents.loaders import load_bytes
from citerag.documents.ocr import Ocr
from citerag.errors import DocumentError
from scripts.ocr_cer import cer, read_pages

FIXTURES = Path(__file__).parent / "fixtures" / "scanned"
TRUTH = json.loads((FIXTURES / "truth.json").read_text(encoding="utf-8"))
runner = CliRunner()


def _tesseract_languages() -> set[str]:
    if shutil.which("tesseract") is None:
        return set()
    out = subprocess.run(["tesseract", "--list-langs"], capture_output=True, text=True, check=False).stdout
    return set(out.split())


needs_tesseract = pytest.mark.skipif(
    not {"eng", "jpn"} <= _tesseract_languages(),
    reason="needs Tesseract with English and Japanese (apt-get install tesseract-ocr tesseract-ocr-eng "
           "tesseract-ocr-jpn)")
pytest.importorskip("PIL")


@needs_tesseract
@pytest.mark.parametrize("name,limit", [("en_clean_300dpi.png", 0.03), ("en_clean_200dpi.png", 0.03),
                                        ("ja_clean_300dpi.png", 0.06), ("ja_clean_200dpi.png", 0.06)])
def test_clean_scans_read_within_the_character_error_rate(name, limit):
    page = TRUTH[name]["pages"][0]
    got = read_pages(FIXTURES / name, "eng+jpn")
    assert cer(page["text"], got[0], page["lang"]) <= limit, got[0]


@needs_tesseract
def test_a_scan_turned_and_upside_down_still_reads():
    for name in ("ja_rotated4_noisy5_150dpi.png", "en_upside_down_200dpi.png"):
        page = TRUTH[name]["pages"][0]
        got = read_pages(FIXTURES / name, "eng+jpn")
        assert cer(page["text"], got[0], page["lang"]) <= 0.06, (name, got[0])


@pytest.fixture(scope="module")
def scanned_index(tmp_path_factory):
    root = tmp_path_factory.mktemp("scanned")
    folder = root / "docs"
    folder.mkdir()
    for name in ("scanned_manual.pdf", "stack_en_ja.tiff"):
        shutil.copy(FIXTURES / name, folder / name)
    env = {"CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(root / "data")}
    return folder, env


def test_without_ocr_an_image_is_skipped_and_a_scanned_pdf_says_how_to_read_it(scanned_index):
    folder, env = scanned_index
    r = runner.invoke(app, ["ingest", str(folder), "--json"], env={**env, "CITERAG_DATA_DIR": f"{folder}-no-ocr"})
    results = {Path(x["source"]).name: x for x in json.loads(r.stdout)["results"]}
    assert results["stack_en_ja.tiff"]["status"] == "skipped"
    assert "ingest with --ocr" in results["stack_en_ja.tiff"]["reason"]
    assert results["scanned_manual.pdf"]["status"] == "failed"
    assert "no text layer" in results["scanned_manual.pdf"]["reason"]
    assert "--ocr" in results["scanned_manual.pdf"]["reason"]


@needs_tesseract
def test_an_answer_from_a_scanned_page_cites_that_page(scanned_index):
    folder, env = scanned_index
    r = runner.invoke(app, ["ingest", str(folder), "--ocr", "--json"], env=env)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["summary"]["added"] == 2
    for question, page, said in (("What does error E2 mean?", 3, "dirty"),
                                 ("保証期間は何か月ですか？", 2, "24")):
        out = json.loads(runner.invoke(app, ["ask", question, "--json"], env=env).stdout)
        pdf = [c for c in out["citations"] if c["uri"].endswith("/scanned_manual.pdf")]
        assert pdf and pdf[0]["page"] == page and said in out["answer"], out
    # A TIFF of several pages is cited by page too.
    hits = json.loads(runner.invoke(app, ["search", "フィルターは消耗品", "--json"], env=env).stdout)
    tiff = next(h for h in hits if h["uri"].endswith("/stack_en_ja.tiff"))
    assert tiff["page"] == 2


@needs_tesseract
def test_an_image_that_is_not_one_gets_a_message():
    with pytest.raises(DocumentError, match="not an image Pillow can read"):
        load_bytes(b"\x89PNG\r\n\x1a\n but then nothing", "file:///x.png", "x.png", ocr=Ocr())


def test_the_languages_setting_is_checked():
    r = runner.invoke(app, ["ingest", "nowhere", "--ocr"], env={"CITERAG_OCR_LANGUAGES": "eng;rm -rf /"})
    assert r.exit_code != 0 and "setting ocr_languages" in r.output and "Traceback" not in r.output


@pytest.mark.skipif(shutil.which("jbig2dec") is not None, reason="jbig2dec is installed: the page would decode")
def test_a_jbig2_scan_without_jbig2dec_says_what_to_install():
    from conftest import make_raw_pdf

    data = "not really jbig2"
    pdf = make_raw_pdf([
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Resources << /XObject << /Im1 5 0 R >> >> "
        "/Contents 4 0 R >>",
        "<< /Length 30 >>\nstream\nq 200 0 0 200 0 0 cm /Im1 Do Q\nendstream",
        f"<< /Type /XObject /Subtype /Image /Width 8 /Height 8 /BitsPerComponent 1 /ImageMask true "
        f"/Filter /JBIG2Decode /Length {len(data)} >>\nstream\n{data}\nendstream",
    ])
    with pytest.raises(DocumentError, match="JBIG2-compressed, which needs jbig2dec: apt-get install jbig2dec"):
        load_bytes(pdf, "file:///scan.pdf", "scan.pdf", ocr=Ocr())
