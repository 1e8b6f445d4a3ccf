"""The code-defined agent of the AgentCore runtime, on Strands Agents: one turn, as a stream of whitelisted events.

input classification (one model call without tools) -> the Strands loop with `search_documents` running the search
core in-process (the access filter from `TurnRequest.access`, which only the entry point fills, from authenticated
data; the model's arguments never reach it) -> the answer in the citation protocol, every cited id checked for
membership in this turn's search results and for its signature, a reprompt otherwise (bounded) -> grading and PII
masking -> the answer event with structured citations -> the turn saved to the session history.

The guardrail applies to every model call because both calls go through the one Strands model the components built
(BedrockModel carries guardrail_id/version into every Converse request; for a model on the Messages-API endpoint,
adapters/guardrail_model.py applies it around each call and reports a block the same way); a block ends the turn
with the guardrail's message, a masking of personal data does not (`_blocks`). Native citations (Converse searchResult
blocks) replace the protocol when configured.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from opentelemetry import trace as otel
from pydantic import BaseModel, Field
from strands import Agent
from strands.models.model import Model
from strands.tools.tools import PythonAgentTool

from citerag.adapters.aws import describe_error
from citerag.citations import agent_prompts, verified
from citerag.citations import claude_format as cf
from citerag.citations.answer import Answer, where_to_look
from citerag.citations.claude_format import AnswerPart
from citerag.citations.parser import parse as parse_model_output
from citerag.citations.payload import dumps_body
from citerag.citations.pii import PiiMasker
from citerag.citations.search_tool import SearchTool, access_filter
from citerag.citations.tool import FUNCTION_DESCRIPTION, FUNCTION_NAME, input_schema
from citerag.errors import CiteragError, DependencyError
from citerag.runtimes.agentcore import events as ev
from citerag.runtimes.agentcore.events import TurnRequest
from citerag.search.passage import Passage
from citerag.search.query import analyze

REJECTED = "Sorry, I cannot answer that request."
TOOL_FAILED = "search unavailable: internal error. Tell the user to try again later."
_tracer = otel.get_tracer("citerag.agentcore")


class History(Protocol):
    def load(self, actor_id: str, session_id: str, turns: int) -> list[tuple[str, str]]: ...
    def save(self, actor_id: str, session_id: str, question: str, answer: str) -> None: ...


class AgentConfig(BaseModel):
    max_reprompts: int = Field(2, ge=0, le=5)
    max_model_turns: int = Field(8, ge=2, le=20, description="model calls in one Strands loop")
    min_support: float = Field(0.5, ge=0.0, le=1.0)
    native_citations: bool = False
    preprocessing_fail_closed: bool = False
    history_turns: int = Field(5, ge=0, le=50)


@dataclass
class _Turn:
    """What the tool records during one turn; reaches the tool through Strands' invocation_state (never the model)."""

    tool: SearchTool
    session: dict[str, str]
    native: bool
    returned: dict[str, Passage] = field(default_factory=dict)
    ordered: list[str] = field(default_factory=list)  # source ids in the order the model saw them (native mode)
    pending: list[dict[str, Any]] = field(default_factory=list)
    denied: str | None = None
    unavailable: str | None = None


