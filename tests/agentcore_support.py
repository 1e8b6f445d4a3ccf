"""What the AgentCore tests share: a scripted Strands model (Converse stream events, as BedrockModel yields them),
components over the samples plus one tenant-only document, and an SSE reader."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from strands.models.model import Model

from citerag.components import Components
from citerag.settings import Settings

from conftest import SAMPLES

KEY = "agentcore-test-key-0123456789"
ACME_DOC = "The Acme service password rotation period is 45 days. Contact k.sato@acme.example for exceptions."


def usage(inp: int = 10, out: int = 5) -> dict[str, Any]:
    return {"metadata": {"usage": {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out},
                         "metrics": {"latencyMs": 1}}}


def tool_turn(args: dict[str, Any], tid: str = "tooluse_1", name: str = "search_documents") -> list[dict[str, Any]]:
    return [{"messageStart": {"role": "assistant"}},
            {"contentBlockStart": {"start": {"toolUse": {"toolUseId": tid, "name": name}}}},
            {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args, ensure_ascii=False)}}}},
            {"contentBlockStop": {}}, {"messageStop": {"stopReason": "tool_use"}}, usage()]


def text_turn(text: str, stop: str = "end_turn") -> list[dict[str, Any]]:
    return [{"messageStart": {"role": "assistant"}}, {"contentBlockDelta": {"delta": {"text": text}}},
            {"contentBlockStop": {}}, {"messageStop": {"stopReason": stop}}, usage()]


def classify(category: str = "D") -> list[dict[str, Any]]:
    return text_turn(f"The input is classified.</thinking>\n<category>{category}</category>")


def guardrail_turn(message: str = "Sorry, I cannot help with that request.") -> list[dict[str, Any]]:
    """What BedrockModel yields when the guardrail blocks: the redaction event, the guardrail's message, and the
    stop reason (strands/models/bedrock.py, guardrail_redact_input)."""
    return [{"messageStart": {"role": "assistant"}},
            {"redactContent": {"redactUserContentMessage": "[User input redacted.]"}},
            {"contentBlockDelta": {"delta": {"text": message}}}, {"contentBlockStop": {}},
            {"messageStop": {"stopReason": "guardrail_intervened"}}, usage()]


def masked_turn(text: str) -> list[dict[str, Any]]:
    """What BedrockModel yields when the guardrail only masked personal data (its trace says ANONYMIZED): the
    masked text and the same stop reason as a block, but no redaction event (strands/models/bedrock.py
    `_should_redact_guardrail_content`)."""
    return text_turn(text, stop="guardrail_intervened")


def answer_xml(*parts: tuple[str, list[str]]) -> str:
    body = "".join(f"<answer_part><text>{t}</text><sources>{''.join(f'<source>{s}</source>' for s in srcs)}"
                   "</sources></answer_part>" for t, srcs in parts)
    return f"<answer>{body}</answer>"


def last_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The results of the newest search_documents tool result the model has seen."""
    for m in reversed(messages):
        for c in m.get("content", []):
            if "toolResult" in c:
                for block in c["toolResult"]["content"]:
                    if "text" in block:
                        return json.loads(block["text"]).get("results", [])
    return []


Responder = list[dict[str, Any]] | Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | BaseException


class ScriptedModel(Model):
    """Replays one responder per model call: canned stream events, a function of the messages, or an exception."""

    def __init__(self, *responders: Responder) -> None:
        self.responders = list(responders)
        self.config: dict[str, Any] = {"model_id": "scripted"}
        self.calls: list[dict[str, Any]] = []

    def update_config(self, **kw: Any) -> None:
        self.config.update(kw)

    def get_config(self) -> dict[str, Any]:
        return self.config

    async def structured_output(self, output_model, prompt, system_prompt=None, **kw):
        raise NotImplementedError
        yield  # pragma: no cover

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kw):
        self.calls.append({"messages": json.loads(json.dumps(messages, default=str)), "tools": tool_specs,
                           "system": system_prompt})
        if not self.responders:
            raise AssertionError("the agent called the model more often than the test scripted")
        r = self.responders.pop(0)
        if isinstance(r, BaseException):
            raise r
        for event in r(messages) if callable(r) else r:
            yield event


def components(tmp: Path, **settings: Any) -> Components:
    comps = Components(Settings(data_dir=tmp, embedder="hashing", source_id_key=KEY, **settings))
    comps.ingestor().ingest_paths([SAMPLES])
    acme = tmp / "acme"
    acme.mkdir(exist_ok=True)
    (acme / "acme-policy.txt").write_text(ACME_DOC, encoding="utf-8")
    comps.ingestor({"tenant": "acme"}).ingest_paths([acme])
    return comps


def sse_events(raw: bytes | str) -> list[dict[str, Any]]:
    """The JSON objects of an SSE body as bedrock-agentcore writes it (`data: {json}` frames, blank-line separated)."""
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    return [json.loads(line[len("data: "):]) for line in text.splitlines() if line.startswith("data: ")]
