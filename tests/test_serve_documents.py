"""Documents added to `citerag serve` over HTTP, as the page and a script send them: a multipart form with a `file`
field, stored in the data folder and ingested by the same code and limits as `citerag ingest`, listed, removed; a
change from another site, or without an Origin, refused."""

from __future__ import annotations

import threading

import pytest

from conftest import SAMPLES

BASE = "http://127.0.0.1:8765"
ORIGIN = {"Origin": BASE}


@pytest.fixture
def served(tmp_path):
    from starlette.testclient import TestClient

    from citerag.cli.serve import build_app
    from citerag.components import Components
    from citerag.settings import Settings

    comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", index_path=tmp_path / "i.sqlite",
                                serve_max_upload_bytes=200_000))
    with TestClient(build_app(comps), base_url=BASE) as client:
        yield client, comps, tmp_path / "data"


def _listed(client) -> dict[str, dict]:
    r = client.get("/api/documents")
    assert r.status_code == 200
    return {d["name"]: d for d in r.json()["documents"]}


def test_a_pdf_posted_as_a_form_is_stored_ingested_listed_answered_and_removed(served):
    client, _, data = served
    pdf = (SAMPLES / "kumo-pure-300-manual-en.pdf").read_bytes()
    r = client.post("/api/documents?wait=true", headers=ORIGIN,
                    files={"file": ("kumo-pure-300-manual-en.pdf", pdf, "application/pdf")})
    assert r.status_code == 200, r.text
    job = r.json()
    assert job["status"] == "added" and job["passages"] > 0 and job["state"] == "done"
    stored = data / "documents" / "default" / "kumo-pure-300-manual-en.pdf"
    assert stored.read_bytes() == pdf
    listed = _listed(client)
    assert listed["kumo-pure-300-manual-en.pdf"]["removable"] and listed["kumo-pure-300-manual-en.pdf"]["passages"]
    assert job["uri"] == stored.resolve().as_uri()
    answer = client.get("/api/ask", params={"q": "What does error E2 mean?"}).text
    assert "kumo-pure-300-manual-en.pdf" in answer and "sensor" in answer
    # The same file again is unchanged, not a second document.
    again = client.post("/api/documents?wait=1", headers=ORIGIN,
                        files={"file": ("kumo-pure-300-manual-en.pdf", pdf, "application/pdf")}).json()
    assert again["status"] == "unchanged" and len(_listed(client)) == 1
    r = client.request("DELETE", "/api/documents", params={"uri": job["uri"]}, headers=ORIGIN)
    assert r.status_code == 200 and r.json()["passages"] == job["passages"]
    assert _listed(client) == {} and not stored.exists()
    assert "kumo-pure-300-manual-en.pdf" not in client.get("/api/ask", params={"q": "What does error E2 mean?"}).text
    r = client.request("DELETE", "/api/documents", params={"uri": job["uri"]}, headers=ORIGIN)
    assert r.status_code == 404


def test_an_upload_over_the_cap_is_refused_with_413_and_nothing_stored(served):
    client, _, data = served
    big = b"A line of text about filters.\n" * 10_000  # 300,000 bytes; the cap is 200,000
    r = client.post("/api/documents", headers=ORIGIN, files={"file": ("big.txt", big, "text/plain")})
    assert r.status_code == 413
    assert "the limit for a file added from this page is 200,000" in r.json()["error"]
    assert "CITERAG_SERVE_MAX_UPLOAD_BYTES" in r.json()["error"]
    # Under the whole body's cap, over the file's: refused by the file's own size.
    middle = b"x" * 210_000
    r = client.post("/api/documents", headers=ORIGIN, files={"file": ("middle.txt", middle, "text/plain")})
    assert r.status_code == 413 and "210,000 bytes" in r.json()["error"]
    folder = data / "documents" / "default"
    assert not folder.exists() or list(folder.iterdir()) == []


def test_a_body_longer_than_its_content_length_said_is_cut_at_the_cap(served):
    # A client that sends no Content-Length (chunked) is counted as the body arrives.
    client, _, _ = served

    def chunks():
        yield b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\n"
        for _ in range(40):
            yield b"y" * 10_000
        yield b"\r\n--b--\r\n"

    r = client.post("/api/documents", headers={**ORIGIN, "Content-Type": "multipart/form-data; boundary=b"},
                    content=chunks())
    assert r.status_code == 413


def test_an_unsupported_type_is_refused_with_the_ingest_message(served):
    from citerag.documents.loaders import kind_for
    from citerag.errors import DocumentError

    client, _, _ = served
    r = client.post("/api/documents", headers=ORIGIN, files={"file": ("tool.exe", b"MZ\x90\x00", "application/x")})
    assert r.status_code == 415
    with pytest.raises(DocumentError) as said:
        kind_for("tool.exe")
    assert r.json()["error"] == str(said.value)
    # A file whose contents ingest refuses is reported by its ingest, and not kept.
    r = client.post("/api/documents?wait=true", headers=ORIGIN, files={"file": ("empty.md", b"   \n", "text/plain")})
    assert r.status_code == 422 and r.json()["status"] == "failed" and r.json()["reason"] == "no text found in the file"
    assert _listed(client) == {}


