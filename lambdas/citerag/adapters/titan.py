"""Titan Text Embeddings V2 through bedrock-runtime InvokeModel: one text per call, so a batch runs several calls at
once. How many is adaptive (adapters.adaptive, AIMD): it halves when Bedrock throttles and grows while calls
succeed, between 1 and `max_concurrency`; a throttled call is retried after a jittered backoff. botocore's adaptive
retry mode paces the retries of each single call beneath this."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from citerag.adapters.adaptive import AdaptiveConcurrency
from citerag.adapters.aws import describe_error, error_code
from citerag.errors import DependencyError

TITAN_V2 = "amazon.titan-embed-text-v2:0"
MAX_INPUT_CHARS = 50_000
# Bedrock runtime errors that say "later" (botocore bedrock-runtime service model, InvokeModel errors): 429
# ThrottlingException, 503 ServiceUnavailableException, 424/429 ModelNotReadyException.
THROTTLED = frozenset({"ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException",
                       "TooManyRequestsException"})
# A throttled call is retried until it has waited this long in all: ingest functions sized past the quota then
# share it (each waits its turn) instead of failing documents back to the queue for its visibility timeout.
THROTTLE_WAIT_S = 180.0
# The longest pause: with twice the functions the quota feeds, a 20 s cap left a fifth of the quota unused while
# everyone slept, 4 s used 93% of it (scripts/simulate_ingest.py, docs/aws-ingest.md).
MAX_BACKOFF_S = 4.0
MAX_ATTEMPTS = 60


class TitanEmbedder:
    def __init__(self, client: Any, *, model_id: str = TITAN_V2, dimensions: int = 1024, concurrency: int = 4,
                 max_concurrency: int = 16, sleep: Callable[[float], None] = time.sleep,
                 rng: random.Random | None = None, throttle_wait_s: float = THROTTLE_WAIT_S):
        if dimensions not in (256, 512, 1024):
            raise ValueError("Titan Text Embeddings V2 supports 256, 512 or 1024 dimensions")
        self._client = client
        self._model = model_id
        self.dim = dimensions
        self.model_id = f"{model_id}/{dimensions}"
        self.limit = AdaptiveConcurrency(concurrency, max(concurrency, max_concurrency))
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.throttle_wait_s = throttle_wait_s

    @property
    def concurrency(self) -> int:
        return self.limit.slots

    def _embed(self, text: str) -> np.ndarray:
        body = json.dumps({"inputText": text[:MAX_INPUT_CHARS], "dimensions": self.dim, "normalize": True})
        waited = 0.0
        for attempt in range(MAX_ATTEMPTS):
            window = self.limit.acquire()
            try:
                resp = self._client.invoke_model(
                    modelId=self._model, body=body, contentType="application/json", accept="application/json"
                )
                data = json.loads(resp["body"].read())
            except Exception as exc:
                throttled = error_code(exc) in THROTTLED
                self.limit.release(window, throttled=throttled, succeeded=False)
                if throttled and waited < self.throttle_wait_s and attempt < MAX_ATTEMPTS - 1:
                    # Full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"): callers throttled
                    # together do not come back together.
                    pause = self._rng.uniform(0, min(MAX_BACKOFF_S, 0.25 * 2**attempt))
                    waited += pause
                    self._sleep(pause)
                    continue
                raise DependencyError(f"Titan embedding failed: {describe_error(exc)}") from None
            self.limit.release(window)
            vec = data.get("embedding") if isinstance(data, dict) else None
            if not isinstance(vec, list) or len(vec) != self.dim:
                raise DependencyError(f"Titan returned no {self.dim}-dimensional embedding")
            return np.asarray(vec, dtype=np.float32)
        raise AssertionError("unreachable")  # pragma: no cover

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed(text)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) == 1:
            return self._embed(texts[0])[None, :]
        # As many threads as the limit may grow to; the limit decides how many call at once.
        with ThreadPoolExecutor(max_workers=min(self.limit.maximum, len(texts))) as pool:
            return np.stack(list(pool.map(self._embed, texts)))
