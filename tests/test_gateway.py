"""The AgentCore Gateway target and its REQUEST interceptor: exercised by the real `mcp` client through a gateway
double (MCP over streamable HTTP, tools named TARGET___tool, arguments-only Lambda events, client_context.custom),
access only from the interceptor's JWT claims, and a bad-input matrix answered as data, never a traceback."""

from __future__ import annotations

import asyncio
import base64
import json

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from citerag.citations.access import GATEWAY_ACCESS_FIELD
from citerag.citations.tool import FUNCTION_DESCRIPTION, FUNCTION_NAME, input_schema
from citerag.handlers import gateway, gateway_interceptor
from citerag.testing.agentcore import GatewayDouble, LambdaContext, serve

from agentcore_support import components


def jwt(claims: dict) -> str:
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJSUzI1NiJ9.{body}.c2ln"


TOOLS = [{"name": FUNCTION_NAME, "description": FUNCTION_DESCRIPTION, "inputSchema": input_schema()}]


@pytest.fixture(scope="module")
def comps(tmp_path_factory):
    return components(tmp_path_factory.mktemp("gateway"), gateway_access="interceptor")


@pytest.fixture(scope="module")
def target(comps):
    return gateway.build(comps)


@pytest.fixture(scope="module")
def gateway_url(comps, target):
    double = GatewayDouble(target, TOOLS, interceptor=gateway_interceptor.build(comps))
    with serve(double.app()) as url:
        yield f"{url}/mcp", double


def mcp_call(url: str, token: str | None, name: str, arguments: dict):
    async def run():
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
                streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            tools = await s.list_tools()
            return tools, await s.call_tool(name, arguments)
    return asyncio.run(run())


def test_a_real_mcp_client_lists_and_calls_the_tool_through_the_gateway(gateway_url):
    url, double = gateway_url
    tools, result = mcp_call(url, jwt({"sub": "alice"}), f"citerag-search___{FUNCTION_NAME}",
                             {"query": "What does error E2 mean?", "top_k": 3})
    (tool,) = tools.tools
    assert tool.name == "citerag-search___search_documents" and tool.input_schema == input_schema()
    data = json.loads(result.content[0].text)
    assert not result.is_error and len(data["results"]) <= 3
    first = data["results"][0]
    assert first["source_id"].startswith("S1-") and first["uri"].startswith("file://") and "page" in first
    assert double.events[-1][GATEWAY_ACCESS_FIELD] == {}  # written by the interceptor: no tenant in the token


def test_the_interceptor_overwrites_what_the_model_wrote(gateway_url):
    url, double = gateway_url
    forged = {"query": "Acme password rotation period", GATEWAY_ACCESS_FIELD: {"tenant": "acme"}}
    _, public = mcp_call(url, jwt({"sub": "mallory"}), f"citerag-search___{FUNCTION_NAME}", forged)
    assert double.events[-1][GATEWAY_ACCESS_FIELD] == {}
    assert not any("acme-policy" in r["uri"] for r in json.loads(public.content[0].text)["results"])
    _, acme = mcp_call(url, jwt({"sub": "alice", "custom:tenant": "acme", "cognito:groups": ["eng"]}),
                       f"citerag-search___{FUNCTION_NAME}", {"query": "Acme password rotation period"})
    assert double.events[-1][GATEWAY_ACCESS_FIELD] == {"tenant": "acme", "groups": ["eng"]}
    assert any("acme-policy" in r["uri"] for r in json.loads(acme.content[0].text)["results"])


def test_without_a_token_the_search_is_refused_as_data(gateway_url):
    url, _ = gateway_url
    _, result = mcp_call(url, None, f"citerag-search___{FUNCTION_NAME}", {"query": "error E2"})
    data = json.loads(result.content[0].text)
    assert data["results"] == [] and "no bearer token" in data["error"]


def test_without_an_interceptor_the_access_field_is_never_trusted(tmp_path):
    handler = gateway.build(components(tmp_path))  # gateway_access defaults to "none"
    out = handler({"query": "Acme password rotation period", GATEWAY_ACCESS_FIELD: {"tenant": "acme"}},
                  LambdaContext({"bedrockAgentCoreToolName": f"t___{FUNCTION_NAME}"}))
    assert not any("acme-policy" in r["uri"] for r in out["results"])


def ctx(name: str | None = f"citerag-search___{FUNCTION_NAME}"):
    return LambdaContext({"bedrockAgentCoreToolName": name} if name is not None else {})


