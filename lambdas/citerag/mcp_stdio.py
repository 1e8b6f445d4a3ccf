"""`citerag mcp` over stdio: the SDK's transport (fd claims, one JSON message per line), with every line checked
first. The SDK drops a line it cannot read and answers nothing, so a client waited for its own timeout on a lone
surrogate, truncated JSON or 100,000 nested brackets; here each gets a JSON-RPC error at once, as the HTTP
transport answers the same inputs (its 400 with a parse error). A line is bounded (as HTTP bounds a body)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from typing import Any, BinaryIO

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from citerag.documents.text import encodable

MAX_LINE_BYTES = 4 * 1024 * 1024  # the SDK's DEFAULT_MAX_REQUEST_BODY_SIZE for a streamable-HTTP body
PARSE_ERROR, INVALID_REQUEST = -32700, -32600  # JSON-RPC 2.0


def problem(line: str) -> tuple[int, str, Any] | None:
    """(code, message, id) for a line that is not one JSON-RPC message, None for one that is."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except Exception as exc:  # pydantic's ValidationError, for bad JSON and bad shape alike
        sdk_error = exc
    try:
        obj = json.loads(line)
    except RecursionError:
        return PARSE_ERROR, "Parse error: the message is nested too deeply", None
    except ValueError as exc:
        return PARSE_ERROR, f"Parse error: the message is not complete JSON ({exc})"[:300], None
    ident = obj.get("id") if isinstance(obj, dict) else None
    ident = ident if isinstance(ident, str | int) and not isinstance(ident, bool) else None
    if encodable(obj) != obj:
        return (PARSE_ERROR, "Parse error: the message holds a lone surrogate escape (such as \\ud83d without its "
                             "pair); send whole characters", encodable(ident) if isinstance(ident, str) else ident)
    first = getattr(sdk_error, "errors", lambda: [{}])()
    where = ".".join(str(p) for p in (first[0].get("loc") or ())) if first else ""
    return (INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 request, notification or response"
            + (f" ({where})" if where else ""), ident)


def read_line(stream: BinaryIO) -> bytes | None:
    """One line of at most MAX_LINE_BYTES (+1 when longer: the rest is read and dropped); None at the end."""
    line = stream.readline(MAX_LINE_BYTES + 1)
    if not line:
        return None
    if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
        while (rest := stream.readline(1 << 20)) and not rest.endswith(b"\n"):
            pass
    return line


async def run_stdio(server: MCPServer, stdin: BinaryIO | None = None) -> None:
    source = stdin or sys.stdin.buffer
    ready = anyio.Event()
    outgoing: list[Any] = []

    async def reply(code: int, message: str, ident: Any) -> None:
        await ready.wait()
        error = types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(code=code, message=message))
        await outgoing[0].send(SessionMessage(error))

    async def checked() -> AsyncIterator[str]:
        while (raw := await anyio.to_thread.run_sync(read_line, source, abandon_on_cancel=True)) is not None:
            if len(raw) > MAX_LINE_BYTES:
                await reply(INVALID_REQUEST, f"Invalid Request: the message is over {MAX_LINE_BYTES:,} bytes", None)
                continue
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            found = problem(line)
            if found is None:
                yield line
            else:
                await reply(*found)

    class Lines:  # what stdio_server iterates: `async for line in stdin`
        def __aiter__(self) -> AsyncIterator[str]:
            return checked()

    async with stdio_server(stdin=Lines()) as (read_stream, write_stream):  # type: ignore[arg-type]
        outgoing.append(write_stream)
        ready.set()
        low = server._lowlevel_server
        await low.run(read_stream, write_stream, low.create_initialization_options())
