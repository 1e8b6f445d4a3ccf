"""Requests two readers could read two ways are refused where identity is read: two Authorization headers with
different values (any spelling), and a JSON object with a key written twice (in a bearer token's claims, in the
AgentCore runtime's invocation body)."""

from __future__ import annotations

import base64
import http.client
import json
from urllib.parse import urlsplit

import pytest

from citerag.citations.access import AccessError, bearer_claims, single_header
from citerag.handlers import gateway_interceptor
from citerag.testing.agentcore import LambdaContext, RuntimeDouble, serve

from agentcore_support import components


def token(claims_json: str) -> str:
    body = base64.urlsafe_b64encode(claims_json.encode()).decode().rstrip("=")
    return f"eyJhbGciOiJSUzI1NiJ9.{body}.c2ln"


ACME, GLOBEX = token('{"custom:tenant": "acme"}'), token('{"custom:tenant": "globex"}')


@pytest.fixture(scope="module")
def comps(tmp_path_factory):
    return components(tmp_path_factory.mktemp("ambiguous"), gateway_access="interceptor")


def intercept(comps, headers):
    body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "t", "arguments": {"query": "q"}}}
    return gateway_interceptor.build(comps)({"interceptorInputVersion": "1.0", "mcp": {"gatewayRequest": {
        "headers": headers, "body": body}}}, LambdaContext(function_name="interceptor"))


@pytest.mark.parametrize("headers", [
    {"authorization": f"Bearer {ACME}", "Authorization": f"Bearer {GLOBEX}"},
    {"Authorization": f"Bearer {GLOBEX}", "AUTHORIZATION": f"Bearer {ACME}"},
    {"aUtHoRiZaTiOn": f"Bearer {ACME}", "authorization": "Basic eDp5"},
])
def test_two_authorization_headers_with_different_values_are_refused_by_the_interceptor(comps, headers):
    out = intercept(comps, headers)
    assert "transformedGatewayRequest" not in out["mcp"]  # nothing reaches the target with either tenant
    response = out["mcp"]["transformedGatewayResponse"]
    assert response["statusCode"] == 400
    assert response["body"]["id"] == 9 and response["body"]["error"]["code"] == -32600
    assert "Authorization headers" in response["body"]["error"]["message"]


def test_the_same_token_under_two_spellings_is_one_token(comps):
    out = intercept(comps, {"authorization": f"Bearer {ACME}", "Authorization": f"Bearer {ACME}"})
    args = out["mcp"]["transformedGatewayRequest"]["body"]["params"]["arguments"]
    assert args["_citerag_access"] == {"tenant": "acme"}


@pytest.mark.parametrize("claims", ['{"tenant": "acme", "tenant": "globex"}',
                                    '{"sub": "u", "groups": ["a"], "x": {"k": 1, "k": 2}, "groups": []}'])
def test_a_claim_written_twice_is_refused_not_read_as_the_last(claims):
    with pytest.raises(AccessError, match="written twice"):
        bearer_claims(f"Bearer {token(claims)}")


def test_a_token_with_a_duplicated_claim_reaches_the_target_as_denied(comps):
    twice = token('{"tenant": "acme", "tenant": "globex"}')
    out = intercept(comps, {"Authorization": f"Bearer {twice}"})
    args = out["mcp"]["transformedGatewayRequest"]["body"]["params"]["arguments"]
    assert "written twice" in args["_citerag_access"]["denied"]


def test_single_header_reads_pairs_as_asgi_gives_them():
    assert single_header([(b"host", b"x"), (b"authorization", b"Bearer a")], "Authorization") == "Bearer a"
    assert single_header([], "Authorization") is None
    with pytest.raises(AccessError):
        single_header([(b"authorization", b"Bearer a"), (b"Authorization", b"Bearer b")], "Authorization")


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    from citerag.agentcore_app import create_app

    app = create_app(components(tmp_path_factory.mktemp("ambiguous-app"), agentcore_access="jwt"))
    with serve(RuntimeDouble(app)) as url:
        yield url


def raw_post(url: str, body: bytes, headers: list[tuple[str, str]]) -> tuple[int, dict]:
    """POST with headers sent exactly as listed, repeats included (urllib folds a dict)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    conn.putrequest("POST", "/invocations")
    for k, v in [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *headers]:
        conn.putheader(k, v)
    conn.endheaders(body)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    try:
        return resp.status, json.loads(data)
    except ValueError:
        return resp.status, {"raw": data[:300].decode("utf-8", "replace")}


def test_the_runtime_refuses_two_authorization_headers(runtime):
    status, body = raw_post(runtime, b'{"prompt": "What does error E2 mean?"}',
                            [("Authorization", f"Bearer {ACME}"), ("authorization", f"Bearer {GLOBEX}")])
    assert status == 400 and body["code"] == "bad_request" and "Authorization headers" in body["message"]


def test_the_runtime_refuses_a_body_with_a_key_written_twice(runtime):
    status, body = raw_post(runtime, b'{"prompt": "What does error E2 mean?", "access": {"tenant": "a"}, '
                                     b'"access": {"tenant": "b"}}', [("Authorization", f"Bearer {ACME}")])
    assert status == 400 and "'access' is written twice" in body["message"]


def test_the_runtime_still_answers_one_token(runtime):
    status, _ = raw_post(runtime, b'{"prompt": "What does error E2 mean?"}', [("Authorization", f"Bearer {ACME}")])
    assert status == 200
