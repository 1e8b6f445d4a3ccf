"""A ChatModel on an OpenAI-compatible server (Ollama, llama.cpp's server, vLLM) through the `openai` SDK, for
generative answers from a model the user runs locally.

The agent's prompts, parser and source-id checks stay the same: the Messages-shaped prompt (system, text,
tool_use and tool_result blocks, tool definitions) becomes Chat Completions messages and `tools`, the streamed
reply (text deltas, tool-call deltas by index) is put back together, and with native tools the result is handed to
the parser as the Messages-API response JSON, exactly as from Claude on Bedrock. Shapes: the OpenAI API reference,
Chat Completions (`tools`, `tool_calls`, role `tool`, streaming `choices[].delta`, `finish_reason`).
"""

from __future__ import annotations

import json
from typing import Any

from citerag.citations import drafts
from citerag.citations import messages_format as mf
from citerag.citations.chat import ModelOutput, approx_tokens, messages_of, text_of
from citerag.errors import DependencyError

# finish_reason -> the Messages API's stop_reason
_STOP = {"tool_calls": "tool_use", "length": "max_tokens", "stop": "end_turn", "content_filter": "refusal"}


class OpenAICompatibleModel:
    def __init__(self, client: Any, model_id: str) -> None:
        self._client = client
        self.model_id = model_id

    def complete(self, prompt: dict[str, Any], *, prompt_type: str, stop_sequences: list[str],
                 max_tokens: int = 2048, temperature: float = 0.0) -> ModelOutput:
        system, _, _ = messages_of(prompt)
        native = isinstance(prompt.get("tools"), list)
        messages = ([{"role": "system", "content": system}] if system else []) + [
            m for msg in prompt.get("messages", []) for m in _messages(msg)]
        request: dict[str, Any] = {"model": self.model_id, "messages": messages, "temperature": temperature,
                                   "max_tokens": max_tokens, "stream": True,
                                   "stream_options": {"include_usage": True}}
        if stop_sequences:
            request["stop"] = stop_sequences[:4]
        if native:
            request["tools"] = [{"type": "function", "function": {
                "name": t["name"], "description": t.get("description", ""),
                "parameters": t.get("input_schema") or {"type": "object"}}} for t in prompt["tools"]]
        # The answer step's words, shown as they come to whoever listens (serve); other steps are not answers.
        draft = drafts.listening() if prompt_type == "ORCHESTRATION" else None
        text, calls, finish, usage = self._stream(request, draft)
        tokens_in = usage.get("prompt_tokens") or approx_tokens(json.dumps(messages, ensure_ascii=False))
        tokens_out = usage.get("completion_tokens") or approx_tokens(text)
        if not native:
            return ModelOutput(text=text, input_tokens=tokens_in, output_tokens=tokens_out)
        uses = [mf.ToolUse(id=c["id"] or f"call_{i}", name=c["name"], input=_arguments(c["arguments"]))
                for i, c in sorted(calls.items())]
        raw = mf.response_json(text, uses, stop_reason=_STOP.get(finish, "end_turn"), model=self.model_id,
                               input_tokens=tokens_in, output_tokens=tokens_out)
        return ModelOutput(text=raw, input_tokens=tokens_in, output_tokens=tokens_out)

    def _stream(self, request: dict[str, Any], draft: drafts.DraftText | None = None
                ) -> tuple[str, dict[int, dict[str, str]], str, dict[str, int]]:
        import openai

        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        finish, usage = "", {}
        try:
            for chunk in self._client.chat.completions.create(**request):
                if getattr(chunk, "usage", None):
                    usage = {"prompt_tokens": chunk.usage.prompt_tokens,
                             "completion_tokens": chunk.usage.completion_tokens}
                for choice in chunk.choices or []:
                    delta = choice.delta
                    if delta and delta.content:
                        text.append(delta.content)
                        if draft is not None:
                            draft.heard(delta.content)
                    for tc in (delta.tool_calls or []) if delta else []:
                        call = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                        call["id"] = tc.id or call["id"]
                        if tc.function:
                            call["name"] += tc.function.name or ""
                            call["arguments"] += tc.function.arguments or ""
                    finish = choice.finish_reason or finish
        except openai.APIStatusError as exc:
            raise DependencyError(f"the model server refused the request (HTTP {exc.status_code}) for "
                                  f"{self.model_id}") from None
        except openai.APIError as exc:  # connection refused, timeout, a broken stream
            raise DependencyError(f"the model server is unreachable or broke off: {type(exc).__name__}") from None
        return "".join(text), calls, finish, usage


def _messages(m: dict[str, Any]) -> list[dict[str, Any]]:
    """One Messages-API message as Chat Completions messages (tool results become role `tool` messages)."""
    content = m.get("content")
    if not isinstance(content, list):
        text = text_of(content)
        return [{"role": m["role"], "content": text}] if text.strip() else []
    text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
    uses = [b for b in content if b.get("type") == "tool_use"]
    results = [b for b in content if b.get("type") == "tool_result"]
    out: list[dict[str, Any]] = []
    if m["role"] == "assistant" and (text.strip() or uses):
        msg: dict[str, Any] = {"role": "assistant", "content": text or None}
        if uses:
            msg["tool_calls"] = [{"id": u["id"], "type": "function", "function": {
                "name": u["name"], "arguments": json.dumps(u.get("input") or {}, ensure_ascii=False)}} for u in uses]
        out.append(msg)
    out += [{"role": "tool", "tool_call_id": r["tool_use_id"],
             "content": r["content"] if isinstance(r.get("content"), str) else text_of(r.get("content"))}
            for r in results]
    if m["role"] == "user" and text.strip():
        out.append({"role": "user", "content": text})
    return out


def _arguments(raw: str) -> dict[str, Any]:
    """A tool call's arguments; text that is not a JSON object reaches the parser as no query (a REPROMPT)."""
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