class CiteragAgent:
    def __init__(self, model: Model, search_tool: SearchTool, keys: Callable[[], list[str]], history: History,
                 masker: PiiMasker, config: AgentConfig | None = None) -> None:
        self.model = model
        self.search_tool = search_tool
        self.keys = keys
        self.history = history
        self.masker = masker
        self.config = config or AgentConfig()

    async def stream(self, req: TurnRequest) -> AsyncIterator[dict[str, Any]]:
        yield ev.session_event(req.session_id)
        with _tracer.start_as_current_span("citerag.turn", attributes={
                "session.id": req.session_id, "citerag.question": req.question[:2000]}) as span:
            final: dict[str, Any] | None = None
            steps: list[dict[str, Any]] = []
            async for event in self._turn(req):
                if event.get("type") in ("answer", "error"):
                    final = event
                elif event.get("type") == "step":
                    steps.append(event)
                yield event
            # What `citerag trace` reads back from aws/spans: the steps and the final event (masked answer text).
            span.set_attribute("citerag.steps", json.dumps(steps, ensure_ascii=False)[:32_000])
            if final is not None:
                span.set_attribute("citerag.result", json.dumps(final, ensure_ascii=False)[:32_000])

    async def _turn(self, req: TurnRequest) -> AsyncIterator[dict[str, Any]]:
        cfg = self.config
        try:  # access that cannot be determined ends the turn before any model call (fails closed)
            access_filter(dict(req.access), self.search_tool.config)
        except PermissionError as exc:
            yield ev.error_event("denied", str(exc))
            return
        try:
            history = self.history.load(req.actor_id, req.session_id, cfg.history_turns)
        except DependencyError as exc:
            history = []
            yield ev.step("history", ok=False, message=str(exc))
        # 1. input classification
        try:
            verdict, guarded, text = await self._classify(req.question)
        except Exception as exc:
            yield ev.error_event("model_unavailable", _model_error(exc))
            return
        if guarded:
            yield ev.step("guardrail", stage="input", action="INTERVENED")
            for out in self._final(req, Answer(text=text or REJECTED, answered=False), save=False):
                yield out
            return
        yield ev.step("classification", **verdict)
        if not verdict["accepted"]:
            for out in self._final(req, Answer(text=REJECTED, answered=False)):
                yield out
            return

        # 2. the Strands loop, reprompted while the answer cites what this turn did not return
        turn = _Turn(tool=self.search_tool, session=dict(req.access), native=cfg.native_citations)
        agent = Agent(model=self.model, tools=[self._tool()], callback_handler=None, name="citerag",
                      system_prompt=agent_prompts.SYSTEM_NATIVE if turn.native else agent_prompts.SYSTEM,
                      messages=_history_messages(history), trace_attributes={"session.id": req.session_id})
        prompt = req.question
        parts: list[AnswerPart] | None = None
        for attempt in range(cfg.max_reprompts + 1):
            result, blocked = None, False
            try:
                async for event in agent.stream_async(prompt, invocation_state={"citerag": turn},
                                                      limits={"turns": cfg.max_model_turns}):
                    while turn.pending:
                        yield turn.pending.pop(0)
                    if "result" in event:
                        result = event["result"]
                    blocked = blocked or _blocks(event.get("event"))
            except Exception as exc:
                while turn.pending:
                    yield turn.pending.pop(0)
                yield ev.error_event("model_unavailable", _model_error(exc))
                return
            while turn.pending:
                yield turn.pending.pop(0)
            if turn.denied:
                yield ev.error_event("denied", turn.denied)
                return
            if result is None:
                yield ev.error_event("internal", "the agent loop ended without a result; try again")
                return
            if result.stop_reason == "guardrail_intervened" and blocked:
                yield ev.step("guardrail", stage="output" if turn.returned else "input", action="INTERVENED")
                for out in self._final(req, Answer(text=_message_text(result.message) or REJECTED, answered=False),
                                  save=False):
                    yield out
                return
            parts = _native_parts(result.message, turn) if turn.native else cf.answer(_message_text(result.message))
            problem = None
            if parts is None or not any(p.text for p in parts):
                problem = verified.reprompt(no_answer=True)
                bad: list[str] = []
            else:
                bad = verified.unverified_ids(parts, turn.returned, self.keys())
                if bad:
                    problem = verified.reprompt(bad)
            if problem is None:
                break
            parts = None
            if attempt == cfg.max_reprompts:
                yield ev.step("rejected", ids=bad[:10], reason=problem)
                break
            yield ev.step("reprompt", attempt=attempt + 1, ids=bad[:10], reason=problem)
            prompt = problem
        if parts is None:
            if turn.unavailable:
                yield ev.error_event("search_unavailable", turn.unavailable)
                return
            # Reprompts ran out (ids no search returned, or no <answer>): what search returned is still where to look.
            fallback = verified.FALLBACK["ja" if analyze(req.question).lang == "ja" else "en"]
            for out in self._final(req, Answer(text=fallback, answered=False,
                                               related=where_to_look(turn.returned.values()))):
                yield out
            return

        # 3. grading, masking, the answer
        answer, grades = verified.finish(req.question, parts, turn.returned, self.masker, min_support=cfg.min_support)
        yield ev.step("grading", **grades.model_dump())
        for out in self._final(req, answer, grades.model_dump()):
            yield out

    def _final(self, req: TurnRequest, answer: Answer, grades: dict[str, Any] | None = None, *,
               save: bool = True) -> list[dict[str, Any]]:
        """The answer's text as deltas (one per cited part: only verified, masked text is ever streamed), then the
        answer event; the turn is saved to the session history."""
        if save:
            # A failed save still shows the answer; the next turn simply has less context.
            with contextlib.suppress(DependencyError):
                self.history.save(req.actor_id, req.session_id, req.question, answer.text)
        cuts = sorted({0, *(c.start for c in answer.citations), len(answer.text)})
        deltas = [{"type": "delta", "text": answer.text[a:b]} for a, b in itertools.pairwise(cuts)]
        return [*deltas, ev.answer_event(answer, req.session_id, grades)]

    async def _classify(self, question: str) -> tuple[dict[str, Any], bool, str]:
        """({accepted, category, rationale}, guardrail intervened, output text) of the classification call."""
        system, user = agent_prompts.classifier(question)
        text, stop, blocked = "", None, False
        async for chunk in self.model.stream([{"role": "user", "content": [{"text": user}]}], None, system):
            delta = (chunk.get("contentBlockDelta") or {}).get("delta") or {}
            text += delta.get("text", "")
            if "messageStop" in chunk:
                stop = chunk["messageStop"].get("stopReason")
            blocked = blocked or _blocks(chunk)
        if stop == "guardrail_intervened" and blocked:
            return {}, True, text
        parsed = parse_model_output({"messageVersion": "1.0", "promptType": "PRE_PROCESSING",
                                     "invokeModelRawResponse": text})["preProcessingParsedResponse"]
        if self.config.preprocessing_fail_closed and "<category>" not in text:
            parsed["isValidInput"] = False
        category = parsed["rationale"].split(" ", 2)[1] if parsed["rationale"].startswith("Category ") else None
        return {"accepted": bool(parsed["isValidInput"]), "category": category,
                "rationale": parsed["rationale"][:500]}, False, text

    def _tool(self) -> PythonAgentTool:
        spec = {"name": FUNCTION_NAME, "description": FUNCTION_DESCRIPTION, "inputSchema": {"json": input_schema()}}
        return PythonAgentTool(FUNCTION_NAME, spec, _run_search)  # type: ignore[arg-type]


