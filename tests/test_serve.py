"""`citerag serve` in Debian's headless Chromium: the page a user opens asks, shows the streamed answer with
clickable citations, and a citation opens the PDF at the cited page under the cited sentence. The DOM Chromium
renders (after the page's script ran) is what the assertions read; the screenshots must hold a rendered page."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import quote
from urllib.request import urlopen

import pytest
from cdp_support import CHROMIUM, Browser

from citerag.cli.common import open_index

from conftest import SAMPLES

# The screenshots stay where a person can look at them (CITERAG_SCREENSHOTS), else in a temporary folder.
SHOTS = Path(os.environ.get("CITERAG_SCREENSHOTS") or tempfile.mkdtemp(prefix="citerag-shots-"))
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data = tmp_path_factory.mktemp("serve")
    mp = pytest.MonkeyPatch()
    mp.setenv("CITERAG_DATA_DIR", str(data))
    comps = open_index(None, quiet=True)  # nothing ingested: the samples' own index
    with _serving(comps) as base:
        with urlopen(f"{base}/api/ask?q=warranty", timeout=120) as resp:  # the model loads here, not in Chromium's
            assert resp.status == 200
        yield base
    mp.undo()


@contextmanager
def _serving(comps, own=None):
    import uvicorn

    from citerag.cli.serve import build_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(build_app(comps, own=own), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    for _ in range(100):
        if srv.started:
            break
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = Browser(tmp_path_factory.mktemp("chromium"))
    yield b
    b.close()


def test_the_page_shows_the_streamed_answer_with_clickable_citations(server, browser, tmp_path):
    page = browser.open(f"{server}/?q={quote('What does error E2 mean?')}")
    page.wait_for("document.querySelectorAll('#sources li').length > 0")
    shot = page.screenshot(SHOTS / "answer.png")
    assert shot.stat().st_size > 10_000
    seen = page.text()
    assert "Error E2 means the air quality sensor is dirty.[1]" in seen
    assert "Kumo Pure 300 Air Purifier - User Manual, page 5" in seen  # the source list
    href = page.eval("document.querySelector('#answer a.cite').href")
    assert "page=5" in href and "kumo-pure-300-manual-en.pdf" in href


def test_a_citation_opens_the_pdf_at_the_cited_page_with_the_cited_words_highlighted(server, browser, tmp_path):
    page = browser.open(f"{server}/?q={quote('What does error E2 mean?')}")
    page.wait_for("document.querySelector('#answer a.cite') !== null")
    page.follow("document.querySelector('#answer a.cite').href")  # what a click does, same tab
    page.wait_for("document.body && document.body.dataset.highlighted !== undefined")
    assert page.screenshot(SHOTS / "opened.png").stat().st_size > 10_000
    seen = page.text()
    assert "kumo-pure-300-manual-en.pdf, page 5" in seen and "page 5 of 5" in seen
    assert "Error E2 means the air quality sensor is dirty." in page.eval("document.getElementById('quote').innerText")
    _assert_highlighted(page, "Error E2 means the air quality sensor is dirty.", "Clean the sensor window")
    uri = (SAMPLES / "kumo-pure-300-manual-en.pdf").resolve().as_uri()
    with urlopen(f"{server}/file?uri={quote(uri, safe='')}") as resp:
        assert resp.headers["content-type"] == "application/pdf" and resp.read(5) == b"%PDF-"


def test_a_japanese_quote_of_two_sentences_is_highlighted_where_each_is(server, browser, tmp_path):
    uri = (SAMPLES / "kumo-pure-300-manual-ja.pdf").resolve().as_uri()
    quote_text = ("エラー E2 は空気センサーの汚れを示します。 … 仕様：定格消費電力45W、適用床面積35平方メートル、"
                  "質量6.2kg、外形寸法27×27×60cm。")  # the second sentence runs over two lines of the page
    page = browser.open(f"{server}/source?uri={quote(uri, safe='')}&page=5&quote={quote(quote_text)}")
    page.wait_for("document.body && document.body.dataset.highlighted !== undefined")
    assert int(page.eval("document.body.dataset.highlighted")) >= 3
    _assert_highlighted(page, "エラー E2 は空気センサーの汚れを示します。", "側面のセンサー窓")
    _assert_highlighted(page, "27×27×60cm。", "保証")
    assert page.eval("document.getElementById('where').getBoundingClientRect().top") >= 0  # the page kept its top
    page.screenshot(SHOTS / "highlighted-ja.png")


# The rectangles of the highlight boxes, of the text layer's characters of a phrase (a DOM range over PDF.js's
# spans), of the spans holding it, and of the viewer's visible area.
_GEOMETRY = """(() => {
  const rect = (r) => [r.left, r.top, r.right, r.bottom];
  const phrase = (words) => {
    const found = {words: [], spans: []};
    const walker = document.createTreeWalker(document.getElementById('textlayer'), NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const i = n.nodeValue.indexOf(words);
      if (i < 0) continue;
      const range = document.createRange(); range.setStart(n, i); range.setEnd(n, i + words.length);
      for (const r of range.getClientRects()) found.words.push(rect(r));
      found.spans.push(rect(n.parentElement.getBoundingClientRect()));
    }
    return found;
  };
  return JSON.stringify({boxes: [...document.querySelectorAll('#highlights .cited')].map(
    (b) => rect(b.getBoundingClientRect())), cited: phrase(%s), other: phrase(%s),
    spans: [...document.querySelectorAll('#textlayer span')].map((s) => rect(s.getBoundingClientRect())),
    view: rect(document.getElementById('viewer').getBoundingClientRect())});
})()"""


def _assert_highlighted(page, cited: str, other: str, slack: float = 1.5) -> None:
    """The highlight boxes cover the cited words' characters in PDF.js's text layer, lie inside the text-layer
    spans that hold them, leave the words after them alone, and are in view."""
    import json

    g = json.loads(page.eval(_GEOMETRY % (json.dumps(cited), json.dumps(other))))
    boxes, words, spans = g["boxes"], g["cited"]["words"], g["cited"]["spans"]
    assert boxes and words, g

    def inside(a, b):
        return (a[0] >= b[0] - slack and a[1] >= b[1] - slack and a[2] <= b[2] + slack
                and a[3] <= b[3] + slack)

    def meet(a, b):
        return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

    assert all(any(inside(w, b) for b in boxes) for w in words), g  # every cited character is under a box
    here = [b for b in boxes if any(meet(b, w) for w in words)]
    assert here and all(any(inside(b, s) for s in spans) for b in here), g  # lying over the cited words' spans
    assert all(any(inside(b, s) for s in g["spans"]) for b in boxes), g  # and no box off the page's text
    for o in g["other"]["words"]:  # the words after them are not highlighted
        assert all(b[2] <= o[0] + slack or o[1] >= b[3] - slack or o[3] <= b[1] + slack for b in boxes), g
    assert any(inside(b, g["view"]) for b in boxes), g  # scrolled into view


def test_a_markdown_source_is_listed_and_opened_with_its_section(server, browser, tmp_path):
    page = browser.open(f"{server}/?q={quote('Can I wash the HEPA filter?')}")
    page.wait_for("document.querySelectorAll('#sources li').length > 0")
    assert "Kumo Pure 300 FAQ > Filters > Can I wash the HEPA filter?" in page.eval(
        "document.querySelector('#sources li a').innerText")
    page.follow("document.querySelector('#sources li a').href")
    page.wait_for("document.getElementById('quote') !== null")
    assert page.eval("document.getElementById('where').innerText") == (
        "faq-en.md, Kumo Pure 300 FAQ > Filters > Can I wash the HEPA filter?")


def test_a_question_not_answered_lists_where_to_look(server, browser, tmp_path):
    page = browser.open(f"{server}/?q={quote('Does the Kumo Pure 300 work with Alexa?')}")
    page.wait_for("document.querySelectorAll('#related li').length > 0")
    seen = page.text()
    # Said once, by the answer (the status line said it again).
    assert seen.count("The documents do not answer this question.") == 1 and "Where to look" in seen
    assert page.eval("document.getElementById('sources-title').hidden")
    assert "Kumo Pure 300 FAQ > App and Wi-Fi" in page.eval("document.querySelector('#related li a').innerText")
    page.follow("document.querySelector('#related li a').href")
    page.wait_for("document.getElementById('where') !== null")
    assert page.eval("document.getElementById('where').innerText").startswith(
        "faq-en.md, Kumo Pure 300 FAQ > App and Wi-Fi")
    assert page.eval("document.getElementById('quote') === null")  # a place to look has no quote: no empty bar
    # An answered question lists no place to look.
    page = browser.open(f"{server}/?q={quote('Can I wash the HEPA filter?')}")
    page.wait_for("document.querySelectorAll('#sources li').length > 0")
    assert page.eval("document.getElementById('related-title').hidden")


def test_a_text_file_source_opens_at_the_cited_line_marked(server, browser, tmp_path):
    page = browser.open(f"{server}/?q={quote('When is phone support available?')}")
    page.wait_for("document.querySelectorAll('#sources li').length > 0")
    assert page.eval("document.querySelector('#sources li a').innerText").endswith(", line 3")
    page.follow("document.querySelector('#sources li a').href")
    page.wait_for("document.getElementById('quote') !== null")
    src = page.eval("document.getElementById('doc').getAttribute('src')")
    assert src.startswith("/lines?") and src.endswith("&from=3&to=3#L3")
    time.sleep(1)  # the frame paints
    assert page.screenshot(SHOTS / "text-lines.png").stat().st_size > 10_000
    with urlopen(server + src.split("#")[0]) as resp:
        shown = resp.read().decode()
    assert "<span id='L3' class='cited'><i>3</i>Phone support is available on weekdays" in shown
    assert shown.count("class='cited'") == 1 and "<span id='L4'><i>4</i>Phone: 0120-000-300" in shown


def test_only_indexed_files_are_served_and_text_is_escaped(server, browser, tmp_path):
    for route in ("file", "lines"):
        with pytest.raises(HTTPError) as exc:
            urlopen(f"{server}/{route}?uri={quote('file:///etc/passwd', safe='')}")
        assert exc.value.code == 404
    uri = (SAMPLES / "kumo-pure-300-manual-en.pdf").resolve().as_uri()
    evil = "<script>document.title='pwned'</script><b>x</b>"
    page = browser.open(f"{server}/source?uri={quote(uri, safe='')}&section={quote(evil)}&quote={quote(evil)}")
    page.wait_for("document.getElementById('quote') !== null")
    assert page.eval("document.getElementById('quote').innerText") == evil  # shown as text
    assert page.eval("document.getElementById('where').innerText").endswith(evil)
    assert page.eval("document.title") != "pwned"
    assert page.eval("document.querySelectorAll('#quote b, #where b').length") == 0



def test_a_refused_question_says_why_instead_of_searching_forever(server, browser, tmp_path):
    # The 400's reason was never read: the page stayed on "Searching…".
    page = browser.open(f"{server}/?q={'a' * 2001}")
    page.wait_for("document.getElementById('status').textContent.startsWith('Error')")
    assert "2,001 characters long" in page.eval("document.getElementById('status').textContent")


def test_a_request_for_another_host_or_from_another_site_is_refused(server):
    from urllib.request import Request

    uri = quote((SAMPLES / "faq-en.md").resolve().as_uri(), safe="")
    for headers, code in (({"Host": "attacker.example"}, 421), ({"Origin": "http://attacker.example"}, 403),
                          ({"Host": "attacker.example:80", "Origin": "http://attacker.example"}, 421)):
        with pytest.raises(HTTPError) as exc:
            urlopen(Request(f"{server}/file?uri={uri}", headers=headers))
        assert exc.value.code == code
    port = server.rsplit(":", 1)[1]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}"):
        with urlopen(Request(f"{server}/file?uri={uri}", headers={"Host": host, "Origin": f"http://{host}"})) as r:
            assert r.status == 200


def test_a_tenants_file_is_no_more_served_than_it_is_cited(tmp_path):
    from citerag.components import Components
    from citerag.settings import Settings

    public, acme = tmp_path / "public", tmp_path / "acme"
    public.mkdir()
    acme.mkdir()
    (public / "open.txt").write_text("The office opens at nine.\n")
    (acme / "secret.txt").write_text("The launch code is ZEBRA-42.\n")
    comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", index_path=tmp_path / "i.sqlite"))
    comps.ingestor().ingest_paths([public])
    comps.ingestor({"tenant": "acme"}).ingest_paths([acme])
    with _serving(comps) as base:
        for route in ("file", "lines", "source"):
            with pytest.raises(HTTPError) as exc:
                urlopen(f"{base}/{route}?uri={quote((acme / 'secret.txt').as_uri(), safe='')}")
            assert exc.value.code == 404
            with urlopen(f"{base}/{route}?uri={quote((public / 'open.txt').as_uri(), safe='')}") as resp:
                assert resp.status == 200


def test_an_indexed_web_page_is_shown_never_run_so_it_cannot_read_other_documents(browser, tmp_path):
    # A saved web page's script, run on the server's origin, fetched another indexed file and put it in the title.
    from citerag.components import Components
    from citerag.settings import Settings

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "secret.md").write_text("# Secrets\n\nThe vault combination is 31-7-22.\n")
    (docs / "evil.html").write_text(
        "<html><head><title>Router</title></head><body><p>To reset the router, hold the button for ten seconds.</p>"
        "<script>fetch('/file?uri=' + encodeURIComponent('" + (docs / "secret.md").as_uri() + "'))"
        ".then(r => r.text()).then(t => { document.title = 'STOLEN:' + t })"
        ".catch(e => { document.title = 'BLOCKED' }); document.body.dataset.ran = 'yes'</script></body></html>")
    comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", index_path=tmp_path / "i.sqlite"))
    comps.ingestor().ingest_paths([docs])
    evil = quote((docs / "evil.html").as_uri(), safe="")
    with _serving(comps) as base:
        with urlopen(f"{base}/file?uri={evil}") as resp:
            assert "sandbox" in resp.headers["Content-Security-Policy"]
            assert resp.headers["X-Content-Type-Options"] == "nosniff"
        for url in (f"{base}/file?uri={evil}", f"{base}/source?uri={evil}&section=Router"):
            page = browser.open(url)
            page.wait_for("document.readyState === 'complete'")
            time.sleep(1)  # a script would have run and its fetch answered by now
            assert "STOLEN" not in page.eval("document.title")
            assert page.eval("document.body.dataset.ran || ''") == ""
        assert page.eval("document.getElementById('doc').hasAttribute('sandbox')")


def test_a_pdf_added_on_the_page_is_listed_answered_highlighted_and_removed(browser, tmp_path):
    # Served over the bundled samples (nothing of the user's yet), as `citerag serve` is at first: the document
    # added goes into the user's own index, which the page reads from then on.
    import shutil

    from citerag.components import Components
    from citerag.settings import Settings

    def comps_at(name):
        return Components(Settings(data_dir=tmp_path / "data", embedder="hashing", index_path=tmp_path / name))

    samples, own = comps_at("samples.sqlite"), comps_at("index.sqlite")
    samples.ingestor().ingest_paths([SAMPLES / "faq-en.md"])
    own.embedder = samples.embedder
    pdf = tmp_path / "purifier-guide.pdf"
    shutil.copy(SAMPLES / "kumo-pure-300-manual-en.pdf", pdf)
    with _serving(samples, own) as base:
        page = browser.open(base)
        page.wait_for("document.querySelectorAll('#doclist li').length === 1")
        assert "bundled sample" in page.eval("document.getElementById('docs-note').innerText")
        page.choose_files("#pick", [pdf])
        page.wait_for("[...document.querySelectorAll('#jobs li')].some((li) => li.dataset.state === 'done')")
        assert "purifier-guide.pdf: added (" in page.eval("document.getElementById('jobs').innerText")
        page.wait_for("document.querySelector('#doclist li button.remove') !== null")
        assert page.eval("[...document.querySelectorAll('#doclist li')].map((li) => li.innerText).join()").startswith(
            "purifier-guide.pdf")  # the samples are no longer listed: the page reads the user's index
        stored = tmp_path / "data" / "documents" / "default" / "purifier-guide.pdf"
        assert stored.read_bytes() == pdf.read_bytes()
        page.screenshot(SHOTS / "added.png")

        page.eval("document.getElementById('q').value = 'What does error E2 mean?'; "
                  "document.querySelector('#ask button').click()")
        page.wait_for("document.querySelector('#answer a.cite') !== null")
        assert "purifier-guide.pdf" in page.eval("document.querySelector('#answer a.cite').href")
        page.follow("document.querySelector('#answer a.cite').href")
        page.wait_for("document.body && document.body.dataset.highlighted !== undefined")
        assert page.eval("document.body.dataset.page") == "5" and "page 5 of 5" in page.text()
        _assert_highlighted(page, "Error E2 means the air quality sensor is dirty.", "Clean the sensor window")
        page.screenshot(SHOTS / "highlighted.png")

        page = browser.open(base)
        page.wait_for("document.querySelector('#doclist li button.remove') !== null")
        page.eval("document.querySelector('#doclist li button.remove').click()")
        page.wait_for("document.querySelectorAll('#doclist li').length === 0")
        assert "purifier-guide.pdf removed" in page.eval("document.getElementById('jobs').innerText")
        assert not stored.exists()
        page.eval("document.getElementById('q').value = 'What does error E2 mean?'; "
                  "document.querySelector('#ask button').click()")
        page.wait_for("document.getElementById('sources-title').hidden && "
                      "document.getElementById('answer').innerText.length > 0")
        answered = page.eval("['answer', 'sources', 'related'].map((id) => document.getElementById(id).innerText)"
                             ".join()")
        assert "purifier-guide" not in answered and page.eval("document.querySelector('#answer a.cite')") is None
        assert "not answer" in answered or "no documents" in answered.lower(), answered


def test_a_file_dropped_on_the_page_is_added_and_a_refused_one_says_why(browser, tmp_path):
    from citerag.components import Components
    from citerag.settings import Settings

    comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", index_path=tmp_path / "i.sqlite",
                                serve_max_upload_bytes=1000))
    drop = """(() => {{ const t = new DataTransfer(); t.items.add(new File([{body}], {name}));
      document.getElementById('drop').dispatchEvent(new DragEvent('drop', {{dataTransfer: t, bubbles: true}}));
      return true; }})()"""
    with _serving(comps) as base:
        page = browser.open(base)
        page.wait_for("document.getElementById('docs-note').innerText === 'No documents yet.'")
        page.eval(drop.format(body="'The office opens at nine.'", name="'hours.txt'"))
        page.wait_for("document.querySelectorAll('#doclist li').length === 1")
        assert page.eval("document.querySelector('#doclist li').innerText").startswith("hours.txt")
        page.eval(drop.format(body="'x'.repeat(2000)", name="'big.txt'"))  # over the 1,000-byte cap
        page.eval(drop.format(body="'MZ'", name="'tool.exe'"))
        page.wait_for("document.querySelectorAll('#jobs li.refused').length === 2")
        said = page.eval("document.getElementById('jobs').innerText")
        assert "big.txt was not added: file is too large (2,000 bytes; the limit for a file added from this page " \
               "is 1,000" in said
        assert "tool.exe was not added: unsupported file type .exe" in said
        assert page.eval("document.querySelectorAll('#doclist li').length") == 1