def test_a_change_from_another_site_or_without_an_origin_is_refused(served):
    client, _, _ = served
    files = {"file": ("a.txt", b"The office opens at nine.\n", "text/plain")}
    for headers in ({}, {"Origin": "null"}, {"Origin": "http://attacker.example"}, {"Origin": "http://127.0.0.1:9999"}):
        r = client.post("/api/documents", headers=headers, files=files)
        assert r.status_code == 403, headers
        r = client.request("DELETE", "/api/documents", params={"uri": "file:///x.txt"}, headers=headers)
        assert r.status_code == 403
    assert client.get("/api/documents").status_code == 200  # reading needs no Origin
    assert _listed(client) == {}


def test_filenames_lose_their_folders_and_a_taken_name_is_kept_apart_and_said(served):
    client, _, data = served
    folder = data / "documents" / "default"
    r = client.post("/api/documents?wait=1", headers=ORIGIN,
                    files={"file": ("../../../etc/.notes.txt", b"The office opens at nine.\n", "text/plain")})
    assert r.status_code == 200 and r.json()["name"] == "notes.txt"
    assert (folder / "notes.txt").is_file() and not (data / "etc").exists()
    r = client.post("/api/documents?wait=1", headers=ORIGIN,
                    files={"file": ("C:\\Users\\b\\notes.txt", b"The shop closes at six.\n", "text/plain")})
    job = r.json()
    assert job["name"] == "notes (2).txt" and "a different file named notes.txt" in job["note"]
    assert (folder / "notes.txt").read_text() == "The office opens at nine.\n"
    assert set(_listed(client)) == {"notes.txt", "notes (2).txt"}
    # Replacing is asked for by name.
    r = client.post("/api/documents?wait=1", headers=ORIGIN, data={"replace": "true"},
                    files={"file": ("notes.txt", b"The office opens at ten.\n", "text/plain")})
    assert r.json()["status"] == "replaced" and "replaced the earlier file" in r.json()["note"]
    assert (folder / "notes.txt").read_text() == "The office opens at ten.\n"


@pytest.mark.parametrize("name, stored", [
    ("report.pdf", "report.pdf"), ("/tmp/a/b/report.pdf", "report.pdf"), ("..\\..\\report.pdf", "report.pdf"),
    (".bashrc.txt", "bashrc.txt"), ("a\x00b\nc.md", "a_b_c.md"), ("x" * 400 + ".pdf", "x" * 196 + ".pdf"),
])
def test_safe_names(name, stored):
    from citerag.cli.serve_documents import safe_name

    assert safe_name(name) == stored


@pytest.mark.parametrize("name", ["", "..", "/", "C:\\", " . "])
def test_a_name_with_nothing_left_is_refused(name):
    from citerag.cli.serve_documents import UploadRefused, safe_name

    with pytest.raises(UploadRefused):
        safe_name(name)


def test_questions_are_answered_while_a_document_is_ingested(served, monkeypatch):
    # The ingest runs in a thread of its own: held at its first passages, a question is still answered.
    client, comps, _ = served
    client.post("/api/documents?wait=1", headers=ORIGIN,
                files={"file": ("faq.md", (SAMPLES / "faq-en.md").read_bytes(), "text/markdown")})
    started, release = threading.Event(), threading.Event()
    embed = comps.embedder.embed_passages

    def held(texts, *args, **kwargs):
        started.set()
        assert release.wait(120)
        return embed(texts, *args, **kwargs)

    monkeypatch.setattr(comps.embedder, "embed_passages", held)
    pdf = (SAMPLES / "kumo-pure-300-manual-en.pdf").read_bytes()
    r = client.post("/api/documents", headers=ORIGIN, files={"file": ("manual.pdf", pdf, "application/pdf")})
    assert r.status_code == 202
    assert started.wait(120)
    jobs = client.get("/api/documents").json()["jobs"]
    assert jobs[-1]["state"] == "running" and jobs[-1]["name"] == "manual.pdf"
    answer = client.get("/api/ask", params={"q": "Can I wash the HEPA filter?"})
    assert answer.status_code == 200 and "faq.md" in answer.text
    release.set()
    for _ in range(600):
        if client.get("/api/documents").json()["jobs"][-1]["state"] == "done":
            break
        threading.Event().wait(0.1)
    assert client.get("/api/documents").json()["jobs"][-1]["status"] == "added"
    assert "manual.pdf" in _listed(client)


