"""The embedded index's search does only the work its answer needs: a selective filter scores only the allowed rows,
a search reads the metadata of the hits it shows, and the answers are the exact scan's either way."""

from __future__ import annotations

import numpy as np
import pytest

from citerag.adapters.sqlite_index import SqliteIndex
from citerag.search.pipeline import SearchConfig, SearchPipeline
from citerag.search.ports import DocumentInfo, Record
from citerag.search.sparse import SparseVector

DIM = 16


def _info(doc_id: str) -> DocumentInfo:
    return DocumentInfo(doc_id=doc_id, source_uri=f"file:///{doc_id}.txt", title=doc_id, content_hash="h",
                        kind="text", n_chunks=0, ingested_at="2026-01-01T00:00:00Z")


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture
def filled(tmp_path):
    """400 one-chunk documents; every 50th belongs to the small tenant (2%)."""
    idx = SqliteIndex(tmp_path / "i.sqlite", dim=DIM, model_id="test")
    vecs = _vectors(400)
    batch = []
    for i, v in enumerate(vecs):
        tenant = "small" if i % 50 == 0 else "big"
        md = {"doc_id": f"d{i:03d}", "text": f"chunk {i}", "tenant": tenant, "source_uri": f"file:///d{i:03d}.txt"}
        rec = Record(id=f"d{i:03d}#0", values=v, sparse=SparseVector(indices=[i % 7], values=[1.0]), metadata=md,
                     length=2)
        batch.append((_info(f"d{i:03d}"), [rec], {}))
    idx.replace_documents(batch)
    yield idx, vecs
    idx.close()


def _exact(vecs: np.ndarray, q: np.ndarray, rows: list[int], k: int) -> list[str]:
    scored = sorted((-float(vecs[r] @ q), f"d{r:03d}#0") for r in rows)
    return [rid for _, rid in scored[:k]]


def test_a_selective_filter_gives_the_exact_top_k_of_its_rows(filled):
    idx, vecs = filled
    small = [i for i in range(400) if i % 50 == 0]
    for q in _vectors(5, seed=1):
        got = idx.query_dense(q, 5, {"tenant": "small"})
        assert [m.id for m in got] == _exact(vecs, q, small, 5)
        assert {m.metadata["tenant"] for m in got} == {"small"}
        assert [round(m.score, 5) for m in got] == [round(float(vecs[int(m.id[1:4])] @ q), 5) for m in got]


def test_a_filter_allowing_most_rows_gives_the_same_answer_as_the_exact_scan(filled):
    idx, vecs = filled
    big = [i for i in range(400) if i % 50]
    q = _vectors(1, seed=2)[0]
    assert [m.id for m in idx.query_dense(q, 20, {"tenant": "big"})] == _exact(vecs, q, big, 20)


def test_a_filter_no_row_passes_finds_nothing(filled):
    idx, _ = filled
    assert idx.query_dense(_vectors(1)[0], 10, {"tenant": "nobody"}) == []


def test_matches_carry_their_own_metadata(filled):
    idx, _ = filled
    got = idx.query_dense(_vectors(1, seed=3)[0], 30)
    for m in got:
        assert m.metadata["doc_id"] == m.id.split("#")[0]
        assert m.metadata["text"] == f"chunk {int(m.id[1:4])}"
        assert m.model_dump() == {"id": m.id, "score": m.score, "metadata": m.metadata}


def test_a_hit_deleted_after_it_was_ranked_is_left_out(filled):
    idx, vecs = filled
    q = vecs[10]
    ranked = idx.query_dense(q, 5)
    assert ranked[0].id == "d010#0"
    idx.delete_document("d010")
    assert idx.load_metadata(ranked) == {"d010#0"}
    assert ranked[1].metadata["doc_id"] == ranked[1].id.split("#")[0]


class _Vectors:
    model_id, dim = "test", DIM

    def __init__(self, v: np.ndarray) -> None:
        self.v = v

    def embed_query(self, text: str) -> np.ndarray:
        return self.v


def test_a_search_reads_the_metadata_of_the_hits_it_shows_only(filled, monkeypatch):
    idx, vecs = filled
    read: list[int] = []
    real = idx._metadata

    def counted(seqs):
        read.extend(seqs)
        return real(seqs)

    monkeypatch.setattr(idx, "_metadata", counted)
    pipe = SearchPipeline(_Vectors(vecs[42]), idx, SearchConfig(expand_parents=False))
    out = pipe.search("chunk", top_k=3, grade=False)
    assert out.hits[0].id == "d042#0" and out.hits[0].text == "chunk 42"
    assert len(out.hits) == 3
    assert len(read) == 3  # of the hundred candidates each half ranked
