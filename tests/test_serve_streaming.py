"""`citerag serve` with a model on an OpenAI-compatible server shows the answer as the model writes it, then the
checked answer with its citations. The model is a local HTTP double speaking Chat Completions' server-sent events
(tests/test_openai_chat.py's), held in the middle of its answer until the page's stream has shown the first words:
the draft reaches the reader while the model is still writing, not when it is done."""

from __future__ import annotations

import json
import socket
import threading
import time
from contextlib import contextmanager
from http.client import HTTPConnection
from http.server import ThreadingHTTPServer
from urllib.parse import quote

import pytest

pytest.importorskip("openai")

from cdp_support import CHROMIUM, Browser
from test_openai_chat import ChatDouble

from conftest import SAMPLES

RELEASE = threading.Event()


class HeldChat(ChatDouble):
    """ChatDouble whose answer step sends its first words, then waits for RELEASE before the rest."""

    def do_POST(self):
        real_write = self.wfile.write
        answering = {"held": False}

        def write(data: bytes):
            real_write(data)
            if not answering["held"] and b"<text>" in data:
                answering["held"] = True
                self.wfile.flush()
                assert RELEASE.wait(120)

        self.wfile.write = write
        super().do_POST()


@contextmanager
def _chat_server():
    HeldChat.requests, HeldChat.forge = [], False
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), HeldChat)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        RELEASE.set()
        httpd.shutdown()


@contextmanager
def _serving(comps):
    import uvicorn

    from citerag.cli.serve import build_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(build_app(comps), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    for _ in range(400):
        if srv.started:
            break
        time.sleep(0.05)
    try:
        yield port
    finally:
        srv.should_exit = True
        thread.join(10)


def test_the_answer_is_shown_as_the_model_writes_it_then_with_its_citations(tmp_path):
    from citerag.components import Components
    from citerag.settings import Settings

    RELEASE.clear()
    with _chat_server() as url:
        comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", index_path=tmp_path / "i.sqlite",
                                    chat_model_provider="openai", openai_base_url=url, chat_model_id="llama3.1"))
        comps.ingestor().ingest_paths([SAMPLES / "kumo-pure-300-manual-en.pdf"])
        with _serving(comps) as port:
            conn = HTTPConnection("127.0.0.1", port, timeout=120)
            conn.request("GET", f"/api/ask?q={quote('What does error E2 mean?')}")
            resp = conn.getresponse()
            assert resp.status == 200
            seen: list[dict] = []
            while not any("draft" in e for e in seen):  # while the model is held mid-answer
                seen.append(json.loads(resp.readline()))
            drafted = "".join(e.get("draft", "") for e in seen)
            assert drafted and "E2" in drafted and "<" not in drafted  # words, never the answer's markup
            assert not any("text" in e or "sources_list" in e for e in seen)  # no citation before the end
            RELEASE.set()
            for line in resp:
                seen.append(json.loads(line))
    texts = [e for e in seen if "text" in e]
    assert texts and texts[0]["sources"][0]["uri"].endswith("kumo-pure-300-manual-en.pdf")
    final = "".join(e["text"] for e in texts).strip()
    assert final.startswith(drafted.strip()[:10]) and "E2" in final
    assert seen[-1]["answered"] and seen[-1]["sources_list"][0]["page"] == 5


@pytest.mark.parametrize("pieces, shown", [
    (["<thinking>look</thinking><ans", "wer><answer_part><te", "xt>Error E2 me", "ans the sensor &am",
      "p; window is dirty.</text><sources><source>S1-abc</source></sources></answer_part><answer_part><text>Clean",
      " it.</text>"], "Error E2 means the sensor & window is dirty. Clean it."),
    (["<function_calls><invoke>search</invoke></function_calls>"], ""),
])
def test_a_draft_is_the_answers_words_only(pieces, shown):
    from citerag.citations.drafts import drafts_to, listening

    heard: list = []
    with drafts_to(heard.append):
        draft = listening()
        for p in pieces:
            draft.heard(p)
    assert heard[0] is None and "".join(heard[1:]) == shown
    assert all("<" not in h and "&amp" not in h for h in heard[1:])
    assert listening() is None  # nobody listens outside the block


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_the_page_shows_the_draft_then_replaces_it_with_the_cited_answer(tmp_path):
    from citerag.components import Components
    from citerag.settings import Settings

    RELEASE.clear()
    browser = Browser(tmp_path / "chromium")
    try:
        with _chat_server() as url:
            comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing",
                                        index_path=tmp_path / "i.sqlite", chat_model_provider="openai",
                                        openai_base_url=url, chat_model_id="llama3.1"))
            comps.ingestor().ingest_paths([SAMPLES / "kumo-pure-300-manual-en.pdf"])
            with _serving(comps) as port:
                page = browser.open(f"http://127.0.0.1:{port}/?q={quote('What does error E2 mean?')}")
                page.wait_for("(document.querySelector('#answer .draft') || {}).textContent?.includes('E2')")
                assert page.eval("document.querySelector('#answer a.cite')") is None
                assert page.eval("document.getElementById('status').textContent").startswith("Writing")
                RELEASE.set()
                page.wait_for("document.querySelector('#answer a.cite') !== null")
                assert page.eval("document.querySelector('#answer .draft')") is None
                assert "E2" in page.eval("document.getElementById('answer').innerText")
    finally:
        browser.close()


