"""A double of Bedrock's Messages-API endpoint (bedrock-mantle `POST /anthropic/v1/messages`) that speaks the wire
format the real one does, so tests check the request the `anthropic` SDK actually sends.

It refuses what the service refuses: another path, a missing `anthropic-version: 2023-06-01` header, a SigV4
signature that does not verify for the `bedrock-mantle` service in its region (recomputed here with botocore from the
headers the request says it signed), `temperature` for a model that no longer accepts it. It answers with the
Messages API's response JSON, or with its server-sent events when the body says `"stream": true` (message_start,
content_block_start / _delta / _stop with text_delta and input_json_delta, message_delta, message_stop).
Sources: AWS inference-messages-api; Anthropic's Messages API reference (response and streaming events).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from citerag.testing.doubles import Request, _Server

PATH = "/anthropic/v1/messages"
VERSION = "2023-06-01"
NO_SAMPLING = ("anthropic.claude-opus-4-7",)  # 400 "`temperature` is deprecated for this model."

# (request body) -> (content blocks, stop_reason); a block is {"type": "text", "text"} or
# {"type": "tool_use", "id", "name", "input"}.
Responder = Callable[[dict[str, Any]], tuple[list[dict[str, Any]], str]]


def _error(status: int, kind: str, message: str) -> tuple[int, dict, dict]:
    return status, {"type": "error", "error": {"type": kind, "message": message}}, {}


class MessagesApiDouble(_Server):
    def __init__(self, respond: Responder, *, access_key: str = "AKIDMESSAGESDOUBLE", secret_key: str = "secret",
                 region: str = "ap-northeast-1", service: str = "bedrock-mantle") -> None:
        super().__init__()
        self.respond = respond
        self.access_key, self.secret_key, self.region, self.service = access_key, secret_key, region, service

    @property
    def base_url(self) -> str:
        return f"{self.url}/anthropic"

    def route(self, req: Request):
        if req.method != "POST" or req.path != PATH:
            return 404, {"message": f"no route {req.method} {req.path}"}, {}
        problem = verify_sigv4(req, self.access_key, self.secret_key, self.region, self.service)
        if problem:
            return 403, {"message": problem}, {"x-amzn-ErrorType": "InvalidSignatureException"}
        if req.headers.get("anthropic-version") != VERSION:
            return _error(400, "invalid_request_error", "anthropic-version: header is required")
        body = req.body if isinstance(req.body, dict) else {}
        if not body.get("model") or not isinstance(body.get("max_tokens"), int) or not body.get("messages"):
            return _error(400, "invalid_request_error", "model, max_tokens and messages are required")
        if "temperature" in body and any(str(body["model"]).endswith(m) for m in NO_SAMPLING):
            return _error(400, "invalid_request_error", "`temperature` is deprecated for this model.")
        for m in body["messages"]:
            for b in m["content"] if isinstance(m.get("content"), list) else []:
                if b.get("type") == "text" and not b.get("text"):
                    return _error(400, "invalid_request_error", "text content blocks must be non-empty")
        blocks, stop = self.respond(body)
        message = {"id": f"msg_{len(self.requests):04d}", "type": "message", "role": "assistant",
                   "model": body["model"], "content": blocks, "stop_reason": stop, "stop_sequence": None,
                   "usage": {"input_tokens": 100 + len(json.dumps(body)) // 10, "output_tokens": 20}}
        if not body.get("stream"):
            return 200, message, {"request-id": message["id"]}
        return 200, sse(message), {"Content-Type": "text/event-stream", "request-id": message["id"]}


def sse(message: dict[str, Any]) -> bytes:
    """The message as the Messages API streams it, text and tool input split across deltas."""
    def event(kind: str, data: dict[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data}, ensure_ascii=False)}\n\n"

    start = {**message, "content": [], "stop_reason": None,
             "usage": {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1}}
    out = [event("message_start", {"message": start}), event("ping", {})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            out.append(event("content_block_start", {"index": i, "content_block": {"type": "text", "text": ""}}))
            text = block["text"]
            for piece in (text[: len(text) // 2], text[len(text) // 2:]):
                out.append(event("content_block_delta", {"index": i,
                                                         "delta": {"type": "text_delta", "text": piece}}))
        else:
            out.append(event("content_block_start", {"index": i, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}))
            raw = json.dumps(block["input"], ensure_ascii=False)
            for piece in (raw[: len(raw) // 2], raw[len(raw) // 2:]):
                out.append(event("content_block_delta", {"index": i,
                                                         "delta": {"type": "input_json_delta", "partial_json": piece}}))
        out.append(event("content_block_stop", {"index": i}))
    out.append(event("message_delta", {"delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                       "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
    out.append(event("message_stop", {}))
    return "".join(out).encode()


def verify_sigv4(req: Request, access_key: str, secret_key: str, region: str, service: str) -> str:
    """'' when the request carries a SigV4 signature of `service` in `region` that botocore recomputes from the
    headers it names as signed and the body as it arrived; else what is wrong."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    auth = req.headers.get("authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return "missing SigV4 Authorization header"
    fields = dict(part.strip().split("=", 1) for part in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    scope = fields.get("Credential", "").split("/")
    if len(scope) != 5 or scope[0] != access_key or scope[2] != region or scope[3] != service:
        return f"credential scope {fields.get('Credential')!r} is not {access_key}/<date>/{region}/{service}"
    signed = fields.get("SignedHeaders", "").split(";")
    if "host" not in signed or "x-amz-date" not in signed:
        return "host and x-amz-date must be signed"
    url = f"http://{req.headers['host']}{req.path}"
    aws = AWSRequest(method=req.method, url=url, headers={h: req.headers.get(h, "") for h in signed}, data=req.raw)
    aws.context["timestamp"] = req.headers["x-amz-date"]
    signer = SigV4Auth(Credentials(access_key, secret_key, req.headers.get("x-amz-security-token")), service, region)
    expected = signer.signature(signer.string_to_sign(aws, signer.canonical_request(aws)), aws)
    return "" if expected == fields.get("Signature") else "the request signature does not match"
