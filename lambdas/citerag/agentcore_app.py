"""The AgentCore Runtime entry point: a `BedrockAgentCoreApp` (Starlette; POST /invocations, GET /ping on port 8080)
whose one entrypoint validates the payload, resolves access from authenticated data, and streams the agent's turn.

Thin, like the Lambda handlers: `build(components)` makes the handler, `app` builds it from CITERAG_* settings on the
first invocation (not at import: /ping must answer while the container warms up). Contract facts relied on
(bedrock-agentcore 1.25 `runtime/app.py`): the handler's second parameter must be named `context` to receive the
RequestContext (session_id from X-Amzn-Bedrock-AgentCore-Runtime-Session-Id, request_headers with `Authorization`
and allowlisted headers); an async generator is streamed as SSE `data: {json}\\n\\n` frames; a Starlette Response is
passed through with its status; an exception would become a 500 with its message, so none escapes here.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp
from starlette.responses import JSONResponse

from citerag.citations.access import AccessError, bearer_claims, from_claims, from_payload, single_header, unique_keys
from citerag.errors import QueryError
from citerag.runtimes.agentcore.events import (
    BadInvocation,
    TurnRequest,
    error_event,
    new_session_id,
    parse_invocation,
)
from citerag.search.query import analyze

logger = logging.getLogger("citerag.agentcore")
_SESSION = re.compile(r"[\x21-\x7e]{1,256}")
Handler = Callable[[Any, Any], Awaitable[Any]]


def build(components) -> Handler:
    agent = components.agentcore_agent()
    s = components.settings

    async def handle(payload: Any, context: Any) -> Any:
        try:
            inv = parse_invocation(payload)
            question = inv.prompt
            analyze(question)  # the one query validation (length, content)
        except (BadInvocation, QueryError) as exc:
            return JSONResponse(error_event("bad_request", str(exc)), status_code=400)
        session_id = getattr(context, "session_id", None) or new_session_id()
        if not _SESSION.fullmatch(session_id):
            return JSONResponse(error_event("bad_request", "the session id must be 1 to 256 printable ASCII "
                                                           "characters"), status_code=400)
        headers = getattr(context, "request_headers", None) or {}
        try:
            access, actor = resolve_access(s, inv.access, headers)
        except AccessError as exc:
            return JSONResponse(error_event("denied", str(exc)), status_code=403)
        req = TurnRequest(question=question, session_id=session_id, actor_id=actor, access=access)
        events = _guarded(agent.stream(req))
        if inv.stream:
            return events
        collected = [e async for e in events]
        final = collected[-1]
        status = 200 if final["type"] == "answer" else 403 if final.get("code") == "denied" else 503
        return JSONResponse({**final, "steps": [e for e in collected if e["type"] == "step"]}, status_code=status)

    return handle


def resolve_access(s, access_field: Any, headers: dict[str, str]) -> tuple[dict[str, str], str]:
    """(the session-attribute map for the search tool's access filter, the Memory actor) from what the caller
    authenticated: the validated JWT's claims, or the field an IAM-authenticated backend sets. Never both."""
    if s.agentcore_access == "jwt":
        if access_field is not None:
            raise AccessError("this runtime takes access from the bearer token; remove the 'access' field")
        claims = bearer_claims(headers.get("Authorization"))
        access = from_claims(claims, s.agentcore_tenant_claim, s.agentcore_groups_claim)
        return access, f"{access.get('tenant') or 'public'}:{claims.get('sub') or 'anonymous'}"
    access = from_payload(access_field)
    return access, access.get("tenant") or "public"


async def _guarded(events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    """The turn's events; an unexpected failure ends the stream with an error event that names no internals."""
    try:
        async for event in events:
            yield event
    except Exception:
        logger.exception("agent turn failed")
        yield error_event("internal", "the agent failed unexpectedly; try again")


class InProcessRuntime:
    """`citerag ask --agent agentcore-local` and the benches: the runtime's own handler (payload validation, access,
    the agent's turn) called in-process with the SDK's RequestContext, as the app would call it."""

    def __init__(self, components) -> None:
        self._handle = build(components)

    def invoke(self, payload: Any, *, session_id: str | None = None,
               headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
        import asyncio

        from bedrock_agentcore.runtime.context import RequestContext

        context = RequestContext(session_id=session_id, request_headers=headers or None)

        async def run() -> list[dict[str, Any]]:
            result = await self._handle(payload, context)
            if isinstance(result, JSONResponse):
                return [json.loads(bytes(result.body))]
            return [e async for e in result]

        return asyncio.run(run())

    def ask(self, question: str, *, session_id: str | None = None, access: dict[str, Any] | None = None):
        """(Answer, events) for one question, as a client of the runtime would get them."""
        from citerag.runtimes.agentcore.events import answer_from_events

        payload: dict[str, Any] = {"prompt": question}
        if access:
            payload["access"] = access
        events = self.invoke(payload, session_id=session_id)
        return answer_from_events(events), events


class Unambiguous:
    """ASGI middleware: an invocation whose identity two readers could read two ways is refused with 400 before
    the SDK reads it: two Authorization headers with different values (the SDK keeps the last, a proxy may use
    the first), or a JSON body with a key written twice ({"access": …, "access": …}: Python keeps the last)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("path") != "/invocations":
            await self.app(scope, receive, send)
            return
        try:
            single_header(scope.get("headers") or [], "Authorization")
        except AccessError as exc:
            await JSONResponse(error_event("bad_request", str(exc)), status_code=400)(scope, receive, send)
            return
        chunks, more = [], True
        while more:  # read whole, as the SDK would, then handed on unchanged
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, receive, send)
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            json.loads(body, object_pairs_hook=unique_keys)
        except AccessError as exc:
            await JSONResponse(error_event("bad_request", str(exc)), status_code=400)(scope, receive, send)
            return
        except (ValueError, RecursionError):
            pass  # not JSON: the SDK's own answer

        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def create_app(components=None) -> BedrockAgentCoreApp:
    """The runtime app over these components (tests), or over CITERAG_* settings built on the first invocation."""
    app = BedrockAgentCoreApp()
    app.add_middleware(Unambiguous)
    built: Handler | None = None

    @app.entrypoint
    async def invocations(payload: Any, context: Any) -> Any:  # `context` by name: the SDK passes it only so
        nonlocal built
        if built is None:
            from citerag.components import Components
            from citerag.settings import Settings

            built = build(components or Components(Settings()))
        return await built(payload, context)

    return app


app = create_app()


def main() -> None:
    """`python -m citerag.agentcore_app`, or the runtime zip's main.py: serve on 0.0.0.0:8080 as the AgentCore
    HTTP contract requires (docs runtime-http-protocol-contract)."""
    app.run(port=8080, host="0.0.0.0")


if __name__ == "__main__":
    main()
