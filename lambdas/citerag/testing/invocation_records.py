"""Real-shaped Bedrock model-invocation log records, made from the local runtime's events (what the service
would have logged for the same model calls). For tests and for timing `citerag trace`."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any


def records_from_events(
    events: list[dict[str, Any]],
    *,
    session_id: str,
    start: datetime | None = None,
    account: str = "123456789012",
    region: str = "ap-northeast-1",
) -> list[dict[str, Any]]:
    inputs: dict[str, dict[str, Any]] = {}
    out = []
    clock = start or datetime.now(UTC)
    for ev in events:
        trace = ev.get("trace", {}).get("trace", {})
        for body in trace.values():
            if not isinstance(body, dict):
                continue
            if "modelInvocationInput" in body:
                inputs[body["modelInvocationInput"]["traceId"]] = body["modelInvocationInput"]
            mo = body.get("modelInvocationOutput")
            if not mo:
                continue
            mi = inputs.get(mo["traceId"], {})
            usage = (mo.get("metadata") or {}).get("usage") or {}
            clock += timedelta(milliseconds=(mo.get("metadata") or {}).get("totalTimeMs") or 5)
            raw = mo["rawResponse"]["content"]
            try:  # Claude 3.5 on: the raw response is already the response body the log holds
                body_json = json.loads(raw)
            except json.JSONDecodeError:
                body_json = None
            if not isinstance(body_json, dict) or "content" not in body_json:
                body_json = {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
                             "content": [{"type": "text", "text": raw}], "stop_reason": "stop_sequence",
                             "usage": {"input_tokens": usage.get("inputTokens", 0),
                                       "output_tokens": usage.get("outputTokens", 0)}}
            out.append(
                {
                    "schemaType": "ModelInvocationLog",
                    "schemaVersion": "1.0",
                    "timestamp": clock.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                    "accountId": account,
                    "identity": {"arn": f"arn:aws:sts::{account}:assumed-role/AmazonBedrockExecutionRoleForAgents/x"},
                    "region": region,
                    "requestId": str(uuid.uuid4()),
                    "operation": "InvokeModel",
                    "modelId": mi.get("foundationModel") or "anthropic.claude-3-5-sonnet-20240620-v1:0",
                    "requestMetadata": {"sessionId": session_id},
                    "input": {
                        "inputContentType": "application/json",
                        "inputBodyJson": json.loads(mi.get("text", "{}")),
                        "inputTokenCount": usage.get("inputTokens", 0),
                    },
                    "output": {
                        "outputContentType": "application/json",
                        "outputBodyJson": body_json,
                        "outputTokenCount": usage.get("outputTokens", 0),
                    },
                }
            )
    return out
