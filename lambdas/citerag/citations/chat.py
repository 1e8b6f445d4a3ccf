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


def messages_of(prompt: dict[str, Any]) -> tuple[str, str, str]:
    """(system, last user message, assistant prefill) of a Messages-API prompt."""
    msgs = prompt.get("messages") or []
    user = next((m.get("content", "") for m in reversed(msgs) if m.get("role") == "user"), "")
    assistant = msgs[-1].get("content", "") if msgs and msgs[-1].get("role") == "assistant" else ""
    return str(prompt.get("system", "")), str(user), str(assistant)
