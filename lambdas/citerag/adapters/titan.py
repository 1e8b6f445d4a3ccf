"""Titan Text Embeddings V2 through bedrock-runtime InvokeModel: one text per call, so batches run with
bounded concurrency; throttling is absorbed by botocore's adaptive retry mode."""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from citerag.adapters.aws import describe_error
from citerag.errors import DependencyError

TITAN_V2 = "amazon.titan-embed-text-v2:0"
MAX_INPUT_CHARS = 50_000


class TitanEmbedder:
    def __init__(self, client: Any, *, model_id: str = TITAN_V2, dimensions: int = 1024, concurrency: int = 4):
        if dimensions not in (256, 512, 1024):
            raise ValueError("Titan Text Embeddings V2 supports 256, 512 or 1024 dimensions")
        self._client = client
        self._model = model_id
        self.dim = dimensions
        self.model_id = f"{model_id}/{dimensions}"
        self.concurrency = max(1, concurrency)

    def _embed(self, text: str) -> np.ndarray:
        body = json.dumps({"inputText": text[:MAX_INPUT_CHARS], "dimensions": self.dim, "normalize": True})
        try:
            resp = self._client.invoke_model(
                modelId=self._model, body=body, contentType="application/json", accept="application/json"
            )
            data = json.loads(resp["body"].read())
        except Exception as exc:
            raise DependencyError(f"Titan embedding failed: {describe_error(exc)}") from None
        vec = data.get("embedding") if isinstance(data, dict) else None
        if not isinstance(vec, list) or len(vec) != self.dim:
            raise DependencyError(f"Titan returned no {self.dim}-dimensional embedding")
        return np.asarray(vec, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed(text)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(texts))) as pool:
            return np.stack(list(pool.map(self._embed, texts)))
