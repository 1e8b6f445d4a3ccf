"""AgentCore turns in the same step view as InvokeAgent traces (`citerag ask --trace`, `citerag trace`):

- from the runtime's own events (a saved `ask --save-trace` of `--runtime` or `agentcore-local`);
- from OpenTelemetry spans: the `aws/spans` CloudWatch log group (one span document per log event, the shape
  bedrock-agentcore's ADOT serializer and CloudWatch readers use: traceId, spanId, parentSpanId, name,
  startTimeUnixNano, endTimeUnixNano, attributes{}, status) or an OTLP/JSON export (resourceSpans[].scopeSpans[].
  spans[] with attributes as [{key, value{stringValue|intValue|...}}]).

Span names and attributes read: Strands 1.62 `invoke_agent *`, `chat` (gen_ai.request.model, gen_ai.usage.*),
`execute_tool search_documents` (gen_ai.tool.*; with the latest GenAI conventions also gen_ai.tool.call.arguments
and .result), and the agent's own `citerag.turn` (session.id, citerag.question, citerag.result: the final event).
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from citerag.citations.answer import Answer
from citerag.citations.answer_wire import from_wire
from citerag.citations.payload import results_of
from citerag.traces.invocation_logs import filter_messages
from citerag.traces.report import Turn
from citerag.traces.steps import Step
from citerag.traces.wording import plural


def steps_from_runtime_events(events: list[dict[str, Any]]) -> list[Step]:
    steps: list[Step] = []
    for e in events:
        if not isinstance(e, dict):
            continue
        kind = e.get("kind")
        if e.get("type") == "step":
            steps.append(_event_step(kind, e))
        elif e.get("type") == "answer":
            steps.append(Step(kind="answer", title=_short(e.get("text", ""), 160),
                              detail={"text": e.get("text"), "citations": e.get("citations")}))
        elif e.get("type") == "error":
            steps.append(Step(kind="failure", title=f"failure ({e.get('code')}): {_short(e.get('message', ''), 140)}"))
    return steps


def _event_step(kind: str | None, e: dict[str, Any]) -> Step:
    if kind == "classification":
        verdict = "accepted" if e.get("accepted") else "rejected"
        return Step(kind="pre-processing", prompt_type="PRE_PROCESSING", title=f"input {verdict} "
                    f"(category {e.get('category') or '?'})", detail={"rationale": e.get("rationale")})
    if kind == "search":
        sources = e.get("sources") or []
        title = (f"search_documents({e.get('query', '')!r}) returned {plural(len(sources), 'source')}: "
                 + ", ".join(str(s.get("source_id")) for s in sources)) if sources else \
            f"search_documents({e.get('query', '')!r}): {e.get('outcome')} {_short(e.get('message') or '', 100)}"
        return Step(kind="observation", prompt_type="ORCHESTRATION", title=title, ms=e.get("ms"),
                    detail={"sources": sources, "outcome": e.get("outcome")})
    if kind in ("reprompt", "rejected"):
        return Step(kind="reprompt", prompt_type="ORCHESTRATION", title=f"{kind} (citation check): "
                    + _short(e.get("reason", ""), 140), detail={"ids": e.get("ids")})
    if kind == "guardrail":
        return Step(kind="guardrail", title=f"guardrail {e.get('action')} on the {e.get('stage')}")
    if kind == "grading":
        return Step(kind="post-processing", prompt_type="POST_PROCESSING",
                    title=f"grading: grounding {e.get('grounding', 0):.2f}, dropped {e.get('dropped_parts', 0)}, "
                          f"masked {', '.join(e.get('pii_masked') or []) or 'nothing'}", detail=dict(e))
    return Step(kind=str(kind or "step"), title=_short(json.dumps(e, ensure_ascii=False), 160))


# --- OpenTelemetry spans ---------------------------------------------------------------------------------------


def read_span_documents(data: Any) -> tuple[list[dict[str, Any]], int]:
    """Spans from an OTLP/JSON export, a list of span documents (aws/spans), or CloudWatch Logs events whose
    `message` is a span document. Returns (spans with plain attribute dicts, unreadable items skipped)."""
    if isinstance(data, dict) and "resourceSpans" in data:
        items = [(sp, _otlp_span) for rs in data.get("resourceSpans") or []
                 for ss in (rs or {}).get("scopeSpans") or [] for sp in (ss or {}).get("spans") or []]
    else:
        found = data.get("events") if isinstance(data, dict) and isinstance(data.get("events"), list) else data
        if not isinstance(found, list):
            return [], 1
        items = [(item, _document_span) for item in found]
    spans = [s for s in (read(item) for item, read in items) if s is not None]
    return spans, len(items) - len(spans)


def _document_span(item: Any) -> dict[str, Any] | None:
    if isinstance(item, dict) and isinstance(item.get("message"), str):  # a CloudWatch Logs event
        try:
            item = json.loads(item["message"])
        except json.JSONDecodeError:
            return None
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item.get("traceId"):
        return None
    attrs = item.get("attributes")
    attrs = _otlp_attributes(attrs) if isinstance(attrs, list) else attrs if isinstance(attrs, dict) else {}
    return {"traceId": str(item["traceId"]), "spanId": str(item.get("spanId", "")),
            "parentSpanId": item.get("parentSpanId") or None, "name": item["name"],
            "start": _int(item.get("startTimeUnixNano")), "end": _int(item.get("endTimeUnixNano")),
            "attributes": attrs, "status": (item.get("status") or {}).get("code") if isinstance(item.get("status"),
                                                                                              dict) else None}


def _otlp_span(sp: Any) -> dict[str, Any] | None:
    if not isinstance(sp, dict):
        return None
    return _document_span({**sp, "attributes": sp.get("attributes") or []})


def _otlp_attributes(items: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in items:
        if isinstance(kv, dict) and isinstance(kv.get("key"), str):
            out[kv["key"]] = _otlp_value(kv.get("value") or {})
    return out


def _otlp_value(v: dict[str, Any]) -> Any:
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        return _int(v["intValue"])
    if "arrayValue" in v:
        return [_otlp_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    return None


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def turns_from_spans(spans: list[dict[str, Any]], session: str | None = None) -> list[Turn]:
    """Group spans by trace (one invocation), keep those of `session`, and read each as one turn."""
    by_trace: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in spans:
        by_trace[s["traceId"]].append(s)
    turns = []
    for group in sorted(by_trace.values(), key=lambda g: min(s["start"] for s in g)):
        group.sort(key=lambda s: (s["start"], s["end"]))
        sid = next((str(s["attributes"]["session.id"]) for s in group if s["attributes"].get("session.id")), None)
        if session and sid != session:
            continue
        if not any(s["name"].startswith(("invoke_agent", "chat", "execute_tool", "citerag.")) for s in group):
            continue
        turns.append(_turn(len(turns) + 1, group, sid))
    return turns


def _turn(index: int, group: list[dict[str, Any]], sid: str | None) -> Turn:
    root = next((s for s in group if s["name"] == "citerag.turn"), None)
    attrs = root["attributes"] if root else {}
    recorded = _json_list(attrs.get("citerag.steps"))
    result = _json_obj(attrs.get("citerag.result"))
    # The agent's own steps: classification first, the rest (checks, grading, answer) after the model's work.
    pre = [s for s in steps_from_runtime_events(recorded) if s.kind == "pre-processing"]
    post = [s for s in steps_from_runtime_events([*recorded, *([result] if result else [])])
            if s.kind not in ("pre-processing", "observation")]
    middle: list[Step] = []
    calls = tokens_in = tokens_out = model_ms = 0
    for s in group:
        a = s["attributes"]
        ms = int((s["end"] - s["start"]) / 1e6) if s["end"] and s["start"] else None
        if s["name"] == "chat" or a.get("gen_ai.operation.name") == "chat":
            tin = _int(a.get("gen_ai.usage.input_tokens") or a.get("gen_ai.usage.prompt_tokens"))
            tout = _int(a.get("gen_ai.usage.output_tokens") or a.get("gen_ai.usage.completion_tokens"))
            calls, tokens_in, tokens_out, model_ms = calls + 1, tokens_in + tin, tokens_out + tout, model_ms + (ms or 0)
            middle.append(Step(kind="model", prompt_type="ORCHESTRATION", title="orchestration model call",
                               time=_iso(s["start"]), ms=ms, input_tokens=tin, output_tokens=tout,
                               model=a.get("gen_ai.request.model")))
        elif s["name"].startswith("execute_tool") or a.get("gen_ai.operation.name") == "execute_tool":
            tool = a.get("gen_ai.tool.name") or s["name"].removeprefix("execute_tool ").strip()
            args = a.get("gen_ai.tool.call.arguments")
            middle.append(Step(kind="tool-call", prompt_type="ORCHESTRATION", time=_iso(s["start"]), ms=ms,
                               title=f"{tool}({_short(args, 120) if args else ''}) {a.get('gen_ai.tool.status', '')}"
                               .strip(), detail={"arguments": args}))
            passages = results_of(a.get("gen_ai.tool.call.result") or "")
            if passages:
                middle.append(Step(kind="observation", prompt_type="ORCHESTRATION", time=_iso(s["end"]),
                                   title=f"search returned {plural(len(passages), 'source')}: "
                                         + ", ".join(str(p.source_id) for p in passages),
                                   detail={"sources": [p.citation() for p in passages]}))
    if not any(st.kind == "observation" for st in middle):  # results from the agent's own search steps instead
        middle += [st for st in steps_from_runtime_events(recorded) if st.kind == "observation"]
    answer = from_wire(result) if result and result.get("type") == "answer" else Answer(text="", answered=False)
    return Turn(index=index, session_id=sid, question=str(attrs.get("citerag.question", "")), answer=answer,
                steps=[*pre, *middle, *post], model_calls=calls, input_tokens=tokens_in, output_tokens=tokens_out,
                model_ms=model_ms, started=_iso(group[0]["start"]))


def _json_list(value: Any) -> list[dict[str, Any]]:
    try:
        data = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError:
        return []
    return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []


def _json_obj(value: Any) -> dict[str, Any] | None:
    try:
        data = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _short(text: Any, n: int) -> str:
    t = " ".join(str(text).split())
    return t if len(t) <= n else t[: n - 1] + "…"


def _iso(ns: int) -> str | None:
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat() if ns else None


def read_spans_log_group(client: Any, group: str, since: timedelta, session: str | None = None,
                         ) -> tuple[list[dict[str, Any]], int]:
    """Span documents from a CloudWatch log group (`aws/spans` once Transaction Search is on)."""
    return read_span_documents([{"message": m} for m in filter_messages(client, group, since, session)])


def turns_from_runtime_events(events: list[dict[str, Any]], question: str = "") -> list[Turn]:
    """A saved trace of `ask --runtime` / `--agent agentcore-local`: one turn per answer or error event."""
    turns: list[Turn] = []
    current: list[dict[str, Any]] = []
    for e in events:
        current.append(e)
        if isinstance(e, dict) and e.get("type") in ("answer", "error"):
            answer = from_wire(e) if e["type"] == "answer" else Answer(text=str(e.get("message", "")), answered=False)
            sid = next((x.get("session_id") for x in current if isinstance(x, dict) and x.get("session_id")), None)
            turns.append(Turn(index=len(turns) + 1, session_id=sid, question=question if not turns else "",
                              answer=answer, steps=steps_from_runtime_events(current)))
            current = []
    return turns
