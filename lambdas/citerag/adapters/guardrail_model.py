"""A Strands model whose calls pass a Bedrock guardrail through ApplyGuardrail, for a model whose own API carries none
(the Messages-API endpoint: Converse takes `guardrailConfig` in the request, the Messages API has no such field).

Per model call: the latest user message's text is checked as INPUT before the call; the reply (buffered) is checked
as OUTPUT before any of it is passed on. A block becomes what Strands' BedrockModel yields when Converse's guardrail
blocks (strands/models/bedrock.py): a `redactContent` event, the guardrail's message as the text, and the stop
reason `guardrail_intervened`, so the agent reads both alike. A check that only masked personal data (ANONYMIZED)
passes the masked text on in place of the reply's text, with no redaction. A failed check fails the call (closed).
Shapes: botocore bedrock-runtime ApplyGuardrail (guardrailIdentifier, guardrailVersion, source INPUT|OUTPUT,
content[{text{text}}] -> action NONE|GUARDRAIL_INTERVENED, outputs[{text}], assessments with per-policy `action`
BLOCKED|ANONYMIZED|NONE).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from strands.models.model import Model

from citerag.adapters.aws import describe_error
from citerag.errors import DependencyError


def _blocked(node: Any) -> bool:
    """Whether any policy in an assessment blocked (an ANONYMIZED action only masked)."""
    if isinstance(node, dict):
        return node.get("action") == "BLOCKED" or any(_blocked(v) for v in node.values())
    if isinstance(node, list):
        return any(_blocked(v) for v in node)
    return False


def _latest_user_text(messages: list[dict[str, Any]]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            return "".join(c.get("text", "") for c in m.get("content", []) if isinstance(c, dict))
    return ""


def _blocked_turn(message: str, *, user: bool) -> list[dict[str, Any]]:
    redact = {"redactUserContentMessage": "[User input redacted.]"} if user else \
        {"redactAssistantContentMessage": message}
    return [{"messageStart": {"role": "assistant"}}, {"redactContent": redact},
            {"contentBlockDelta": {"delta": {"text": message}}}, {"contentBlockStop": {}},
            {"messageStop": {"stopReason": "guardrail_intervened"}}]


class GuardedModel(Model):
    def __init__(self, inner: Model, runtime_client: Any, guardrail_id: str, guardrail_version: str) -> None:
        self.inner = inner
        self._client = runtime_client
        self._id, self._version = guardrail_id, guardrail_version

    def update_config(self, **model_config: Any) -> None:
        self.inner.update_config(**model_config)

    def get_config(self) -> Any:
        return self.inner.get_config()

    def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):
        return self.inner.structured_output(output_model, prompt, system_prompt=system_prompt, **kwargs)

    def _apply(self, source: str, text: str) -> tuple[bool, bool, str]:
        """(intervened, blocked, the guardrail's output text) for `text`."""
        try:
            resp = self._client.apply_guardrail(guardrailIdentifier=self._id, guardrailVersion=self._version,
                                                source=source, content=[{"text": {"text": text}}])
        except Exception as exc:
            raise DependencyError(f"the guardrail check failed: {describe_error(exc)}") from None
        intervened = resp.get("action") == "GUARDRAIL_INTERVENED"
        out = "".join(o.get("text", "") for o in resp.get("outputs") or [])
        return intervened, intervened and _blocked(resp.get("assessments")), out

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs) -> AsyncIterator[Any]:
        question = _latest_user_text(messages)
        if question.strip():
            _, blocked, out = self._apply("INPUT", question)
            if blocked:
                for event in _blocked_turn(out, user=True):
                    yield event
                return
        chunks = [c async for c in self.inner.stream(messages, tool_specs, system_prompt, **kwargs)]
        text = "".join(((c.get("contentBlockDelta") or {}).get("delta") or {}).get("text", "") for c in chunks
                       if isinstance(c, dict))
        if text.strip():
            intervened, blocked, out = self._apply("OUTPUT", text)
            if blocked:
                for event in _blocked_turn(out, user=False):
                    yield event
                return
            if intervened:  # masked only: the masked text replaces the reply's text, the rest is kept
                chunks = _with_text(chunks, out)
        for c in chunks:
            yield c


def _with_text(chunks: list[Any], text: str) -> list[Any]:
    """The stream with its text deltas replaced by one delta holding `text` (tool calls and stop reason kept)."""
    out: list[Any] = []
    placed = False
    for c in chunks:
        delta = ((c.get("contentBlockDelta") or {}).get("delta") or {}) if isinstance(c, dict) else {}
        if "text" in delta:
            if not placed:
                out.append({"contentBlockDelta": {"delta": {"text": text}}})
                placed = True
            continue
        out.append(c)
    return out
