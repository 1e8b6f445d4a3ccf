"""Bedrock model-invocation logs (CloudWatch Logs) -> InvokeAgent-shaped trace events.

Each log record is one model call. The prompt tells which agent stage it belongs to (our templates open
with distinctive text; Bedrock's own templates are recognised by their wording), the output is parsed with
the parser Lambda's code, and the next orchestration prompt's scratchpad carries the function results, so a
turn can be rebuilt as the same steps a live InvokeAgent trace gives.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from citerag.citations.parser import ParserConfig, parse
from citerag.errors import CiteragError

_STAGE_MARKERS = (
    ("PRE_PROCESSING", ("classifier that screens the input", "<category>", "Category A:")),
    ("POST_PROCESSING", ("You check an answer", "<latest_response>", "$latest_response$")),
    ("KNOWLEDGE_BASE_RESPONSE_GENERATION", ("<search_results>",)),
    ("ORCHESTRATION", ("<tools>", "<function_calls>", "tool_name", "$agent_scratchpad$")),
)


def stage_of(prompt_text: str) -> str:
    for stage, markers in _STAGE_MARKERS:
        if any(m in prompt_text for m in markers):
            return stage
    return "ORCHESTRATION"


def parse_record(message: str) -> dict[str, Any] | None:
    """A model-invocation log record, or None when the line is not one (non-JSON, truncated, other schema)."""
    try:
        rec = json.loads(message)
    except (json.JSONDecodeError, TypeError):
        return None
    if not isinstance(rec, dict) or rec.get("schemaType") != "ModelInvocationLog":
        return None
    if not isinstance(rec.get("input"), dict) or not isinstance(rec.get("output"), dict):
        return None
    return rec


def _prompt_text(rec: dict[str, Any]) -> str:
    body = rec["input"].get("inputBodyJson")
    return json.dumps(body, ensure_ascii=False) if body is not None else str(rec["input"].get("inputBody", ""))


def _plain_text(rec: dict[str, Any]) -> str:
    """System prompt and message contents as the model read them (not JSON-escaped)."""
    body = rec["input"].get("inputBodyJson")
    if not isinstance(body, dict):
        return str(rec["input"].get("inputBody", ""))
    parts = [body.get("system") if isinstance(body.get("system"), str) else json.dumps(body.get("system", ""))]
    for m in body.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else ""
        if isinstance(content, list):
            content = "".join(c.get("text", "") for c in content if isinstance(c, dict))
        parts.append(str(content))
    return "\n".join(p for p in parts if p)


def _output_text(rec: dict[str, Any]) -> str:
    """What the parser Lambda would have received. Output with tool calls stays the response JSON (Claude 3.5 on:
    the parser reads tool_use blocks from it; the Converse shape's toolUse blocks are read the same way)."""
    body = rec["output"].get("outputBodyJson") or {}
    if isinstance(body, dict):
        content = body.get("content") or (body.get("output", {}).get("message", {}).get("content"))
        if isinstance(content, list):
            if any(isinstance(c, dict) and ("toolUse" in c or c.get("type") == "tool_use") for c in content):
                return json.dumps(body, ensure_ascii=False)
            return "".join(c.get("text", "") for c in content if isinstance(c, dict))
        if isinstance(body.get("completion"), str):
            return body["completion"]
    return str(rec["output"].get("outputBody", ""))


def _tool_results(rec: dict[str, Any]) -> list[str]:
    """Tool results in the request (native tools: Messages tool_result or Converse toolResult blocks)."""
    body = rec["input"].get("inputBodyJson")
    out: list[str] = []
    for m in (body.get("messages") or []) if isinstance(body, dict) else []:
        for c in (m.get("content") or []) if isinstance(m, dict) and isinstance(m.get("content"), list) else []:
            if not isinstance(c, dict):
                continue
            if c.get("type") == "tool_result":
                inner = c.get("content")
                out.append(inner if isinstance(inner, str) else "".join(
                    b.get("text", "") for b in inner or [] if isinstance(b, dict)))
            elif isinstance(c.get("toolResult"), dict):
                out.append("".join(b.get("text", "") for b in c["toolResult"].get("content") or []
                                   if isinstance(b, dict)))
    return out


def _usage(rec: dict[str, Any]) -> dict[str, int]:
    body = rec["output"].get("outputBodyJson") or {}
    usage = body.get("usage", {}) if isinstance(body, dict) else {}
    return {"inputTokens": int(rec["input"].get("inputTokenCount") or usage.get("input_tokens")
                               or usage.get("inputTokens") or 0),
            "outputTokens": int(rec["output"].get("outputTokenCount") or usage.get("output_tokens")
                                or usage.get("outputTokens") or 0)}


def _latency(rec: dict[str, Any]) -> int | None:
    body = rec["output"].get("outputBodyJson") or {}
    for value in (rec.get("latencyMs"), (body.get("metrics") or {}).get("latencyMs") if isinstance(body, dict)
                  else None):
        if isinstance(value, (int, float)):
            return int(value)
    return None


def records_to_events(records: Iterable[dict[str, Any]], cfg: ParserConfig | None = None) -> list[dict[str, Any]]:
    """Time-ordered log records -> trace events (the same shapes as InvokeAgent's)."""
    cfg = cfg or ParserConfig(verify_source_ids=False)
    events: list[dict[str, Any]] = []
    pending_calls: list[dict[str, Any]] = []
    for n, rec in enumerate(sorted(records, key=lambda r: r.get("timestamp", ""))):
        prompt = _prompt_text(rec)
        plain = _plain_text(rec)
        stage = stage_of(plain)
        raw = _output_text(rec)
        when = rec.get("timestamp")
        tid = rec.get("requestId") or f"log-{n}"
        key = {"PRE_PROCESSING": "preProcessingTrace", "POST_PROCESSING": "postProcessingTrace"}.get(
            stage, "orchestrationTrace")
        part = {"sessionId": _session_of(rec), "eventTime": when, "agentId": None}
        # Function results of earlier calls appear in this orchestration prompt's scratchpad.
        if stage == "ORCHESTRATION" and pending_calls:
            results = _tool_results(rec) or re.findall(r"<stdout>(.*?)</stdout>", plain, re.S)
            for call, body in zip(pending_calls, results[-len(pending_calls):], strict=False):
                events.append({"trace": {**part, "trace": {key: {"observation": {
                    "traceId": call["traceId"], "type": "ACTION_GROUP",
                    "actionGroupInvocationOutput": {"text": body}}}}}})
            pending_calls = []
        events.append({"trace": {**part, "trace": {key: {"modelInvocationInput": {
            "traceId": tid, "type": stage, "text": prompt, "foundationModel": rec.get("modelId")}}}}})
        parsed = parse({"messageVersion": "2.0", "promptType": stage, "invokeModelRawResponse": raw}, cfg)
        output: dict[str, Any] = {"traceId": tid, "rawResponse": {"content": raw},
                                  "metadata": {"usage": _usage(rec), "totalTimeMs": _latency(rec)}}
        if stage == "PRE_PROCESSING":
            p = parsed.get("preProcessingParsedResponse", {})
            output["parsedResponse"] = {"isValid": p.get("isValidInput"), "rationale": p.get("rationale", "")}
        elif stage == "POST_PROCESSING":
            output["parsedResponse"] = {"text": parsed.get("postProcessingParsedResponse", {}).get("responseText", "")}
        events.append({"trace": {**part, "trace": {key: {"modelInvocationOutput": output}}}})
        if stage != "ORCHESTRATION":
            continue
        body = parsed.get("orchestrationParsedResponse", {})
        if body.get("rationale"):
            events.append({"trace": {**part, "trace": {key: {"rationale": {"traceId": tid,
                                                                           "text": body["rationale"]}}}}})
        details = body.get("responseDetails", {})
        if "parsingErrorDetails" in body:
            events.append({"trace": {**part, "trace": {key: {"observation": {
                "traceId": tid, "type": "REPROMPT",
                "repromptResponse": {"text": body["parsingErrorDetails"]["repromptResponse"], "source": "PARSER"}}}}}})
        for inv in details.get("actionGroupInvocations") or []:
            params = [{"name": k, "type": "string", "value": v["value"]} for k, v in inv["actionGroupInput"].items()]
            events.append({"trace": {**part, "trace": {key: {"invocationInput": {
                "traceId": tid, "invocationType": "ACTION_GROUP", "actionGroupInvocationInput": {
                    "actionGroupName": inv["actionGroupName"], "function": inv["functionName"],
                    "parameters": params}}}}}})
            pending_calls.append({"traceId": tid})
        if details.get("invocationType") == "FINISH":
            events.append({"trace": {**part, "trace": {key: {"observation": {
                "traceId": tid, "type": "FINISH",
                "finalResponse": {"text": details["agentFinalResponse"]["responseText"]}}}}}})
    return events


def _session_of(rec: dict[str, Any]) -> str | None:
    meta = rec.get("requestMetadata") or {}
    return meta.get("sessionId") or meta.get("session_id")


def read_export(data: Any) -> tuple[list[dict[str, Any]], int]:
    """Records from a JSON export: `aws logs filter-log-events` output ({"events": [...]}), a list of log events
    or a list of records. Returns (records, lines skipped)."""
    items = data.get("events", data.get("logEvents")) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise CiteragError("the export holds no list of log events")
    records, skipped = [], 0
    for item in items:
        msg = item.get("message") if isinstance(item, dict) and "message" in item else json.dumps(item)
        rec = parse_record(msg)
        if rec is None:
            skipped += 1
        else:
            records.append(rec)
    return records, skipped


def filter_messages(client: Any, group: str, since: timedelta, session: str | None = None,
                    until: datetime | None = None, *, require_events: bool = True) -> Iterator[str]:
    """Messages of a log group in a time range (paginated FilterLogEvents, optionally only lines mentioning the
    session id). Raises CiteragError naming the fix for missing permissions, unknown groups and empty ranges."""
    end = until or datetime.now(UTC)
    start = end - since
    kwargs: dict[str, Any] = {"logGroupName": group, "startTime": int(start.timestamp() * 1000),
                              "endTime": int(end.timestamp() * 1000)}
    if session:
        kwargs["filterPattern"] = f'"{session}"'
    seen = 0
    try:
        for page in client.get_paginator("filter_log_events").paginate(**kwargs):
            for ev in page.get("events", []):
                seen += 1
                yield ev.get("message", "")
    except Exception as exc:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code", type(exc).__name__)
        if code in ("AccessDeniedException", "UnauthorizedOperation"):
            raise CiteragError(f"not allowed to read log group {group!r}: the caller needs logs:FilterLogEvents "
                               "on it") from None
        if code == "ResourceNotFoundException":
            raise CiteragError(f"there is no log group named {group!r} in this account and region") from None
        raise CiteragError(f"cannot read log group {group!r}: {code}") from None
    if not seen and require_events:
        which = f" for session {session}" if session else ""
        raise CiteragError(f"log group {group!r} has no events between {start:%Y-%m-%d %H:%M} and "
                           f"{end:%Y-%m-%d %H:%M} UTC{which}; widen --since")


def read_log_group(client: Any, group: str, since: timedelta, session: str | None = None,
                   until: datetime | None = None) -> tuple[list[dict[str, Any]], int]:
    """Model-invocation records of a log group, and how many lines were not records (skipped)."""
    records, skipped = [], 0
    for message in filter_messages(client, group, since, session, until):
        rec = parse_record(message)
        if rec is None:
            skipped += 1
        else:
            records.append(rec)
    return records, skipped


def read_lambda_lines(client: Any, group: str, since: timedelta, session: str | None = None) -> list[dict[str, Any]]:
    """Powertools structured log lines (those carrying a correlation_id, i.e. the agent session id)."""
    lines = []
    # A search Lambda with nothing logged in the range is normal (no errors, INFO filtered): not an error.
    for message in filter_messages(client, group, since, session, require_events=False):
        try:
            line = json.loads(message)
        except json.JSONDecodeError:
            continue
        if isinstance(line, dict) and "correlation_id" in line:
            lines.append(line)
    return lines


def parse_since(text: str) -> timedelta:
    m = re.fullmatch(r"\s*(\d+)\s*([smhd])\s*", text or "")
    if not m:
        raise CiteragError(f"--since {text!r}: write a duration such as 30m, 1h or 2d")
    n, unit = int(m.group(1)), m.group(2)
    return timedelta(**{{"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[unit]: n})


def iter_turn_bounds(events: list[dict[str, Any]]) -> Iterator[tuple[int, int]]:
    """Index ranges of turns: a turn starts at each pre-processing model input (or the first event)."""
    starts = [i for i, e in enumerate(events)
              if "preProcessingTrace" in e.get("trace", {}).get("trace", {})
              and "modelInvocationInput" in e["trace"]["trace"]["preProcessingTrace"]]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    yield from zip(starts, [*starts[1:], len(events)], strict=True)

