"""The VectorIndex contract, run against both implementations: the embedded SQLite index, and the Pinecone adapter
(the real `pinecone` SDK against the Pinecone HTTP double, parents and statistics in moto S3). A test written
against one backend holds for the other; that is what lets a user switch the index setting and change nothing."""

from __future__ import annotations

import boto3
import numpy as np
import pytest
from moto import mock_aws

from citerag.adapters.pinecone_index import PineconeIndex
from citerag.adapters.s3_store import S3DocumentStore
from citerag.adapters.sqlite_index import SqliteIndex
from citerag.search.ports import DocumentInfo, Record, VectorIndex
from citerag.search.sparse import SparseVector
from citerag.testing.doubles import PineconeDouble

DIM = 8


@pytest.fixture(params=["sqlite", "pinecone"])
def index(request, tmp_path, monkeypatch) -> VectorIndex:
    if request.param == "sqlite":
        idx = SqliteIndex(tmp_path / "i.sqlite", dim=DIM, model_id="conformance")
        yield idx
        idx.close()
        return
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws(), PineconeDouble() as dense_d, PineconeDouble() as sparse_d:
        s3 = boto3.client("s3", region_name="ap-northeast-1")
        s3.create_bucket(Bucket="docs", CreateBucketConfiguration={"LocationConstraint": "ap-northeast-1"})
        yield PineconeIndex.connect(dense_d.url.replace("127.0.0.1", "localhost"),
                                    sparse_d.url.replace("127.0.0.1", "localhost"), "pc-test-key",
                                    timeout_s=5, store=S3DocumentStore(s3, "docs"))


def info(doc: str, h: str = "v1", n: int = 0) -> DocumentInfo:
    return DocumentInfo(doc_id=doc, source_uri=f"file:///{doc}.pdf", title=doc.upper(), content_hash=h, kind="pdf",
                        n_chunks=n, ingested_at="2026-11-22T00:00:00Z")


def vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def rec(rid: str, doc: str, seed: int, terms: tuple[int, ...] = (), **md) -> Record:
    terms = terms or (seed, 1000 + seed)
    return Record(id=rid, values=vec(seed), sparse=SparseVector(indices=sorted(terms), values=[1.0] * len(terms)),
                  metadata={"doc_id": doc, "text": f"text of {rid}", **md}, length=len(terms))


def put(index, doc: str, records: list[Record], parents: dict[str, str] | None = None, ns: str = "", h: str = "v1"):
    index.replace_document(info(doc, h, len(records)), records, parents or {}, ns)


def test_documents_are_listed_and_described(index):
    index.replace_document(info("a", n=0), [rec("a#0", "a", 1), rec("a#1", "a", 2)], {})  # the index counts
    put(index, "b", [rec("b#0", "b", 3)])
    got = index.get_document("a")
    assert (got.doc_id, got.source_uri, got.title, got.content_hash, got.kind, got.n_chunks) == (
        "a", "file:///a.pdf", "A", "v1", "pdf", 2)
    assert {d.doc_id for d in index.list_documents()} == {"a", "b"}
    assert index.get_document("missing") is None


def test_dense_search_is_exact_and_best_first(index):
    for i in range(30):
        put(index, f"d{i}", [rec(f"d{i}#0", f"d{i}", i)])
    q = vec(7)
    brute = sorted(((float(np.dot(q, vec(i))), f"d{i}#0") for i in range(30)), key=lambda t: (-t[0], t[1]))[:10]
    got = index.query_dense(q, 10)
    assert [m.id for m in got] == [rid for _, rid in brute]
    assert got[0].score == pytest.approx(1.0, abs=1e-5)
    assert got[0].metadata["text"] == "text of d7#0"


def test_sparse_search_scores_by_dot_product_and_needs_a_shared_term(index):
    put(index, "a", [rec("a#0", "a", 1, terms=(5, 6))])
    put(index, "b", [rec("b#0", "b", 2, terms=(6, 7))])
    put(index, "c", [rec("c#0", "c", 3, terms=(8,))])
    got = index.query_sparse(SparseVector(indices=[5, 6], values=[2.0, 1.0]), 10)
    assert [(m.id, m.score) for m in got] == [("a#0", pytest.approx(3.0)), ("b#0", pytest.approx(1.0))]
    assert index.query_sparse(SparseVector(indices=[99], values=[1.0]), 10) == []


