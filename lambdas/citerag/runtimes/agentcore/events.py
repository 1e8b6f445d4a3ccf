"""The AgentCore runtime's wire contract: the invocation payload it accepts and the events it streams (one JSON object
per SSE `data:` frame, or the final one alone as the JSON response), and the Answer a client rebuilds from them.

Events are built from a whitelist of fields: raw Strands events carry the invocation state (the caller's access
data) and internals, so none is ever forwarded.

  {"type": "session", "session_id"}
  {"type": "step", "kind": "classification" | "search" | "reprompt" | "guardrail" | "grading" | "history", ...}
  {"type": "delta", "text"}                               verified, masked answer text, part by part
  {"type": "answer", "text", "answered", "citations": [{"span": {"start", "end"}, "text",
                     "sources": [{"source_id", "uri", "title", "page", "section", "excerpt"}]}], "session_id", "grades"}
  {"type": "error", "code", "message"}                    instead of "answer" when the turn could not finish
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from citerag.citations.answer import Answer
from citerag.citations.answer_wire import from_wire, to_wire
from citerag.documents.text import one_line
from citerag.errors import CiteragError, DependencyError
from citerag.search.query import MAX_QUERY_CHARS

# Every path reads the question with the one query validation (search.query), which takes 2,000 characters: a
# longer prompt was accepted here and failed later, past the search, without a reason.
MAX_PROMPT_CHARS = MAX_QUERY_CHARS
MAX_PAYLOAD_BYTES = 64_000  # generous for a question and an access object; the service allows 100 MB


class Invocation(BaseModel):
    """The payload of InvokeAgentRuntime (the body the runtime receives, unchanged)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS)
    # Trusted only when the deployment reads access from the payload (an IAM-authenticated backend sets it).
    access: dict[str, Any] | None = None
    stream: bool = True


class TurnRequest(BaseModel):
    """One turn as the entry point hands it to the agent: the access map is filled only from authenticated data."""

    question: str
    session_id: str
    actor_id: str = "anonymous"
    access: dict[str, str] = Field(default_factory=dict, description="tenant/groups from authenticated data only")


def new_session_id() -> str:
    """uuid4 text: 36 characters, a valid runtime session id (33..256) and Memory session id (<= 100) alike."""
    return str(uuid.uuid4())


class BadInvocation(CiteragError):
    """The payload cannot be served: the message says what to fix (HTTP 400)."""


def parse_invocation(payload: Any) -> Invocation:
    if not isinstance(payload, dict):
        raise BadInvocation("the payload must be a JSON object such as {\"prompt\": \"your question\"}")
    unknown = sorted(str(k) for k in payload if k not in Invocation.model_fields)
    if unknown:
        raise BadInvocation(f"unknown field {unknown[0][:64]!r}; the payload takes prompt, access and stream")
    try:
        inv = Invocation.model_validate(payload)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "payload"
        kind = err["type"]
        if kind == "missing":
            raise BadInvocation(f"the payload has no {where!r}; send {{\"prompt\": \"your question\"}}") from None
        if kind == "string_too_long":
            raise BadInvocation(f"{where!r} is longer than {MAX_PROMPT_CHARS:,} characters") from None
        if kind == "string_too_short":
            raise BadInvocation(f"{where!r} is empty") from None
        raise BadInvocation(f"{where!r} is not valid: {err['msg']}") from None
    if not inv.prompt.strip():
        raise BadInvocation("'prompt' is blank")
    question = one_line(inv.prompt)
    if not question:
        raise BadInvocation("'prompt' has no text, only control characters")
    return inv.model_copy(update={"prompt": question})


def session_event(session_id: str) -> dict[str, Any]:
    return {"type": "session", "session_id": session_id}


def step(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": "step", "kind": kind, **fields}


ErrorCode = Literal["bad_request", "denied", "model_unavailable", "search_unavailable", "history", "internal"]


def error_event(code: ErrorCode, message: str) -> dict[str, Any]:
    return {"type": "error", "code": code, "message": message}


def answer_event(answer: Answer, session_id: str, grades: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "answer", **to_wire(answer), "session_id": session_id, "grades": grades or {}}


def answer_from_events(events: Iterable[dict[str, Any]]) -> Answer:
    """The Answer a client shows, from the runtime's events (streamed or the single JSON response). An error event
    becomes the error it describes; a stream that ends without an answer was cut."""
    steps: list[dict[str, Any]] = []
    for ev in events:
        if not isinstance(ev, dict):
            continue
        if ev.get("type") == "error":
            message = str(ev.get("message") or "the agent failed")
            raise (DependencyError if ev.get("code") in ("model_unavailable", "search_unavailable", "history")
                   else CiteragError)(message)
        if ev.get("type") == "step":
            steps.append(ev)
        if ev.get("type") == "answer":
            return from_wire(ev, steps)
        if "error" in ev and "type" not in ev:  # the SDK's own frame when a handler raises mid-stream
            raise DependencyError("the agent runtime failed while streaming; try again")
    raise DependencyError("the response ended before the answer arrived; try again")
