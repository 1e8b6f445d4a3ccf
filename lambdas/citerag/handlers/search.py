"""Lambda: the `search_documents` action group (Bedrock Agent, function-details schema).

A thin adapter: Powertools resolves the function and builds the response; SearchTool decides everything.
Heavy modules (numpy, boto3, pinecone) load on the first invocation, not at import, to keep cold starts short.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import BedrockAgentFunctionResolver
from aws_lambda_powertools.event_handler.bedrock_agent_function import (
    BedrockFunctionResponse,
    BedrockFunctionsResponseBuilder,
)
from aws_lambda_powertools.metrics import MetricUnit

from citerag.agent.tool_spec import FUNCTION_DESCRIPTION, FUNCTION_NAME, PARAMETERS, string_map

logger = Logger(service="citerag-search")
tracer = Tracer(service="citerag-search")
metrics = Metrics(namespace="citerag", service="citerag-search")


def _serialize(body: Any) -> str:
    # Bodies are already serialized (and budgeted) JSON; anything else is encoded once.
    import json

    return body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)


app = BedrockAgentFunctionResolver(serializer=_serialize)
_components = None


def _count(name: str) -> None:
    # Only inside Lambda: run in-process (citerag ask/invoke, tests) metrics would pile up and print EMF lines.
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


def components():
    """Adapters built once per container from CITERAG_* settings (tests may replace this)."""
    global _components
    if _components is None:
        from citerag.settings import Components, Settings

        _components = Components(Settings())
    return _components


@app.tool(name=FUNCTION_NAME, description=FUNCTION_DESCRIPTION)
def search_documents() -> BedrockFunctionResponse:
    event = app.current_event
    assert event is not None
    raw = event.raw_event

    def envelope(result, body: str) -> dict[str, Any]:
        # Exactly what the resolver will build from the returned BedrockFunctionResponse.
        return BedrockFunctionsResponseBuilder(_response(result, body)).build(event, serializer=_serialize)

    result, body = components().search_tool().run(raw.get("parameters"), raw.get("sessionAttributes"), envelope)
    _count(f"Search_{result.outcome}")
    logger.info("search_documents", extra={"outcome": result.outcome, "results": len(result.kept),
                                           "response_state": result.state})
    return _response(result, body)


def _response(result, body: str) -> BedrockFunctionResponse:
    return BedrockFunctionResponse(body=body, session_attributes=result.session_attributes,
                                   response_state=result.state)


@logger.inject_lambda_context(correlation_id_path="sessionId", clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    problem = validate_event(event)
    if problem:
        logger.warning("rejected event", extra={"reason": problem})
        return error_response(event, problem)
    if event["function"] != FUNCTION_NAME:
        return error_response(
            event,
            f"Unknown function {event['function']!r}. This action group offers {FUNCTION_NAME}(query, filters?, "
            "top_k?): call that instead.",
            state="REPROMPT",
        )
    try:
        result = app.resolve(sanitize_event(event), context)
    except Exception:  # never let the agent see a stack trace
        logger.exception("search failed")
        return error_response(event, "search unavailable: internal error. Tell the user to try again later.")
    body = result["response"]["functionResponse"]["responseBody"]["TEXT"]["body"]
    if isinstance(body, str) and body.startswith("Error: "):
        # The resolver turned an exception into "Error: Type: message"; replace it with a clear, safe body.
        logger.error("tool raised", extra={"body": body[:200]})
        return error_response(event, "search unavailable: internal error. Tell the user to try again later.")
    return result


def validate_event(event: Any) -> str | None:
    """The fields Bedrock always sends; anything else is a misrouted or hand-made event."""
    if not isinstance(event, dict):
        return "event is not a JSON object"
    for key in ("actionGroup", "function"):
        if not isinstance(event.get(key), str) or not event.get(key):
            return f"event has no {key}"
    if event.get("messageVersion") not in ("1.0", None):
        return f"unsupported messageVersion {event.get('messageVersion')!r}"
    params = event.get("parameters", [])
    if params is not None and not isinstance(params, list):
        return "event parameters must be a list"
    return None


def sanitize_event(event: dict[str, Any]) -> dict[str, Any]:
    """A copy the resolver can read without tripping: parameters without a name are dropped (the tool then asks
    for what is missing) and session attributes become string maps, as the response contract requires."""
    params = event.get("parameters") or []
    return {
        **event,
        "parameters": [p for p in params if isinstance(p, dict) and isinstance(p.get("name"), str)],
        "sessionAttributes": string_map(event.get("sessionAttributes")),
        "promptSessionAttributes": string_map(event.get("promptSessionAttributes")),
    }


def error_response(event: Any, message: str, state: str | None = None) -> dict[str, Any]:
    import json

    ev = event if isinstance(event, dict) else {}
    session = string_map(ev.get("sessionAttributes"))
    prompt_session = string_map(ev.get("promptSessionAttributes"))
    function_response: dict[str, Any] = {
        "responseBody": {"TEXT": {"body": json.dumps({"results": [], "error": message}, ensure_ascii=False)}}
    }
    if state:
        function_response["responseState"] = state
    return {
        "messageVersion": "1.0",
        "response": {
            "actionGroup": str(ev.get("actionGroup") or "unknown"),
            "function": str(ev.get("function") or "unknown"),
            "functionResponse": function_response,
        },
        "sessionAttributes": session,
        "promptSessionAttributes": prompt_session,
    }


__all__ = ["PARAMETERS", "app", "handler"]
