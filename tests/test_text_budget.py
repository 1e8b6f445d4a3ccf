"""A document over its text budget is refused while its loader reads it, in every format and on both ingest paths
(the CLI's files, the Lambda's S3 objects): before it is chunked, and, for a text format whose size alone proves
it, before its bytes are read at all. A 150 MB one-line Markdown object used to be chunked whole (369 s, 2.78 GB)
before the passage limit refused it; scripts/bench_limits.py measures the bound."""

from __future__ import annotations

import pytest
from test_security import _deliver, _notification

from citerag.components import Components
from citerag.documents import budget as budget_module
from citerag.documents.budget import TextBudget
from citerag.documents.loaders import load_bytes
from citerag.errors import DocumentError
from citerag.settings import Settings

from conftest import BUCKET, SAMPLES


@pytest.fixture
def small(tmp_path):
    # 5 passages of at most 100 characters: a budget of 1,000 characters, 4,000 bytes for a text format.
    return Components(Settings(data_dir=tmp_path / "data", embedder="hashing", chunk_chars=100,
                               chunk_overlap_chars=0, max_chunks_per_document=5))


@pytest.fixture
def chunked(monkeypatch):
    """The documents that reached the chunker."""
    from citerag.ingestion import ingestor

    seen: list[str] = []
    real = ingestor.chunk_document

    def spy(doc, **kw):
        seen.append(doc.source_uri)
        return real(doc, **kw)

    monkeypatch.setattr(ingestor, "chunk_document", spy)
    return seen


BODIES = {
    "one-line.md": "# T\n\n" + "word " * 700,
    "one-line.txt": "word " * 700,
    "one-node.html": "<html><body><p>" + "word " * 700 + "</p></body></html>",
    "many-lines.md": "# T\n\n" + "word word.\n" * 350,
    "scripts.html": "<html><body>" + "<script>x=1</script><p>word word word.</p>" * 120 + "</body></html>",
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_a_document_over_its_budget_is_refused_before_it_is_chunked(small, chunked, tmp_path, name):
    path = tmp_path / name
    path.write_text(BODIES[name], encoding="utf-8")
    if not name.endswith(".html"):  # under the size bound: refused as its text is counted
        assert len(path.read_bytes()) < 4_000
    r = small.ingestor().ingest_path(path)
    assert r.status == "failed" and "more than 1,000 characters" in r.reason
    assert "CITERAG_MAX_CHUNKS_PER_DOCUMENT" in r.reason
    assert chunked == []


def test_a_text_file_whose_size_proves_it_is_over_is_not_read(small, chunked, tmp_path):
    path = tmp_path / "huge.md"
    with open(path, "wb") as f:  # sparse: 50 MB of NULs that were read whole to be called binary
        f.truncate(50 * 1024 * 1024)
    r = small.ingestor().ingest_path(path)
    assert r.status == "failed" and "52,428,800 bytes; the limit is 4,000" in r.reason
    assert "CITERAG_MAX_CHUNKS_PER_DOCUMENT" in r.reason and chunked == []


def test_a_document_under_the_budget_is_still_indexed(small, tmp_path):
    path = tmp_path / "short.md"
    path.write_text("# T\n\nThe filter lasts six months.\n", encoding="utf-8")
    assert small.ingestor().ingest_path(path).status == "added"


def test_a_pdf_is_refused_page_by_page(monkeypatch):
    pages: list[int] = []
    real = budget_module.TextBudget.take

    def counted(self, chars):
        pages.append(chars)
        return real(self, chars)

    monkeypatch.setattr(budget_module.TextBudget, "take", counted)
    data = (SAMPLES / "kumo-pure-300-manual-en.pdf").read_bytes()
    with pytest.raises(DocumentError, match="more than 50 characters"):
        load_bytes(data, "file:///m.pdf", "m.pdf", budget=TextBudget(max_chars=50))
    assert len(pages) == 1  # stopped at the first page over the budget, not after the last
    assert load_bytes(data, "file:///m.pdf", "m.pdf", budget=TextBudget(max_chars=10_000_000)).sections


def test_an_s3_object_over_the_bound_is_refused_by_its_size_on_the_lambda_path(s3env):
    s3env["comps"].settings.chunk_chars = 100
    s3env["comps"].settings.max_chunks_per_document = 5
    s3env["s3"].put_object(Bucket=BUCKET, Key="huge.md", Body=b"# T\n\n" + b"a" * 20_000)
    s3env["s3"].put_object(Bucket=BUCKET, Key="long.md", Body=b"# T\n\n" + b"word " * 700)
    out = _deliver(s3env, _notification("huge.md"), _notification("long.md"))
    assert out == {"batchItemFailures": []}  # permanent: dead-lettered with the reason, not retried
    reasons = " ".join(m["MessageAttributes"]["reason"]["StringValue"] for m in
                       s3env["sqs"].receive_message(QueueUrl=s3env["dlq"], MaxNumberOfMessages=10,
                                                    MessageAttributeNames=["All"])["Messages"])
    assert "object is too large (20,005 bytes; the limit is 4,000)" in reasons
    assert "more than 1,000 characters" in reasons
    assert s3env["comps"].index.list_documents() == []


@pytest.fixture
def s3env(s3_ingest):
    return s3_ingest


def test_an_html_page_read_again_in_its_declared_encoding_is_counted_once():
    # Read as UTF-8 a megabyte at a time until its first Shift_JIS byte (past the first megabyte), then again as
    # Shift_JIS: counted over both readings, its 1,200,195 characters would be over a budget of 1,300,000.
    page = ('<html><head><meta charset="Shift_JIS"></head><body><p>' + "a " * 600_000
            + "これは日本語のページです。" * 15 + "</p></body></html>")
    doc = load_bytes(page.encode("cp932"), "file:///s.html", "s.html", budget=TextBudget(max_chars=1_300_000))
    assert "日本語" in doc.sections[0].text