def test_chat_json_says_the_draft_while_the_model_writes_then_the_cited_answer(tmp_path):
    """`citerag chat --json` as a script reads it: {"draft": …} lines while the model is held mid-answer, then the
    answer's line with its citations."""
    import os
    import subprocess
    import sys

    from citerag.components import Components
    from citerag.settings import Settings

    RELEASE.clear()
    with _chat_server() as url:
        env = {**os.environ, "CITERAG_DATA_DIR": str(tmp_path / "data"), "CITERAG_EMBEDDER": "hashing",
               "CITERAG_INDEX_PATH": str(tmp_path / "i.sqlite"), "CITERAG_CHAT_MODEL_PROVIDER": "openai",
               "CITERAG_OPENAI_BASE_URL": url, "CITERAG_CHAT_MODEL_ID": "llama3.1"}
        Components(Settings(data_dir=tmp_path / "data", embedder="hashing", index_path=tmp_path / "i.sqlite")) \
            .ingestor().ingest_paths([SAMPLES / "kumo-pure-300-manual-en.pdf"])
        proc = subprocess.Popen([sys.executable, "-c", "from citerag.cli import main; main()", "chat", "--json"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        try:
            proc.stdin.write("What does error E2 mean?\n")
            proc.stdin.flush()
            seen: list[dict] = []
            while not any(e.get("draft") for e in seen):  # while the model is held mid-answer
                line = proc.stdout.readline()
                assert line, proc.stderr.read()
                seen.append(json.loads(line))
            assert not any("answer" in e for e in seen)  # nothing cited before the model is done
            drafted = "".join(e.get("draft") or "" for e in seen)
            assert "E2" in drafted and "<" not in drafted
            RELEASE.set()
            out, _ = proc.communicate("/quit\n", timeout=300)
        finally:
            proc.kill()
    answer = json.loads(out.splitlines()[-1])
    assert answer["answered"] and answer["citations"][0]["page"] == 5 and "E2" in answer["answer"]


def test_chat_at_a_terminal_shows_the_draft_then_the_cited_answer(tmp_path):
    """The dimmed draft reaches the screen while the model is held mid-answer; the cited answer follows."""
    import os

    from test_chat_terminal import ENTER, Terminal

    from citerag.components import Components
    from citerag.settings import Settings

    RELEASE.clear()
    with _chat_server() as url:
        Components(Settings(data_dir=tmp_path / "data", embedder="hashing", index_path=tmp_path / "i.sqlite")) \
            .ingestor().ingest_paths([SAMPLES / "kumo-pure-300-manual-en.pdf"])
        term = Terminal({**os.environ, "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": "200",
                         "LINES": "50", "CITERAG_DATA_DIR": str(tmp_path / "data"), "CITERAG_EMBEDDER": "hashing",
                         "CITERAG_INDEX_PATH": str(tmp_path / "i.sqlite"), "CITERAG_CHAT_MODEL_PROVIDER": "openai",
                         "CITERAG_OPENAI_BASE_URL": url, "CITERAG_CHAT_MODEL_ID": "llama3.1"})
        try:
            term.expect(r"(^|\n)>")
            term.type("What does error E2 mean?" + ENTER)
            drafted = term.expect(r"Error E2")  # while the model is held: no citation can be on screen yet
            assert "Sources" not in drafted
            RELEASE.set()
            assert "page 5" in term.expect(r"Sources[\s\S]*page 5")
            term.type("/quit" + ENTER)
            assert term.close() == 0
        finally:
            if term.proc.poll() is None:
                term.close()
