"""Lambda: the AgentCore Gateway REQUEST interceptor that turns the caller's validated JWT into access data.

The Gateway's Lambda target receives only the tool's arguments, never the caller's claims. A REQUEST interceptor
(configured with passRequestHeaders) receives the MCP request with its headers before the target is called
(developer guide gateway-interceptors-types: {"interceptorInputVersion": "1.0", "mcp": {"gatewayRequest": {"path",
"httpMethod", "headers", "body"}}} -> {"interceptorOutputVersion": "1.0", "mcp": {"transformedGatewayRequest":
{..., "body"}}}). For every tools/call it overwrites `arguments._citerag_access` with the tenant and groups of the
bearer token the gateway's JWT authorizer already validated, so a value the model wrote never survives: in a
JSON-RPC batch too (MCP 2025-03-26, the version the gateway speaks by default, says servers "MUST support receiving
JSON-RPC batches"). A body it cannot read (neither a message nor a batch of messages, or a tools/call whose params
are not an object) is answered with a JSON-RPC error instead of passed on: passing it would hand the target access
data the caller wrote. The gateway answers with `transformedGatewayResponse` at once (same page). Other methods
pass through unchanged.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger

from citerag.citations.access import GATEWAY_ACCESS_FIELD, AccessError, bearer_claims, from_claims, single_header
from citerag.handlers.entry import Handler, from_settings

logger = Logger(service="citerag-gateway-interceptor")
INVALID_REQUEST, INVALID_PARAMS = -32600, -32602  # JSON-RPC 2.0 error codes


def build(components) -> Handler:
    s = components.settings

    @logger.inject_lambda_context(clear_state=True)
    def handler(event: Any, context: Any) -> dict[str, Any]:
        mcp = event.get("mcp") if isinstance(event, dict) else None
        request = mcp.get("gatewayRequest") if isinstance(mcp, dict) else None
        if not isinstance(request, dict):
            request = {}
        body = request.get("body")
        if body is None:  # no message (a GET opening a stream): nothing to call a tool with
            return _forward(request)
        messages = body if isinstance(body, list) else [body]
        if not messages or not all(isinstance(m, dict) for m in messages):
            return _refuse(None, INVALID_REQUEST, "the request body is not a JSON-RPC message or batch")
        if not any(m.get("method") == "tools/call" for m in messages):
            return _forward(request)
        try:  # two Authorization headers with different tokens: refused, not read as whichever comes first
            authorization = single_header(request.get("headers"), "Authorization")
        except AccessError as exc:
            first = next((m for m in messages if m.get("method") == "tools/call"), {})
            return _refuse(first.get("id") if not isinstance(body, list) else None, INVALID_REQUEST, str(exc))
        access = _access(authorization, s)
        stamped = []
        for message in messages:
            if message.get("method") == "tools/call":
                params = message.get("params", {})
                if not isinstance(params, dict):
                    return _refuse(message.get("id"), INVALID_PARAMS, "tools/call params must be an object")
                arguments = params.get("arguments")
                arguments = dict(arguments) if isinstance(arguments, dict) else {}
                arguments[GATEWAY_ACCESS_FIELD] = access
                message = {**message, "params": {**params, "arguments": arguments}}
            stamped.append(message)
        return _forward({**request, "body": stamped if isinstance(body, list) else stamped[0]})

    return handler


def _forward(request: dict[str, Any]) -> dict[str, Any]:
    return {"interceptorOutputVersion": "1.0", "mcp": {"transformedGatewayRequest": request}}


def _refuse(message_id: Any, code: int, message: str) -> dict[str, Any]:
    ident = message_id if isinstance(message_id, (str, int)) and not isinstance(message_id, bool) else None
    logger.warning("request refused", extra={"reason": message})
    return {"interceptorOutputVersion": "1.0", "mcp": {"transformedGatewayResponse": {
        "statusCode": 400, "body": {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}}}}


def _access(auth: Any, s) -> dict[str, Any]:
    try:
        access = from_claims(bearer_claims(auth), s.agentcore_tenant_claim, s.agentcore_groups_claim)
    except AccessError as exc:
        logger.warning("access not determined", extra={"reason": str(exc)})
        return {"denied": str(exc)}
    return {**access, **({"groups": json.loads(access["groups"])} if "groups" in access else {})}


# The Lambda entry point (the function's Handler setting).
handler = from_settings(build)
