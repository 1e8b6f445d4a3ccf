"""The command line as a user runs it (typer's runner, real model where answers are checked)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citerag.cli import app
from citerag.documents.loaders import load_path

from conftest import SAMPLES

runner = CliRunner()


def run(*args, env=None):
    result = runner.invoke(app, list(args), env=env)
    assert "Traceback" not in result.output
    return result


def test_ask_ingests_samples_on_first_use_and_cites_a_pdf_page():
    r = run("ask", "What does error E2 mean?", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["answered"] is True
    cite = data["citations"][0]
    assert cite["uri"].endswith("kumo-pure-300-manual-en.pdf") and cite["page"] == 5
    assert cite["source_id"].startswith("S") and cite["excerpt"] in data["answer"]
    # Every sentence of the answer is copied from the cited page: nothing is invented.
    page_text = load_path(SAMPLES / "kumo-pure-300-manual-en.pdf").sections[4].text
    assert cite["excerpt"] in page_text


def test_ask_in_japanese_answers_from_japanese_sources():
    r = run("ask", "エラーE2は何を意味しますか？", "--json")
    data = json.loads(r.stdout)
    assert data["answered"]
    assert "センサー" in data["answer"]
    assert all(c["uri"].endswith("-ja.pdf") or "ja" in c["uri"] for c in data["citations"])


def test_ask_says_plainly_when_the_documents_do_not_answer():
    r = run("ask", "What is the capital of France?", "--json")
    data = json.loads(r.stdout)
    # Nothing search found bears on it: no place to look either.
    assert data == {"answer": "The documents do not answer this question.", "answered": False, "citations": [],
                    "sentences": [], "related": []}
    r = run("ask", "東京の人口は？")
    assert "ドキュメントには" in r.stdout


@pytest.mark.parametrize("agent", ["local", "none", "agentcore-local"])
def test_a_question_not_answered_names_where_search_found_passages(agent):
    # A near miss (the FAQ on the app says nothing of voice assistants), or a fact worded otherwise than the
    # question: "not found" alone left the user nowhere; the files and sections search found are where to look.
    r = run("ask", "Does the Kumo Pure 300 work with Alexa?", "--agent", agent, "--json")
    data = json.loads(r.stdout)
    assert not data["answered"] and data["citations"] == []
    assert data["related"] and all(set(p) == {"uri", "title", "page", "section"} for p in data["related"])
    assert data["related"][0]["uri"].endswith("faq-en.md") and "App and Wi-Fi" in data["related"][0]["section"]
    assert len({(p["uri"], p["page"], p["section"]) for p in data["related"]}) == len(data["related"]) <= 3
    r = run("ask", "Does the Kumo Pure 300 work with Alexa?", "--agent", agent)
    assert "The documents do not answer this question." in r.stdout and "Where to look" in r.stdout
    assert "faq-en.md, Kumo Pure 300 FAQ > App and Wi-Fi" in " ".join(r.stdout.split())
    assert "Sources" not in r.stdout  # nothing is cited: no sentence of theirs is claimed
    # An answer lists its sources, and no place to look.
    answered = json.loads(run("ask", "Can I wash the HEPA filter?", "--agent", agent, "--json").stdout)
    assert answered["answered"] and answered["related"] == []


def test_ask_human_output_lists_numbered_sources_with_pages():
    r = run("ask", "How long is the warranty?")
    assert r.exit_code == 0
    assert "[1]" in r.stdout and "page 5" in r.stdout and "Sources" in r.stdout


def test_ask_human_output_gives_a_markdown_source_its_section():
    r = run("ask", "Can I wash the HEPA filter?", env={"COLUMNS": "250"})
    assert r.exit_code == 0
    line = next(ln for ln in r.stdout.splitlines() if "faq-en.md" in ln)
    assert line.endswith("faq-en.md, Kumo Pure 300 FAQ > Filters > Can I wash the HEPA filter?")  # title not repeated


def test_ask_without_agent_steps_marks_sentences_with_source_ids():
    r = run("ask", "How long is the warranty?", "--agent", "none", "--json")
    data = json.loads(r.stdout)
    assert data["citations"][0]["source_id"] == "S1" and "[S1]" in data["answer"]


def test_ask_trace_prints_the_agent_steps(tmp_path):
    r = run("ask", "What does error E2 mean?", "--trace", "--save-trace", str(tmp_path / "t.json"),
            env={"COLUMNS": "250"})  # the steps table's title and cells, unwrapped whatever the terminal
    assert "agent steps" in r.stdout and "tool-call" in r.stdout and "search_documents" in r.stdout
    assert json.loads((tmp_path / "t.json").read_text())["format"] == "citerag-trace/1"


def test_trace_options_that_would_do_nothing_are_refused_not_ignored(tmp_path):
    # --trace with --agent none (or --filter) printed an empty table and saved "0 turns"; with --json, --trace and
    # --open were dropped without a word.
    for args, said in ((("--filter", "lang=en", "--trace"), "--agent none (which --filter implies) takes none"),
                       (("--agent", "none", "--save-trace", str(tmp_path / "t.json")), "record an agent's steps"),
                       (("--json", "--trace"), "leave out --trace and --open"),
                       (("--json", "--open", "1"), "leave out --trace and --open")):
        r = runner.invoke(app, ["ask", "How long is the warranty?", *args], env={"CITERAG_EMBEDDER": "hashing"})
        assert r.exit_code == 1 and said in " ".join(r.output.split()), r.output
    assert not (tmp_path / "t.json").exists()


FAST = {"CITERAG_EMBEDDER": "hashing"}


def test_ingest_search_status_json(tmp_path):
    index = str(tmp_path / "i.sqlite")
    r = run("ingest", str(SAMPLES), "--index", index, "--json", env=FAST)
    data = json.loads(r.stdout)
    assert data["summary"]["added"] == 6 and data["summary"]["failed"] == 0
    r = run("ingest", str(SAMPLES), "--index", index, "--json", env=FAST)
    data = json.loads(r.stdout)
    assert data["summary"]["unchanged"] == 6 and data["embedded"] == 0

    r = run("search", "HEPA filter", "--top-k", "3", "--index", index, "--json", env=FAST)
    rows = json.loads(r.stdout)
    assert len(rows) == 3
    assert set(rows[0]) >= {"source_id", "text", "score", "uri", "title", "page", "doc_id"}
    assert [x["source_id"] for x in rows] == ["S1", "S2", "S3"]

    r = run("search", "filter", "--filter", "lang=ja", "--filter", "page>=4", "--index", index, "--json", env=FAST)
    assert all(x["page"] >= 4 and x["uri"].endswith("-ja.pdf") for x in json.loads(r.stdout))

    r = run("status", "--index", index, "--json", env=FAST)
    st = json.loads(r.stdout)
    assert st["documents"] == 6 and st["chunks"] > 6 and st["size_bytes"] > 0
    assert "(default)" in st["namespaces"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "   "], "the query is empty"),
        (["ask", ""], "the query is empty"),
        (["search", "x", "--filter", "page>=two"], "needs a number"),
        (["search", "x", "--filter", '{"page": {"$near": 1}}'], "unknown operator $near"),
        (["search", "x", "--mode", "fuzzy"], "choose hybrid, dense or bm25"),
        (["bench", "/nonexistent"], "is not a benchmark dataset"),
        (["ingest", "/nonexistent/file.pdf"], "no such file"),
        (["ingest", "x", "--meta", "novalue"], "write key=value"),
    ],
)
def test_user_errors_are_one_clear_line(args, message):
    r = run(*args, env=FAST)
    assert r.exit_code == 1
    assert message in r.output


def test_corrupt_and_locked_index_errors(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"garbage" * 500)
    r = run("search", "x", "--index", str(bad), "--json", env=FAST)
    assert r.exit_code == 1 and "corrupt" in json.loads(r.stdout)["error"]

    good = tmp_path / "good.sqlite"
    run("ingest", str(SAMPLES / "faq-en.md"), "--index", str(good), env=FAST)
    holder = sqlite3.connect(str(good), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        r = run("ingest", str(SAMPLES / "faq-ja.md"), "--index", str(good), env={**FAST})
        assert r.exit_code == 3 and "locked by another process" in r.output  # a system reason
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_ingest_prints_failures_on_stderr_and_one_summary_line(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nThe filter is replaced every six months.\n", encoding="utf-8")
    (folder / "[red]broken.pdf").write_bytes(b"%PDF-1.7\n%%EOF garbage")
    r = run("ingest", str(folder), "--index", str(tmp_path / "i.sqlite"), env=FAST)
    assert r.exit_code == 0
    assert "failed" in r.stderr and "[red]broken.pdf" in r.stderr and "corrupt" in r.stderr
    assert "broken" not in r.stdout
    summary = r.stdout.strip().splitlines()[-1]
    assert summary.startswith("1 added, 1 failed; 1 passage indexed, 1 embedded in ")


def test_ask_json_gives_each_cited_sentence_with_its_span_sources_and_location(tmp_path):
    # Issue 11: `--json` gives each answer sentence with its span and sources; a Markdown source has its section.
    from typer.testing import CliRunner

    from citerag.cli import app

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "policy.md").write_text("# Policy\n\n## Refunds\n\nRefunds take 14 days after the return arrives.\n",
                                      encoding="utf-8")
    env = {"CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path / "data")}
    assert CliRunner().invoke(app, ["ingest", str(folder)], env=env).exit_code == 0
    r = CliRunner().invoke(app, ["ask", "How long do refunds take?", "--json"], env=env)
    out = json.loads(r.stdout)
    assert out["answered"] and out["sentences"]
    ids = {c["source_id"]: c for c in out["citations"]}
    for s in out["sentences"]:
        assert out["answer"][s["start"]:s["end"]] == s["text"] and set(s["sources"]) <= set(ids)
    assert ids[out["sentences"][0]["sources"][0]]["section"] == "Policy > Refunds"



def test_the_web_page_flags_text_that_cites_nothing_unless_it_says_the_documents_do_not_answer():
    # The page's status line said "The documents do not answer" a second time under the answer that already said
    # it; dropping it for every answer without citations would leave a model's uncited claim unflagged.
    from citerag.cli.serve import says_not_found

    assert says_not_found("The documents do not answer this question.")
    assert says_not_found("ドキュメントには、この質問への回答が見つかりませんでした。")
    assert says_not_found("ドキュメントには、この質問への日本語の回答が見つかりませんでした。"
                          "検索で見つかった箇所は英語の文書（ls）にあります。")
    assert says_not_found("I could not answer this from the documents.")
    assert not says_not_found("Replacement filters cost about $40.") and not says_not_found("")



EVENTS = Path(__file__).resolve().parents[1] / "events"


def test_invoke_runs_the_search_handler_on_an_event_file():
    r = run("invoke", "search", str(EVENTS / "search-basic.json"), "--json")
    assert r.exit_code == 0, r.output
    response = json.loads(r.stdout)["response"]
    body = json.loads(response["functionResponse"]["responseBody"]["TEXT"]["body"])
    assert body["results"] and all(hit["source_id"] and hit["uri"] for hit in body["results"])
    assert any("HEPA" in hit["text"] for hit in body["results"])


def test_invoke_json_is_the_response_alone_on_stdout(tmp_path):
    # The handler's warning ("rejected event") was a JSON log line on stdout before the response.
    import subprocess
    import sys

    env = {**os.environ, "CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path / "data")}
    not_an_event = tmp_path / "t.json"
    not_an_event.write_text("{}")
    for handler, event, key in (("search", not_an_event, "messageVersion"),
                                ("ingest", EVENTS / "ingest-poison.json", "batchItemFailures")):
        done = subprocess.run([sys.executable, "-c", "from citerag.command import main; main()", "invoke", handler,
                               str(event), "--json"],
                              capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        assert key in json.loads(done.stdout) and done.stderr  # the warnings, on stderr


def test_invoke_ingest_refuses_a_missing_bucket_folder_and_an_event_that_is_not_sqs(tmp_path):
    # Both reported success ({"batchItemFailures": []}) and left an empty index behind.
    r = run("invoke", "ingest", str(EVENTS / "ingest-created.json"), "--bucket-dir", str(tmp_path / "nope"))
    assert r.exit_code == 1 and "no such folder" in r.output
    (tmp_path / "e.json").write_text("{}")
    r = run("invoke", "ingest", str(tmp_path / "e.json"))
    assert r.exit_code == 1 and "not an SQS event" in r.output


def test_replaying_the_sample_ingest_event_leaves_the_users_index_alone(tmp_path):
    # The event names two bundled samples; replayed with no --index, they go to an index of their own, so `ask`
    # goes on answering from every sample instead of from those two files alone.
    r = run("invoke", "ingest", str(EVENTS / "ingest-created.json"))
    assert r.exit_code == 0, r.output
    replayed = tmp_path / "data" / "replayed-events.sqlite"
    assert f"citerag docs --index {replayed}" in r.stdout
    assert not (tmp_path / "data" / "index.sqlite").exists()
    status = json.loads(run("status", "--json").stdout)
    assert status["samples"] is True and status["documents"] > 2
    docs = json.loads(run("docs", "--index", str(replayed), "--json").stdout)["documents"]
    assert sorted(d["source"].rsplit("/", 1)[-1] for d in docs) == ["faq-en.md", "kumo-pure-300-manual-ja.pdf"]
    # A folder of one's own standing in for the bucket is ingested where --index says.
    folder = tmp_path / "bucket"
    folder.mkdir()
    (folder / "faq-en.md").write_text("# FAQ\n\nRefunds take five business days.\n", encoding="utf-8")
    index = tmp_path / "mine.sqlite"
    r = run("invoke", "ingest", str(EVENTS / "ingest-created.json"), "--bucket-dir", str(folder), "--index",
            str(index), "--json")
    assert r.exit_code == 0, r.output
    docs = json.loads(run("docs", "--index", str(index), "--json").stdout)["documents"]
    assert [d["source"].rsplit("/", 1)[-1] for d in docs] == ["faq-en.md"]



def test_replayed_events_go_to_the_index_the_environment_names(tmp_path, monkeypatch):
    index = tmp_path / "named.sqlite"
    monkeypatch.setenv("CITERAG_INDEX_PATH", str(index))
    r = run("invoke", "ingest", str(EVENTS / "ingest-created.json"), "--json")
    assert r.exit_code == 0, r.output
    assert index.exists() and not (tmp_path / "data" / "replayed-events.sqlite").exists()


def test_ingest_builds_the_search_graph_and_a_search_only_reads_it(tmp_path, monkeypatch):
    """With CITERAG_INDEX_ANN=hnsw the graph is built by ingest, which says how long it took; a later search
    uses it and builds nothing."""
    from citerag.adapters import ann

    monkeypatch.setattr(ann, "MIN_ROWS", 1)
    index = tmp_path / "i.sqlite"
    env = {**FAST, "CITERAG_INDEX_ANN": "hnsw"}
    r = run("ingest", str(SAMPLES), "--index", str(index), "--json", env=env)
    (built,) = json.loads(r.stdout)["search_graph"]
    assert built["rows"] == built["added"] > 6 and built["seconds"] >= 0
    (saved,) = Path(str(index) + "-snapshot").glob("ns-*/e*/hnsw.json")
    before = saved.stat().st_mtime_ns
    r = run("search", "HEPA filter", "--index", str(index), "--json", env=env)
    assert json.loads(r.stdout)
    assert saved.stat().st_mtime_ns == before
    r = run("ingest", str(SAMPLES), "--index", str(index), "--json", env=env)
    assert json.loads(r.stdout)["search_graph"] == []  # nothing new to add


def test_ingest_prepares_no_answer_statement_longer_than_a_passage(tmp_path):
    # A 2 MB text file of one line with no full stop spent 9 minutes in "Preparing answers" embedding that line as
    # one statement, which the answerer, reading statements out of passages of at most the chunk size, never meets.
    from citerag.cli.common import answer_statements
    from citerag.documents.chunking import chunk_document

    doc = tmp_path / "log.txt"
    doc.write_text("The backup runs at midnight.\n\n" + "word " * 4000 + "\n", encoding="utf-8")
    uri = doc.resolve().as_uri()
    prepared = answer_statements([uri], 600)
    assert prepared and all("word word" not in s for s in prepared)
    assert any("The backup runs at midnight." in s for s in prepared)
    loaded = load_path(doc)
    passages = [c.text for c in chunk_document(loaded, max_chars=600, overlap_chars=0)]
    assert max(len(p) for p in passages) <= 600  # what the answerer reads statements out of is never longer
    assert len(answer_statements([uri])) == len(prepared) + 1  # without a bound the line was prepared too


def test_ctrl_c_during_ingest_says_what_the_index_keeps(tmp_path, monkeypatch):
    from citerag.ingestion.ingestor import Ingestor

    def pressed_ctrl_c(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Ingestor, "ingest_paths", pressed_ctrl_c)
    r = run("ingest", str(SAMPLES / "faq-en.md"), "--index", str(tmp_path / "i.sqlite"), env=FAST)
    assert r.exit_code == 130
    assert "interrupted; the index keeps every document that finished" in r.output


def test_ingest_summary_counts_passages_and_answer_statements_apart(tmp_path):
    # "396 passages indexed, 2667 embedded": the answerer's statements, embedded after the passages, were counted
    # as if they were passages embedded.
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "pump.md").write_text("# Pump\n\nThe pump is descaled every 90 days. Its seal is replaced every year. "
                                    "The filter is rinsed once a month.\n", encoding="utf-8")
    index = str(tmp_path / "i.sqlite")
    r = run("ingest", str(folder), "--index", index, "--json")
    data = json.loads(r.stdout)
    assert data["passages"] == 1 and data["statements_prepared"] == 3
    assert data["embedded"] == data["passages"] + data["statements_prepared"]
    (folder / "pump.md").write_text("# Pump\n\nThe pump is descaled every 60 days.\n", encoding="utf-8")
    r = run("ingest", str(folder), "--index", index)
    summary = r.stdout.strip().splitlines()[-1]
    assert summary.startswith("1 replaced; 1 passage indexed, 1 embedded, 1 answer statement prepared in "), summary