@pytest.mark.parametrize(("flt", "expected"), [
    ({"page": 2}, {"a#1"}),
    ({"page": {"$gte": 2}}, {"a#1", "a#2"}),
    ({"lang": {"$in": ["ja"]}}, {"a#0", "a#2"}),
    ({"lang": {"$ne": "ja"}}, {"a#1"}),
    ({"groups": "sales"}, {"a#0", "a#1"}),
    ({"groups": {"$nin": ["sales"]}}, {"a#2"}),
    ({"tenant": {"$exists": True}}, {"a#0"}),
    ({"tenant": {"$exists": False}}, {"a#1", "a#2"}),
    ({"$or": [{"page": 1}, {"page": 3}]}, {"a#0", "a#2"}),
    ({"$and": [{"lang": "ja"}, {"page": {"$lt": 3}}]}, {"a#0"}),
    ({"flag": True}, {"a#1"}),
])
def test_the_filter_language_means_the_same_on_both(index, flt, expected):
    put(index, "a", [rec("a#0", "a", 1, page=1, lang="ja", groups=["sales", "support"], tenant="acme"),
                     rec("a#1", "a", 2, page=2, lang="en", groups=["sales"], flag=True),
                     rec("a#2", "a", 3, page=3, lang="ja", groups=["hr"], flag=False)])
    assert {m.id for m in index.query_dense(vec(1), 10, flt)} == expected
    sparse_all = SparseVector(indices=[1, 2, 3, 1001, 1002, 1003], values=[1.0] * 6)
    assert {m.id for m in index.query_sparse(sparse_all, 10, flt)} == expected


def test_namespaces_are_separate(index):
    put(index, "a", [rec("a#0", "a", 1, page=1)])
    put(index, "a", [rec("a#0", "a", 1, page=9)], ns="other")
    assert [m.metadata["page"] for m in index.query_dense(vec(1), 10)] == [1]
    assert [m.metadata["page"] for m in index.query_dense(vec(1), 10, namespace="other")] == [9]
    assert index.delete_document("a", "other") == 1
    assert index.query_dense(vec(1), 10, namespace="other") == [] and index.get_document("a") is not None


def test_replacing_a_document_drops_chunks_the_old_version_had(index):
    put(index, "a", [rec("a#0", "a", 1), rec("a#1", "a", 2), rec("a#2", "a", 3)], {"a#p1": "old page"})
    put(index, "a", [rec("a#0", "a", 4)], {"a#p1": "new page"}, h="v2")
    assert [m.id for m in index.query_dense(vec(2), 10)] == ["a#0"]
    assert index.get_document("a").content_hash == "v2"
    assert index.get_parent("a#p1") == "new page"


def test_bm25_statistics_follow_replaces_and_deletes(index):
    put(index, "a", [rec("a#0", "a", 1, terms=(5, 6)), rec("a#1", "a", 2, terms=(6,))])
    put(index, "b", [rec("b#0", "b", 3, terms=(6, 7, 8))])
    stats = index.corpus_stats()
    assert (stats.n_docs, stats.total_len, stats.df.get(6), stats.df.get(5)) == (3, 6, 3, 1)
    assert index.corpus_size() == (3, 6)
    put(index, "a", [rec("a#0", "a", 1, terms=(9,))], h="v2")
    stats = index.corpus_stats()
    assert (stats.n_docs, stats.total_len, stats.df.get(6), stats.df.get(5), stats.df.get(9)) == (2, 4, 1, None, 1)
    assert index.delete_document("b") == 1
    assert index.corpus_size() == (1, 1) and index.corpus_stats().df == {9: 1}


def test_delete_removes_records_parents_and_the_document(index):
    put(index, "a", [rec("a#0", "a", 1), rec("a#1", "a", 2)], {"a#p1": "page"})
    assert index.delete_document("a") == 2
    assert index.get_document("a") is None and index.list_documents() == []
    assert index.query_dense(vec(1), 10) == [] and index.get_parent("a#p1") is None
    assert index.delete_document("a") == 0


def test_metadata_round_trips_with_its_types(index):
    put(index, "a", [rec("a#0", "a", 1, page=3, score=0.5, public=True, groups=["x", "y"], title="T")])
    (m,) = index.query_dense(vec(1), 1)
    assert {k: m.metadata[k] for k in ("page", "score", "public", "groups", "title")} == {
        "page": 3, "score": 0.5, "public": True, "groups": ["x", "y"], "title": "T"}


def test_equal_scores_are_ordered_by_id(index):
    v = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    for name in ("c", "a", "b"):
        index.replace_document(info(name, n=1), [Record(id=f"{name}#0", values=v, metadata={"doc_id": name})], {})
    assert [m.id for m in index.query_dense(v, 3)] == ["a#0", "b#0", "c#0"]
