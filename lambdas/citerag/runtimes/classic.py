"""The Classic client: apps call a deployed agent through InvokeAgent and get the answer with full citations.

Action groups produce no retrievedReferences, so the service's attribution cannot name sources. The client
enables the trace and joins the search results the agent saw with the ids its answer cited
(citerag.traces.join); the same joiner reads the local runtime's events, so both paths return one Answer.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from citerag.adapters.aws import error_code, error_message
from citerag.citations.answer import Answer
from citerag.errors import CiteragError, DependencyError
from citerag.traces.join import answer_from_events

_MESSAGES = {
    "AccessDeniedException": "access denied: the caller may not invoke this agent alias (bedrock:InvokeAgent), or "
                             "the agent's role lacks a permission",
    "ResourceNotFoundException": "the agent or alias was not found; check the ids and the region",
    "ValidationException": "the request was rejected as invalid",
    "ThrottlingException": "the agent is throttling requests; try again shortly",
    "ServiceQuotaExceededException": "a Bedrock service quota was exceeded",
    "DependencyFailedException": "an action group or other dependency of the agent failed",
    "BadGatewayException": "the agent could not reach a dependency (bad gateway)",
    "ConflictException": "another request is using this session",
    "InternalServerException": "Bedrock had an internal error",
    "ModelNotReadyException": "the model is not ready yet; try again shortly",
}
_RETRYABLE = {"ThrottlingException", "ModelNotReadyException", "InternalServerException", "BadGatewayException"}

ReturnControlHandler = Callable[[dict[str, Any]], str]


class AgentClient:
    def __init__(self, client: Any, *, max_attempts: int = 4, backoff_s: float = 0.5,
                 mask: Callable[[str], str] | None = None) -> None:
        """`mask`: the rules the parser Lambda masks answers with, for an excerpt that is not the cited sentence."""
        self._client = client
        self._mask = mask
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.last_events: list[dict[str, Any]] = []

    def ask(self, question: str, agent_id: str, alias_id: str, *, session_id: str | None = None,
            session_attributes: dict[str, str] | None = None,
            on_return_control: ReturnControlHandler | None = None, stream: bool = False) -> Answer:
        """`stream`: the final response arrives in several chunks as the model writes it (InvokeAgent
        streamingConfigurations.streamFinalResponse); the citations are joined once the stream ends. The service
        does not stream while pre- or post-processing is on (AWS docs, agents-invoke-agent), so those deployments
        get one chunk either way."""
        session_id = session_id or uuid.uuid4().hex
        self.last_events = []
        state: dict[str, Any] = {"sessionAttributes": dict(session_attributes or {})}
        request = {"agentId": agent_id, "agentAliasId": alias_id, "sessionId": session_id, "inputText": question,
                   "enableTrace": True, "sessionState": state}
        if stream:
            request["streamingConfigurations"] = {"streamFinalResponse": True}
        for _ in range(5):  # at most a few return-control round trips
            events = self._invoke(request)
            self.last_events.extend(events)
            rc = next((e["returnControl"] for e in events if "returnControl" in e), None)
            if rc is None:
                return answer_from_events(self.last_events, mask=self._mask)
            if on_return_control is None:
                raise CiteragError("the agent returned control to the application (an action group is set to "
                                   "RETURN_CONTROL); pass on_return_control to run it")
            results = []
            for item in rc.get("invocationInputs", []):
                fn = item.get("functionInvocationInput", {})
                body = on_return_control(fn)
                results.append({"functionResult": {"actionGroup": fn.get("actionGroup", ""),
                                                   "function": fn.get("function", ""),
                                                   "responseBody": {"TEXT": {"body": body}}}})
            request = {**request, "inputText": "", "sessionState": {
                **state, "invocationId": rc.get("invocationId", ""), "returnControlInvocationResults": results}}
        raise CiteragError("the agent kept returning control; stopped after 5 round trips")

    def _invoke(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        from botocore.exceptions import ClientError, EventStreamError

        delay = self.backoff_s
        for attempt in range(1, self.max_attempts + 1):
            events: list[dict[str, Any]] = []
            try:
                resp = self._client.invoke_agent(**request)
                for ev in resp["completion"]:
                    events.append(ev)
                if not any("chunk" in e or "returnControl" in e for e in events):
                    # botocore ends the iteration quietly when the connection drops between or inside frames.
                    raise DependencyError("the response stream was cut before the answer finished "
                                          f"({len(events)} events received); try again")
                return events
            except (ClientError, EventStreamError) as exc:
                code, message = error_code(exc), error_message(exc)
                got_answer = any("chunk" in e for e in events)
                if code in _RETRYABLE and not got_answer and attempt < self.max_attempts:
                    time.sleep(delay)
                    delay *= 2
                    continue
                base = _MESSAGES.get(code, f"InvokeAgent failed ({code})")
                raise DependencyError(f"{base}: {message}" if message else base) from None
            except DependencyError:
                raise
            except Exception as exc:  # connection dropped, truncated frame, checksum mismatch...
                if type(exc).__name__ in ("ResponseStreamingError", "IncompleteReadError", "ProtocolError",
                                          "ChecksumMismatch", "InvalidPayloadLengthError", "ReadTimeoutError",
                                          "InvalidHeadersLength", "DuplicateHeader", "ParserError"):
                    raise DependencyError("the response stream was cut before the answer finished "
                                          f"({type(exc).__name__}); try again") from None
                raise
        raise DependencyError("InvokeAgent kept failing")