def _blocks(chunk: Any) -> bool:
    """Whether a model stream chunk says the guardrail blocked. Bedrock stops with `guardrail_intervened` when it
    only masked personal data too (the masked text is the answer, to be read as usual); BedrockModel tells the two
    apart from the guardrail trace and emits `redactContent` only for a block (strands/models/bedrock.py
    `_should_redact_guardrail_content`: "redact only when a policy's action is BLOCKED")."""
    return isinstance(chunk, dict) and "redactContent" in chunk


def _run_search(tool_use: dict[str, Any], **invocation_state: Any) -> dict[str, Any]:
    """The tool: the model's arguments go to the search tool's own validation; access comes from the turn."""
    turn: _Turn = invocation_state["citerag"]
    t0 = time.perf_counter()
    try:
        result, body = turn.tool.run(tool_use.get("input"), turn.session, lambda r, b: b)
    except Exception:
        turn.pending.append(ev.step("search", outcome="error", sources=[]))
        return {"toolUseId": tool_use["toolUseId"], "status": "error", "content": [{"text": TOOL_FAILED}]}
    turn.session.update(result.session_attributes)
    ms = int((time.perf_counter() - t0) * 1000)
    args = tool_use.get("input") if isinstance(tool_use.get("input"), dict) else {}
    turn.pending.append(ev.step(
        "search", outcome=result.outcome, query=str(args.get("query", ""))[:500],
        filters=str(args.get("filters") or "")[:500] or None, ms=ms,
        sources=[{"source_id": p.source_id, "uri": p.uri, "title": p.title, "page": p.page,
                  "section": p.section} for p in result.kept],
        message=result.payload.get("hint") or result.payload.get("error") or result.payload.get("message")))
    if result.outcome == "denied":
        turn.denied = str(result.payload.get("error", "access denied"))
    if result.outcome == "unavailable":
        turn.unavailable = "document search is temporarily unavailable; try again later"
    for p in result.kept:
        if p.source_id:
            turn.returned[p.source_id] = p
            turn.ordered.append(p.source_id)
    content: list[dict[str, Any]]
    if turn.native and result.kept:
        # Converse SearchResultBlock (source, title, content[{text}], citations{enabled}); `source` carries the id.
        content = [{"searchResult": {"source": p.source_id, "title": p.title or p.uri or "document",
                                     "content": [{"text": p.text}], "citations": {"enabled": True}}}
                   for p in result.kept]
        notes = result.payload.get("notes")
        if notes:
            content.append({"text": dumps_body({"notes": notes})})
    else:
        content = [{"text": body}]
    status = "error" if result.outcome in ("denied", "unavailable") else "success"
    return {"toolUseId": tool_use["toolUseId"], "status": status, "content": content}


