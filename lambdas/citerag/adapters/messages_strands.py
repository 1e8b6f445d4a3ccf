"""The AgentCore agent's Strands model for a Claude model served only on Bedrock's Messages-API endpoint: Strands'
own Anthropic provider (strands/models/anthropic.py: Messages-API requests, its streaming events turned into Strands'
stream events) with the SDK's bedrock-mantle client (adapters/messages_api.py: SigV4 for `bedrock-mantle`) in place
of the api.anthropic.com client it would make. The guardrail is applied around it (adapters/guardrail_model.py):
the Messages API carries none.
"""

from __future__ import annotations

from typing import Any

from strands.models.anthropic import AnthropicModel


class MessagesApiModel(AnthropicModel):
    def __init__(self, client: Any, model_id: str, *, sampling: bool = True, max_tokens: int = 2048) -> None:
        # A placeholder key: the client is replaced before any call, and this one is never used.
        super().__init__(client_args={"api_key": "unused", "max_retries": 0}, model_id=model_id,
                         max_tokens=max_tokens, params={"temperature": 0.0} if sampling else {})
        self.client = client
