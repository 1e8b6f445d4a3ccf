"""`citerag mcp`: an MCP server (official `mcp` SDK, MCPServer) over the embedded index, so Claude Desktop, Claude Code
or any MCP client can cite the user's own documents with file and page.

Two tools:
- `search_documents`: the one tool definition (name, description, input schema from citerag.citations.tool) running
  the same search tool as the action group and the Gateway target: passages with source ids, uri, title, page;
- `ask`: the AgentCore agent's turn in-process (classification, search, verified citations, grading, masking):
  {text, answered, citations: [{span, text, sources: [{source_id, uri, title, page, section, excerpt}]}], related}
  (related: when nothing answered, the files and pages search found, as places to look).

Both tools are read-only and closed-world (their annotations say so), and their schemas are closed: an argument the
schema does not name (`filter` for `filters`) or a number outside its stated bounds (`top_k` above 20) is refused
with what the schema allows, never ignored or capped. The indexed documents are resources: resources/list names the
documents this server may show, resources/read returns one by the `uri` a citation carries, one content item per
page or section (`_meta` says which).

Access is configured when the server starts (`--tenant`, `--group`), never by tool arguments; it decides which
documents search returns and which resources exist alike. Anticipated failures are ToolError results the client
shows (isError), never a traceback (mcp 2.x MCPServer turns other exceptions into an opaque "Error executing tool").
"""

from __future__ import annotations

import asyncio
import difflib
import json
import threading
import time
from typing import Any
from urllib.parse import unquote

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import Resource, ToolAnnotations

from citerag.answerers import OFFLINE, explained, lacks_agentcore_extra
from citerag.citations.answer_wire import to_wire
from citerag.citations.search_tool import RETRY_ATTRIBUTE, TURN_ATTRIBUTE, access_filter, may_see
from citerag.citations.tool import FUNCTION_DESCRIPTION, FUNCTION_NAME, INSTRUCTION, input_schema
from citerag.errors import CiteragError
from citerag.runtimes.agentcore.events import MAX_PROMPT_CHARS, TurnRequest, answer_from_events, new_session_id
from citerag.search.filters import unknown_keys, validate

RETRY_WINDOW_S = 120.0

ASK_DESCRIPTION = (
    "Answer a question from the user's documents with verified citations: every cited span names the file (uri), "
    "title and page (or section) of the passage it comes from, with the sentence quoted as excerpt. Use it when you "
    "want a finished, checked answer; use search_documents to read the passages yourself. When nothing answers, "
    "`related` lists the files and pages search found: places to look, not sources of a claim (cite none of them).")


