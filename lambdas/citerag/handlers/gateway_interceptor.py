"""Lambda: the AgentCore Gateway REQUEST interceptor that turns the caller's validated JWT into access data.

The Gateway's Lambda target receives only the tool's arguments, never the caller's claims. A REQUEST interceptor
(configured with passRequestHeaders) receives the MCP request with its headers before the target is called
(developer guide gateway-interceptors-types: {"interceptorInputVersion": "1.0", "mcp": {"gatewayRequest": {"path",
"httpMethod", "headers", "body"}}} -> {"interceptorOutputVersion": "1.0", "mcp": {"transformedGatewayRequest":
{..., "body"}}}). For every tools/call it overwrites `arguments._citerag_access` with the tenant and groups of the
bearer token the gateway's JWT authorizer already validated, so a value the model wrote never survives. Other
methods pass through unchanged.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from aws_lambda_powertools import Logger

from citerag.citations.access import GATEWAY_ACCESS_FIELD, AccessError, bearer_claims, from_claims
from citerag.handlers.entry import Handler, from_settings

logger = Logger(service="citerag-gateway-interceptor")


def build(components) -> Handler:
    s = components.settings

    @logger.inject_lambda_context(clear_state=True)
    def handler(event: Any, context: Any) -> dict[str, Any]:
        mcp = event.get("mcp") if isinstance(event, dict) else None
        request = mcp.get("gatewayRequest") if isinstance(mcp, dict) else None
        if not isinstance(request, dict):
            request = {}
        body = request.get("body")
        if isinstance(body, dict) and body.get("method") == "tools/call":
            body = copy.deepcopy(body)
            params = body.setdefault("params", {}) if isinstance(body.get("params", {}), dict) else None
            if params is not None:
                arguments = params.get("arguments")
                if not isinstance(arguments, dict):
                    arguments = params["arguments"] = {}
                arguments[GATEWAY_ACCESS_FIELD] = _access(request.get("headers"), s)
            request = {**request, "body": body}
        return {"interceptorOutputVersion": "1.0", "mcp": {"transformedGatewayRequest": request}}

    return handler


def _access(headers: Any, s) -> dict[str, Any]:
    auth = None
    if isinstance(headers, dict):
        auth = next((v for k, v in headers.items() if isinstance(k, str) and k.lower() == "authorization"), None)
    try:
        access = from_claims(bearer_claims(auth), s.agentcore_tenant_claim, s.agentcore_groups_claim)
    except AccessError as exc:
        logger.warning("access not determined", extra={"reason": str(exc)})
        return {"denied": str(exc)}
    return {**access, **({"groups": json.loads(access["groups"])} if "groups" in access else {})}


# The Lambda entry point (the function's Handler setting).
handler = from_settings(build)