def _history_messages(history: list[tuple[str, str]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for question, answer in history:
        messages.append({"role": "user", "content": [{"text": question}]})
        messages.append({"role": "assistant", "content": [{"text": answer}]})
    return messages


def _message_text(message: dict[str, Any]) -> str:
    out = []
    for block in message.get("content", []) if isinstance(message, dict) else []:
        if "text" in block:
            out.append(block["text"])
        elif "citationsContent" in block:
            out.extend(c.get("text", "") for c in block["citationsContent"].get("content", []))
    return "".join(out)


def _native_parts(message: dict[str, Any], turn: _Turn) -> list[AnswerPart] | None:
    """Answer parts from Converse citationsContent blocks: each cited source is the searchResult's `source` (our
    source id) or, when absent, the searchResultIndex into the results in the order the model read them."""
    parts: list[AnswerPart] = []
    for block in message.get("content", []) if isinstance(message, dict) else []:
        if "text" in block and block["text"].strip():
            parts.append(AnswerPart(block["text"].strip(), []))
        elif "citationsContent" in block:
            cc = block["citationsContent"]
            text = "".join(c.get("text", "") for c in cc.get("content", [])).strip()
            sources = []
            for c in cc.get("citations", []):
                sid = c.get("source")
                if not sid:
                    idx = ((c.get("location") or {}).get("searchResultLocation") or {}).get("searchResultIndex")
                    sid = turn.ordered[idx] if isinstance(idx, int) and 0 <= idx < len(turn.ordered) else f"#{idx}"
                sources.append(str(sid))
            parts.append(AnswerPart(text, list(dict.fromkeys(sources))))
    return parts or None


def _model_error(exc: BaseException) -> str:
    # Strands wraps what the model raised in EventLoopException(original_exception) (strands/types/exceptions.py).
    for _ in range(5):
        inner = getattr(exc, "original_exception", None)
        if not isinstance(inner, BaseException):
            break
        exc = inner
    if isinstance(exc, CiteragError):
        return str(exc)
    return f"the model could not answer ({describe_error(exc)}); try again"
