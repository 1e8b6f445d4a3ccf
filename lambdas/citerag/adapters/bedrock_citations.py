"""Strands' BedrockModel, able to carry Converse `searchResult` blocks (the native-citations mode).

strands-agents 1.62's `BedrockModel._format_request_message_content` has no `searchResult` branch and raises
`TypeError: content_type=<searchResult> | unsupported type`, for tool results and user messages alike. Converse
accepts `ToolResultContentBlock.searchResult` {source, title, content[{text}], citations{enabled}} (botocore
bedrock-runtime service model), and the answer's `citationsContent` blocks are already parsed by Strands' stream
handler, so one formatter branch is the whole adapter. Only the models the SearchResultBlock documentation lists
(Claude Opus 4.1, Opus 4, Sonnet 4.5, Sonnet 4, 3.7 Sonnet, 3.5 Haiku) cite search results.
"""

from __future__ import annotations

from typing import Any

from strands.models.bedrock import BedrockModel

# Model ids (inference-profile prefixes stripped) whose Converse SearchResultBlock documentation lists citations.
NATIVE_CITATION_MODELS = ("anthropic.claude-opus-4-1-", "anthropic.claude-opus-4-2025",
                          "anthropic.claude-sonnet-4-5-", "anthropic.claude-sonnet-4-2025",
                          "anthropic.claude-3-7-sonnet-", "anthropic.claude-3-5-haiku-")


def supports_native_citations(model_id: str) -> bool:
    base = model_id.split(".", 1)[1] if model_id.split(".", 1)[0] in ("us", "eu", "apac", "jp", "global", "au", "ca",
                                                                       "us-gov") else model_id
    return base.startswith(NATIVE_CITATION_MODELS)


class SearchResultBedrockModel(BedrockModel):
    def _format_request_message_content(self, content: Any) -> dict[str, Any] | None:
        if isinstance(content, dict) and "searchResult" in content:
            sr = content["searchResult"]
            block: dict[str, Any] = {"source": str(sr["source"]), "title": str(sr.get("title") or sr["source"]),
                                     "content": [{"text": str(c.get("text", ""))} for c in sr.get("content", [])]}
            if sr.get("citations") is not None:
                block["citations"] = {"enabled": bool(sr["citations"].get("enabled"))}
            return {"searchResult": block}
        return super()._format_request_message_content(content)
