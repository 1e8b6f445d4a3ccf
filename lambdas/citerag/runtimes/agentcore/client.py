"""The AgentCore client: apps call a deployed runtime and get the same Answer the other runtimes return.

IAM-authenticated runtimes are called with boto3 `bedrock-agentcore.invoke_agent_runtime` (botocore 2024-02-28:
POST /runtimes/{agentRuntimeArn}/invocations, runtimeSessionId 33..256 characters, the response a plain streaming
body, not an AWS event stream, read line by line). A runtime with a JWT authorizer cannot be called through the SDK
("If you're integrating your agent with OAuth, you can't use the AWS SDK to call InvokeAgentRuntime", botocore
documentation of the operation): `ask_with_token` sends the same request over HTTPS with the bearer token.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from typing import Any, get_args
from urllib.parse import quote

from citerag.adapters.aws import describe_error, error_code
from citerag.citations.answer import Answer
from citerag.errors import CiteragError, DependencyError
from citerag.runtimes.agentcore.events import ErrorCode, answer_from_events, new_session_id

RUNTIME_ARN = re.compile(r"arn:aws[a-z-]*:bedrock-agentcore:([a-z0-9-]+):(\d{12}):"
                         r"runtime/([A-Za-z][A-Za-z0-9_-]{0,99})")
_MESSAGES = {
    "AccessDeniedException": "access denied: the caller may not invoke this runtime (bedrock-agentcore:"
                             "InvokeAgentRuntime), or the runtime rejected its credentials",
    "ResourceNotFoundException": "the runtime or its endpoint was not found; check the ARN, qualifier and region",
    "ValidationException": "the request was rejected as invalid",
    "ThrottlingException": "the runtime is throttling requests; try again shortly",
    "ServiceQuotaExceededException": "an AgentCore quota was exceeded (active sessions or invocations)",
    "RuntimeClientError": "the agent inside the runtime failed",
    "InternalServerException": "AgentCore had an internal error; try again",
}


_AGENT_CODES = set(get_args(ErrorCode))


def parse_arn(arn: str) -> str:
    """The region of a runtime ARN; CiteragError when it is not one."""
    m = RUNTIME_ARN.fullmatch(arn.strip())
    if not m:
        raise CiteragError(f"{arn[:200]!r} is not an AgentCore runtime ARN "
                           "(arn:aws:bedrock-agentcore:REGION:ACCOUNT:runtime/ID)")
    return m.group(1)


class RuntimeClient:
    def __init__(self, client: Any = None) -> None:
        self._client = client
        self.last_events: list[dict[str, Any]] = []

    def ask(self, question: str, runtime_arn: str, *, session_id: str | None = None,
            access: dict[str, Any] | None = None, qualifier: str | None = None) -> Answer:
        parse_arn(runtime_arn)
        request: dict[str, Any] = {
            "agentRuntimeArn": runtime_arn, "runtimeSessionId": session_id or new_session_id(),
            "payload": _payload(question, access), "contentType": "application/json", "accept": "text/event-stream"}
        if qualifier:
            request["qualifier"] = qualifier
        try:
            resp = self._client.invoke_agent_runtime(**request)
            body = resp["response"]
            if "text/event-stream" in str(resp.get("contentType", "")):
                self.last_events = list(_sse(line.decode("utf-8", "replace") for line in body.iter_lines()))
            else:
                self.last_events = [json.loads(body.read())]
        except Exception as exc:
            raise _error(exc) from None
        return answer_from_events(self.last_events)

    def ask_with_token(self, question: str, runtime_arn: str, token: str, *, session_id: str | None = None,
                       qualifier: str = "DEFAULT", timeout_s: float = 900) -> Answer:
        region = parse_arn(runtime_arn)
        endpoint = os.environ.get("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE") or \
            f"https://bedrock-agentcore.{region}.amazonaws.com"
        req = urllib.request.Request(
            f"{endpoint.rstrip('/')}/runtimes/{quote(runtime_arn, safe='')}/invocations?qualifier={quote(qualifier)}",
            data=_payload(question, None), method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                     "Accept": "text/event-stream",
                     "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": session_id or new_session_id()})
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                self.last_events = list(_sse(line.decode("utf-8", "replace") for line in resp))
        except urllib.error.HTTPError as exc:
            raise CiteragError(f"the runtime refused the request (HTTP {exc.code}): {_body_message(exc)}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise DependencyError(f"the runtime could not be reached ({type(exc).__name__})") from None
        return answer_from_events(self.last_events)


def _payload(question: str, access: dict[str, Any] | None) -> bytes:
    payload: dict[str, Any] = {"prompt": question}
    if access:
        payload["access"] = access
    return json.dumps(payload, ensure_ascii=False).encode("utf-8")


def _sse(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The JSON objects of `data:` frames; a JSON body (the runtime answered without streaming) is one object."""
    for raw in lines:
        line = raw.rstrip("\r\n")
        if line.startswith("data:"):
            try:
                yield json.loads(line[5:].strip())
            except json.JSONDecodeError:
                continue
        elif line.startswith("{"):
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def _error(exc: BaseException) -> CiteragError:
    code = error_code(exc)
    if code in _MESSAGES:
        base = _MESSAGES[code]
        message = describe_error(exc).partition(": ")[2]
        return (CiteragError if code in ("AccessDeniedException", "ResourceNotFoundException", "ValidationException")
                else DependencyError)(f"{base}: {message}" if message else base)
    if code.lower() in _AGENT_CODES:  # the agent's own error body {"type", "code", "message"}, read by botocore
        message = describe_error(exc).partition(": ")[2]
        return (CiteragError if code.lower() in ("bad_request", "denied") else DependencyError)(
            f"the agent refused the request: {message}" if code.lower() in ("bad_request", "denied") else message)
    if code.isdigit():  # the agent answered with an HTTP error of its own (botocore names the status)
        return CiteragError(f"the agent refused the request (HTTP {code}): {describe_error(exc).partition(': ')[2]}")
    if type(exc).__name__ == "ParamValidationError":
        return CiteragError(f"the request is invalid: {str(exc).splitlines()[-1].strip()}")
    return DependencyError(f"InvokeAgentRuntime failed ({describe_error(exc)})")


def _body_message(exc: urllib.error.HTTPError) -> str:
    try:
        data = json.loads(exc.read()[:10_000])
    except (json.JSONDecodeError, ValueError):
        return exc.reason or ""
    return str(data.get("message") or data.get("error") or "")[:500] if isinstance(data, dict) else ""