# (event, context, a specific piece of the answer)
CASES = [
    ({"query": "E2"}, LambdaContext(None), "carries no bedrockAgentCoreToolName"),
    ({"query": "E2"}, LambdaContext({}), "carries no bedrockAgentCoreToolName"),
    ({"query": "E2"}, ctx(""), "carries no bedrockAgentCoreToolName"),
    ({"query": "E2"}, ctx("citerag-search___delete_everything"), "Unknown tool 'delete_everything'"),
    ({"query": "E2"}, ctx("x" * 500), "Unknown tool"),
    ([], ctx(), "must be a JSON object"),
    ("E2", ctx(), "must be a JSON object"),
    (None, ctx(), "must be a JSON object"),
    (42, ctx(), "must be a JSON object"),
    ({}, ctx(), "'query' is missing or empty"),
    ({"query": ""}, ctx(), "'query' is missing or empty"),
    ({"query": "   "}, ctx(), "'query' is missing or empty"),
    ({"query": 42}, ctx(), "'query' must be text"),
    ({"query": ["E2"]}, ctx(), "'query' must be text"),
    ({"query": "x" * 3000}, ctx(), "2,000"),
    ({"query": "E2", "filters": "{not json"}, ctx(), "not valid JSON"),
    ({"query": "E2", "filters": '{"page": {"$regex": "x"}}'}, ctx(), "not a valid filter"),
    ({"query": "E2", "filters": "x" * 5000}, ctx(), "the limit is 4,000"),
    ({"query": "E2", "filters": '[1, 2]'}, ctx(), "not a valid filter"),
    ({"query": "E2", "filters": "{" * 300 + "}" * 300}, ctx(), "filters"),
    ({"query": "E2", "top_k": 0}, ctx(), "top_k must be a whole number from 1 to 20"),
    ({"query": "E2", "top_k": 99}, ctx(), "top_k must be a whole number from 1 to 20"),
    ({"query": "E2", "top_k": "many"}, ctx(), "top_k must be a whole number from 1 to 20"),
    ({"query": "E2", "top_k": 2.5}, ctx(), "top_k must be a whole number from 1 to 20"),
    ({"query": "E2", "blob": "y" * 40_000}, ctx(), "larger than 32,768 bytes"),
    ({"query": "E2"}, ctx(), "interceptor did not run"),
    ({"query": "E2", GATEWAY_ACCESS_FIELD: "acme"}, ctx(), "'access' must be an object"),
    ({"query": "E2", GATEWAY_ACCESS_FIELD: {"tenant": 5}}, ctx(), "'access.tenant' must be a string id"),
    ({"query": "E2", GATEWAY_ACCESS_FIELD: {"tenant": "a b"}}, ctx(), "not a valid id"),
    ({"query": "E2", GATEWAY_ACCESS_FIELD: {"denied": "the bearer token's claims are not readable"}}, ctx(),
     "claims are not readable"),
    ({"query": "zzqx vvbn"}, ctx(), "Rewrite the query"),
]


@pytest.mark.parametrize(("event", "context", "message"), CASES, ids=[f"case-{i}" for i in range(len(CASES))])
def test_bad_input_is_answered_as_data(target, event, context, message):
    if isinstance(event, dict) and "interceptor did not run" not in message and GATEWAY_ACCESS_FIELD not in event:
        event = {**event, GATEWAY_ACCESS_FIELD: {}}
    out = target(event, context)
    text = json.dumps(out)
    # A bad top_k is a note beside results searched with the default; everything else returns no results.
    assert message in text and (out["results"] == []) != message.startswith("top_k"), text
    assert "Traceback" not in text and "File \"" not in text


INTERCEPTOR_CASES = [
    ({}, None),
    ({"mcp": None}, None),
    ({"mcp": {"gatewayRequest": {"body": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}}}, None),
    ({"mcp": {"gatewayRequest": {"headers": {}, "body": {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                          "params": {"name": "t", "arguments": "oops"}}}}},
     {"denied": "the request carries no bearer token"}),
    ({"mcp": {"gatewayRequest": {"headers": {"authorization": "Bearer a.b"}, "body": {
        "method": "tools/call", "params": {"name": "t", "arguments": {GATEWAY_ACCESS_FIELD: {"tenant": "x"}}}}}}},
     {"denied": "the Authorization header is not a bearer JWT"}),
]


def test_every_call_of_a_batch_gets_the_tokens_access_not_the_callers(comps):
    forged = {"name": "citerag-search___search_documents",
              "arguments": {"query": "policy", GATEWAY_ACCESS_FIELD: {"tenant": "acme"}}}
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": forged},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": forged}]
    out = gateway_interceptor.build(comps)({"interceptorInputVersion": "1.0", "mcp": {"gatewayRequest": {
        "headers": {}, "body": batch}}}, LambdaContext(function_name="interceptor"))
    sent = out["mcp"]["transformedGatewayRequest"]["body"]
    assert [m["id"] for m in sent] == [1, 2, 3] and sent[1] == batch[1]
    for m in (sent[0], sent[2]):
        assert m["params"]["arguments"] == {"query": "policy",
                                            GATEWAY_ACCESS_FIELD: {"denied": "the request carries no bearer token"}}
    assert batch[0]["params"]["arguments"][GATEWAY_ACCESS_FIELD] == {"tenant": "acme"}  # the input is not mutated


@pytest.mark.parametrize(("body", "ident", "code"), [
    ("{\"method\": \"tools/call\"}", None, -32600),
    ([], None, -32600),
    ([{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}, "x"], None, -32600),
    ({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": [{"_citerag_access": {"tenant": "acme"}}]}, 7,
     -32602),
])
def test_a_body_the_interceptor_cannot_read_is_answered_not_passed_on(comps, body, ident, code):
    out = gateway_interceptor.build(comps)({"interceptorInputVersion": "1.0", "mcp": {"gatewayRequest": {
        "headers": {}, "body": body}}}, LambdaContext(function_name="interceptor"))
    assert "transformedGatewayRequest" not in out["mcp"]
    response = out["mcp"]["transformedGatewayResponse"]
    assert response["statusCode"] == 400
    assert response["body"]["id"] == ident and response["body"]["error"]["code"] == code


@pytest.mark.parametrize(("event", "written"), INTERCEPTOR_CASES, ids=[f"i-{i}" for i in range(len(INTERCEPTOR_CASES))])
def test_the_interceptor_never_fails_and_always_overwrites(comps, event, written):
    out = gateway_interceptor.build(comps)(event, LambdaContext(function_name="interceptor"))
    assert out["interceptorOutputVersion"] == "1.0" and "transformedGatewayRequest" in out["mcp"]
    body = out["mcp"]["transformedGatewayRequest"].get("body")
    if written is not None:
        assert body["params"]["arguments"][GATEWAY_ACCESS_FIELD] == written