def test_a_text_files_citation_marks_every_line_its_source_is_cited_for(tmp_path, monkeypatch):
    # One source cited for two sentences: the list says lines 98-102; the first sentence's citation opened the file
    # with lines 98-99 marked only. Every cited line is marked now, from the lines of the sentence clicked.
    import json

    from starlette.testclient import TestClient

    import citerag.answerers
    from citerag.citations.answer import Answer, Citation
    from citerag.cli.serve import build_app
    from citerag.components import Components
    from citerag.search.passage import Passage
    from citerag.settings import Settings

    docs = tmp_path / "docs"
    docs.mkdir()
    rows = [f"Filler line {i}." for i in range(1, 98)] + [
        "The backup generator is tested every month by", "the facilities team.", "A failed test is reported to",
        "the site manager, and the generator is taken", "out of service until it is repaired."]
    (docs / "ops.txt").write_text("\n".join(rows) + "\n")
    comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", index_path=tmp_path / "i.sqlite"))
    comps.ingestor().ingest_paths([docs])
    uri = (docs / "ops.txt").resolve().as_uri()
    first, second = rows[97] + " " + rows[98], " ".join(rows[99:102])

    def cited(section, excerpt):
        return Passage(text=first + " " + second, uri=uri, title="ops", section=section, source_id="s1",
                       excerpt=excerpt)

    text = f"{first} {second}"
    answer = Answer(text=text, sources=[cited("lines 98-102", first)], citations=[
        Citation(text=first, start=0, end=len(first), sources=[cited("lines 98-99", first)]),
        Citation(text=second, start=len(first) + 1, end=len(text), sources=[cited("lines 100-102", second)])])

    class Answering:  # the answerer's outcome, fixed: what is tested is how the page's wire and links carry it
        def ask(self, question):
            return answer

    monkeypatch.setattr(citerag.answerers, "open_answerer", lambda *a, **k: Answering())
    client = TestClient(build_app(comps), base_url=BASE)
    events = [json.loads(line) for line in client.get("/api/ask", params={"q": "generator"}).text.splitlines()]
    cites = [e["sources"][0] for e in events if e.get("sources")]
    assert [(c["section"], c["at"]) for c in cites] == [("lines 98-102", 98), ("lines 98-102", 100)]
    page = client.get("/source", params={"uri": uri, "section": "lines 98-102", "at": "100", "quote": second}).text
    assert "from=98&amp;to=102#L100" in page
    src = page.split("src='")[1].split("'")[0].replace("&amp;", "&")
    shown = client.get(src.split("#")[0]).text
    assert shown.count("class='cited'") == 5 and "<span id='L102' class='cited'>" in shown
    outside = client.get("/source", params={"uri": uri, "section": "lines 98-102", "at": "7"}).text
    assert "#L98'" in outside and "id='quote'" not in outside  # no quote: no empty bar


def test_a_cited_web_page_is_shown_with_its_cited_sentences_marked(tmp_path):
    import json

    from starlette.testclient import TestClient

    from citerag.cli.serve import build_app
    from citerag.components import Components
    from citerag.settings import Settings

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "router.html").write_text(
        "<html><head><title>Router</title><script>var s = 'hold the button for ten seconds';</script></head><body>"
        "<h1>Router</h1><p>To reset the router, hold the <b>reset</b>\n   button for ten seconds.</p>"
        "<p>The lights blink while it restarts &amp; reconnects.</p></body></html>", encoding="utf-8")
    comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", index_path=tmp_path / "i.sqlite"))
    comps.ingestor().ingest_paths([docs])
    client = TestClient(build_app(comps), base_url=BASE)
    said = client.get("/api/ask", params={"q": "How do I reset the router?"}).text
    events = [json.loads(x) for x in said.splitlines()]
    listed = next(e for e in events if "sources_list" in e)["sources_list"][0]
    assert "hold the reset button for ten seconds" in listed["excerpt"]
    page = client.get("/source", params={"uri": listed["uri"], "section": listed["section"] or "",
                                         "quote": listed["excerpt"]}).text
    src = page.split("src='")[1].split("'")[0].replace("&amp;", "&")
    assert src.startswith("/marked?") and src.endswith("#citerag-cited") and "sandbox=''" in page
    r = client.get(src.split("#")[0])
    assert "sandbox" in r.headers["content-security-policy"] and r.headers["x-content-type-options"] == "nosniff"
    assert ('<mark class="citerag-cited" id="citerag-cited">To reset the router, hold the</mark> <b>'
            '<mark class="citerag-cited">reset</mark></b>\n   <mark class="citerag-cited">button for ten seconds.'
            '</mark>') in r.text
    assert "var s = 'hold the button for ten seconds';" in r.text  # a script's text is never marked


