"""The small frictions of issue 14, each reproduced: no --version, completion off, `<bool>` after plain flags,
"1 turns" / "1 sources", the trace page's raw-dict subtitle, its axis-less timeline, links without #page=N, and
document text reaching the terminal as markup or escape sequences in the new commands."""

from __future__ import annotations

import json
import re
from importlib.metadata import version

import pytest
from typer.testing import CliRunner

from citerag.cli import app
from citerag.components import Components
from citerag.runtimes.local import local_agent
from citerag.settings import Settings
from citerag.traces.report import build_turns, to_html
from citerag.traces.wording import plural

from conftest import SAMPLES

runner = CliRunner()


def test_version_and_completion():
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout.strip() == f"citerag {version('citerag')}"
    top = runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).stdout
    assert "--install-completion" in top and "--show-completion" in top


@pytest.mark.parametrize("command", ["ask", "ingest", "search", "docs", "chat", "reset"])
def test_help_shows_no_type_after_plain_flags(command):
    text = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}).stdout
    assert "--json" in text or "--yes" in text
    assert "<bool>" not in text
    assert "<path>" in text  # options that take a value still say what


@pytest.fixture(scope="module")
def one_turn(tmp_path_factory):
    comps = Components(Settings(data_dir=tmp_path_factory.mktemp("polish"), embedder="hashing"))
    comps.ingestor().ingest_paths([SAMPLES])
    return build_turns(list(local_agent(comps).invoke("What does error E2 mean?", session_id="s-1")))


def test_trace_page_subtitle_axis_and_page_links(one_turn):
    page = to_html(one_turn, {"turns": 1, "events": 12, "skipped_lines": 0, "seconds": 0.02})
    subtitle = re.search(r"<p class='meta subtitle'>(.*?)</p>", page).group(1)
    assert subtitle == "1 turn from 12 events, read in 0.02 s"  # was: 1 turns; {&quot;turns&quot;: 1, ...}
    assert "{" not in subtitle
    assert "class='row axis'" in page and page.count("class='tick'") == 5 and " ms</span>" in page
    manual = (SAMPLES / "kumo-pure-300-manual-en.pdf").resolve().as_uri()
    assert f"href='{manual}#page=5'" in page
    assert "1 model call;" in page or "model calls;" in page


def test_counts_are_worded_in_the_singular_for_one(one_turn):
    assert (plural(1, "turn"), plural(1, "source"), plural(2, "source")) == ("1 turn", "1 source", "2 sources")
    titles = [s.title for s in one_turn[0].steps if s.title.startswith("search returned")]
    assert titles and all(re.search(r"returned (1 source|\d+ sources):", t) for t in titles)


def test_document_text_is_not_interpreted_in_docs_and_chat(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "note [bold red]x.md").write_text(
        "# Title [bold red]loud\x1b[31mred\x1b[0m\n\nThe pump [/] is descaled every 90 days.\n", encoding="utf-8")
    env = {"COLUMNS": "250"}  # the real model: the question must be answered for its citation to show
    assert runner.invoke(app, ["ingest", str(folder)], env=env).exit_code == 0
    for args, stdin in ((["docs"], None), (["chat", "--agent", "none"], "How often is the pump descaled?\n")):
        r = runner.invoke(app, args, env=env, input=stdin)
        assert r.exit_code == 0, r.output
        assert "\x1b" not in r.output
        assert "[bold red]" in r.output  # shown as text, not turned into colour


