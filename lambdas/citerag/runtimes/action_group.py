"""The `search_documents` action group's answer to an event (Bedrock Agents Classic, function-details schema).

One place decides what an action-group event gets back, wherever it runs: the search Lambda wraps it in its
Powertools logging, tracing and metrics, and the local Classic agent calls it directly. The event is checked and
read here, SearchTool (citerag.citations) decides everything else, and one envelope builder (Powertools'
BedrockFunctionsResponseBuilder) makes every response, results and errors alike.

Importing this module stays light (the search Lambda imports it at init): the response builder and the payload
code (Powertools' event_handler package, pydantic with the passage model, the search core) load on the first
event, when the components that need them load too.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, NamedTuple, Protocol

from citerag.citations.session import string_map
from citerag.citations.tool import FUNCTION_NAME

INTERNAL_ERROR = "search unavailable: internal error. Tell the user to try again later."

# Action-group and function names as bedrock-agent defines them (botocore shape "Name"): nothing else is echoed.
_NAME = re.compile(r"([0-9a-zA-Z][_-]?){1,100}")
MAX_PARAMETERS = 20
MAX_ATTRIBUTES_BYTES = 16_384

_log = logging.getLogger(__name__)


class Log(Protocol):
    """What is logged here: the stdlib's Logger and Powertools' Logger both fit."""

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...

    def exception(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...


class Reply(NamedTuple):
    response: dict[str, Any]
    result: Any = None  # the tool's ToolResult; None when the event was refused or the search failed


def respond(tool, event: Any, *, log: Log | None = None) -> dict[str, Any]:
    """The action-group response to `event` from this SearchTool."""
    return reply(tool, event, log=log).response


def reply(tool, event: Any, *, log: Log | None = None) -> Reply:
    """The response and, when the tool ran, its result (for the caller's metrics and logs). A refused event and a
    failed search are logged to `log` (this module's logger by default); the agent never sees a stack trace."""
    from citerag.citations.payload import dumps_body, message_payload

    log = log or _log
    ev = sanitize_event(event)
    problem = validate_event(event)
    if problem:
        log.warning("rejected event", extra={"reason": problem})
        return Reply(envelope(ev, dumps_body(message_payload(error=problem))))
    if ev["function"] != FUNCTION_NAME:
        return Reply(envelope(ev, dumps_body(message_payload(error=(
            f"Unknown function {ev['function'][:64]!r}. This action group offers {FUNCTION_NAME}(query, "
            "filters?, top_k?): call that instead."))), state="REPROMPT"))
    try:
        result, body = tool.run(ev["parameters"], ev["sessionAttributes"],
                                lambda r, b: envelope(ev, b, r.state, r.session_attributes),
                                turn=ev["inputText"] if isinstance(ev.get("inputText"), str) else "")
    except Exception:  # never let the agent see a stack trace
        log.exception("search failed")
        return Reply(envelope(ev, dumps_body(message_payload(error=INTERNAL_ERROR))))
    return Reply(envelope(ev, body, result.state, result.session_attributes), result)


def envelope(event: dict[str, Any], body: str, state: str | None = None,
             session_attributes: dict[str, str] | None = None) -> dict[str, Any]:
    """The action-group response for a (sanitized) event: the one builder of every response the action group sends."""
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
