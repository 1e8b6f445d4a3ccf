"""AgentCore turns in the step view: real spans from a real turn (OpenTelemetry SDK, Strands' own instrumentation),
serialized the way AgentCore stores them (bedrock-agentcore's ADOT serializer -> the aws/spans log group in moto)
and as an OTLP/JSON export, then read back by `citerag trace`; and saved traces of the runtime's events."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from moto import mock_aws
from opentelemetry import trace as otel
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typer.testing import CliRunner

from citerag.adapters import aws
from citerag.cli import app as cli_app
from citerag.runtimes.agentcore.events import TurnRequest
from citerag.traces.agentcore import read_span_documents, turns_from_spans
from citerag.traces.tracefile import save

from agentcore_support import components

SESSION = "f3b0c2d4-0000-4000-8000-00000000abcd"


@pytest.fixture(scope="module")
def spans(tmp_path_factory):
    exporter = InMemorySpanExporter()
    provider = otel.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # the process-wide provider can be set once
        provider = TracerProvider()
        otel.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = components(tmp_path_factory.mktemp("spans")).agentcore_agent()

    async def turn():
        return [e async for e in agent.stream(TurnRequest(question="What does error E2 mean?", session_id=SESSION))]

    events = asyncio.run(turn())
    finished = [s for s in exporter.get_finished_spans()
                if s.attributes.get("session.id") == SESSION or s.name.startswith(("chat", "execute_tool"))]
    return events, finished


def adot_documents(raw_spans):
    from bedrock_agentcore.evaluation.span_to_adot_serializer.strands_converter import convert_strands_to_adot

    return convert_strands_to_adot(raw_spans)


def otlp_json(raw_spans):
    """OTLP/JSON (opentelemetry-proto's JSON mapping: ids as hex, attributes as [{key, value: {<type>Value}}],
    64-bit integers as strings)."""
    def value(v):
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        if isinstance(v, float):
            return {"doubleValue": v}
        if isinstance(v, (list, tuple)):
            return {"arrayValue": {"values": [value(x) for x in v]}}
        return {"stringValue": str(v)}

    spans = [{"traceId": f"{s.context.trace_id:032x}", "spanId": f"{s.context.span_id:016x}",
              "parentSpanId": f"{s.parent.span_id:016x}" if s.parent else "", "name": s.name, "kind": 1,
              "startTimeUnixNano": str(s.start_time), "endTimeUnixNano": str(s.end_time),
              "attributes": [{"key": k, "value": value(v)} for k, v in s.attributes.items()],
              "status": {}} for s in raw_spans]
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "x"},
                                                                               "spans": spans}]}]}


def check_turn(turn, events):
    final = events[-1]
    assert turn.session_id == SESSION and turn.question == "What does error E2 mean?"
    assert turn.answer.text == final["text"] and turn.answer.citations[0].sources[0].uri.endswith("manual-en.pdf")
    kinds = [s.kind for s in turn.steps]
    assert kinds[0] == "pre-processing" and "model" in kinds and "tool-call" in kinds
    assert kinds.index("tool-call") < kinds.index("post-processing") < kinds.index("answer")
    assert turn.model_calls >= 2 and turn.input_tokens > 0 and turn.output_tokens > 0
    assert any(s.kind == "observation" and s.detail.get("sources") for s in turn.steps)


def test_the_turn_is_rebuilt_from_adot_span_documents(spans):
    events, raw = spans
    docs = adot_documents(raw)
    found, skipped = read_span_documents(docs)
    assert skipped == len(docs) - len(found)  # the conversation log records are not spans
    (turn,) = turns_from_spans(found, SESSION)
    check_turn(turn, events)


def test_the_turn_is_rebuilt_from_an_otlp_json_export(spans, tmp_path):
    events, raw = spans
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(otlp_json(raw)))
    res = CliRunner().invoke(cli_app, ["trace", str(path), "--json"])
    assert res.exit_code == 0, res.output
    (turn,) = json.loads(res.output)["turns"]
    assert turn["question"] == "What does error E2 mean?" and turn["answer"]["text"] == events[-1]["text"]
    assert "tool-call" in [s["kind"] for s in turn["steps"]]


def test_citerag_trace_reads_the_aws_spans_log_group(spans, monkeypatch):
    events, raw = spans
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    aws.client.cache_clear()
    try:
        with mock_aws():
            logs = aws.client("logs")
            logs.create_log_group(logGroupName="aws/spans")
            logs.create_log_stream(logGroupName="aws/spans", logStreamName="default")
            now = int(time.time() * 1000)
            docs = adot_documents(raw)
            logs.put_log_events(logGroupName="aws/spans", logStreamName="default", logEvents=[
                {"timestamp": now, "message": json.dumps(d)} for d in docs])
            res = CliRunner().invoke(cli_app, ["trace", "--log-group", "aws/spans", "--since", "1h", "--session",
                                               SESSION, "--json"])
            text = CliRunner().invoke(cli_app, ["trace", "--log-group", "aws/spans", "--since", "1h"])
    finally:
        aws.client.cache_clear()
    assert res.exit_code == 0, res.output
    (turn,) = json.loads(res.output)["turns"]
    assert turn["session_id"] == SESSION and turn["answer"]["text"] == events[-1]["text"]
    assert text.exit_code == 0 and "search_documents" in text.output


def test_a_saved_runtime_trace_reads_as_steps(spans, tmp_path):
    events, _ = spans
    path = tmp_path / "t.json"
    save(path, question="What does error E2 mean?", agent="agentcore-local", events=events)
    res = CliRunner().invoke(cli_app, ["trace", str(path), "--json"])
    (turn,) = json.loads(res.output)["turns"]
    assert [s["kind"] for s in turn["steps"]] == ["pre-processing", "observation", "post-processing", "answer"]
    assert turn["answer"]["citations"][0]["sources"][0]["page"] == 5


def test_unreadable_span_files_are_reported(tmp_path):
    path = tmp_path / "junk.json"
    path.write_text(json.dumps([{"message": "not json"}, {"name": 3}, 7]))
    res = CliRunner().invoke(cli_app, ["trace", str(path), "--json"])
    assert res.exit_code == 1 and "no model-invocation log records or OpenTelemetry spans (3 items skipped)" in \
        json.loads(res.output)["error"]