def test_a_name_that_is_not_utf8_prints_on_a_strict_terminal(tmp_path):
    # Under PYTHONIOENCODING=utf-8 (or LANG=en_US.UTF-8) the name's surrogate escapes failed the print, after the
    # index had been written.
    import os
    import subprocess
    import sys

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / os.fsdecode(b"bad_\xff.txt")).write_text("The launch window opens at dawn.\n")
    env = {**os.environ, "CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path / "data"),
           "PYTHONIOENCODING": "utf-8"}
    for args in (["ingest", str(folder)], ["docs"]):
        done = subprocess.run([sys.executable, "-c", "from citerag.command import main; main()", *args],
                              capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "bad_\ufffd.txt" in done.stdout


def test_emoji_codes_bidi_overrides_and_line_breaks_in_names_are_shown_as_data(tmp_path):
    # ":x:" was printed as an emoji inside a quote, U+202E reordered the terminal's line, and a name holding a
    # line break printed a line of its own.
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "new\nline.md").write_text("# Vim :warning:\n\nIn vim type :x: to save and quit the editor.\n")
    (folder / "rtl\u202etxt.md").write_text("# Notes\n\nThe office opens at nine.\n")
    env = {"CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "250"}
    r = runner.invoke(app, ["ingest", str(folder)], env=env)
    assert r.exit_code == 0 and "new\\nline.md" in r.output and "\u202e" not in r.output
    r = runner.invoke(app, ["search", "vim save and quit", "--mode", "bm25"], env=env)
    assert ":x: to save" in r.output and ":warning:" in r.output and "❌" not in r.output


def test_config_file_in_data_dir_and_project_overridden_by_env(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    (data / "citerag.toml").write_text('namespace = "from-data-dir"\ndefault_top_k = 7\n')
    monkeypatch.setenv("CITERAG_DATA_DIR", str(data))
    assert (Settings().namespace, Settings().default_top_k) == ("from-data-dir", 7)
    project = tmp_path / "project"
    project.mkdir()
    (project / "citerag.toml").write_text('namespace = "from-project"\n')
    monkeypatch.chdir(project)
    assert (Settings().namespace, Settings().default_top_k) == ("from-project", 7)
    monkeypatch.setenv("CITERAG_NAMESPACE", "from-env")
    assert Settings().namespace == "from-env"


def test_a_broken_config_file_is_one_line_naming_the_file(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from citerag.cli import app

    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("CITERAG_DATA_DIR", str(data))
    (data / "citerag.toml").write_text("fusion = \n", encoding="utf-8")
    r = CliRunner().invoke(app, ["status"])
    assert r.exit_code == 1 and "citerag.toml" in r.output and "Traceback" not in r.output
    (data / "citerag.toml").write_text('fusion = "fastest"\n', encoding="utf-8")
    r = CliRunner().invoke(app, ["status"])
    assert r.exit_code == 1 and "setting fusion" in r.output and "citerag.toml" in r.output


def test_without_the_cli_extra_the_command_says_which_to_install(monkeypatch):
    # The base install (a Lambda function's) has no typer or rich: one line naming the extra, not a traceback.
    import importlib.util

    from citerag import command

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "typer" else real(name, *a))
    with pytest.raises(SystemExit) as stop:
        command.main()
    assert stop.value.code == command.NEEDS_EXTRA and '[cli]"' in command.NEEDS_EXTRA


def test_the_web_api_refuses_a_bad_question_with_400_and_says_its_true_length(tmp_path):
    # Errors came back as 200 with {"error"}, and a 21,000-character question was cut to 2,000 and answered.
    from starlette.testclient import TestClient

    from citerag.cli.serve import build_app

    comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", index_path=tmp_path / "i.sqlite"))
    comps.ingestor().ingest_paths([SAMPLES / "faq-en.md"])
    client = TestClient(build_app(comps), base_url="http://127.0.0.1:8765")
    for q, said in (("", "empty"), ("x" * 21_000, "21,000 characters long")):
        r = client.get("/api/ask", params={"q": q})
        assert r.status_code == 400 and said in r.json()["error"]
    assert client.get("/api/ask", params={"q": "How long is the warranty?"}).status_code == 200


@pytest.mark.parametrize(("bound", "host", "origin", "status"), [
    ("127.0.0.1", "127.0.0.1:8765", None, 200),
    ("127.0.0.1", "localhost:8765", "http://localhost:8765", 200),
    ("127.0.0.1", "[0:0:0:0:0:0:0:1]:8765", None, 200),
    ("127.0.0.1", "localhost:8765", "http://localhost:3000", 403),  # another local site
    ("127.0.0.1", "rebind.attacker.example:8765", None, 421),
    # Bound to every address: any IP address, never a domain name a page elsewhere could point here.
    ("0.0.0.0", "192.168.1.5:8765", "http://192.168.1.5:8765", 200),
    ("0.0.0.0", "rebind.attacker.example:8765", None, 421),
    ("0.0.0.0", "rebind.attacker.example:8765", "http://rebind.attacker.example:8765", 421),
    ("::", "[::1]:8765", None, 200),
    ("0:0:0:0:0:0:0:0", "192.168.1.5:8765", None, 200),  # every address, written out
    ("127.0.0.1", "[::ffff:127.0.0.1]:8765", None, 200),
    ("127.0.0.1", "127.0.0.1:80", "http://127.0.0.1", 200),  # the default port, left out of the Origin
    ("127.0.0.1", "127.0.0.1:8765", "http://127.0.0.1", 403),
])
def test_serve_answers_only_requests_for_its_own_address(bound, host, origin, status):
    import asyncio

    from citerag.cli.serve import _only_for

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    sent = []

    async def send(message):
        if message["type"] == "http.response.start":
            sent.append(message["status"])

    async def receive():
        return {"type": "http.request"}

    headers = [(b"host", host.encode())] + ([(b"origin", origin.encode())] if origin else [])
    asyncio.run(_only_for(app, bound)({"type": "http", "headers": headers}, receive, send))
    assert sent == [status]


def test_a_taken_port_is_refused_before_the_server_says_it_is_up(tmp_path):
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        r = CliRunner().invoke(app, ["serve", "--port", str(port)], env={"CITERAG_EMBEDDER": "hashing",
                                                                        "CITERAG_DATA_DIR": str(tmp_path)})
        assert r.exit_code == 1 and f"cannot listen on 127.0.0.1:{port}" in r.output
        assert "citerag on http" not in r.output and "--port" in r.output
        r = CliRunner().invoke(app, ["mcp", "--http", str(port)], env={"CITERAG_EMBEDDER": "hashing",
                                                                      "CITERAG_DATA_DIR": str(tmp_path)})
        assert r.exit_code == 1 and f"cannot listen on 127.0.0.1:{port}" in r.output
        assert "--http" in r.output and "--port" not in r.output  # mcp has no --port


def test_piped_output_keeps_each_line_whole(tmp_path):
    # `citerag ask … | cat` cut the source line and the quoted excerpt at 80 columns.
    r = CliRunner().invoke(app, ["ask", "What does error E2 mean?"],
                           env={"CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path), "COLUMNS": "80"})
    source = next(line for line in r.stdout.splitlines() if line.lstrip().startswith("[1]"))
    assert source.endswith("page 5 — Kumo Pure 300 Air Purifier - User Manual") and len(source) > 80


def test_messages_name_the_option_the_user_gave(tmp_path):
    env = {"CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path)}
    r = CliRunner().invoke(app, ["ask", "E2?", "--session-attr", "bad"], env=env)
    assert r.exit_code == 1 and "--session-attr 'bad': write key=value" in r.output  # it said --meta
    r = CliRunner().invoke(app, ["chat", "--session-attr", "bad"], input="", env=env)
    assert r.exit_code == 1 and "--session-attr 'bad'" in r.output
    r = CliRunner().invoke(app, ["ask", "E2?", "--agent", "bogus"], env=env)
    assert r.exit_code == 1 and "agentcore-local" in r.output
    r = CliRunner().invoke(app, ["bench-answers", str(tmp_path / "nope")], env=env)
    assert r.exit_code == 1 and "no such folder" in r.output and "JaQuAD" in r.output
    r = CliRunner().invoke(app, ["ask", "E2?", "--namespace", "bogus"], env=env)  # the samples indexed again
    assert r.exit_code == 1 and "--namespace 'bogus'" in r.output and "ingested nothing yet" in r.output
    r = CliRunner().invoke(app, ["ask", "E2?"], env={**env, "CITERAG_NAMESPACE": "team"})  # never typed --namespace
    assert r.exit_code == 1 and "CITERAG_NAMESPACE 'team'" in r.output
    r = CliRunner().invoke(app, ["chat", "--json"], input="/help\n", env=env)  # it printed nothing
    assert "/open N" in json.loads(r.stdout.splitlines()[0])["help"]


def test_chat_says_how_long_a_long_question_really_is(tmp_path):
    r = CliRunner().invoke(app, ["chat", "--json"], input="x" * 10_500 + "\n",
                           env={"CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path)})
    assert "the query is 10,500 characters long" in r.output
