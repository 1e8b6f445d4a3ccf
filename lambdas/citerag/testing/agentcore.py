"""Local stand-ins for AgentCore, serving the real code over HTTP on 127.0.0.1:

- `RuntimeDouble`: the runtime app behind the InvokeAgentRuntime path (`POST /runtimes/{arn}/invocations` ->
  `POST /invocations`, the session header passed through), so a real boto3 `bedrock-agentcore` client pointed at it
  with AWS_ENDPOINT_URL_BEDROCK_AGENTCORE talks to the real app under uvicorn;
- `serve(app)`: any ASGI app under a real uvicorn server in a thread.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

# botocore percent-encodes the ARN into the path; ASGI decodes it, so the ARN's own "/" appears here.
_INVOKE = re.compile(r"^/runtimes/.+/invocations/?$")


class RuntimeDouble:
    """ASGI: the InvokeAgentRuntime data-plane path onto the runtime container's /invocations."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.paths: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.paths.append(scope["path"])
            if _INVOKE.match(scope["path"]):
                scope = {**scope, "path": "/invocations", "raw_path": b"/invocations", "query_string": b""}
        await self.app(scope, receive, send)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(app: Any, port: int | None = None) -> Iterator[str]:
    """Run `app` under uvicorn on 127.0.0.1; yields its base URL and stops the server on exit."""
    import uvicorn

    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the local server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
