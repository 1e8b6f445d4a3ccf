"""A ChatModel on Bedrock's Messages-API endpoint, for the Claude models Bedrock serves only there (Opus 4.7: no
ARN-versioned id, so no InvokeModel/Converse; citations/families.py MODELS says which).

The endpoint, from the primary sources (read 2026-11):
- AWS, "Inference using Anthropic Messages API" (bedrock/latest/userguide/inference-messages-api): bedrock-mantle,
  `POST https://bedrock-mantle.{region}.api.aws/anthropic/v1/messages`, authenticated with AWS SigV4 credentials or
  a Bedrock API key, the version as the HTTP header `anthropic-version: 2023-06-01`, the body the Anthropic
  Messages API's own (`model` in the body, `system`, `messages`, `tools`, `stream`). IAM: the action
  `bedrock-mantle:CreateInference` (AWS, "Making inference requests"; managed policy
  AmazonBedrockMantleInferenceAccess).
- The `anthropic` SDK's `AnthropicBedrockMantle` (src/anthropic/lib/bedrock/_mantle.py): base URL
  `https://bedrock-mantle.{region}.api.aws/anthropic` (+ `/v1/messages`), SigV4 signing with the service name
  `bedrock-mantle` (`DEFAULT_SERVICE_NAME`) through botocore's SigV4Auth and the default credential chain, the
  header above, and `ANTHROPIC_BEDROCK_MANTLE_BASE_URL` to point it elsewhere (tests point it at a local double).
  Streaming is the Anthropic API's server-sent events (its default decoder), not the AWS event stream of
  InvokeModelWithResponseStream that the SDK's other Bedrock client (`AnthropicBedrock`) reads.

The prompts are already Messages-API JSON, so they go out nearly as they are (empty text blocks dropped: the API
refuses them, as Converse does), and the reply is handed to the parser as the same Messages-API response JSON the
Converse adapter builds: the parser, id checks and citations do not know which endpoint answered.
"""

from __future__ import annotations

import os
from typing import Any

from citerag.adapters.aws import redact_aws
from citerag.citations import messages_format as mf
from citerag.citations.chat import ModelOutput, messages_of, text_of
from citerag.errors import DependencyError

SERVICE = "bedrock-mantle"  # the SigV4 service name (the SDK's DEFAULT_SERVICE_NAME)


def mantle_client(region: str | None = None, *, timeout_s: float = 120, max_retries: int = 2, asynchronous=False):
    """The SDK's Messages-API client for `region` (else AWS_REGION / the profile's region), signed with SigV4 from
    the default AWS credential chain (or a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK, as the SDK reads it)."""
    try:
        from anthropic import AnthropicBedrockMantle, AsyncAnthropicBedrockMantle
    except ImportError:
        from citerag.extras import needs

        raise DependencyError(needs("a model on Bedrock's Messages API", "messages-api")) from None
    region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or _profile_region()
    if not region and not os.environ.get("ANTHROPIC_BEDROCK_MANTLE_BASE_URL"):
        raise DependencyError("the Messages API: no AWS region; set AWS_REGION (for example ap-northeast-1) or a "
                              "region in your AWS profile")
    cls = AsyncAnthropicBedrockMantle if asynchronous else AnthropicBedrockMantle
    return cls(aws_region=region, timeout=timeout_s, max_retries=max_retries)


def _profile_region() -> str | None:
    import boto3

    return boto3.session.Session().region_name


class BedrockMessagesModel:
    def __init__(self, client: Any, model_id: str, *, sampling: bool = True) -> None:
        self._client = client
        self.model_id = model_id
        self._sampling = sampling

    def complete(self, prompt: dict[str, Any], *, prompt_type: str, stop_sequences: list[str],
                 max_tokens: int = 2048, temperature: float = 0.0) -> ModelOutput:
        system, _, _ = messages_of(prompt)
        native = isinstance(prompt.get("tools"), list)
        request: dict[str, Any] = {
            "model": self.model_id, "max_tokens": max_tokens,
            "messages": [m for m in (_message(m) for m in prompt.get("messages", [])) if m["content"]],
        }
        if system:
            request["system"] = system
        if stop_sequences:
            request["stop_sequences"] = stop_sequences[:4]
        if self._sampling:  # never with top_p (Sonnet 4.5 and later refuse both); not at all where refused
            request["temperature"] = temperature
        if native:
            request["tools"] = [{"name": t["name"], "description": t.get("description") or t["name"],
                                 "input_schema": t.get("input_schema") or {"type": "object"}}
                                for t in prompt["tools"]]
        message = self._create(request)
        blocks = [b.model_dump() if hasattr(b, "model_dump") else dict(b) for b in message.content]
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        tokens_in, tokens_out = int(message.usage.input_tokens or 0), int(message.usage.output_tokens or 0)
        if native:
            uses = [mf.ToolUse(id=b["id"], name=b["name"], input=b.get("input") or {})
                    for b in blocks if b.get("type") == "tool_use"]
            text = mf.response_json(text, uses, stop_reason=str(message.stop_reason or ""), model=self.model_id,
                                    input_tokens=tokens_in, output_tokens=tokens_out)
        return ModelOutput(text=text, input_tokens=tokens_in, output_tokens=tokens_out)

    def _create(self, request: dict[str, Any]) -> Any:
        import anthropic

        try:
            return self._client.messages.create(**request)
        except anthropic.APIStatusError as exc:
            raise DependencyError(f"the model {self.model_id} refused the request on Bedrock's Messages API (HTTP "
                                  f"{exc.status_code}): {describe_status_error(exc)}") from None
        except anthropic.APIError as exc:  # connection refused, timeout, a broken response
            raise DependencyError(f"Bedrock's Messages API is unreachable or broke off for {self.model_id}: "
                                  f"{type(exc).__name__}") from None
        except RuntimeError as exc:  # the SDK's "Could not resolve AWS credentials from session"
            raise DependencyError(f"the Messages API: {exc}") from None


def describe_status_error(exc: Any) -> str:
    """The error's type and message from the Messages API's error body ({"type": "error", "error": {"type",
    "message"}}), with ARNs and account ids withheld; bounded."""
    body = getattr(exc, "body", None)
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        text = f"{err.get('type', 'error')}: {err.get('message', '')}"
    elif isinstance(body, dict) and body.get("message"):  # AWS-style {"message": ...}
        text = str(body["message"])
    else:
        text = type(exc).__name__
    return redact_aws(text)[:300]


def _message(m: dict[str, Any]) -> dict[str, Any]:
    """One prompt message in the Messages API's shape, keeping only the fields the API defines."""
    content = m.get("content")
    if not isinstance(content, list):
        text = text_of(content)
        return {"role": m["role"], "content": [{"type": "text", "text": text}] if text.strip() else []}
    blocks: list[dict[str, Any]] = []
    for b in content:
        kind = b.get("type")
        if kind == "text" and str(b.get("text", "")).strip():
            blocks.append({"type": "text", "text": b["text"]})
        elif kind == "tool_use":
            blocks.append({"type": "tool_use", "id": b["id"], "name": b["name"], "input": b.get("input") or {}})
        elif kind == "tool_result":
            result = b.get("content")
            blocks.append({"type": "tool_result", "tool_use_id": b["tool_use_id"],
                           "content": result if isinstance(result, str) else text_of(result),
                           **({"is_error": True} if b.get("is_error") else {})})
    return {"role": m["role"], "content": blocks}
