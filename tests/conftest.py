"""Shared fixtures: isolated data directories, fast components, and generated bad-input files."""

from __future__ import annotations

import io
import os
from contextlib import contextmanager
from pathlib import Path

# Lambda-side libraries: no X-Ray daemon here, and keep test output readable.
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
os.environ.setdefault("POWERTOOLS_DEV", "false")
os.environ.setdefault("AWS_DEFAULT_REGION", "ap-northeast-1")
os.environ.setdefault("AWS_REGION", "ap-northeast-1")

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from citerag.components import Components
from citerag.settings import Settings

# CI runs the same examples every time (a new counterexample shows up in local runs, not as a surprise in CI);
# locally hypothesis explores new random examples on each run.
# No wall-clock limit on an example or on generating one: on a busy machine a descheduled process made the
# too_slow health check fail a property that holds (9 s for one input while both cores ran other work).
hypothesis_settings.register_profile("citerag", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.register_profile("ci", parent=hypothesis_settings.get_profile("citerag"), derandomize=True,
                                     print_blob=True)
hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "citerag")

SAMPLES = Path(__file__).resolve().parents[1] / "lambdas" / "citerag" / "samples"


@pytest.fixture(scope="session")
def embedding_cache(tmp_path_factory) -> Path:
    """One embedding cache for the whole run: passages are embedded once, as in real use."""
    return tmp_path_factory.mktemp("cache") / "embeddings.sqlite"


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path, monkeypatch, embedding_cache):
    """No test touches the user's real index or embedding cache."""
    monkeypatch.setenv("CITERAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CITERAG_EMBEDDING_CACHE_PATH", str(embedding_cache))
    for var in ("CITERAG_INDEX_PATH", "CITERAG_EMBEDDER", "CITERAG_NAMESPACE"):
        monkeypatch.delenv(var, raising=False)
    # Nor the user's AWS profiles: whether a model runs on Bedrock depends on the credentials boto3 finds.
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("BOTO_CONFIG", str(tmp_path / "no-boto-config"))
    for var in ("AWS_CREDENTIAL_FILE", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def fast_settings(tmp_path) -> Settings:
    """Hashing embedder: the real pipeline without model weights, for tests about everything else."""
    return Settings(data_dir=tmp_path / "data", embedder="hashing")


@pytest.fixture
def fast(fast_settings) -> Components:
    return Components(fast_settings)


def make_pdf(pages: list[str], *, title: str | None = None, japanese: bool = False) -> bytes:
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, invariant=1)
    if title:
        c.setTitle(title)
    if japanese:  # one of the CID fonts every PDF reader has, as scripts/make_sample_pdfs.py uses
        from reportlab.pdfbase import pdfmetrics
        from reportlab.pdfbase.cidfonts import UnicodeCIDFont

        pdfmetrics.registerFont(UnicodeCIDFont("HeiseiKakuGo-W5"))
    for text in pages:
        if japanese:
            c.setFont("HeiseiKakuGo-W5", 10)
        y = 780
        for line in text.split("\n"):
            c.drawString(72, y, line)
            y -= 16
        c.showPage()
    c.save()
    return buf.getvalue()


def make_cid_pdf(runs: list[tuple[float, float, list[int]]], *, in_form: bool = False,
                 encoding: str = "Identity-H") -> bytes:
    """A page of text in a Japanese CID font with no ToUnicode map, as pLaTeX/dvipdfmx writes one: each run is
    (x, y, glyph numbers in Adobe-Japan1) shown with Identity-H, on the page or (in_form) in a form the page draws.
    Another of Adobe's predefined CMaps (`encoding`, "H": two-byte JIS X 0208 codes, as older Japanese TeX writes)
    takes that CMap's codes instead. The font is not embedded (a viewer substitutes one), which the text layer does
    not need."""
    text = "".join(f"BT /F1 12 Tf {x} {y} Td <{''.join(f'{c:04X}' for c in cids)}> Tj ET\n" for x, y, cids in runs)
    content = "q /Fm1 Do Q\n" if in_form else text
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
        "/Resources << /Font 9 0 R /XObject << /Fm1 8 0 R >> >> /Contents 4 0 R >>",  # fonts by reference, as is common
        f"<< /Length {len(content)} >>\nstream\n{content}endstream",
        f"<< /Type /Font /Subtype /Type0 /BaseFont /Ryumin-Light /Encoding /{encoding} /DescendantFonts [6 0 R] >>",
        "<< /Type /Font /Subtype /CIDFontType0 /BaseFont /Ryumin-Light /FontDescriptor 7 0 R "
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (Japan1) /Supplement 6 >> /DW 1000 >>",
        "<< /Type /FontDescriptor /FontName /Ryumin-Light /Flags 6 /FontBBox [-170 -331 1024 903] /ItalicAngle 0 "
        "/Ascent 723 /Descent -241 /CapHeight 709 /StemV 69 >>",
        f"<< /Type /XObject /Subtype /Form /BBox [0 0 595 842] /Resources << /Font << /F1 5 0 R >> >> "
        f"/Length {len(text)} >>\nstream\n{text}endstream",
        "<< /F1 5 0 R >>",
    ]
    return make_raw_pdf(objects)


