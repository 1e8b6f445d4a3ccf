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
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
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


class LambdaContext:
    """What a Lambda handler reads from its context: request id, remaining time, and the client context AgentCore
    Gateway fills (`client_context.custom`)."""

    def __init__(self, custom: dict[str, str] | None = None, function_name: str = "citerag-gateway") -> None:
        import uuid

        self.function_name = function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = 1024
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:000000000000:function:{function_name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "local"
        self.client_context = type("ClientContext", (), {"custom": custom, "env": None, "client": None})() \
            if custom is not None else None

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


class GatewayDouble:
    """AgentCore Gateway in front of a Lambda target, speaking MCP (streamable HTTP) with the real `mcp` server SDK:
    tools/list gives the target's inline tool definitions named `<target>___<tool>`; tools/call runs the REQUEST
    interceptor (with the HTTP headers, as passRequestHeaders does), then the target Lambda with the arguments as the
    whole event and `bedrockAgentCoreToolName` in the client context, and returns its JSON as text content."""

    def __init__(self, target: Any, tools: list[dict[str, Any]], *, target_name: str = "citerag-search",
                 interceptor: Any = None, gateway_id: str = "citerag-gw-0123456789") -> None:
        self.target, self.tools, self.target_name = target, tools, target_name
        self.interceptor, self.gateway_id = interceptor, gateway_id
        self.events: list[Any] = []

    def app(self) -> Any:
        from mcp import types
        from mcp.server.lowlevel import Server

        async def list_tools(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(tools=[types.Tool(
                name=f"{self.target_name}___{t['name']}", description=t["description"],
                input_schema=t["inputSchema"]) for t in self.tools])

        async def call_tool(ctx: Any, params: Any) -> Any:
            import json
            import uuid

            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": params.name, "arguments": dict(params.arguments or {})}}
            if self.interceptor is not None:
                headers = dict(ctx.request.headers) if ctx.request is not None else {}
                if "authorization" in headers:
                    headers["Authorization"] = headers.pop("authorization")
                out = self.interceptor({"interceptorInputVersion": "1.0", "mcp": {
                    "rawGatewayRequest": {"body": json.dumps(body)},
                    "gatewayRequest": {"path": "/mcp", "httpMethod": "POST", "headers": headers, "body": body}}},
                    LambdaContext(function_name="citerag-gateway-interceptor"))
                body = out["mcp"]["transformedGatewayRequest"]["body"]
            event = body["params"]["arguments"]
            self.events.append(event)
            result = self.target(event, LambdaContext({
                "bedrockAgentCoreToolName": body["params"]["name"], "bedrockAgentCoreMessageVersion": "1.0",
                "bedrockAgentCoreGatewayId": self.gateway_id, "bedrockAgentCoreTargetId": "TARGET01",
                "bedrockAgentCoreAwsRequestId": str(uuid.uuid4()), "bedrockAgentCoreMcpMessageId": "1"}))
            return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(result))],
                                        is_error=False)

        server = Server("agentcore-gateway-double", on_list_tools=list_tools, on_call_tool=call_tool)
        return server.streamable_http_app(stateless_http=True, json_response=True)
