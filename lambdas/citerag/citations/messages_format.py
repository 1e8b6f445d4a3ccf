"""Reading the raw response of Claude models from 3.5 on: the Messages-API response JSON the agent hands the parser.

From Claude 3.5 on, Bedrock Agents pass tools natively and the parser Lambda's `invokeModelRawResponse` is the
model's response body: `{"content": [{"type": "text", ...}, {"type": "tool_use", "id", "name", "input"}],
"stop_reason": ...}` (AWS docs, lambda-parser, the "Anthropic Claude 3.5" example: `json.loads` of the raw text,
then the content blocks by type; tool names `<actionGroup>__<function>`, ask-user `user__askuser`). Text blocks
still carry the citation protocol's tags (`<answer_part>`), read by claude_format.

Nothing here raises: output that is not such JSON decodes to None (the Claude 3 text format), and JSON cut off
mid-way is reported as truncated so the parser can ask for a shorter answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

MAX_TOOL_CALLS = 20  # more parallel calls than this in one response is not a plan, it is noise
MAX_INPUT_CHARS = 16_000  # a tool input this large is not a search request


@dataclass
class ToolUse:
    id: str
    name: str
    input: dict[str, Any]


@dataclass
class ModelResponse:
    text: str = ""
    tool_uses: list[ToolUse] = field(default_factory=list)
    stop_reason: str = ""
    truncated: bool = False  # the JSON itself was cut off, or the model hit max_tokens
    malformed: list[str] = field(default_factory=list)  # tool_use blocks that could not be read, and why


def decode(raw: str) -> ModelResponse | None:
    """The response when `raw` is Messages-API JSON (or JSON cut off after its opening), else None."""
    head = raw.lstrip()[:1]
    if head != "{":
        return None
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        # Cut off mid-way (the agent's maximumLength, a dropped connection) or not JSON at all after a "{".
        looks_like_response = '"content"' in raw[:2000] or '"type"' in raw[:2000]
        return ModelResponse(truncated=True) if looks_like_response else None
    if not isinstance(body, dict):
        return None
    message = (body.get("output") or {}).get("message") if isinstance(body.get("output"), dict) else None
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        body = {"content": [_from_converse(b) for b in message["content"]],
                "stop_reason": body.get("stopReason", "")}  # the Converse shape (toolUse blocks)
    if "content" not in body and isinstance(body.get("completion"), str):
        # Knowledge-base generation in the text-completion form ({"completion": "..."}).
        return ModelResponse(text=body["completion"], stop_reason=str(body.get("stop_reason") or ""))
    content = body.get("content")
    if not isinstance(content, list):
        return None
    out = ModelResponse(stop_reason=str(body.get("stop_reason") or ""))
    texts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            if len(out.tool_uses) >= MAX_TOOL_CALLS:
                out.malformed.append(f"more than {MAX_TOOL_CALLS} tool calls in one response")
                break
            use = _tool_use(block)
            if isinstance(use, str):
                out.malformed.append(use)
            else:
                out.tool_uses.append(use)
    out.text = "".join(texts)
    out.truncated = out.stop_reason == "max_tokens"
    return out


def _from_converse(block: Any) -> Any:
    """A Converse content block ({"text"} or {"toolUse": {toolUseId, name, input}}) in the Messages shape."""
    if isinstance(block, dict) and isinstance(block.get("toolUse"), dict):
        use = block["toolUse"]
        return {"type": "tool_use", "id": use.get("toolUseId"), "name": use.get("name"), "input": use.get("input")}
    if isinstance(block, dict) and isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]}
    return block


def _tool_use(block: dict[str, Any]) -> ToolUse | str:
    name, args, use_id = block.get("name"), block.get("input"), block.get("id")
    if not isinstance(name, str) or not name:
        return "a tool_use block without a name"
    if not isinstance(args, dict):
        return f"the call to {name[:80]!r} has no input object"
    if len(json.dumps(args, ensure_ascii=False)) > MAX_INPUT_CHARS:
        return f"the input of {name[:80]!r} is over {MAX_INPUT_CHARS} characters"
    return ToolUse(id=use_id if isinstance(use_id, str) else "", name=name[:200], input=args)


def response_json(text: str, tool_uses: list[ToolUse], *, stop_reason: str, model: str,
                  stop_sequence: str | None = None, input_tokens: int = 0, output_tokens: int = 0) -> str:
    """A Messages-API response body, as Claude on Bedrock returns it (the offline model writes this)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": t.id, "name": t.name, "input": t.input} for t in tool_uses]
    return json.dumps({"id": "msg_offline", "type": "message", "role": "assistant", "model": model,
                       "content": content, "stop_reason": stop_reason, "stop_sequence": stop_sequence,
                       "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}},
                      ensure_ascii=False)
