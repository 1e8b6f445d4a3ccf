"""Lambda: the AgentCore Gateway target for `search_documents` (MCP tools/call -> Lambda).

Contract (AgentCore developer guide, gateway-add-target-lambda; bedrock-agentcore 1.25 tools constants): the event is
the tool's arguments object only; the tool name is `context.client_context.custom["bedrockAgentCoreToolName"]` as
`<target>___<tool>` (three underscores; the prefix is stripped here); the return value is any JSON object, which the
gateway hands to the MCP client. A raised exception would reach the model as an opaque error, so every outcome,
errors included, is returned as data the model can act on ({"results": [], "error" | "hint": ...}).

The inline schema Gateway accepts has no bounds (type/properties/required/items/description only), so the search
tool's own validation checks them. Access: with CITERAG_GATEWAY_ACCESS=interceptor the filter comes from the field the
REQUEST interceptor wrote from the caller's validated JWT (`handlers.gateway_interceptor`); otherwise that field is
ignored and only documents without a tenant are searched.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger

from citerag.citations.access import GATEWAY_ACCESS_FIELD, AccessError, from_payload
from citerag.citations.payload import message_payload
from citerag.citations.tool import FUNCTION_NAME
from citerag.documents.text import encodable
from citerag.handlers.entry import Handler, from_settings

logger = Logger(service="citerag-gateway")

TOOL_NAME_KEY = "bedrockAgentCoreToolName"
DELIMITER = "___"  # bedrock-agentcore 1.25 tools/web_search_client.py: GATEWAY_TOOL_NAME_DELIMITER
MAX_ARGUMENTS_BYTES = 32_768
INTERNAL_ERROR = "search unavailable: internal error. Tell the user to try again later."


def tool_name(context: Any) -> str | None:
    """The tool the gateway routed here, without its target prefix; None when the context carries none."""
    client_context = getattr(context, "client_context", None)
    custom = getattr(client_context, "custom", None)
    if not isinstance(custom, dict):
        return None
    name = custom.get(TOOL_NAME_KEY)
    return name.split(DELIMITER, 1)[-1] if isinstance(name, str) and name else None


def build(components) -> Handler:
    tool = components.search_tool()
    trust_interceptor = components.settings.gateway_access == "interceptor"

    @logger.inject_lambda_context(clear_state=True)
    def handler(event: Any, context: Any) -> dict[str, Any]:
        name = tool_name(context)
        if name is None:
            return message_payload(error="This function is an AgentCore Gateway target: the invocation carries no "
                                         f"{TOOL_NAME_KEY}, so no tool can be chosen.")
        if name != FUNCTION_NAME:
            return message_payload(error=f"Unknown tool {name[:64]!r}. This target offers {FUNCTION_NAME}(query, "
                                         "filters?, top_k?): call that instead.")
        if not isinstance(event, dict):
            return message_payload(error=f"The arguments of {FUNCTION_NAME} must be a JSON object with 'query'.")
        if len(json.dumps(event, default=str)) > MAX_ARGUMENTS_BYTES:
            return message_payload(error=f"The arguments are larger than {MAX_ARGUMENTS_BYTES:,} bytes; send only "
                                         "query, filters and top_k.")
        arguments = {k: v for k, v in event.items() if k in ("query", "filters", "top_k")}
        try:
            session = _access(event, trust_interceptor)
        except AccessError as exc:
            return message_payload(error=f"Access could not be determined ({exc}), so no documents may be searched. "
                                         "Tell the user.")
        try:
            result, body = tool.run(arguments, session, lambda r, b: b)
        except Exception:  # never a stack trace to the model
            logger.exception("search failed")
            return message_payload(error=INTERNAL_ERROR)
        logger.info("search_documents", extra={"outcome": result.outcome, "results": len(result.kept)})
        return encodable(json.loads(body))

    return handler


def _access(event: dict[str, Any], trust_interceptor: bool) -> dict[str, str]:
    if not trust_interceptor:
        return {}  # a model-written field is never access data
    if GATEWAY_ACCESS_FIELD not in event:
        raise AccessError("the gateway's request interceptor did not run")
    value = event[GATEWAY_ACCESS_FIELD]
    if isinstance(value, dict) and "denied" in value:
        raise AccessError(str(value["denied"])[:200])
    return from_payload(value)


# The Lambda entry point (the function's Handler setting).
handler = from_settings(build)
