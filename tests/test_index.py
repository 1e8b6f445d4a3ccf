from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from citerag.adapters.sqlite_index import SqliteIndex
from citerag.errors import IndexError_
from citerag.search.ports import DocumentInfo, Record
from citerag.search.sparse import SparseVector

DIM = 8


def _info(doc_id: str, h: str = "h") -> DocumentInfo:
    return DocumentInfo(doc_id=doc_id, source_uri=f"file:///{doc_id}", title=doc_id, content_hash=h, kind="text",
                        n_chunks=0, ingested_at="2026-01-01T00:00:00Z")


def _rec(rid: str, doc_id: str, seed: int, **md) -> Record:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=DIM).astype(np.float32)
    v /= np.linalg.norm(v)
    sparse = SparseVector(indices=[seed, seed + 1000], values=[1.0, 0.5])
    return Record(id=rid, values=v, sparse=sparse, metadata={"doc_id": doc_id, "text": rid, **md}, length=3)


@pytest.fixture
def index(tmp_path):
    idx = SqliteIndex(tmp_path / "i.sqlite", dim=DIM, model_id="test")
    yield idx
    idx.close()


def test_dense_search_is_exact_and_ordered(index):
    recs = [_rec(f"d{i}#0", f"d{i}", i) for i in range(50)]
    for r in recs:
        index.replace_document(_info(r.metadata["doc_id"]), [r], {})
    q = np.asarray(recs[7].values)
    got = index.query_dense(q, 10)
    brute = sorted(((float(np.dot(q, r.values)), r.id) for r in recs), key=lambda t: (-t[0], t[1]))[:10]
    assert [m.id for m in got] == [rid for _, rid in brute]
    assert got[0].id == "d7#0" and got[0].score == pytest.approx(1.0, abs=1e-5)


def test_sparse_search_only_returns_records_sharing_a_term(index):
    index.replace_document(_info("a"), [_rec("a#0", "a", 1)], {})
    index.replace_document(_info("b"), [_rec("b#0", "b", 2)], {})
    got = index.query_sparse(SparseVector(indices=[1], values=[2.0]), 10)
    assert [(m.id, m.score) for m in got] == [("a#0", 2.0)]


def test_filters_and_namespaces(index):
    index.replace_document(_info("a"), [_rec("a#0", "a", 1, page=1), _rec("a#1", "a", 2, page=2)], {})
    index.replace_document(_info("a"), [_rec("a#0", "a", 1, page=9)], {}, namespace="other")
    q = np.ones(DIM, dtype=np.float32)
    assert [m.id for m in index.query_dense(q, 10, {"page": {"$gte": 2}})] == ["a#1"]
    assert [m.metadata["page"] for m in index.query_dense(q, 10, namespace="other")] == [9]
    assert index.namespaces() == {"": {"documents": 1, "chunks": 2}, "other": {"documents": 1, "chunks": 1}}


def test_replace_is_atomic_and_delete_removes_everything(index):
    index.replace_document(_info("a", "v1"), [_rec("a#0", "a", 1), _rec("a#1", "a", 2)], {"a#s0": "parent"})
    index.replace_document(_info("a", "v2"), [_rec("a#0", "a", 3)], {"a#s0": "new parent"})
    assert index.get_document("a").content_hash == "v2"
    assert [m.id for m in index.query_dense(np.ones(DIM), 10)] == ["a#0"]
    assert index.get_parent("a#s0") == "new parent"
    stats = index.corpus_stats()
    assert stats.n_docs == 1 and stats.total_len == 3
    assert index.delete_document("a") == 1
    assert index.get_document("a") is None and index.query_dense(np.ones(DIM), 10) == []
    assert index.corpus_stats().n_docs == 0 and index.corpus_stats().df == {}


def test_interrupted_replace_leaves_previous_state(index, monkeypatch):
    index.replace_document(_info("a", "v1"), [_rec("a#0", "a", 1)], {"a#s0": "old"})
    original = index._apply_stats

    def boom(*args, **kwargs):
        original(*args, **kwargs)
        raise KeyboardInterrupt  # Ctrl-C in the middle of the transaction

    monkeypatch.setattr(index, "_apply_stats", boom)
    with pytest.raises(KeyboardInterrupt):
        index.replace_document(_info("a", "v2"), [_rec("a#9", "a", 5)], {"a#s0": "new"})
    monkeypatch.undo()
    assert index.get_document("a").content_hash == "v1"
    assert [m.id for m in index.query_dense(np.ones(DIM), 10)] == ["a#0"]
    assert index.get_parent("a#s0") == "old"


def test_locked_index_gives_a_clear_error(tmp_path):
    path = tmp_path / "i.sqlite"
    SqliteIndex(path, dim=DIM, model_id="t").close()
    holder = sqlite3.connect(str(path), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        idx = SqliteIndex(path, dim=DIM, model_id="t", timeout=0.2)
        with pytest.raises(IndexError_, match="locked by another process"):
            idx.replace_document(_info("a"), [_rec("a#0", "a", 1)], {})
    except IndexError_ as exc:  # the lock can also bite while opening
        assert "locked by another process" in str(exc)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_corrupt_index_gives_a_clear_error(tmp_path):
    path = tmp_path / "i.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(IndexError_, match=r"damaged one.*delete it .*and ingest"):
        SqliteIndex(path, dim=DIM, model_id="t")


def test_embedder_dimension_mismatch_is_refused(tmp_path):
    path = tmp_path / "i.sqlite"
    SqliteIndex(path, dim=DIM, model_id="a").close()
    with pytest.raises(IndexError_, match="8-dimensional vectors from a"):
        SqliteIndex(path, dim=384, model_id="b")


def test_ties_are_broken_deterministically(index):
    v = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    for name in ("c", "a", "b"):
        index.replace_document(_info(name), [Record(id=f"{name}#0", values=v, metadata={"doc_id": name})], {})
    assert [m.id for m in index.query_dense(v, 3)] == ["a#0", "b#0", "c#0"]


def test_the_vector_profile_is_where_the_live_vectors_point(index):
    assert index.vector_profile() is None  # nothing indexed
    recs = [_rec(f"d{i}#0", f"d{i}", i) for i in range(20)]
    for r in recs:
        index.replace_document(_info(r.metadata["doc_id"]), [r], {})
    index.delete_document("d3")  # a deleted document no longer counts
    live = np.array([r.values for r in recs if r.id != "d3#0"], dtype=np.float64)
    mean = live.mean(axis=0)
    cosines = live @ (mean / np.linalg.norm(mean))
    profile = index.vector_profile()
    assert np.allclose(profile.mean, mean, atol=1e-6)
    assert profile.spread_mean == pytest.approx(cosines.mean(), abs=1e-6)
    assert profile.spread_std == pytest.approx(cosines.std(), abs=1e-6)
    assert index.vector_profile("other") is None
