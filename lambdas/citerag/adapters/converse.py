"""A ChatModel on Bedrock Converse (a Claude model through an inference profile, with AWS credentials).

Given a prompt with native tools (Claude 3.5 and later), the request carries them as Converse `toolConfig` and the
conversation's tool_use / tool_result blocks as `toolUse` / `toolResult`, and the answer comes back as the
Messages-API response JSON the parser Lambda receives from the agent: the same parser path as production.
Shapes: botocore bedrock-runtime Converse (ContentBlock, ToolConfiguration, ToolResultBlock, InferenceConfiguration).
When someone listens for the draft (`citerag serve`, `chat`), the same request goes to ConverseStream and its events
(botocore's ConverseStreamOutput: messageStart, contentBlockStart/Delta/Stop, messageStop, metadata) are put back
together into the same content, the text told to the listener as it arrives.
"""

from __future__ import annotations

import json
from typing import Any

from citerag.adapters.aws import describe_error
from citerag.citations import drafts
from citerag.citations import messages_format as mf
from citerag.citations.chat import ModelOutput, messages_of, text_of
from citerag.errors import DependencyError


class BedrockConverseModel:
    def __init__(self, client: Any, model_id: str) -> None:
        self._client = client
        self.model_id = model_id

    def complete(self, prompt: dict[str, Any], *, prompt_type: str, stop_sequences: list[str],
                 max_tokens: int = 2048, temperature: float = 0.0) -> ModelOutput:
        system, _, _ = messages_of(prompt)
        native = isinstance(prompt.get("tools"), list)
        messages = [m for m in (_message(m) for m in prompt.get("messages", [])) if m["content"]]
        request: dict[str, Any] = {
            "modelId": self.model_id, "system": [{"text": system}] if system else [], "messages": messages,
            # Temperature only: Claude Sonnet 4.5 / Haiku 4.5 and later refuse it together with topP.
            "inferenceConfig": {"maxTokens": max_tokens, "temperature": temperature,
                                "stopSequences": stop_sequences[:4]},
        }
        if native:
            request["toolConfig"] = {"tools": [{"toolSpec": {
                "name": t["name"], "description": t.get("description") or t["name"],
                "inputSchema": {"json": t.get("input_schema") or {"type": "object"}}}} for t in prompt["tools"]]}
        draft = drafts.listening()
        try:
            resp = self._client.converse(**request) if draft is None else _streamed(
                self._client.converse_stream(**request), draft)
        except Exception as exc:
            raise DependencyError(f"the model {self.model_id} failed: {describe_error(exc)}") from None
        content = resp["output"]["message"]["content"]
        text = "".join(c.get("text", "") for c in content)
        usage = resp.get("usage", {})
        tokens_in, tokens_out = int(usage.get("inputTokens", 0)), int(usage.get("outputTokens", 0))
        if native:
            uses = [mf.ToolUse(id=c["toolUse"]["toolUseId"], name=c["toolUse"]["name"], input=c["toolUse"]["input"])
                    for c in content if "toolUse" in c]
            text = mf.response_json(text, uses, stop_reason=str(resp.get("stopReason", "")), model=self.model_id,
                                    input_tokens=tokens_in, output_tokens=tokens_out)
        return ModelOutput(text=text, input_tokens=tokens_in, output_tokens=tokens_out)


def _message(m: dict[str, Any]) -> dict[str, Any]:
    content = m.get("content")
    if not isinstance(content, list):
        text = text_of(content)
        return {"role": m["role"], "content": [{"text": text}] if text.strip() else []}
    blocks = []
    for b in content:
        kind = b.get("type")
        if kind == "text" and str(b.get("text", "")).strip():
            blocks.append({"text": b["text"]})
        elif kind == "tool_use":
            blocks.append({"toolUse": {"toolUseId": b["id"], "name": b["name"], "input": b.get("input") or {}}})
        elif kind == "tool_result":
            result = b.get("content")
            blocks.append({"toolResult": {"toolUseId": b["tool_use_id"],
                                          "content": [{"text": result if isinstance(result, str) else text_of(result)}],
                                          **({"status": "error"} if b.get("is_error") else {})}})
    return {"role": m["role"], "content": blocks}


def _streamed(resp: dict[str, Any], draft: drafts.DraftText) -> dict[str, Any]:
    """ConverseStream's events as Converse's response: each content block's text or tool input joined in order,
    the stop reason and the usage; the text told to the draft as it arrives."""
    blocks: dict[int, dict[str, Any]] = {}
    stop, usage = "", {}
    for event in resp["stream"]:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            tool = start.get("start", {}).get("toolUse")
            if tool:
                blocks[start["contentBlockIndex"]] = {"toolUse": {**tool, "input": ""}}
        elif "contentBlockDelta" in event:
            delta, at = event["contentBlockDelta"]["delta"], event["contentBlockDelta"]["contentBlockIndex"]
            if "text" in delta:
                block = blocks.setdefault(at, {"text": ""})
                block["text"] = block.get("text", "") + delta["text"]
                draft.heard(delta["text"])
            elif "toolUse" in delta:
                blocks.setdefault(at, {"toolUse": {"input": ""}})["toolUse"]["input"] += delta["toolUse"]["input"]
        elif "messageStop" in event:
            stop = event["messageStop"].get("stopReason", "")
        elif "metadata" in event:
            usage = event["metadata"].get("usage", {})
    content = []
    for _, block in sorted(blocks.items()):
        if "toolUse" in block:  # a tool's input arrives as pieces of one JSON text
            raw = block["toolUse"]["input"]
            block = {"toolUse": {**block["toolUse"], "input": json.loads(raw) if raw.strip() else {}}}
        content.append(block)
    return {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": stop, "usage": usage}
