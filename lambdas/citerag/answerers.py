"""The one face `ask`, `chat`, `serve` and the benches call: an `Answerer` turns a question into an `Answer`
(text, citations, places to look, and the `Decision` that says why it answered or refused), whichever runtime
answers it: the local Classic agent (the default), search alone, the AgentCore runtime in-process, or a deployed
agent or runtime."""

from __future__ import annotations

import uuid
from typing import Any, Protocol

from citerag.citations.answer import Answer
from citerag.citations.decision import Decision, Reason
from citerag.errors import CiteragError
from citerag.search.query import analyze

AGENTS = ("local", "none", "agentcore-local")
# What the AgentCore runtime imports beyond the local extra: the agentcore extra's packages.
AGENTCORE_PACKAGES = frozenset({"bedrock_agentcore", "strands", "opentelemetry"})


def lacks_agentcore_extra(exc: ImportError) -> bool:
    """Whether the import failed for a package of the agentcore extra (not for a fault of citerag's own)."""
    return (getattr(exc, "name", None) or "").split(".")[0] in AGENTCORE_PACKAGES
OFFLINE = "citerag/extractive"  # the offline answerer's model id


class Answerer(Protocol):
    last_events: list[dict[str, Any]]

    def ask(self, question: str, *, flt: dict | None = None) -> Answer: ...


def explained(answer: Answer, decision: Decision | None, events: list[dict[str, Any]], model: str) -> Answer:
    """The answer with the decision of the offline answerer that made it; when it made none (nothing relevant was
    found, the input was refused, search failed), the reason the run's events give. A generative model's answer
    carries none: what it weighed is its own."""
    if model != OFFLINE:
        return answer
    if decision is None or decision.answered != answer.answered:
        # Post-processing or a guardrail replaced what the answerer chose, or it was never asked.
        decision = Decision(answered=answer.answered, reason=None if answer.answered else _reason_from(events))
    return answer.model_copy(update={"decision": decision, "related": answer.related if decision.places else []})


def _reason_from(events: list[dict[str, Any]]) -> Reason:
    """Why a run answered nothing, from its InvokeAgent trace (botocore's bedrock-agent-runtime model: a guardrail's
    INTERVENED action, pre-processing's parsedResponse.isValid) or the AgentCore runtime's events."""
    for ev in events:
        trace = ev.get("trace", {}).get("trace", {}) if isinstance(ev.get("trace"), dict) else {}
        parsed = trace.get("preProcessingTrace", {}).get("modelInvocationOutput", {}).get("parsedResponse", {})
        step = ev.get("kind") if ev.get("type") == "step" else None  # the AgentCore runtime's (events.py)
        if trace.get("guardrailTrace", {}).get("action") == "INTERVENED" or parsed.get("isValid") is False \
                or (step == "classification" and ev.get("accepted") is False) \
                or (step == "guardrail" and ev.get("action") == "INTERVENED"):
            return Reason.BLOCKED
        output = trace.get("orchestrationTrace", {}).get("observation", {}).get("actionGroupInvocationOutput")
        if (isinstance(output, dict) and '"error"' in str(output.get("text", ""))) \
                or (step == "search" and ev.get("outcome") == "error"):
            return Reason.SEARCH_UNAVAILABLE
    return Reason.NO_RELEVANT_PASSAGE


class _SearchOnly:
    """Search, pack as the action group would, answer extractively: no agent steps."""

    def __init__(self, comps) -> None:
        from citerag.runtimes.embedded import EmbeddedAnswerer

        self.comps = comps
        self.last_events: list[dict[str, Any]] = []
        self._answerer = EmbeddedAnswerer(comps.pipeline(expand_parents=True),
                                          budget_bytes=comps.settings.response_budget_bytes,
                                          answering=comps.answering)

    def ask(self, question: str, *, flt: dict | None = None) -> Answer:
        analyze(question)
        return self._answerer.ask(question, flt=flt, namespace=self.comps.settings.namespace)


class _LocalAgent:
    """The Classic sequence in-process: prompts, the offline model (or a configured one), the parser, the search
    action group. One session for the answerer's life: follow-ups share its id and attributes."""

    def __init__(self, comps, session_attributes: dict[str, str] | None = None,
                 session_id: str | None = None) -> None:
        from citerag.runtimes.local import local_agent

        self.comps = comps
        self.runner = local_agent(comps)
        self.session_id = session_id or uuid.uuid4().hex
        self.attributes = dict(session_attributes or {})
        self.last_events: list[dict[str, Any]] = []

    def ask(self, question: str, *, flt: dict | None = None) -> Answer:
        from citerag.traces.join import answer_from_events

        if flt:
            raise CiteragError("--filter works with --agent none; the agent's filters come from --session-attr")
        analyze(question)
        self.comps.answering.last = None
        self.last_events = list(self.runner.invoke(question, session_id=self.session_id,
                                                   session_attributes=dict(self.attributes)))
        answer = answer_from_events(self.last_events, mask=self.comps.pii_mask)
        return explained(answer, self.comps.answering.last, self.last_events,
                          getattr(self.comps.chat_model, "model_id", ""))


class _AgentCoreLocal:
    """The AgentCore runtime app in-process, as a client of the runtime would get its answer."""

    def __init__(self, comps, session_id: str | None = None, access: dict | None = None) -> None:
        try:
            from citerag.agentcore_app import InProcessRuntime
        except ImportError as exc:  # said as every missing extra is: "No module named 'bedrock_agentcore'" was all
            if not lacks_agentcore_extra(exc):
                raise
            from citerag.extras import needs

            raise CiteragError(needs("--agent agentcore-local", "agentcore")) from None

        self.comps = comps
        self.runtime = InProcessRuntime(comps)
        self.session_id = session_id
        self.access = access
        self.last_events: list[dict[str, Any]] = []

    def ask(self, question: str, *, flt: dict | None = None) -> Answer:
        if flt:
            raise CiteragError("--filter works with --agent none; the agent's access comes from --session-attr")
        self.comps.answering.newest = None  # the runtime's agent decides in a worker thread
        answer, self.last_events = self.runtime.ask(question, session_id=self.session_id, access=self.access)
        model = self.comps.agent_model
        return explained(answer, self.comps.answering.newest, self.last_events,
                          OFFLINE if type(model).__name__ == "OfflineAgentModel" else "")


def open_answerer(comps, agent: str = "local", *, session_attributes: dict[str, str] | None = None,
                  session_id: str | None = None, access: dict | None = None) -> Answerer:
    """The answerer for `agent`: local (the default), none (search alone) or agentcore-local."""
    if agent == "none":
        return _SearchOnly(comps)
    if agent == "local":
        return _LocalAgent(comps, session_attributes, session_id)
    if agent == "agentcore-local":
        return _AgentCoreLocal(comps, session_id, access)
    raise CiteragError(f"--agent {agent!r}: write {', '.join(AGENTS)}, or AGENT_ID:ALIAS_ID of a deployed agent")
