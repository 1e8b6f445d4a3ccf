"""`citerag trace`: turns rebuilt from CloudWatch model-invocation logs (moto) and from saved InvokeAgent traces."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from citerag.adapters import aws
from citerag.cli import app
from citerag.components import Components
from citerag.runtimes.local import local_agent
from citerag.settings import Settings
from citerag.testing.invocation_records import records_from_events
from citerag.traces.invocation_logs import read_export, records_to_events
from citerag.traces.report import build_turns, to_html
from citerag.traces.tracefile import save

from conftest import SAMPLES

GROUP = "/aws/bedrock/citerag-model-invocations"


@pytest.fixture(scope="module")
def conversation(tmp_path_factory):
    comps = Components(Settings(data_dir=tmp_path_factory.mktemp("trace"), embedder="hashing"))
    comps.ingestor().ingest_paths([SAMPLES])
    rt = local_agent(comps)
    turns = [list(rt.invoke(q, session_id="sess-1")) for q in ("How long is the warranty?",
                                                                 "Who won the 2022 World Cup?")]
    start = datetime.now(UTC) - timedelta(minutes=10)
    records = [r for i, evs in enumerate(turns)
               for r in records_from_events(evs, session_id="sess-1", start=start + timedelta(minutes=i))]
    return turns, records


@pytest.fixture
def logs(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    aws.client.cache_clear()
    with mock_aws():
        client = boto3.client("logs", region_name="ap-northeast-1")
        client.create_log_group(logGroupName=GROUP)
        client.create_log_stream(logGroupName=GROUP, logStreamName="aws/bedrock/modelinvocations")
        yield client
    aws.client.cache_clear()


def _put(client, group, messages):
    now = int(time.time() * 1000)
    client.put_log_events(logGroupName=group, logStreamName="aws/bedrock/modelinvocations",
                          logEvents=[{"timestamp": now + i, "message": m} for i, m in enumerate(messages)])


def test_turns_rebuilt_from_model_invocation_logs(conversation, logs):
    _turns_events, records = conversation
    _put(logs, GROUP, [json.dumps(r) for r in records] + ["not json at all", '{"schemaType": "ModelInvo'])
    r = CliRunner().invoke(app, ["trace", "--log-group", GROUP, "--since", "1h", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["stats"]["skipped_lines"] == 2 and len(data["turns"]) == 2
    first, second = data["turns"]
    assert first["question"] == "How long is the warranty?"
    kinds = [s["kind"] for s in first["steps"]]
    assert kinds.count("tool-call") == 1 and "answer" in kinds and kinds[0] == "model"
    obs = next(s for s in first["steps"] if s["kind"] == "observation")
    assert obs["detail"]["sources"] and obs["detail"]["sources"][0]["uri"].startswith("file://")
    assert first["answer"]["citations"][0]["sources"][0]["page"] == 5
    in_tokens = sum(rec["input"]["inputTokenCount"] for rec in records[: first["model_calls"]])
    assert first["input_tokens"] == in_tokens
    # The unanswerable question: two searches (the first answered with a REPROMPT hint), then "not found".
    assert [s["kind"] for s in second["steps"]].count("tool-call") == 2
    assert any("REPROMPT" in s["title"] for s in second["steps"] if s["kind"] == "observation")


def test_lambda_log_lines_go_under_the_tool_call(conversation, logs):
    _, records = conversation
    _put(logs, GROUP, [json.dumps(r) for r in records])
    lambda_group = "/aws/lambda/citerag-search"
    logs.create_log_group(logGroupName=lambda_group)
    logs.create_log_stream(logGroupName=lambda_group, logStreamName="aws/bedrock/modelinvocations")
    line = {"level": "ERROR", "message": "search failed", "correlation_id": "sess-1",
            "timestamp": datetime.now(UTC).isoformat(), "service": "citerag-search"}
    _put(logs, lambda_group, [json.dumps(line)])
    r = CliRunner().invoke(app, ["trace", "--log-group", GROUP, "--with-lambda-logs", lambda_group, "--json"])
    data = json.loads(r.stdout)
    calls = [s for t in data["turns"] for s in t["steps"] if s["kind"] == "tool-call"]
    assert any(log["message"] == "search failed" for s in calls for log in s["detail"].get("lambda_logs", []))


@pytest.mark.parametrize(("args", "message"), [
    (["--log-group", "/no/such/group"], "no log group named"),
    (["--log-group", GROUP, "--since", "5m"], "has no events"),
    (["--log-group", GROUP, "--since", "soon"], "write a duration"),
    ([], "either a trace file or --log-group"),
])
def test_log_errors_are_clear(logs, args, message):
    r = CliRunner().invoke(app, ["trace", *args])
    assert r.exit_code == 1 and message in r.output and "Traceback" not in r.output


def test_access_denied_names_the_permission():
    from botocore.exceptions import ClientError

    from citerag.errors import CiteragError
    from citerag.traces.invocation_logs import read_log_group

    class Denied:
        def get_paginator(self, _):
            class P:
                def paginate(self, **kw):
                    raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "FilterLogEvents")
            return P()

    with pytest.raises(CiteragError, match="logs:FilterLogEvents"):
        read_log_group(Denied(), GROUP, timedelta(hours=1))


def test_saved_trace_with_guardrail_intervention_and_failure(conversation, tmp_path):
    turns_events, _ = conversation
    events = list(turns_events[0])
    part = dict(events[0]["trace"])
    events.insert(1, {"trace": {**part, "trace": {"guardrailTrace": {
        "traceId": "g-1", "action": "INTERVENED", "inputAssessments": [{"contentPolicy": {"filters": [
            {"type": "PROMPT_ATTACK", "confidence": "HIGH", "action": "BLOCKED"}]}}]}}}})
    events.append({"trace": {**part, "trace": {"failureTrace": {"traceId": "f-1", "failureReason": "Lambda timed out",
                                                                "failureCode": 500}}}})
    save(tmp_path / "t.json", question="q", agent="local", events=events)
    r = CliRunner().invoke(app, ["trace", str(tmp_path / "t.json"), "--json", "--html", str(tmp_path / "t.html")])
    steps = json.loads(r.stdout)["turns"][0]["steps"]
    assert any(s["kind"] == "guardrail" and "INTERVENED" in s["title"] for s in steps)
    assert any(s["kind"] == "failure" and "Lambda timed out" in s["title"] for s in steps)
    page = (tmp_path / "t.html").read_text()
    assert "class='timeline'" in page and "class='citation'" in page and "<details class='prompt'>" in page
    assert "http://" not in page.replace("http://www.w3.org", "") and "<script src" not in page  # works offline


def test_export_file_and_unreadable_lines(conversation, tmp_path):
    _, records = conversation
    export = {"events": [{"message": json.dumps(r)} for r in records] + [{"message": "garbage"}]}
    recs, skipped = read_export(export)
    assert len(recs) == len(records) and skipped == 1
    (tmp_path / "export.json").write_text(json.dumps(export))
    r = CliRunner().invoke(app, ["trace", str(tmp_path / "export.json")])
    assert r.exit_code == 0 and "turn 1" in r.stdout and "1 unreadable log line skipped" in r.stdout


def test_thousand_turns(conversation):
    _, records = conversation
    many = [dict(r, timestamp=f"2026-11-21T{h:02d}:{m:02d}:{s:02d}.{i:03d}Z")
            for n in range(500) for i, r in enumerate(records)
            for h, m, s in [(*divmod(divmod(n * 7, 60)[0], 60), divmod(n * 7, 60)[1])]]
    turns = build_turns(records_to_events(many))
    assert len(turns) == 1000


@pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("chromium-browser")), reason="no Chromium")
def test_html_renders_in_headless_chromium(conversation, tmp_path):
    turns_events, _ = conversation
    turns = build_turns(turns_events[0])
    page = tmp_path / "trace.html"
    page.write_text(to_html(turns, {}), encoding="utf-8")
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'p'}"]
    shot = tmp_path / "trace.png"
    subprocess.run([exe, *flags, f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000
    dom = subprocess.run([exe, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert "class=\"timeline\"" in dom.stdout and "class=\"citation\"" in dom.stdout


def test_a_saved_trace_shows_a_markdown_sources_section(tmp_path):
    saved, page = tmp_path / "t.json", tmp_path / "t.html"
    env = {"COLUMNS": "300"}
    r = CliRunner().invoke(app, ["ask", "Can I wash the HEPA filter?", "--save-trace", str(saved)], env=env)
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["trace", str(saved), "--html", str(page)], env=env)
    section = "Kumo Pure 300 FAQ > Filters > Can I wash the HEPA filter?"
    assert r.exit_code == 0 and f"faq-en.md, {section}" in r.stdout  # the answer's citation
    assert f"Kumo Pure 300 FAQ, {section}" in r.stdout  # the search step's source
    assert f"Kumo Pure 300 FAQ</a>, {section.replace('>', '&gt;')}" in page.read_text()
    # In an 80-column terminal a stage and a token count stay on their line ("pre_pr / ocessi / ng" was one).
    narrow = CliRunner().invoke(app, ["trace", str(saved)], env={"COLUMNS": "80"})
    assert "│ pre_processing" in narrow.stdout and "│ orchestration" in narrow.stdout
    assert re.search(r"│ +\d+/\d+ │", narrow.stdout)
    # Narrower still, the stage joins the step's text, which keeps its room (it shrank to nothing at 50).
    narrower = CliRunner().invoke(app, ["trace", str(saved)], env={"COLUMNS": "50"})
    assert "│ pre_processing model" in narrower.stdout and "stage" not in narrower.stdout


def test_a_trace_that_cannot_be_written_or_read_is_one_error_line_and_the_answer_is_not_lost(tmp_path):
    # --save-trace into a missing folder raised FileNotFoundError after the answer was computed, which was never
    # shown; a trace whose events are not objects, or whose fields are null, raised from deep in the report.
    env = {"CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path / "data")}
    runner = CliRunner()
    for target, said in ((tmp_path / "nodir" / "t.json", "does not exist"), (tmp_path, "a folder; name a file")):
        r = runner.invoke(app, ["ask", "What does error E2 mean?", "--save-trace", str(target), "--json"], env=env)
        assert r.exit_code == 1 and said in json.loads(r.stdout)["error"]
    saved = tmp_path / "t.json"
    assert runner.invoke(app, ["ask", "What does error E2 mean?", "--save-trace", str(saved)], env=env).exit_code == 0
    r = runner.invoke(app, ["trace", str(saved), "--html", str(tmp_path / "nodir" / "x.html"), "--json"], env=env)
    assert r.exit_code == 1 and "does not exist" in json.loads(r.stdout)["error"]
    data = json.loads(saved.read_text())
    for name, events, said in (("w2.json", "x", "not a list of objects"), ("w3.json", [1, 2], "not a list of objects"),
                               ("w4.json", [{k: ({kk: None for kk in v} if isinstance(v, dict) else v)
                                             for k, v in e.items()} for e in data["events"]],
                                "cannot read")):
        (tmp_path / name).write_text(json.dumps({**data, "events": events}))
        r = runner.invoke(app, ["trace", str(tmp_path / name), "--json"], env=env)
        assert r.exit_code == 1 and said in json.loads(r.stdout)["error"], r.output
    # Edited by hand: a number for the format, a chunk that is text, bytes that are not base64, a null question on
    # a runtime's trace, spans of the wrong shape. Each raised from deep in the reader.
    runtime = {**data, "events": [{"type": "answer", "text": "x", "answered": False, "citations": []}],
               "question": None}
    for name, content, said in (
            ("e1.json", {**data, "format": 5}, "holds no"),
            ("e2.json", {**data, "events": [*data["events"], {"chunk": "abc"}]}, "not an object"),
            ("e3.json", {**data, "events": [{"chunk": {"bytes": "!!!notbase64"}}]}, "not base64"),
            ("e4.json", {"resourceSpans": "x"}, "json"),
            ("e5.json", {}, "e5.json")):
        (tmp_path / name).write_text(json.dumps(content))
        r = runner.invoke(app, ["trace", str(tmp_path / name), "--json"], env=env)
        assert r.exit_code == 1 and said in json.loads(r.stdout)["error"], r.output
    (tmp_path / "rt.json").write_text(json.dumps(runtime))
    r = runner.invoke(app, ["trace", str(tmp_path / "rt.json"), "--json"], env=env)
    assert r.exit_code == 0 and len(json.loads(r.stdout)["turns"]) == 1