def test_a_markdown_file_is_never_served_as_a_marked_web_page(tmp_path):
    # /marked read any indexed file as HTML: a Markdown file's "<img src=…>" became an element the browser loaded.
    from starlette.testclient import TestClient

    from citerag.cli.serve import build_app
    from citerag.components import Components
    from citerag.settings import Settings

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("# Notes\n\nThe <img src=http://tracker.example/x.png> widget is blue.\n",
                                   encoding="utf-8")
    comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", index_path=tmp_path / "i.sqlite"))
    comps.ingestor().ingest_paths([docs])
    client = TestClient(build_app(comps), base_url=BASE)
    r = client.get("/marked", params={"uri": (docs / "notes.md").resolve().as_uri(), "quote": "widget"})
    assert r.status_code == 404 and "<img" not in r.text and "only a web page" in r.text
    page = client.get("/source", params={"uri": (docs / "notes.md").resolve().as_uri(), "section": "Notes",
                                         "quote": "The widget is blue."}).text
    assert "/marked?" not in page and "/file?" in page  # what the page links to: the file, shown as text


@pytest.mark.parametrize("page, quote, marked", [
    ("<p>Caf&eacute; opens at nine.</p>", "Café opens at nine.",
     '<p><mark class="citerag-cited" id="citerag-cited">Caf&eacute; opens at nine.</mark></p>'),
    ("<p>First one. Second one here.</p><p>Third sentence stays.</p>", "First one. … Third sentence stays.",
     '<p><mark class="citerag-cited" id="citerag-cited">First one.</mark> Second one here.</p>'
     '<p><mark class="citerag-cited">Third sentence stays.</mark></p>'),
    ("<p>Nothing cited here.</p>", "Something else entirely.", "<p>Nothing cited here.</p>"),
    ("<p>An <!-- note --> aside.</p>", "An aside.",
     '<p><mark class="citerag-cited" id="citerag-cited">An</mark> <!-- note --> <mark class="citerag-cited">'
     'aside.</mark></p>'),
])
def test_mark_html(page, quote, marked):
    from citerag.cli.serve_marks import mark_html

    assert mark_html(page, quote)[0] == marked


def test_the_pdf_pages_files_are_served_and_nothing_else_of_the_package(served):
    client, _, _ = served
    r = client.get("/static/pdfjs/pdf.min.mjs")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript")
    assert client.get("/static/pdfjs/cmaps/UniJIS-UCS2-H.bcmap").status_code == 200
    for path in ("/static/../serve.py", "/static/%2e%2e/serve.py", "/static/pdfjs/LICENSE", "/static/nothing.mjs",
                 "/static/..%2f..%2fsettings.py"):
        assert client.get(path).status_code == 404, path
    jobs = client.get("/api/documents", params={"only": "jobs"}).json()
    assert jobs == {"jobs": [], "max_upload_bytes": 200_000}


def test_a_file_system_without_hard_links_still_stores_and_never_overwrites(served, monkeypatch):
    import errno
    import os

    def no_links(*_):
        raise OSError(errno.EPERM, "Operation not permitted")

    client, _, data = served
    monkeypatch.setattr(os, "link", no_links)
    for body in (b"The office opens at nine.\n", b"The shop closes at six.\n"):
        r = client.post("/api/documents?wait=1", headers=ORIGIN, files={"file": ("hours.txt", body, "text/plain")})
        assert r.status_code == 200, r.text
    folder = data / "documents" / "default"
    assert (folder / "hours.txt").read_text() == "The office opens at nine.\n"
    assert (folder / "hours (2).txt").read_text() == "The shop closes at six.\n"
    assert sorted(p.name for p in folder.iterdir()) == ["hours (2).txt", "hours.txt"]  # no temporary file left


def test_a_document_added_from_the_page_has_its_answers_prepared_as_ingest_does(tmp_path):
    # `citerag ingest` embeds the statements the answerer weighs, so a first answer embeds only the question; a
    # document added from the page gets the same (the embedded model, as `serve` runs it).
    from starlette.testclient import TestClient

    from citerag.cli.common import answer_statements
    from citerag.cli.serve import build_app
    from citerag.components import Components
    from citerag.settings import Settings

    comps = Components(Settings(data_dir=tmp_path / "data", index_path=tmp_path / "i.sqlite",
                                embedding_cache_path=tmp_path / "e.sqlite"))
    with TestClient(build_app(comps), base_url=BASE) as client:
        r = client.post("/api/documents?wait=1", headers=ORIGIN,
                        files={"file": ("faq.md", (SAMPLES / "faq-en.md").read_bytes(), "text/markdown")})
        assert r.status_code == 200 and r.json()["status"] == "added"
    statements = answer_statements([r.json()["uri"]])
    assert statements
    before = comps.embedder.misses
    comps.embedder.embed_passages(statements)
    assert comps.embedder.misses == before  # every statement was embedded when the document was added
