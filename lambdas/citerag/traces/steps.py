"""Turn InvokeAgent trace events into readable steps: what the agent saw, decided and cited, in order.

Shared by `citerag ask --trace` and `citerag trace`. Works on the service's events, the local runtime's,
and model-invocation log records once converted to the same shape.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from citerag.traces.wording import plural


class Step(BaseModel):
    kind: str  # pre-processing | model | rationale | tool-call | observation | reprompt | answer | ...
    prompt_type: str | None = None
    title: str
    detail: dict[str, Any] = Field(default_factory=dict)
    trace_id: str | None = None
    time: str | None = None
    ms: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    model: str | None = None
    prompt: str | None = None
    raw: str | None = None


def steps_from_events(events: list[dict[str, Any]]) -> list[Step]:
    steps: list[Step] = []
    inputs: dict[str, dict[str, Any]] = {}
    for ev in events:
        if "trace" not in ev:
            continue
        part = ev["trace"]
        when = _time(part.get("eventTime"))
        trace = part.get("trace", {})
        for key, body in trace.items():
            if key in ("preProcessingTrace", "orchestrationTrace", "postProcessingTrace"):
                steps.extend(_stage(key, body, when, inputs))
            elif key == "guardrailTrace":
                steps.append(Step(kind="guardrail", title=f"guardrail {body.get('action', '?')}", time=when,
                                  trace_id=body.get("traceId"),
                                  detail={"action": body.get("action"), "input": body.get("inputAssessments"),
                                          "output": body.get("outputAssessments")}))
            elif key == "failureTrace":
                steps.append(Step(kind="failure", title=f"failure: {body.get('failureReason', '')}", time=when,
                                  trace_id=body.get("traceId"), detail={"code": body.get("failureCode")}))
    return steps


_NAMES = {"preProcessingTrace": "PRE_PROCESSING", "orchestrationTrace": "ORCHESTRATION",
          "postProcessingTrace": "POST_PROCESSING"}


def _stage(key: str, body: dict[str, Any], when: str | None, inputs: dict[str, dict[str, Any]]) -> list[Step]:
    ptype = _NAMES[key]
    out: list[Step] = []
    if "modelInvocationInput" in body:
        mi = body["modelInvocationInput"]
        inputs[mi.get("traceId", "")] = mi
    if "modelInvocationOutput" in body:
        mo = body["modelInvocationOutput"]
        mi = inputs.get(mo.get("traceId", ""), {})
        meta = mo.get("metadata") or {}
        usage = meta.get("usage") or {}
        parsed = mo.get("parsedResponse")
        title = f"{ptype.lower().replace('_', '-')} model call"
        if ptype == "PRE_PROCESSING" and parsed is not None:
            title = f"pre-processing: input {'accepted' if parsed.get('isValid') else 'rejected'}"
        elif ptype == "POST_PROCESSING" and parsed is not None:
            title = "post-processing: " + _short(parsed.get("text", ""), 80)
        out.append(Step(kind="model", prompt_type=ptype, title=title, trace_id=mo.get("traceId"), time=when,
                        ms=meta.get("totalTimeMs"), input_tokens=usage.get("inputTokens"),
                        output_tokens=usage.get("outputTokens"), model=mi.get("foundationModel"),
                        prompt=mi.get("text"), raw=(mo.get("rawResponse") or {}).get("content"),
                        detail={"parsed": parsed} if parsed is not None else {}))
    if "rationale" in body:
        out.append(Step(kind="rationale", prompt_type=ptype, title=_short(body["rationale"].get("text", ""), 160),
                        trace_id=body["rationale"].get("traceId"), time=when))
    if "invocationInput" in body:
        ii = body["invocationInput"]
        ag = ii.get("actionGroupInvocationInput") or {}
        params = {p.get("name"): p.get("value") for p in ag.get("parameters", [])}
        out.append(Step(kind="tool-call", prompt_type=ptype, trace_id=ii.get("traceId"), time=when,
                        title=f"{ag.get('actionGroupName', '?')}::{ag.get('function', '?')}"
                              f"({', '.join(f'{k}={v!r}' for k, v in params.items())})",
                        detail={"parameters": params}))
    if "observation" in body:
        ob = body["observation"]
        typ = ob.get("type")
        if typ == "ACTION_GROUP":
            text = (ob.get("actionGroupInvocationOutput") or {}).get("text", "")
            detail, title = _search_body(text)
            ms = ((ob.get("actionGroupInvocationOutput") or {}).get("metadata") or {}).get("totalTimeMs")
            out.append(Step(kind="observation", prompt_type=ptype, title=title, detail=detail,
                            trace_id=ob.get("traceId"), time=when, ms=ms))
        elif typ == "REPROMPT":
            rp = ob.get("repromptResponse") or {}
            out.append(Step(kind="reprompt", prompt_type=ptype, title=f"reprompt ({rp.get('source', '?')}): "
                            + _short(rp.get("text", ""), 140), trace_id=ob.get("traceId"), time=when))
        elif typ in ("FINISH", "ASK_USER"):
            text = (ob.get("finalResponse") or {}).get("text", "")
            out.append(Step(kind="answer" if typ == "FINISH" else "ask-user", prompt_type=ptype,
                            title=_short(text, 160), trace_id=ob.get("traceId"), time=when, detail={"text": text}))
    return out


def _search_body(text: str) -> tuple[dict[str, Any], str]:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return {"text": text}, "observation: " + _short(text, 100)
    if not isinstance(data, dict):
        return {"text": text}, "observation"
    results = data.get("results") or []
    sources = [{"source_id": r.get("source_id"), "uri": r.get("uri"), "title": r.get("title"),
                "page": r.get("page"), "section": r.get("section"), "score": r.get("score")}
               for r in results if isinstance(r, dict)]
    if sources:
        title = f"search returned {plural(len(sources), 'source')}: " + ", ".join(str(s["source_id"]) for s in sources)
    elif data.get("hint"):
        title = "search found nothing relevant (REPROMPT with a rewrite hint)"
    elif data.get("error"):
        title = "search error: " + _short(str(data["error"]), 100)
    else:
        title = "search: " + _short(str(data.get("message", "")), 100)
    return {"sources": sources, "notes": data.get("notes"), "hint": data.get("hint"),
            "error": data.get("error")}, title


def _short(text: str, n: int) -> str:
    t = " ".join(str(text).split())
    return t if len(t) <= n else t[: n - 1] + "…"


def _time(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value) if value else None
