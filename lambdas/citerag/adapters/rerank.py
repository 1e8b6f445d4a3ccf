"""Bedrock Rerank (bedrock-agent-runtime.rerank), optional by setting."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class BedrockReranker:
    def __init__(self, client: Any, model_arn: str) -> None:
        self._client = client
        self.model_arn = model_arn

    def rerank(self, query: str, texts: Sequence[str], top_n: int) -> list[tuple[int, float]]:
        if not texts:
            return []
        resp = self._client.rerank(
            queries=[{"type": "TEXT", "textQuery": {"text": query}}],
            sources=[{"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": t[:30000]}}}
                     for t in texts],
            rerankingConfiguration={
                "type": "BEDROCK_RERANKING_MODEL",
                "bedrockRerankingConfiguration": {
                    "numberOfResults": min(top_n, len(texts)),
                    "modelConfiguration": {"modelArn": self.model_arn},
                },
            },
        )
        ranked = [(int(r["index"]), float(r["relevanceScore"])) for r in resp.get("results", [])]
        # Results the reranker did not return keep their fused order after the reranked ones.
        seen = {i for i, _ in ranked}
        return ranked + [(i, 0.0) for i in range(len(texts)) if i not in seen]