def _version() -> str:
    """The installed citerag's version, which `initialize` reports as serverInfo.version (it was "")."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("citerag")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


ASK_SCHEMA = {"type": "object", "required": ["question"], "additionalProperties": False, "properties": {"question": {
    "type": "string", "maxLength": MAX_PROMPT_CHARS,
    "description": "The user's question, in their words (Japanese or English)."}}}

# Both tools only read the index (ask's model writes nothing either) and reach nothing but the user's documents and
# the configured model: hints a client uses to call them without asking each time. The fields and their defaults
# (readOnlyHint false, destructiveHint true, idempotentHint false, openWorldHint true, all to be stated) are the MCP
# schema's ToolAnnotations (schema/2025-06-18/schema.ts), as the official SDK models them
# (modelcontextprotocol/python-sdk, mcp_types/_types.py `ToolAnnotations`, serialised as readOnlyHint, ...).
SEARCH_ANNOTATIONS = ToolAnnotations(title="Search the documents", read_only_hint=True, destructive_hint=False,
                                     idempotent_hint=True, open_world_hint=False)
ASK_ANNOTATIONS = ToolAnnotations(title="Ask the documents (cited answer)", read_only_hint=True,
                                  destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def search_schema(max_top_k: int) -> dict[str, Any]:
    """The one definition's schema (citerag.citations.tool) closed and bounded for MCP clients, whose JSON Schema
    has every keyword (the Gateway's subset, which the shared definition keeps to, has neither)."""
    schema = input_schema()
    schema["additionalProperties"] = False
    schema["properties"]["top_k"] = {**schema["properties"]["top_k"], "minimum": 1, "maximum": max_top_k}
    return schema


def check_arguments(tool: str, arguments: dict[str, Any], schema: dict[str, Any]) -> None:
    """Refuse what the listed schema refuses and the SDK lets through: keys it does not name (its argument model
    ignores them) and integers outside their bounds (the search tool used its default)."""
    allowed = list(schema.get("properties", {}))
    unknown = [k for k in arguments if k not in allowed]
    if unknown and schema.get("additionalProperties") is False:
        near = difflib.get_close_matches(unknown[0], allowed, n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        raise ToolError(f"{tool} has no argument {', '.join(repr(k[:40]) for k in unknown[:5])}{hint}: the allowed "
                        f"keys are {', '.join(allowed)}")
    for name, prop in schema.get("properties", {}).items():
        value = arguments.get(name)
        if prop.get("type") != "integer" or value is None:
            continue
        low, high = prop.get("minimum"), prop.get("maximum")
        whole = (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float)
                                                                            and value.is_integer())
        shown = repr(value[:40]) if isinstance(value, str) else json.dumps(value)[:40]
        if whole and high is not None and value > high:
            raise ToolError(f"{name} is {shown}, over its maximum of {high}: pass a whole number from {low} to {high}")
        if whole and low is not None and value < low:
            raise ToolError(f"{name} is {shown}, under its minimum of {low}: pass a whole number from {low} to {high}")
        if not whole:
            raise ToolError(f"{name} is {shown}: pass a whole number from {low} to {high}")


class _Server(MCPServer):
    """MCPServer with closed argument schemas and the index's documents as resources."""

    def __init__(self, *args: Any, schemas: dict[str, dict[str, Any]], documents: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._schemas = schemas
        self._documents = documents

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if name in self._schemas:
            check_arguments(name, arguments, self._schemas[name])
        return await super().call_tool(name, arguments, context)

    async def list_resources(self) -> list[Resource]:
        return self._documents.list()

    async def read_resource(self, uri: Any, context: Any = None) -> list[ReadResourceContents]:
        return self._documents.read(str(uri))


class Documents:
    """The documents of the index this session may see (the rule search applies: `may_see`), as MCP resources named
    by the URI citations carry."""

    def __init__(self, components, session: dict[str, str]) -> None:
        self.index, self.ns = components.index, components.settings.namespace
        self.visible = may_see(session, components.search_tool().config)

    def _documents(self) -> list[Any]:
        return [d for d in self.index.list_documents(self.ns)
                if self.visible(self.index.document_metadata(d.doc_id, self.ns))]

    def list(self) -> list[Resource]:
        if not hasattr(self.index, "document_parts"):
            return []
        return [Resource(uri=d.source_uri, name=unquote(d.source_uri.rstrip("/").rsplit("/", 1)[-1]),
                         title=d.title, mime_type="text/plain",
                         description=f"{d.kind} document indexed {d.ingested_at}: its text, one item per "
                                     f"{'page' if d.kind == 'pdf' else 'section'}")
                for d in self._documents()]

    def read(self, uri: str) -> list[ReadResourceContents]:
        """The document's text as indexed, one item per page or section; `#page=N` (how a cited PDF page is
        opened) reads that page alone. A document this session may not see does not exist for it."""
        base, _, fragment = uri.partition("#")
        page = int(fragment[5:]) if fragment.startswith("page=") and fragment[5:].isdigit() else None
        doc = next((d for d in self._documents() if d.source_uri in (uri, base)), None)
        if doc is None or not hasattr(self.index, "document_parts"):
            # -32602 (invalid params) on the wire: SEP-2164 (modelcontextprotocol/modelcontextprotocol#2164, the
            # 2026-07-28 spec; -32002 before it), as the SDK's ResourceNotFoundError sends it.
            raise ResourceNotFoundError(f"no document {uri[:300]} among those this server may show (resources/list "
                                        "names them)")
        page = None if doc.source_uri == uri else page
        parts = [p for p in self.index.document_parts(doc.doc_id, self.ns) if page is None or p[0] == page]
        if not parts:
            raise ResourceNotFoundError(f"{base[:300]} has no page {page}")
        return [ReadResourceContents(content=text, mime_type="text/plain",
                                     meta={k: v for k, v in (("page", pg), ("section", sec)) if v is not None})
                for pg, sec, text in parts]


def _list_schema(server: MCPServer, name: str, schema: dict[str, Any]) -> None:
    """The schema clients list for a tool: ours, not the one the SDK derives from a signature that takes Any (the
    tool validates its arguments itself and says what to fix)."""
    registered = server._tool_manager.get_tool(name)
    assert registered is not None
    registered.parameters = schema


def _visible_keys(components, session: dict[str, str]) -> list[str]:
    """The metadata keys of the documents this session may see: a key only another tenant's documents carry is
    not named to it (it would tell what they are labelled with)."""
    index, ns = components.index, components.settings.namespace
    visible = may_see(session, components.search_tool().config)
    keys: set[str] = set()
    for doc in index.list_documents(ns):
        metadata = index.document_metadata(doc.doc_id, ns)
        if visible(metadata):
            keys.update(metadata)
    return sorted(keys)


def _known_keys(components, filters: Any, session: dict[str, str]) -> None:
    """A filter on a key no document has matched nothing, and the model was told to rewrite its query."""
    if isinstance(filters, str):
        try:
            filters = json.loads(filters)
        except (ValueError, RecursionError):  # "[[[[…": nested past what the parser takes
            return  # the search tool says what is wrong with it
    index = components.index
    try:
        validate(filters)
    except CiteragError:
        return  # the search tool says what is wrong with it
    if isinstance(filters, dict) and hasattr(index, "metadata_keys"):
        problem = unknown_keys(filters, _visible_keys(components, session))
        if problem:
            raise ToolError(f"The filters test a key the documents lack: {problem}. Fix the filters or leave them "
                            "out.")


def _client_key(ctx: Any) -> str:
    """The client a tool call is from: its streamable-HTTP session id, or "" (stdio serves one client)."""
    request = getattr(getattr(ctx, "request_context", None), "request", None) if ctx is not None else None
    headers = getattr(request, "headers", None)
    return str(headers.get("mcp-session-id", ""))[:200] if headers is not None else ""


def build_server(components, *, access: dict[str, str] | None = None) -> MCPServer:
    tool = components.search_tool()
    session = dict(access or {})
    try:  # a bad --tenant or --group is refused at start, not by every call
        access_filter(session, tool.config)
    except PermissionError as exc:
        reason = str(exc).split(", so ")[0].replace("This session's", "The").replace("This session", "The server")
        raise CiteragError(f"{reason}: start citerag mcp with --tenant ID (and --group ID), each made of letters, "
                           "digits and . _ : @ / + = -") from None
    schemas = {FUNCTION_NAME: search_schema(tool.config.max_top_k), "ask": ASK_SCHEMA}
    server = _Server("citerag", version=_version(), schemas=schemas, documents=Documents(components, session),
                       instructions=INSTRUCTION + " Cite the source_id, file and page (or section) of every "
                                                  "passage you use.")

    # The retry count, as sessionAttributes carry it on Classic: without it every search that found nothing was
    # "attempt 1 of 3", and the model was told to try again for ever. Per client: a streamable-HTTP session by its
    # Mcp-Session-Id, else the one client a stdio server has. MCP has no user turn to reset it at (Classic's starts
    # with each question), so a pause of RETRY_WINDOW_S starts a new count: a model's rewrites of one question come
    # seconds apart.
    retries: dict[str, tuple[float, dict[str, str]]] = {}
    retries_lock = threading.Lock()  # a plain tool runs in a worker thread: HTTP clients search at once

    def search_documents(query: Any = None, filters: Any = None, top_k: Any = None,
                         ctx: Context = None) -> dict[str, Any]:  # type: ignore[assignment]
        _known_keys(components, filters, session)
        client = _client_key(ctx)
        now = time.monotonic()
        with retries_lock:
            last, count = retries.get(client, (0.0, {}))
        state = {**session, **(count if now - last <= RETRY_WINDOW_S else {})}  # access stays the server's
        result, body = tool.run({"query": query, "filters": filters, "top_k": top_k}, state, lambda r, b: b)
        with retries_lock:
            for key in [k for k, (t, _) in retries.items() if now - t > RETRY_WINDOW_S]:
                retries.pop(key, None)  # ended sessions do not pile up
            retries[client] = (now, {k: v for k, v in result.session_attributes.items()
                                     if k in (RETRY_ATTRIBUTE, TURN_ATTRIBUTE)})
        payload = json.loads(body)
        if result.outcome in ("invalid", "denied", "unavailable"):
            raise ToolError(payload.get("hint") or payload.get("error") or "the search failed")
        return payload

    server.add_tool(search_documents, name=FUNCTION_NAME, description=FUNCTION_DESCRIPTION, structured_output=False,
                    title=SEARCH_ANNOTATIONS.title, annotations=SEARCH_ANNOTATIONS)
    # The listed schema is the one definition the action group and the Gateway use, closed and bounded; unknown keys
    # and bounds are checked before the call (check_arguments), the rest by the search tool, which says what to fix.
    _list_schema(server, FUNCTION_NAME, schemas[FUNCTION_NAME])

    agent = None
    # One turn at a time: the offline answerer's decision is read from the slot its turn left, and the bundled model
    # runs on the CPU anyway.
    turn = asyncio.Lock()

    async def ask(question: Any = None) -> dict[str, Any]:
        nonlocal agent
        if not isinstance(question, str):  # validated here: the SDK's own check answered with pydantic's text
            raise ToolError("question must be text: pass the user's question as a string")
        text = " ".join(question.split())
        if not text:
            raise ToolError("question is empty: pass the user's question")
        if len(text) > MAX_PROMPT_CHARS:
            raise ToolError(f"question is longer than {MAX_PROMPT_CHARS:,} characters")
        try:
            agent = agent or components.agentcore_agent()
        except ImportError as exc:
            if not lacks_agentcore_extra(exc):
                raise
            # The AgentCore agent comes with the agentcore extra (Strands); the local extra, which brings
            # `citerag mcp`, has the local Classic agent that `citerag ask` answers with: same search, answerer and
            # citation checks. The call used to fail with "No module named 'strands'".
            return await _ask_locally(text)
        async with turn:
            components.answering.newest = None
            events = [e async for e in agent.stream(TurnRequest(question=text, session_id=new_session_id(),
                                                                access=session))]
            decision = components.answering.newest
        final = next((e for e in reversed(events) if e.get("type") in ("answer", "error")), {})
        if final.get("type") != "answer":
            raise ToolError(str(final.get("message") or "the agent could not answer"))
        model = OFFLINE if type(components.agent_model).__name__ == "OfflineAgentModel" else ""
        answer = explained(answer_from_events(events), decision, events, model)
        return _wire(answer)

    def _wire(answer) -> dict[str, Any]:
        said = answer.decision.model_dump(mode="json", include={"answered", "reason", "detail", "probability",
                                                                "threshold"}) if answer.decision else None
        return to_wire(answer) | {"decision": said}

    async def _ask_locally(text: str) -> dict[str, Any]:
        from citerag.answerers import open_answerer

        # A session of its own per call, as the AgentCore agent's turn has: a question is not a follow-up.
        local = open_answerer(components, "local", session_attributes=dict(session), session_id=new_session_id())
        async with turn:
            try:
                answer = await asyncio.to_thread(local.ask, text)
            except CiteragError as exc:
                raise ToolError(str(exc)) from None
        return _wire(answer)

    server.add_tool(ask, name="ask", description=ASK_DESCRIPTION, structured_output=False,
                    title=ASK_ANNOTATIONS.title, annotations=ASK_ANNOTATIONS)
    _list_schema(server, "ask", ASK_SCHEMA)
    return server
