"""The AgentCore runtime app under a real ASGI server (uvicorn on 127.0.0.1): /ping, /invocations as JSON and SSE,
the session header, access from the payload or the JWT, a real boto3 `bedrock-agentcore` client and the CLI against
it, and a bad-input matrix where every case gets a specific answer and no traceback."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
import uuid

import boto3
import pytest
from typer.testing import CliRunner

from citerag.agentcore_app import create_app
from citerag.cli import app as cli_app
from citerag.errors import CiteragError
from citerag.runtimes.agentcore.client import RuntimeClient
from citerag.testing.agentcore import RuntimeDouble, serve

from agentcore_support import components, sse_events

ARN = "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/citerag_agent-AbCdEf1234"
SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"


def post(url: str, body: bytes | str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    data = body.encode("utf-8") if isinstance(body, str) else body
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def jwt(claims: dict) -> str:
    def part(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


@pytest.fixture(scope="module")
def comps(tmp_path_factory):
    return components(tmp_path_factory.mktemp("app"))


@pytest.fixture(scope="module")
def server(comps):
    with serve(RuntimeDouble(create_app(comps))) as url:
        yield url


@pytest.fixture(scope="module")
def jwt_server(tmp_path_factory):
    with serve(RuntimeDouble(create_app(components(tmp_path_factory.mktemp("jwt"), agentcore_access="jwt")))) as url:
        yield url


def test_ping_reports_healthy(server):
    with urllib.request.urlopen(f"{server}/ping", timeout=10) as resp:
        body = json.loads(resp.read())
    assert resp.status == 200 and body["status"] == "Healthy" and isinstance(body["time_of_last_update"], int)


def test_invocations_stream_sse_frames_ending_with_structured_citations(server):
    sid = str(uuid.uuid4())
    status, headers, body = post(f"{server}/invocations", json.dumps({"prompt": "What does error E2 mean?"}),
                                 {SESSION_HEADER: sid})
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    assert body.startswith(b"data: {") and body.endswith(b"}\n\n")  # bedrock-agentcore's frame: data: {json}\n\n
    events = sse_events(body)
    assert events[0] == {"type": "session", "session_id": sid}
    final = events[-1]
    assert final["type"] == "answer" and final["answered"] and final["session_id"] == sid
    c = final["citations"][0]
    assert set(c["sources"][0]) == {"source_id", "uri", "title", "page", "section", "excerpt"}
    assert final["text"][c["span"]["start"]:c["span"]["end"]] == c["text"]
    assert [e["kind"] for e in events if e["type"] == "step"] == ["classification", "search", "grading"]


def test_invocations_json_when_stream_is_false(server):
    status, headers, body = post(f"{server}/invocations", json.dumps({"prompt": "フィルターの交換時期は？",
                                                                       "stream": False}))
    data = json.loads(body)
    assert status == 200 and headers["content-type"].startswith("application/json")
    assert data["type"] == "answer" and data["answered"] and "交換" in data["text"]
    assert [s["kind"] for s in data["steps"]][:2] == ["classification", "search"]


def test_the_session_header_carries_history_to_the_next_turn(server, comps):
    sid = str(uuid.uuid4())
    for question in ("What does error E2 mean?", "How often should I replace the HEPA filter?"):
        status, _, body = post(f"{server}/invocations", json.dumps({"prompt": question}), {SESSION_HEADER: sid})
        assert status == 200 and sse_events(body)[-1]["session_id"] == sid
    turns = comps.session_history.load("public", sid, 5)
    assert [q for q, _ in turns] == ["What does error E2 mean?", "How often should I replace the HEPA filter?"]
    assert comps.session_history.load("public", str(uuid.uuid4()), 5) == []


def test_without_a_session_header_a_uuid_session_is_made(server):
    events = sse_events(post(f"{server}/invocations", json.dumps({"prompt": "What does error E2 mean?"}))[2])
    assert uuid.UUID(events[0]["session_id"]).version == 4


def test_payload_access_reaches_the_filter(server):
    body = {"prompt": "What is the Acme password rotation period?", "access": {"tenant": "acme"}}
    final = sse_events(post(f"{server}/invocations", json.dumps(body))[2])[-1]
    assert final["answered"] and "45 days" in final["text"]
    public = sse_events(post(f"{server}/invocations", json.dumps({"prompt": body["prompt"]}))[2])[-1]
    assert "45 days" not in public["text"]


def test_jwt_claims_give_access_and_the_payload_cannot(jwt_server):
    token = jwt({"sub": "alice", "custom:tenant": "acme", "cognito:groups": ["eng"]})
    question = json.dumps({"prompt": "What is the Acme password rotation period?"})
    final = sse_events(post(f"{jwt_server}/invocations", question, {"Authorization": f"Bearer {token}"})[2])[-1]
    assert final["answered"] and "45 days" in final["text"]
    status, _, body = post(f"{jwt_server}/invocations",
                           json.dumps({"prompt": "x?", "access": {"tenant": "acme"}}),
                           {"Authorization": f"Bearer {jwt({'sub': 'mallory'})}"})
    assert status == 403 and "bearer token" in json.loads(body)["message"]


def test_boto3_invoke_agent_runtime_reaches_the_app_and_returns_the_answer(server, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", server)
    client = boto3.client("bedrock-agentcore", region_name="us-east-1", aws_access_key_id="test",
                          aws_secret_access_key="test")
    rc = RuntimeClient(client)
    answer = rc.ask("What does error E2 mean?", ARN, access={"tenant": "acme"})
    assert answer.answered and answer.citations[0].sources[0].page == 5
    assert answer.citations[0].sources[0].uri.endswith("manual-en.pdf")
    with pytest.raises(CiteragError, match="refused the request: 'prompt' is empty"):
        rc.ask("", ARN)
    with pytest.raises(CiteragError, match="not an AgentCore runtime ARN"):
        rc.ask("q?", "arn:aws:lambda:us-east-1:123456789012:function:x")


def test_cli_ask_runtime_and_agentcore_local_return_the_same_answer(server, comps, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("CITERAG_SOURCE_ID_KEY", comps.settings.source_id_key)
    runner = CliRunner()
    remote = runner.invoke(cli_app, ["ask", "What does error E2 mean?", "--runtime", ARN, "--json"])
    local = runner.invoke(cli_app, ["ask", "What does error E2 mean?", "--agent", "agentcore-local", "--json",
                                    "--index", str(comps.settings.resolved_index_path)],
                          env={"CITERAG_DATA_DIR": str(comps.settings.data_dir), "CITERAG_EMBEDDER": "hashing"})
    assert remote.exit_code == 0 and local.exit_code == 0, remote.output + local.output
    r, l_ = json.loads(remote.output), json.loads(local.output)
    assert r == l_ and r["answered"] and r["citations"][0]["page"] == 5
    bad = runner.invoke(cli_app, ["ask", "q?", "--runtime", "not-an-arn", "--json"])
    assert bad.exit_code == 1 and "not an AgentCore runtime ARN" in json.loads(bad.output)["error"]


def test_a_jwt_runtime_is_called_over_https_with_the_bearer_token(jwt_server, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", jwt_server)
    token = jwt({"sub": "alice", "custom:tenant": "acme"})
    answer = RuntimeClient().ask_with_token("What is the Acme password rotation period?", ARN, token)
    assert answer.answered and "45 days" in answer.text
    with pytest.raises(CiteragError, match=r"HTTP 403.*not a bearer JWT"):
        RuntimeClient().ask_with_token("What is it?", ARN, "not-a-jwt")


LONG = "x" * 2001
# (body, headers, expected status, a specific piece of the message)
PAYLOAD_CASES = [
    ("{not json", {}, 400, "Invalid JSON"),
    (b"\xff\xfe{", {}, 400, "Invalid"),
    ("[]", {}, 400, "JSON object"),
    ('"a question"', {}, 400, "JSON object"),
    ("42", {}, 400, "JSON object"),
    ("null", {}, 400, "JSON object"),
    ("{}", {}, 400, "has no 'prompt'"),
    ('{"question": "q?"}', {}, 400, "unknown field 'question'"),
    ('{"prompt": ""}', {}, 400, "'prompt' is empty"),
    ('{"prompt": "   "}', {}, 400, "'prompt' is blank"),
    (json.dumps({"prompt": LONG}), {}, 400, "longer than 2,000"),
    ('{"prompt": 42}', {}, 400, "'prompt' is not valid"),
    ('{"prompt": ["q"]}', {}, 400, "'prompt' is not valid"),
    ('{"prompt": {"text": "q"}}', {}, 400, "'prompt' is not valid"),
    ('{"prompt": null}', {}, 400, "'prompt' is not valid"),
    ('{"prompt": "q?", "stream": "yes"}', {}, 400, "'stream' is not valid"),
    ('{"prompt": "q?", "access": "acme"}', {}, 400, "'access' is not valid"),
    ('{"prompt": "q?", "access": ["acme"]}', {}, 400, "'access' is not valid"),
    ('{"prompt": "q?", "stream": false, "access": {"tenant": "a b"}}', {}, 403, "not a valid id"),
    ('{"prompt": "q?", "stream": false, "access": {"tenant": 7}}', {}, 403, "'access.tenant' must be a string id"),
    (json.dumps({"prompt": "q?", "stream": False, "access": {"tenant": "t" * 200}}), {}, 403, "not a valid id"),
    (json.dumps({"prompt": "q?", "stream": False, "access": {"groups": [f"g{i}" for i in range(60)]}}), {}, 403,
     "not a list of group ids"),
    ('{"prompt": "q?", "stream": false, "access": {"groups": {"a": 1}}}', {}, 403,
     "'access.groups' must be a list of string ids"),
    ('{"prompt": "\\u0000\\u0001"}', {}, 400, "only control characters"),
    ('{"prompt": "q?"}', {SESSION_HEADER: "s" * 300}, 400, "session id"),
    ('{"prompt": "q?", "prompt": ""}', {}, 400, "'prompt' is written twice"),
]
JWT_CASES = [
    ('{"prompt": "q?"}', {}, 403, "no bearer token"),
    ('{"prompt": "q?"}', {"Authorization": "Basic dXNlcjpwYXNz"}, 403, "not a bearer JWT"),
    ('{"prompt": "q?"}', {"Authorization": "Bearer abc.def"}, 403, "not a bearer JWT"),
    ('{"prompt": "q?"}', {"Authorization": "Bearer a.!!!.c"}, 403, "not readable"),
    ('{"prompt": "q?"}', {"Authorization": "Bearer " + jwt({"sub": "x"}).split(".")[0] + ".WzFd.c"}, 403,
     "not an object"),
    ('{"prompt": "q?"}', {"Authorization": "Bearer " + jwt({"custom:tenant": ["a", "b"]})}, 403,
     "'custom:tenant' claim must be a string id"),
    ('{"prompt": "q?", "stream": false}', {"Authorization": "Bearer " + jwt({"custom:tenant": "a;b"})}, 403,
     "not a valid id"),
    ('{"prompt": "q?", "access": {"tenant": "acme"}}', {"Authorization": "Bearer " + jwt({"sub": "x"})}, 403,
     "remove the 'access' field"),
]


@pytest.mark.parametrize(("body", "headers", "status", "message"), PAYLOAD_CASES,
                         ids=[f"payload-{i}" for i in range(len(PAYLOAD_CASES))])
def test_bad_payloads_get_a_specific_status_and_message(server, body, headers, status, message):
    got, _, raw = post(f"{server}/invocations", body, headers)
    assert got == status, raw
    text = raw.decode("utf-8", "replace")
    assert message in text and "Traceback" not in text and "File \"" not in text


@pytest.mark.parametrize(("body", "headers", "status", "message"), JWT_CASES,
                         ids=[f"jwt-{i}" for i in range(len(JWT_CASES))])
def test_bad_tokens_get_a_specific_status_and_message(jwt_server, body, headers, status, message):
    got, _, raw = post(f"{jwt_server}/invocations", body, headers)
    assert got == status, raw
    assert message in raw.decode() and "Traceback" not in raw.decode()
