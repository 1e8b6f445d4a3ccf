"""The chat-model port: what the runtimes need from a model. Prompts go in as Messages-API JSON (the rendered
templates), text comes out; adapters (citerag.adapters) speak Bedrock Converse or play the model offline."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel

from citerag.search.sparse import tokenize


class ModelOutput(BaseModel):
    text: str
    input_tokens: int
    output_tokens: int


class ChatModel(Protocol):
    model_id: str

    def complete(self, prompt: dict[str, Any], *, prompt_type: str, stop_sequences: list[str],
                 max_tokens: int, temperature: float) -> ModelOutput: ...


def approx_tokens(text: str) -> int:
    """A token estimate for models that report none (the offline model)."""
    return max(1, len(tokenize(text)) + len(text) // 20)


def text_of(content: Any) -> str:
    """The text of a message's content: a string (Claude 3 templates) or content blocks (3.5 on)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def messages_of(prompt: dict[str, Any]) -> tuple[str, str, str]:
    """(system, first user message's text, assistant prefill) of a Messages-API prompt."""
    msgs = prompt.get("messages") or []
    user = next((text_of(m.get("content")) for m in msgs if m.get("role") == "user"), "")
    assistant = text_of(msgs[-1].get("content")) if msgs and msgs[-1].get("role") == "assistant" else ""
    return str(prompt.get("system", "")), user, assistant


def tool_results_of(prompt: dict[str, Any]) -> list[str]:
    """The text of every tool_result block in the conversation, oldest first (native tools)."""
    out = []
    for m in prompt.get("messages") or []:
        content = m.get("content")
        for b in content if isinstance(content, list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                c = b.get("content")
                out.append(c if isinstance(c, str) else text_of(c))
    return out
