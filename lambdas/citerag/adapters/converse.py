"""A ChatModel on Bedrock Converse (a Claude model through an inference profile, with AWS credentials)."""

from __future__ import annotations

from typing import Any

from citerag.adapters.aws import describe_error
from citerag.citations.chat import ModelOutput, messages_of
from citerag.errors import DependencyError


class BedrockConverseModel:
    def __init__(self, client: Any, model_id: str) -> None:
        self._client = client
        self.model_id = model_id

    def complete(self, prompt: dict[str, Any], *, prompt_type: str, stop_sequences: list[str],
                 max_tokens: int = 2048, temperature: float = 0.0) -> ModelOutput:
        system, _, _ = messages_of(prompt)
        messages = [{"role": m["role"], "content": [{"text": m["content"]}]}
                    for m in prompt.get("messages", []) if str(m.get("content", "")).strip()]
        try:
            resp = self._client.converse(
                modelId=self.model_id, system=[{"text": system}] if system else [], messages=messages,
                inferenceConfig={"maxTokens": max_tokens, "temperature": temperature,
                                 "stopSequences": stop_sequences[:4]},
            )
        except Exception as exc:
            raise DependencyError(f"the model {self.model_id} failed: {describe_error(exc)}") from None
        content = resp["output"]["message"]["content"]
        text = "".join(c.get("text", "") for c in content)
        usage = resp.get("usage", {})
        return ModelOutput(text=text, input_tokens=int(usage.get("inputTokens", 0)),
                           output_tokens=int(usage.get("outputTokens", 0)))