def make_spaceless_font_pdf(lines: list[list[str | int]], *, gap: int = -222, fixed_pitch: bool = False,
                            simple: bool = False) -> bytes:
    """A page set as TeX sets one, in a font with no glyph for the space: each line is a TJ array of its words with
    the pen moved `gap` thousandths of an em between them (-222: LaTeX's word space shrunk to its least, a tight
    line), or by the number a line gives between two words. The font is composite (Identity-H with a ToUnicode map,
    as XeTeX and LuaTeX embed theirs; glyph numbers start at 30, so glyph 32 is a letter, 600 wide) or, `simple`, a
    Type 1 subset whose CharSet has no space and whose code 32 is 513 wide (the visible-space sign of pdfTeX's
    T1-encoded fonts). Other glyphs are 500 wide."""
    chars = sorted({ch for line in lines for word in line if isinstance(word, str) for ch in word})
    cid = {ch: ord(ch) if simple else 30 + i for i, ch in enumerate(chars)}

    def glyphs(word: str) -> str:
        return "(" + word.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")" if simple \
            else "<" + "".join(f"{cid[ch]:04X}" for ch in word) + ">"

    def shown(line: list[str | int]) -> str:
        out: list[str] = []
        for item in line:
            if isinstance(item, str) and out and not out[-1].lstrip("-").isdigit():
                out.append(str(gap))
            out.append(str(item) if isinstance(item, int) else glyphs(item))
        return " ".join(out)

    text = "".join(f"BT /F1 10 Tf 72 {760 - 14 * n} Td [{shown(line)}] TJ ET\n" for n, line in enumerate(lines))
    cmap = ("/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Test-UCS def /CMapType 2 def\n"
            "1 begincodespacerange <0000> <FFFF> endcodespacerange\n"
            f"{len(chars)} beginbfchar\n"
            + "".join(f"<{cid[ch]:04X}> <{ord(ch):04X}>\n" for ch in chars)
            + "endbfchar endcmap CMapName currentdict /CMap defineresource pop end end\n")
    widths = " ".join("600" if cid[ch] == 32 else "500" for ch in chars)
    flags = 7 if fixed_pitch else 6
    if simple:
        return make_raw_pdf([
            "<< /Type /Catalog /Pages 2 0 R >>",
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 5 0 R >> >> "
            "/Contents 4 0 R >>",
            f"<< /Length {len(text)} >>\nstream\n{text}endstream",
            "<< /Type /Font /Subtype /Type1 /BaseFont /ABCDEF+SFRM1000 /FirstChar 32 /LastChar 126 "
            f"/Widths [513 {' '.join(['500'] * 94)}] /FontDescriptor 6 0 R >>",
            f"<< /Type /FontDescriptor /FontName /ABCDEF+SFRM1000 /Flags {flags} /FontBBox [-207 -320 1539 917] "
            "/ItalicAngle 0 /Ascent 694 /Descent -194 /CapHeight 683 /StemV 93 "
            f"/CharSet ({''.join('/' + ch for ch in chars if ch.isalpha())}/period/slash) >>",
        ])
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 5 0 R >> >> "
        "/Contents 4 0 R >>",
        f"<< /Length {len(text)} >>\nstream\n{text}endstream",
        "<< /Type /Font /Subtype /Type0 /BaseFont /ABCDEF+LMRoman10-Regular-Identity-H /Encoding /Identity-H "
        "/DescendantFonts [6 0 R] /ToUnicode 8 0 R >>",
        "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /ABCDEF+LMRoman10-Regular /FontDescriptor 7 0 R "
        f"/CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 280 /W [30 [{widths}]] >>",
        f"<< /Type /FontDescriptor /FontName /ABCDEF+LMRoman10-Regular /Flags {flags} "
        "/FontBBox [-430 -290 1417 1127] /ItalicAngle 0 /Ascent 1127 /Descent -290 /CapHeight 683 /StemV 93 >>",
        f"<< /Length {len(cmap)} >>\nstream\n{cmap}endstream",
    ]
    return make_raw_pdf(objects)


def make_raw_pdf(objects: list[str]) -> bytes:
    """A PDF of these objects (numbered from 1, the first the catalog) with its cross-reference table."""
    out = b"%PDF-1.4\n"
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def make_image_only_pdf(n_pages: int = 2) -> bytes:
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, invariant=1)
    for _ in range(n_pages):
        c.rect(100, 100, 300, 300, fill=1)
        c.showPage()
    c.save()
    return buf.getvalue()


def make_encrypted_pdf() -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(["secret plans"]))))
    writer.encrypt(user_password="hunter2", owner_password="owner", algorithm="AES-128")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


@contextmanager
def boto3_pointed_at(double, env_var: str, monkeypatch):
    """Run a local double and point the real boto3 client of one service at it (AWS_ENDPOINT_URL_<SERVICE>)."""
    from citerag.adapters import aws

    with double as d:
        monkeypatch.setenv(env_var, d.url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        aws.client.cache_clear()
        yield d
    aws.client.cache_clear()


BUCKET = "citerag-documents-123456789012"


@pytest.fixture
def s3_ingest(tmp_path, monkeypatch):
    """The ingest Lambda's world on moto: the documents bucket, a dead-letter queue, components reading S3."""
    import boto3
    from moto import mock_aws

    from citerag.adapters import aws
    from citerag.adapters.object_stores import S3ObjectSource

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    aws.client.cache_clear()
    with mock_aws():
        s3 = boto3.client("s3", region_name="ap-northeast-1")
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "ap-northeast-1"})
        sqs = boto3.client("sqs", region_name="ap-northeast-1")
        dlq = sqs.create_queue(QueueName="citerag-ingest-dlq")["QueueUrl"]
        comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", dlq_url=dlq))
        comps.object_source = S3ObjectSource(s3)
        yield {"s3": s3, "sqs": sqs, "dlq": dlq, "comps": comps}
    aws.client.cache_clear()
