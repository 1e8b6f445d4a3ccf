"""BM25 statistics with many writers (adapters.stats_ledger) on moto's DynamoDB and S3 behind real boto3 clients:
after any interleaving of writers, retries, duplicate deliveries, killed writers and folds, the statistics equal
a sequential build of what the bucket holds."""

from __future__ import annotations

import contextlib
import itertools
from collections import Counter

import boto3
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from citerag.adapters.pinecone_index import PineconeIndex
from citerag.adapters.s3_store import S3DocumentStore
from citerag.adapters.stats_ledger import (
    MAX_TERMS,
    PART_TERMS,
    Contribution,
    DynamoStatsLedger,
    StatsFolder,
    create_table,
    pack,
    unpack,
)
from citerag.errors import DocumentError
from citerag.search.ports import DocumentInfo, Record
from citerag.search.sparse import CorpusStats, SparseVector
from citerag.testing.aws_doubles import DynamoDBDouble, S3Double
from citerag.testing.doubles import PineconeDouble

REGION = "ap-northeast-1"


class Killed(Exception):
    """The function running this writer was stopped here."""


@pytest.fixture(params=["moto", "doubles"])
def aws(monkeypatch, request):
    """moto, and the fast doubles the ingest simulation runs on (so they answer as moto does)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    doubles = request.param == "doubles"
    with contextlib.nullcontext() if doubles else mock_aws():
        yield _world(doubles=doubles)


def _world(shards: int = 2, doubles: bool = False):
    s3 = boto3.client("s3", region_name=REGION)
    db = boto3.client("dynamodb", region_name=REGION)
    if doubles:
        S3Double().attach(s3)
        DynamoDBDouble().attach(db)
    s3.create_bucket(Bucket="docs", CreateBucketConfiguration={"LocationConstraint": REGION})
    create_table(db, "stats")
    store = S3DocumentStore(s3, "docs", stats_ttl_s=0)
    ledger = DynamoStatsLedger(db, "stats", shards=shards)
    return store, ledger, StatsFolder(ledger, store)


# A document is a tuple of records; a record is its term ids with counts.
def contribution(doc) -> Contribution | None:
    if doc is None:
        return None
    df: Counter[int] = Counter()
    for rec in doc:
        df.update(set(rec))
    return Contribution(len(doc), sum(len(r) for r in doc), dict(df))


def sequential(bucket: dict[str, tuple | None]) -> CorpusStats:
    stats = CorpusStats()
    for doc in bucket.values():
        for rec in doc or ():
            stats.add(Counter(rec))
    return stats


terms = st.lists(st.integers(0, 12), min_size=1, max_size=5).map(tuple)
documents = st.one_of(st.none(), st.lists(terms, min_size=1, max_size=3).map(tuple))


EXAMPLES = itertools.count()


def writer(ledger, bucket, doc_id, ns=""):
    """One delivery of a notification for doc_id, as NotificationIngest handles it: read the object as it is now,
    write its contribution, and read again if the object changed meanwhile. Yields between its outside calls."""
    while True:
        seen = bucket.get(doc_id)
        yield "read"
        plan = ledger.plan(ns, doc_id, contribution(seen))
        yield "planned"
        if plan is not None and not ledger.commit(plan):
            continue  # another writer moved the document first: plan again from what it wrote
        yield "committed"
        if bucket.get(doc_id) == seen:
            return


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_statistics_after_any_interleaving_equal_a_sequential_build(aws, data):
    store, ledger, folder = aws
    ns = f"example-{next(EXAMPLES)}"  # each example starts from empty statistics

    bucket: dict[str, tuple | None] = {}
    running: list = []  # writers in flight
    queue: list[str] = []  # notifications not yet picked up (S3 delivers at least once, in any order)
    for _ in range(data.draw(st.integers(4, 30), label="steps")):
        step = data.draw(st.sampled_from(["upload", "start", "step", "step", "step", "kill", "duplicate",
                                          "fold", "fold-killed"]))
        if step == "upload":
            doc_id = data.draw(st.sampled_from(["a", "b", "c"]))
            bucket[doc_id] = data.draw(documents)
            queue.append(doc_id)
        elif step == "duplicate" and queue:
            queue.append(data.draw(st.sampled_from(queue)))
        elif step == "start" and queue:
            doc_id = queue.pop(data.draw(st.integers(0, len(queue) - 1)))
            running.append((doc_id, writer(ledger, bucket, doc_id, ns)))
        elif step == "step" and running:
            i = data.draw(st.integers(0, len(running) - 1))
            if next(running[i][1], None) is None:
                running.pop(i)
        elif step == "kill" and running:
            # The function stops between two of its writes; its message is not deleted, so it comes back.
            doc_id, _ = running.pop(data.draw(st.integers(0, len(running) - 1)))
            queue.append(doc_id)
        elif step == "fold":
            folder.fold(ns, limit=data.draw(st.integers(1, 8)))
        elif step == "fold-killed":
            _fold_killed_after_writing(folder, ns)

    # Everything delivered and finished; then the scheduled fold catches up.
    running.extend((d, writer(ledger, bucket, d, ns)) for d in queue)
    for _, w in running:
        for _ in w:
            pass
    folder.fold_all(ns)
    got = store.corpus_stats(ns)
    want = sequential(bucket)
    assert (got.n_docs, got.total_len, got.df) == (want.n_docs, want.total_len, want.df)


def _fold_killed_after_writing(folder: StatsFolder, ns: str) -> None:
    """A fold stopped after it replaced the statistics object, before it deleted the deltas it folded."""
    write, discard = folder.store.write_stats_object, folder.ledger.discard
    written = []

    def write_then_note(*args):
        write(*args)
        written.append(True)

    def discard_unless_written(keys):
        if written:
            raise Killed
        discard(keys)

    folder.store.write_stats_object, folder.ledger.discard = write_then_note, discard_unless_written
    try:
        folder.fold(ns)
    except Killed:
        pass
    finally:
        folder.store.write_stats_object, folder.ledger.discard = write, discard


def test_overlapping_folds_fold_each_delta_once(aws):
    store, ledger, folder = aws
    ledger.record("", "a", Contribution(2, 5, {1: 2, 2: 1}))
    read = store.read_stats_object

    def read_then_another_fold_wins(ns):
        got = read(ns)
        store.read_stats_object = read
        assert StatsFolder(ledger, store).fold(ns) == 1  # the other invocation, in between
        return got

    store.read_stats_object = read_then_another_fold_wins
    assert folder.fold("") == 0  # its conditional write lost: nothing folded twice
    store.read_stats_object = read
    assert folder.fold("") == 0
    stats = store.corpus_stats("")
    assert (stats.n_docs, stats.total_len, stats.df) == (2, 5, {1: 2, 2: 1})


def test_a_retried_transition_is_not_counted_twice_and_a_stale_one_is_planned_again(aws):
    store, ledger, folder = aws
    v1, v2 = Contribution(1, 3, {7: 1}), Contribution(2, 4, {7: 2, 9: 1})
    assert ledger.record("", "a", v1) is True
    assert ledger.record("", "a", v1) is False  # a duplicate delivery: nothing to write
    stale = ledger.plan("", "a", None)
    assert ledger.record("", "a", v2) is True
    assert ledger.commit(stale) is False  # planned from v1, which another writer replaced
    folder.fold_all("")
    stats = store.corpus_stats("")
    assert (stats.n_docs, stats.total_len, stats.df) == (2, 4, {7: 2, 9: 1})


def test_a_document_from_before_the_table_replaces_its_manifest_contribution(aws):
    store, ledger, folder = aws
    # The statistics object written by the single-writer path, holding document "a" (known from its manifest).
    store.apply_stats("", {5: 1, 6: 1}, {}, 1, 10)
    ledger.record("", "a", Contribution(1, 4, {6: 1}), before=Contribution(1, 10, {5: 1, 6: 1}))
    folder.fold_all("")
    stats = store.corpus_stats("")
    assert (stats.n_docs, stats.total_len, stats.df) == (1, 4, {6: 1})


def test_large_vocabularies_span_parts_and_an_oversized_one_is_refused(aws):
    store, ledger, folder = aws
    big = {t: 1 for t in range(PART_TERMS + 10)}
    assert len(pack(big)) == 2 and unpack(pack(big)) == big
    ledger.record("", "big", Contribution(1, len(big), big))
    ledger.record("", "big", Contribution(1, 3, {1: 1}))
    folder.fold_all("")
    stats = store.corpus_stats("")
    assert (stats.n_docs, stats.total_len, stats.df) == (1, 3, {1: 1})
    with pytest.raises(DocumentError, match="split it"):
        ledger.record("", "huge", Contribution(1, 1, {t: 1 for t in range(MAX_TERMS + 1)}))


# --- a writer killed between its writes, through the Pinecone index -----------------------------------------


@pytest.fixture
def index(aws):
    from pinecone import Index

    store, ledger, folder = aws
    with PineconeDouble() as dense_d, PineconeDouble() as sparse_d:
        dense = Index(host=dense_d.url.replace("127.0.0.1", "localhost"), api_key="pc-test-key")
        sparse = Index(host=sparse_d.url.replace("127.0.0.1", "localhost"), api_key="pc-test-key")
        yield PineconeIndex(dense, sparse, store, ledger), folder


def _doc(doc: str, terms: list[list[int]]):
    records = [Record(id=f"{doc}#{i}", values=np.eye(8, dtype=np.float32)[i % 8],
                      sparse=SparseVector(indices=sorted(set(t)), values=[1.0] * len(set(t))),
                      metadata={"doc_id": doc, "text": "x"}, length=len(t)) for i, t in enumerate(terms)]
    info = DocumentInfo(doc_id=doc, source_uri=f"s3://docs/{doc}", title=doc, content_hash=str(terms), kind="txt",
                        n_chunks=len(records), ingested_at="2026-11-27T00:00:00Z")
    return info, records


@pytest.mark.parametrize("killed_at", ["put_manifest", "commit", "delete_manifest"])
def test_a_writer_killed_between_its_writes_leaves_exact_statistics_after_the_retry(index, killed_at):
    idx, folder = index
    store, ledger = idx.store, idx.ledger
    idx.replace_document(*_doc("a", [[1, 2], [2, 3, 3]]), {}, "")
    idx.replace_document(*_doc("b", [[2]]), {}, "")

    target = ledger if killed_at == "commit" else store
    real = getattr(target, killed_at)

    def killed(*args, **kwargs):
        if killed_at == "commit":
            real(*args, **kwargs)  # the transaction lands; the function dies before it hears back
        raise Killed

    setattr(target, killed_at, killed)
    with pytest.raises(Killed):
        if killed_at == "delete_manifest":
            idx.delete_document("b", "")
        else:
            idx.replace_document(*_doc("a", [[4], [2, 4]]), {}, "")
    setattr(target, killed_at, real)
    # The queue redelivers the message: the same write again.
    if killed_at == "delete_manifest":
        idx.delete_document("b", "")
    else:
        idx.replace_document(*_doc("a", [[4], [2, 4]]), {}, "")
    folder.fold_all("")
    want = sequential({"a": ([1, 2], [2, 3, 3])} if killed_at == "delete_manifest" else
                      {"a": ([4], [2, 4]), "b": ([2],)})
    got = store.corpus_stats("")
    assert (got.n_docs, got.total_len, got.df) == (want.n_docs, want.total_len, want.df)


def test_searches_read_the_folded_statistics_through_a_bounded_cache(aws):
    store, ledger, folder = aws
    search_side = S3DocumentStore(store.s3, "docs", stats_ttl_s=3600)  # another process: the search function
    assert search_side.corpus_stats("cached").n_docs == 0
    ledger.record("cached", "a", Contribution(3, 9, {1: 3}))
    folder.fold_all("cached")
    assert search_side.corpus_stats("cached").n_docs == 0  # until its cache entry expires
    assert S3DocumentStore(store.s3, "docs").corpus_stats("cached").n_docs == 3  # a fresh reader sees the fold
    for ns in ("n1", "n2", "n3", "n4"):
        search_side.corpus_stats(ns)
    assert len(search_side._stats_cache) == 4 and "cached" not in search_side._stats_cache  # least recent dropped
    assert search_side.corpus_stats("cached").n_docs == 3
