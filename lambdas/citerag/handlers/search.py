"""Lambda: the `search_documents` action group (Bedrock Agents Classic, function-details schema).

Thin: the event is checked and read with Powertools' event class, SearchTool (citerag.citations) decides
everything, and one envelope builder (Powertools' BedrockFunctionsResponseBuilder) makes every response,
results and errors alike. Heavy modules (numpy, boto3, pinecone) load with the components, on the first
invocation, not at import, to keep cold starts short; so do the response builder and the payload code (Powertools'
event_handler package, pydantic with the passage model, the search core), which only an invocation uses.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from aws_lambda_powertools import Logger, Metrics

from citerag.citations.session import string_map
from citerag.citations.tool import FUNCTION_NAME
from citerag.handlers.entry import Handler, from_settings
from citerag.handlers.tracing import tracer as make_tracer

logger = Logger(service="citerag-search")
tracer = make_tracer("citerag-search")  # the X-Ray SDK only when tracing is on
metrics = Metrics(namespace="citerag", service="citerag-search")

INTERNAL_ERROR = "search unavailable: internal error. Tell the user to try again later."


def _count(name: str) -> None:
    # Only inside Lambda: run in-process (citerag ask/invoke, tests) metrics would pile up and print EMF lines.
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        from aws_lambda_powertools.metrics import MetricUnit

        metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


def envelope(event: dict[str, Any], body: str, state: str | None = None,
             session_attributes: dict[str, str] | None = None) -> dict[str, Any]:
    """The action-group response for a (sanitized) event: the one builder of every response this function sends."""
    from aws_lambda_powertools.event_handler.bedrock_agent_function import (
        BedrockFunctionResponse,
        BedrockFunctionsResponseBuilder,
    )
    from aws_lambda_powertools.utilities.data_classes import BedrockAgentFunctionEvent

    from citerag.documents.text import encodable

    # Whatever a message echoes of the caller's input, the runtime can write it (half a character is U+FFFD).
    response = BedrockFunctionResponse(body=encodable(body), session_attributes=session_attributes,
                                       response_state=state)  # type: ignore[arg-type]
    return BedrockFunctionsResponseBuilder(response).build(BedrockAgentFunctionEvent(event), serializer=str)


def build(components) -> Handler:
    """The handler over these components' search tool (one tool and thread pool per container)."""
    from citerag.citations.payload import dumps_body, message_payload

    tool = components.search_tool()

    @logger.inject_lambda_context(correlation_id_path="sessionId", clear_state=True)
    @tracer.capture_lambda_handler(capture_response=False)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        ev = sanitize_event(event)
        problem = validate_event(event)
        if problem:
            logger.warning("rejected event", extra={"reason": problem})
            return envelope(ev, dumps_body(message_payload(error=problem)))
        if ev["function"] != FUNCTION_NAME:
            return envelope(ev, dumps_body(message_payload(error=(
                f"Unknown function {ev['function'][:64]!r}. This action group offers {FUNCTION_NAME}(query, "
                "filters?, top_k?): call that instead."))), state="REPROMPT")
        try:
            result, body = tool.run(ev["parameters"], ev["sessionAttributes"],
                                    lambda r, b: envelope(ev, b, r.state, r.session_attributes),
                                    turn=ev["inputText"] if isinstance(ev.get("inputText"), str) else "")
        except Exception:  # never let the agent see a stack trace
            logger.exception("search failed")
            return envelope(ev, dumps_body(message_payload(error=INTERNAL_ERROR)))
        _count(f"Search_{result.outcome}")
        logger.info("search_documents", extra={"outcome": result.outcome, "results": len(result.kept),
                                               "response_state": result.state})
        return envelope(ev, body, result.state, result.session_attributes)

    return handler


# Action-group and function names as bedrock-agent defines them (botocore shape "Name"): nothing else is echoed.
_NAME = re.compile(r"([0-9a-zA-Z][_-]?){1,100}")
MAX_PARAMETERS = 20
MAX_ATTRIBUTES_BYTES = 16_384


def validate_event(event: Any) -> str | None:
    """The fields Bedrock always sends, within the service's bounds; anything else is a misrouted or hand-made event,
    and nothing of it is echoed back or logged whole."""
    if not isinstance(event, dict):
        return "event is not a JSON object"
    for key in ("actionGroup", "function"):
        value = event.get(key)
        if not isinstance(value, str) or not value:
            return f"event has no {key}"
        if len(value) > 200 or not _NAME.fullmatch(value):
            return f"event {key} is not a valid name"
    if event.get("messageVersion") not in ("1.0", None):
        return "unsupported messageVersion"
    params = event.get("parameters", [])
    if params is not None and not isinstance(params, list):
        return "event parameters must be a list"
    if isinstance(params, list) and len(params) > MAX_PARAMETERS:
        return f"event has more than {MAX_PARAMETERS} parameters"
    sizes = {key: len(json.dumps(string_map(event.get(key)))) for key in ("sessionAttributes",
                                                                          "promptSessionAttributes")}
    for key, size in sizes.items():
        if size > MAX_ATTRIBUTES_BYTES:
            return f"event {key} are larger than {MAX_ATTRIBUTES_BYTES:,} bytes"
    if sum(sizes.values()) > MAX_ATTRIBUTES_BYTES:
        # The response echoes both, within the 25,000 bytes an action group may return: past this, no passage fits.
        return (f"event sessionAttributes and promptSessionAttributes together are larger than "
                f"{MAX_ATTRIBUTES_BYTES:,} bytes")
    return None


def sanitize_event(event: Any) -> dict[str, Any]:
    """A copy every reader can trust: parameters without a name are dropped (the tool then asks for what is
    missing), session attributes become string maps as the response contract requires, and a missing action
    group or function is named "unknown" so even a rejected event gets a well-formed response."""
    ev = event if isinstance(event, dict) else {}
    params = ev.get("parameters") if isinstance(ev.get("parameters"), list) else []
    session = string_map(ev.get("sessionAttributes"))
    if len(json.dumps(session)) > MAX_ATTRIBUTES_BYTES:
        session = {}
    prompt_session = string_map(ev.get("promptSessionAttributes"))
    if len(json.dumps(session)) + len(json.dumps(prompt_session)) > MAX_ATTRIBUTES_BYTES:
        prompt_session = {}  # only on an event validate_event refuses: its reply must stay within the budget
    return {
        **ev,
        "actionGroup": _name(ev.get("actionGroup")),
        "function": _name(ev.get("function")),
        "parameters": [p for p in params[:MAX_PARAMETERS] if isinstance(p, dict) and isinstance(p.get("name"), str)],
        "sessionAttributes": session,
        "promptSessionAttributes": prompt_session,
    }


def _name(value: Any) -> str:
    return value if isinstance(value, str) and len(value) <= 200 and _NAME.fullmatch(value) else "unknown"


# The Lambda entry point (the function's Handler setting).
handler = from_settings(build)
