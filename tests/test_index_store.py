"""The embedded index's read structure: what a user notices is that search results stay exactly what an exact scan
with the reference filter gives, whatever the history of writes (appends, replacements, deletions, another process
writing, a crash between a commit and its append, an index from the previous schema), and that a commit or a new
process extends or maps the structure instead of rebuilding it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citerag.adapters.sqlite_index import SqliteIndex
from citerag.errors import IndexError_
from citerag.search.filters import matches
from citerag.search.ports import DocumentInfo, Record
from citerag.search.sparse import SparseVector

DIM = 8


def info(doc: str, h: str = "v1") -> DocumentInfo:
    return DocumentInfo(doc_id=doc, source_uri=f"file:///{doc}", title=doc, content_hash=h, kind="text", n_chunks=0,
                        ingested_at="2026-01-01T00:00:00Z")


def vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def rec(rid: str, doc: str, seed: int, **md) -> Record:
    terms = sorted({seed % 7, 10 + seed % 5})
    return Record(id=rid, values=vec(seed), sparse=SparseVector(indices=terms, values=[1.0 + seed % 3] * len(terms)),
                  metadata={"doc_id": doc, "text": f"text {rid}", **md}, length=len(terms))


def brute_dense(live: dict[str, tuple[Record, dict]], q: np.ndarray, k: int, flt=None) -> list[str]:
    scored = [(float(np.dot(q, r.values)), rid) for rid, (r, md) in live.items() if matches(flt, md)]
    return [rid for _, rid in sorted(scored, key=lambda t: (-t[0], t[1]))[:k]]


@pytest.fixture
def path(tmp_path) -> Path:
    return tmp_path / "i.sqlite"


# --- the same results as an exact scan with the reference filter, after any history of writes -----------------------

value = st.one_of(st.sampled_from(["a", "b", "c"]), st.integers(0, 3), st.booleans(),
                  st.lists(st.sampled_from(["a", "b", "c"]), max_size=2))
metadata = st.dictionaries(st.sampled_from(["tenant", "page", "groups"]), value, max_size=3)
op = st.one_of(
    st.builds(lambda f, v: {f: v}, st.sampled_from(["tenant", "page", "groups"]),
              st.one_of(st.sampled_from(["a", "b"]), st.integers(0, 3), st.booleans())),
    st.builds(lambda f, n: {f: {"$gte": n}}, st.sampled_from(["page", "tenant"]), st.integers(0, 3)),
    st.builds(lambda f, v: {f: {"$nin": v}}, st.sampled_from(["tenant", "groups"]),
              st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=2)),
    st.builds(lambda f, b: {f: {"$exists": b}}, st.sampled_from(["tenant", "groups", "text"]), st.booleans()),
    st.just({"text": {"$ne": "text d1#0"}}),  # a key kept out of the columns: still exact
)
flt_st = st.one_of(st.none(), op, st.builds(lambda a, b: {"$or": [a, b]}, op, op))
# Each step replaces a document (0-3 chunks; 0 = delete) with fresh metadata.
steps = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.lists(metadata, min_size=3, max_size=3)),
                 min_size=1, max_size=12)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps, flt=flt_st, seed=st.integers(0, 1000), reopen=st.booleans())
def test_search_equals_exact_scan_with_the_reference_filter(tmp_path_factory, steps, flt, seed, reopen):
    path = tmp_path_factory.mktemp("prop") / "i.sqlite"
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    live: dict[str, tuple[Record, dict]] = {}
    for n, (doc, n_chunks, mds) in enumerate(steps):
        d = f"d{doc}"
        recs = [rec(f"{d}#{i}", d, seed + 31 * n + i, **mds[i]) for i in range(n_chunks)]
        if n_chunks:
            idx.replace_document(info(d, str(n)), recs, {})
        else:
            idx.delete_document(d)
        live = {k: v for k, v in live.items() if v[0].metadata["doc_id"] != d}
        live.update({r.id: (r, json.loads(json.dumps(r.metadata))) for r in recs})
        if n % 3 == 0:
            idx.query_dense(vec(0), 3)  # a search between commits: the structure is extended, not rebuilt
    if reopen:
        idx.close()
        idx = SqliteIndex(path, dim=DIM, model_id="t")
    q = vec(seed + 7)
    assert [m.id for m in idx.query_dense(q, 5, flt)] == brute_dense(live, q, 5, flt)
    sparse_all = SparseVector(indices=list(range(15)), values=[1.0] * 15)
    assert {m.id for m in idx.query_sparse(sparse_all, 100, flt)} == {
        rid for rid, (_, md) in live.items() if matches(flt, md)}
    got = idx.query_dense(q, 100, flt)
    assert all(m.metadata == live[m.id][1] for m in got)  # metadata read back for the hits is what was written
    idx.close()


# --- a commit extends the structure; a new process maps it ----------------------------------------------------------

def _manifest(path: Path) -> dict:
    (ns_dir,) = Path(str(path) + "-snapshot").glob("ns-*")
    return json.loads((ns_dir / "manifest.json").read_text())


def test_a_commit_appends_to_the_structure_instead_of_rebuilding_it(path):
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("a"), [rec("a#0", "a", 1, tenant="x"), rec("a#1", "a", 2, tenant="y")], {})
    before = _manifest(path)
    idx.replace_document(info("b"), [rec("b#0", "b", 3, tenant="x")], {})
    idx.replace_document(info("a", "v2"), [rec("a#0", "a", 4, tenant="y")], {})
    after = _manifest(path)
    assert after["epoch"] == before["epoch"]  # same files, grown
    assert (after["n_rows"], after["n_dead"]) == (4, 2)  # two rows appended after b#0, a's two old rows tombstoned
    assert [m.id for m in idx.query_dense(vec(4), 10, {"tenant": "y"})] == ["a#0"]
    assert {m.id for m in idx.query_dense(vec(4), 10)} == {"a#0", "b#0"}


def test_another_process_sees_each_commit(path):
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("a"), [rec("a#0", "a", 1, tenant="x")], {})
    assert [m.id for m in idx.query_dense(vec(1), 10, {"tenant": "x"})] == ["a#0"]
    code = f"""
import numpy as np
from citerag.adapters.sqlite_index import SqliteIndex
from citerag.errors import IndexError_
from citerag.search.ports import DocumentInfo, Record
i = SqliteIndex({str(path)!r}, dim={DIM}, model_id="t")
d = DocumentInfo(doc_id="b", source_uri="file:///b", title="b", content_hash="h", kind="text", n_chunks=1,
                 ingested_at="x")
i.replace_document(d, [Record(id="b#0", values=np.ones({DIM}, np.float32) / np.sqrt({DIM}),
                              metadata={{"doc_id": "b", "tenant": "x"}})], {{}})
i.delete_document("a")
"""
    subprocess.run([sys.executable, "-c", code], check=True)
    assert [m.id for m in idx.query_dense(vec(1), 10, {"tenant": "x"})] == ["b#0"]
    assert idx.metadata_keys() == ["doc_id", "tenant", "text"]


def test_a_lost_append_is_caught_up_from_sqlite(path, monkeypatch):
    """A writer whose append failed after its commit (disk full, killed) leaves the structure behind: the next search
    catches up from SQLite's log of new and removed rows and the vectors written before the commit, without a
    rebuild."""
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("a"), [rec("a#0", "a", 1, tenant="x"), rec("a#1", "a", 2)], {})
    stale = _manifest(path)

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(idx._store, "sync", disk_full)
    idx.replace_document(info("b"), [rec("b#0", "b", 3, tenant="x")], {})  # committed; the append failed
    idx.replace_document(info("a", "v2"), [rec("a#0", "a", 5)], {})
    monkeypatch.undo()
    # Each commit first brings the structure up to date and writes its vectors past what the manifest covers, so
    # the structure is behind by the last commit only, whose vectors are on disk.
    assert _manifest(path)["generation"] == stale["generation"] + 1
    fresh = SqliteIndex(path, dim=DIM, model_id="t")
    assert {m.id for m in fresh.query_dense(vec(1), 10)} == {"a#0", "b#0"}
    assert [m.id for m in fresh.query_dense(vec(1), 10, {"tenant": "x"})] == ["b#0"]
    caught_up = _manifest(path)
    assert caught_up["epoch"] == stale["epoch"] and caught_up["n_rows"] == 4 and caught_up["n_dead"] == 2
    # The sparse vectors are kept only in the postings: the missed commit's segment was written before it committed.
    assert _sparse(fresh) == _sparse_truth([rec("a#0", "a", 5), rec("b#0", "b", 3, tenant="x")])
    assert fresh.corpus_stats().df.get(10) == 1 and fresh.corpus_stats().df.get(13) == 1


def test_a_deleted_vector_folder_is_named_with_the_command_that_rebuilds_the_index(path, tmp_path):
    """The vectors are kept once, in the folder beside the database: without it the index cannot answer, and says
    so instead of answering from part of it."""
    import shutil

    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("a"), [rec("a#0", "a", 1)], {})
    idx.query_dense(vec(1), 1)
    idx.close()
    shutil.rmtree(Path(str(path) + "-snapshot"))
    with pytest.raises(IndexError_) as e:
        SqliteIndex(path, dim=DIM, model_id="t").query_dense(vec(1), 10)
    assert "vectors" in str(e.value) and f"citerag reset --index {path}" in str(e.value)
    assert f"citerag ingest PATH --index {path}" in str(e.value)
    # A new database at the same path (the old file deleted, the folder left behind) never reads the old one.
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    other = SqliteIndex(path, dim=DIM, model_id="t")
    other.replace_document(info("z"), [rec("z#0", "z", 2)], {})
    assert [m.id for m in other.query_dense(vec(1), 10)] == ["z#0"]


def _sparse(idx: SqliteIndex, flt=None) -> dict[str, float]:
    """Every record's BM25 score for a query of all the test's terms."""
    q = SparseVector(indices=list(range(15)), values=[1.0 + t / 10 for t in range(15)])
    return {m.id: round(m.score, 4) for m in idx.query_sparse(q, 10_000, flt)}


def _sparse_truth(records: list[Record]) -> dict[str, float]:
    w = {t: 1.0 + t / 10 for t in range(15)}
    return {r.id: round(sum(w[t] * v for t, v in zip(r.sparse.indices, r.sparse.values, strict=True)), 4)
            for r in records}


def test_a_torn_append_is_detected(path):
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("a"), [rec("a#0", "a", 1), rec("a#1", "a", 2)], {})
    (ns_dir,) = Path(str(path) + "-snapshot").glob("ns-*")
    m = json.loads((ns_dir / "manifest.json").read_text())
    seq_file = ns_dir / f"e{m['epoch']}" / "seq.i64"
    seq_file.write_bytes(seq_file.read_bytes()[:8] + b"\0" * 8)  # the last row's sequence number lost
    fresh = SqliteIndex(path, dim=DIM, model_id="t")
    with pytest.raises(IndexError_, match="missing or damaged"):
        fresh.query_dense(vec(1), 10)


def test_many_deletions_compact_into_a_new_epoch(path):
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_documents([(info(f"d{i}"), [rec(f"d{i}#{j}", f"d{i}", 10 * i + j, page=j) for j in range(3)], {})
                           for i in range(400)])
    first = _manifest(path)
    for i in range(0, 400, 2):
        idx.delete_document(f"d{i}")
    last = _manifest(path)
    assert last["epoch"] > first["epoch"] and last["n_rows"] < 1200  # dead rows dropped
    got = idx.query_dense(vec(31), 1000, {"page": {"$gte": 1}})
    assert {m.id for m in got} == {f"d{i}#{j}" for i in range(1, 400, 2) for j in (1, 2)}
    # The new epoch took its postings from the previous one (SQLite keeps no sparse vectors): BM25 answers the same.
    kept = [rec(f"d{i}#{j}", f"d{i}", 10 * i + j, page=j) for i in range(1, 400, 2) for j in range(3)]
    assert _sparse(idx) == _sparse_truth(kept)
    assert all((idx.corpus_stats().df.get(t) or 0) == sum(t in r.sparse.indices for r in kept) for t in range(15))


def test_equal_scores_keep_the_smallest_ids_whatever_the_write_order(path):
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    v = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    for name in ("e", "c", "a", "d", "b"):
        idx.replace_document(info(name), [Record(id=f"{name}#0", values=v, metadata={"doc_id": name})], {})
    assert [m.id for m in idx.query_dense(v, 2)] == ["a#0", "b#0"]
    assert [m.id for m in idx.query_sparse(SparseVector(indices=[1], values=[1.0]), 2)] == []


def test_an_index_of_the_previous_schema_is_migrated(path):
    """Schema 1 files (records keyed by namespace and id) open, search and take writes as before."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.executescript("""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE records (namespace TEXT NOT NULL, id TEXT NOT NULL, doc_id TEXT NOT NULL, dense BLOB NOT NULL,
    sparse_idx BLOB NOT NULL, sparse_val BLOB NOT NULL, length INTEGER NOT NULL, metadata TEXT NOT NULL,
    PRIMARY KEY (namespace, id));
CREATE INDEX records_doc ON records (namespace, doc_id);
CREATE TABLE documents (namespace TEXT NOT NULL, doc_id TEXT NOT NULL, source_uri TEXT NOT NULL, title TEXT NOT NULL,
    content_hash TEXT NOT NULL, kind TEXT NOT NULL, n_chunks INTEGER NOT NULL, ingested_at TEXT NOT NULL,
    PRIMARY KEY (namespace, doc_id));
CREATE TABLE parents (namespace TEXT NOT NULL, parent_id TEXT NOT NULL, doc_id TEXT NOT NULL, text TEXT NOT NULL,
    PRIMARY KEY (namespace, parent_id));
CREATE TABLE bm25_df (namespace TEXT NOT NULL, term INTEGER NOT NULL, df INTEGER NOT NULL,
    PRIMARY KEY (namespace, term));
CREATE TABLE bm25_totals (namespace TEXT PRIMARY KEY, n_docs INTEGER NOT NULL, total_len INTEGER NOT NULL);
INSERT INTO meta VALUES ('schema_version', '1'), ('generation', '3'), ('dim', '8'), ('model_id', 't');
""")
    for ns, rid, seed in (("", "a#0", 1), ("", "a#1", 2), ("other", "a#0", 3)):
        conn.execute("INSERT INTO records VALUES (?, ?, 'a', ?, ?, ?, 1, ?)",
                     (ns, rid, vec(seed).tobytes(), np.array([5], np.uint32).tobytes(),
                      np.array([1.0], np.float32).tobytes(), json.dumps({"doc_id": "a", "page": seed})))
    conn.executemany("INSERT INTO documents VALUES (?, 'a', 'file:///a', 'A', 'h', 'text', ?, 'x')",
                     [("", 2), ("other", 1)])
    conn.close()
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    assert [m.id for m in idx.query_dense(vec(2), 10, {"page": {"$gte": 2}})] == ["a#1"]
    assert [m.metadata["page"] for m in idx.query_dense(vec(2), 10, namespace="other")] == [3]
    idx.replace_document(info("a", "v2"), [rec("a#0", "a", 9, page=7)], {})
    assert [m.metadata["page"] for m in idx.query_dense(vec(2), 10)] == [7]


# --- the approximate option (CITERAG_INDEX_ANN=hnsw) ---------------------------------------------------------------

def test_hnsw_search_keeps_exact_scores_filters_and_deletions(tmp_path, monkeypatch):
    from citerag.adapters import ann

    monkeypatch.setattr(ann, "MIN_ROWS", 100)
    monkeypatch.setattr(ann, "EXACT_ALLOWED", 50)
    rng = np.random.default_rng(0)
    centroids = rng.normal(size=(20, DIM))
    path = tmp_path / "i.sqlite"
    exact = SqliteIndex(path, dim=DIM, model_id="t")
    batch = []
    for d in range(300):
        recs = []
        for j in range(4):
            v = centroids[(d * 4 + j) % 20] + 0.3 * rng.normal(size=DIM)
            recs.append(Record(id=f"d{d}#{j}", values=(v / np.linalg.norm(v)).astype(np.float32),
                               metadata={"doc_id": f"d{d}", "tenant": f"t{d % 4}"}))
        batch.append((info(f"d{d}"), recs, {}))
    exact.replace_documents(batch)
    for d in range(0, 300, 10):
        exact.delete_document(f"d{d}")
    approx = SqliteIndex(path, dim=DIM, model_id="t", ann="hnsw")
    graphs = Path(str(path) + "-snapshot")
    assert approx.query_dense(vec(7), 10) == exact.query_dense(vec(7), 10)  # no graph yet: the exact scan
    assert not list(graphs.glob("ns-*/e*/hnsw.json"))  # a search never builds one
    (built,) = approx.prepare_search()  # what ingest does once its documents are written
    assert (built["namespace"], built["rows"], built["added"]) == ("", 1200, 1200) and built["seconds"] >= 0
    assert approx.prepare_search() == []  # up to date: nothing to add
    found = 0
    for s in range(20):
        q = vec(1000 + s)
        truth = exact.query_dense(q, 10)
        got = approx.query_dense(q, 10)
        found += len({m.id for m in truth} & {m.id for m in got})
        by_id = {m.id: m.score for m in truth}
        assert all(m.score == pytest.approx(by_id[m.id]) for m in got if m.id in by_id)  # exact re-scoring
        filtered = approx.query_dense(q, 10, {"tenant": "t1"})
        assert len(filtered) == 10 and {m.metadata["tenant"] for m in filtered} == {"t1"}
        assert not any(m.metadata["doc_id"] in {f"d{d}" for d in range(0, 300, 10)} for m in got)
    assert found / 200 >= 0.9  # recall@10
    saved = json.loads(next(graphs.glob("ns-*/e*/hnsw.json")).read_text())
    assert saved["rows"] == 1200
    # Rows appended after the graph was built are searched exactly until the next ingest extends the graph.
    exact.replace_document(info("new"), [Record(id="new#0", values=vec(5000), metadata={"doc_id": "new"})], {})
    assert approx.query_dense(vec(5000), 1)[0].id == "new#0"
    assert json.loads(next(graphs.glob("ns-*/e*/hnsw.json")).read_text())["rows"] == 1200
    (grown,) = approx.prepare_search()
    assert (grown["rows"], grown["added"]) == (1201, 1)
    assert approx.query_dense(vec(5000), 1)[0].id == "new#0"  # through the extended graph, seen by mtime


def test_an_unknown_approximate_search_is_refused(tmp_path):
    from citerag.errors import IndexError_

    with pytest.raises(IndexError_, match="unknown approximate search"):
        SqliteIndex(tmp_path / "i.sqlite", dim=DIM, model_id="t", ann="ivf")


# --- each vector kept once: in the mapped file, written before its commit ---------------------------------------------

FIXTURES = Path(__file__).parent / "fixtures" / "index"


def test_an_index_of_schema_2_is_upgraded_in_place(tmp_path):
    """An index written by the previous release (each vector in SQLite and in the mapped file) opens, answers as it
    did, gives SQLite's copies of the vectors back to the disk, and takes writes."""
    import shutil

    from citerag.adapters.sqlite_index import SCHEMA_VERSION

    path = tmp_path / "index.sqlite"
    shutil.copy(FIXTURES / "schema2.sqlite", path)
    shutil.copytree(FIXTURES / "schema2.sqlite-snapshot", tmp_path / "index.sqlite-snapshot")
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    # What the previous release answered on this file (recorded when the fixture was written).
    assert [m.id for m in idx.query_dense(vec(11), 3)] == ["d1#1", "d2#0", "d3#1"]
    assert {m.id for m in idx.query_dense(vec(11), 10, {"tenant": "small"})} == {"d0#0", "d0#1"}
    assert {m.id for m in idx.query_dense(vec(1), 10, namespace="other")} == {"d5#0", "d5#1"}
    assert "d4#0" not in {m.id for m in idx.query_dense(vec(40), 10)}
    assert idx.query_dense(vec(11), 1)[0].metadata["text"]
    conn = sqlite3.connect(str(path))
    assert not {"dense", "sparse_idx", "sparse_val"} & {r[1] for r in conn.execute("PRAGMA table_info(records)")}
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    conn.close()
    idx.replace_document(info("d1", "v2"), [rec("d1#0", "d1", 11, tenant="big")], {})
    assert idx.query_dense(vec(11), 1)[0].id == "d1#0"
    idx.close()
    again = SqliteIndex(path, dim=DIM, model_id="t")
    assert again.query_dense(vec(11), 1)[0].id == "d1#0"


def test_each_vector_is_kept_once(path):
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_documents([(info(f"d{i}"), [rec(f"d{i}#0", f"d{i}", i)], {}) for i in range(20)])
    conn = sqlite3.connect(str(path))
    assert conn.execute("SELECT COUNT(*) FROM records").fetchone() == (20,)
    assert not {"dense", "sparse_idx", "sparse_val"} & {r[1] for r in conn.execute("PRAGMA table_info(records)")}
    m = _manifest(path)
    (ns_dir,) = Path(str(path) + "-snapshot").glob("ns-*")
    stored = np.fromfile(ns_dir / f"e{m['epoch']}" / "dense.f32", np.float32).reshape(-1, DIM)
    assert np.allclose(stored, np.stack([vec(i) for i in range(20)]))


def test_a_commit_that_never_happens_leaves_no_vector_behind(path, monkeypatch):
    """Vectors are written before their commit; a transaction rolled back after that (interrupted) leaves them past
    what the manifest covers, and the next commit writes over them: every row still has its own vector."""
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("a"), [rec("a#0", "a", 1)], {})
    real = idx._store.stage

    def interrupted(*args, **kwargs):
        real(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(idx._store, "stage", interrupted)
    with pytest.raises(KeyboardInterrupt):
        idx.replace_document(info("b"), [rec("b#0", "b", 2)], {})
    monkeypatch.undo()
    idx.replace_document(info("c"), [rec("c#0", "c", 3)], {})  # the same sequence number b#0 had
    fresh = SqliteIndex(path, dim=DIM, model_id="t")
    for i, name in ((1, "a#0"), (3, "c#0")):
        top = fresh.query_dense(vec(i), 1)[0]
        assert top.id == name and top.score == pytest.approx(1.0, abs=1e-5)
    assert {m.id for m in fresh.query_dense(vec(2), 10)} == {"a#0", "c#0"}
    # So do the postings staged with them: BM25 sees a#0 and c#0 with their own terms, nothing of b#0.
    assert _sparse(fresh) == _sparse_truth([rec("a#0", "a", 1), rec("c#0", "c", 3)])
    (ns_dir,) = Path(str(path) + "-snapshot").glob("ns-*")
    named = {f"p{a}-{b}" for a, b, _, _ in _manifest(path)["segments"]}
    assert {p.stem for p in ns_dir.glob("e*/p*.rows")} == named  # no segment of the commit that never happened


@pytest.mark.parametrize("gone", ["b", "c"])
def test_a_batch_cut_off_before_its_append_then_partly_deleted_stays_searchable(path, monkeypatch, gone):
    """A batch committed but interrupted before its append (Ctrl-C, killed), then one of its documents deleted (the
    first or the last): its staged rows no longer line up with what SQLite holds, and the next process rebuilds
    from them instead of refusing the index."""
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("a"), [rec("a#0", "a", 1)], {})
    real = idx._store.sync

    def interrupted(*args, **kwargs):
        if kwargs.get("delta") is not None:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(idx._store, "sync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        idx.replace_documents([(info("b"), [rec("b#0", "b", 2)], {}), (info("c"), [rec("c#0", "c", 3)], {})])
    monkeypatch.undo()
    idx.close()
    other = SqliteIndex(path, dim=DIM, model_id="t")
    assert other.delete_document(gone) == 1
    other.close()
    kept = [r for r in (rec("a#0", "a", 1), rec("b#0", "b", 2), rec("c#0", "c", 3)) if r.metadata["doc_id"] != gone]
    fresh = SqliteIndex(path, dim=DIM, model_id="t")
    for r in kept:
        top = fresh.query_dense(np.asarray(r.values), 1)[0]
        assert top.id == r.id and top.score == pytest.approx(1.0, abs=1e-5)
    assert {m.id for m in fresh.query_dense(vec(2), 10)} == {r.id for r in kept}
    assert _sparse(fresh) == _sparse_truth(kept)


def test_segments_and_manifests_reach_the_disk_before_what_they_replace_is_removed(path, monkeypatch):
    """After a power cut the merged postings (the sparse vectors' only copy) and the tombstones are there: each file
    a manifest names is flushed before the manifest is published, and the manifest before the segments it replaces
    are unlinked."""
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("d0"), [rec("d0#0", "d0", 0), rec("d0#1", "d0", 1)], {})
    events: list[tuple[str, str]] = []
    real_fsync, real_replace, real_unlink = os.fsync, os.replace, Path.unlink

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", str(dst)))
        return real_replace(src, dst)

    def unlink(self, missing_ok=False):
        events.append(("unlink", str(self)))
        return real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(Path, "unlink", unlink)
    idx.replace_document(info("d1"), [rec("d1#0", "d1", 10), rec("d1#1", "d1", 11)], {})  # merges p0-2 and p2-4
    idx.delete_document("d0")
    monkeypatch.undo()
    (ns_dir,) = Path(str(path) + "-snapshot").glob("ns-*")
    m = _manifest(path)
    assert [s[:2] for s in m["segments"]] == [[0, 4]]
    root = ns_dir / f"e{m['epoch']}"
    published = [i for i, (kind, target) in enumerate(events) if kind == "replace" and target.endswith("manifest.json")]
    assert len(published) == 2
    merged, deleted = published
    synced = [(i, target) for i, (kind, target) in enumerate(events) if kind == "fsync"]
    for ext in ("terms", "starts", "rows", "vals"):
        assert any(i < merged and t == str(root / f"p0-4.{ext}") for i, t in synced)
    assert any(merged < i < deleted and t == str(root / "dead.i64") for i, t in synced)
    assert any(i < merged and t == str(root) for i, t in synced)  # the segment's names
    gone = [i for i, (kind, target) in enumerate(events) if kind == "unlink" and "/p0-2." in target]
    assert gone and any(merged < i < min(gone) and t == str(ns_dir) for i, t in synced)  # the manifest's name


def test_a_tombstone_file_shorter_than_its_manifest_is_rebuilt_not_trusted(path):
    """Deletions whose tombstones a power cut lost do not come back in results: the structure is rebuilt."""
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("a"), [rec("a#0", "a", 1)], {})
    idx.replace_document(info("b"), [rec("b#0", "b", 8)], {})
    idx.delete_document("a")
    idx.close()
    (ns_dir,) = Path(str(path) + "-snapshot").glob("ns-*")
    for f in ns_dir.glob("e*/dead.i64"):
        f.open("r+b").truncate(0)
    fresh = SqliteIndex(path, dim=DIM, model_id="t")
    assert [m.id for m in fresh.query_dense(vec(1), 5)] == ["b#0"]
    assert _sparse(fresh) == _sparse_truth([rec("b#0", "b", 8)])


def test_a_truncated_postings_segment_is_refused_with_the_rebuild_command(path):
    """A merged segment a power cut left short: the index says how to rebuild it instead of a numpy traceback."""
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    for d in range(2):
        idx.replace_document(info(f"d{d}"), [rec(f"d{d}#{j}", f"d{d}", d * 10 + j) for j in range(2)], {})
    idx.close()
    (ns_dir,) = Path(str(path) + "-snapshot").glob("ns-*")
    for f in ns_dir.glob("e*/p0-4.*"):
        f.open("r+b").truncate(0)
    with pytest.raises(IndexError_, match="citerag reset --index"):
        SqliteIndex(path, dim=DIM, model_id="t").query_sparse(SparseVector(indices=[1], values=[1.0]), 5)


def test_a_damaged_page_is_reported_with_the_rebuild_command(path):
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    r = rec("a#0", "a", 1, parent_id="a#p")
    r.metadata["text"] = "hello world"
    idx.replace_document(info("a"), [r], {"a#p": "hello world and more"})
    conn = sqlite3.connect(path)
    conn.execute("UPDATE parents SET text = X'789c0102030405'")
    conn.commit()
    conn.close()
    with pytest.raises(IndexError_, match=r"damaged.*citerag reset --index"):
        idx.fetch(["a#0"])
    with pytest.raises(IndexError_, match=r"damaged.*citerag reset --index"):
        idx.get_parent("a#p")


def test_a_vector_file_cut_short_under_a_running_process_is_reported_not_a_traceback(path):
    """The in-memory copy (from a namespace's second search) reads the vector file: cut short since the process
    mapped it, the search says the index is damaged and how to rebuild it."""
    idx = SqliteIndex(path, dim=DIM, model_id="t", resident="auto")
    idx.replace_document(info("a"), [rec(f"a#{j}", "a", j) for j in range(4)], {})
    assert idx.query_dense(vec(1), 1)[0].id == "a#1"  # mapped, not copied yet
    (ns_dir,) = Path(str(path) + "-snapshot").glob("ns-*")
    for f in ns_dir.glob("e*/dense.f32"):
        f.open("r+b").truncate(DIM * 4)
    with pytest.raises(IndexError_, match=r"missing or damaged.*citerag reset --index"):
        idx.query_dense(vec(1), 1)


def test_a_metadata_column_cut_short_is_reported_not_a_traceback(path):
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("a"), [rec("a#0", "a", 1, tenant="x"), rec("a#1", "a", 2, tenant="y")], {})
    (ns_dir,) = Path(str(path) + "-snapshot").glob("ns-*")
    for f in ns_dir.glob("e*/m*.codes"):
        f.open("r+b").truncate(0)
    with pytest.raises(IndexError_, match=r"missing or damaged.*citerag reset --index"):
        SqliteIndex(path, dim=DIM, model_id="t").query_dense(vec(1), 1, {"tenant": "x"})


def test_a_namespace_emptied_by_deletions_is_not_rebuilt_on_every_open(path):
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("big"), [rec(f"big#{j}", "big", j) for j in range(1100)], {})
    idx.delete_document("big")  # most rows dead: compacted to none
    idx.close()
    epochs = []
    for _ in range(3):
        again = SqliteIndex(path, dim=DIM, model_id="t")
        assert again.query_dense(vec(1), 3) == []
        again.close()
        epochs.append(_manifest(path)["epoch"])
    assert len(set(epochs)) == 1
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("a"), [rec("a#0", "a", 1)], {})
    assert [m.id for m in SqliteIndex(path, dim=DIM, model_id="t").query_dense(vec(1), 3)] == ["a#0"]


def test_a_chunks_text_is_kept_once_in_its_parent(path):
    """A chunk whose text is a slice of its page is stored as offsets into the page; every reader still sees the
    text, and a filter on it still matches. A text that is no slice of its page is kept as it is."""
    page = "First sentence here. Second sentence there. Third one, with ünïcödé and 日本語 text 😀 𝔘𝔫𝔦."
    chunks = [(0, 20), (21, 43), (44, len(page))]
    records = [Record(id=f"a#{i}", values=vec(i), sparse=SparseVector(indices=[i], values=[1.0]),
                      metadata={"doc_id": "a", "parent_id": "a#p1", "text": page[s:e], "char_start": s, "page": 1},
                      length=3) for i, (s, e) in enumerate(chunks)]
    # No char_start, found after the previous chunk; and one that is not in the page at all.
    records.append(Record(id="a#3", values=vec(3), metadata={"doc_id": "a", "parent_id": "a#p1",
                                                            "text": "Third one, with ünïcödé"}))
    records.append(Record(id="a#4", values=vec(4), metadata={"doc_id": "a", "parent_id": "a#p1",
                                                            "text": "Not on the page."}))
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("a"), records, {"a#p1": page})
    stored = dict(sqlite3.connect(str(path)).execute("SELECT id, json_extract(metadata, '$.text') FROM records"))
    assert stored == {"a#0": "[0,20]", "a#1": "[21,43]", "a#2": f"[44,{len(page)}]", "a#3": "[44,67]",
                      "a#4": "Not on the page."}
    want = {r.id: r.metadata["text"] for r in records}
    assert {m.id: m.metadata["text"] for m in idx.query_dense(vec(0), 10)} == want
    assert {rid: md["text"] for rid, md in idx.fetch(list(want)).items()} == want
    assert idx.document_metadata("a")["text"] in want.values()
    assert [m.id for m in idx.query_dense(vec(0), 10, {"text": page[44:]})] == ["a#2"]
    assert [m.id for m in idx.query_dense(vec(0), 10, {"text": "Not on the page."})] == ["a#4"]
    idx.close()
    fresh = SqliteIndex(path, dim=DIM, model_id="t")
    assert {m.id: m.metadata["text"] for m in fresh.query_dense(vec(0), 10)} == want


# --- schema 4: sparse vectors only in the postings, shared metadata once, pages compressed, float16 vectors ----------

def _fixture3(tmp_path: Path) -> Path:
    import shutil

    path = tmp_path / "index.sqlite"
    shutil.copy(FIXTURES / "schema3.sqlite", path)
    shutil.copytree(FIXTURES / "schema3.sqlite-snapshot", tmp_path / "index.sqlite-snapshot")
    return path


def test_two_processes_upgrading_a_schema_3_index_at_once_both_open_it(tmp_path, monkeypatch):
    """The second to take the write lock finds the index upgraded by the first and uses it as it is."""
    path = _fixture3(tmp_path)
    upgrade = SqliteIndex._migrate_v4
    raced: list[list[str]] = []

    def racing(self):
        if not raced:  # the other process upgrades between this one's version check and its write transaction
            raced.append([])
            other = SqliteIndex(path, dim=DIM, model_id="t")
            raced[0] = [m.id for m in other.query_dense(vec(11), 3)]
            other.close()
        return upgrade(self)

    monkeypatch.setattr(SqliteIndex, "_migrate_v4", racing)
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    assert raced == [["d1#0", "d3#0", "d3#1"]]
    assert [m.id for m in idx.query_dense(vec(11), 3)] == ["d1#0", "d3#0", "d3#1"]
    assert {m.id for m in idx.query_dense(vec(1), 10, namespace="other")} == {"d5#0", "d5#1"}


def test_an_index_of_schema_3_is_upgraded_in_place_and_answers_as_before(tmp_path):
    """An index written by the previous release (each sparse vector in SQLite and in the postings, pages as plain
    text) opens, answers exactly what that release answered on it (recorded when the fixture was written), and gives
    SQLite's copies back to the disk."""
    from citerag.adapters.sqlite_index import SCHEMA_VERSION

    path = _fixture3(tmp_path)
    before = path.stat().st_size
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    assert [m.id for m in idx.query_dense(vec(11), 3)] == ["d1#0", "d3#0", "d3#1"]
    assert {m.id for m in idx.query_dense(vec(11), 10, {"tenant": "small"})} == {"d0#0", "d0#1"}
    assert {m.id for m in idx.query_dense(vec(1), 10, namespace="other")} == {"d5#0", "d5#1"}
    sparse = idx.query_sparse(SparseVector(indices=[1, 11], values=[1.0, 0.5]), 10)
    assert [(m.id, m.score) for m in sparse] == [("d0#0", 3.0), ("d2#1", 2.0), ("d1#0", 1.5), ("d3#0", 1.0),
                                                 ("d2#0", 0.5)]
    assert {m.id: m.metadata["text"] for m in idx.query_dense(vec(11), 10)} == {
        "d1#0": "日本語の文書です。二つ", "d3#0": "日本語の文書です。二つ", "d3#1": "目の文はここにあります。",
        "d0#0": "First sentence here. ", "d1#1": "目の文はここにあります。", "d2#0": "First sentence here. ",
        "d0#1": "Second sentence there.", "d2#1": "Second sentence there."}
    stats = idx.corpus_stats()
    assert (stats.n_docs, stats.total_len, stats.df.get(1), stats.df.get(11)) == (8, 16, 2, 4)
    assert idx.document_parts("d1") == [(1, None, "日本語の文書です。二つ目の文はここにあります。")]
    conn = sqlite3.connect(str(path))
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    assert not {"dense", "sparse_idx", "sparse_val"} & {r[1] for r in conn.execute("PRAGMA table_info(records)")}
    assert conn.execute("SELECT name FROM sqlite_master WHERE name='bm25_df'").fetchone() is None
    shared = json.loads(conn.execute("SELECT shared FROM documents WHERE doc_id='d1'").fetchone()[0])
    assert shared == {"doc_id": "d1", "tenant": "big", "parent_id": "d1#p1", "page": 1}  # kept once, as a write would
    conn.close()
    assert path.stat().st_size <= before
    # The previous format's files are gone: one epoch per namespace.
    assert [len(list(d.glob("e*"))) for d in (tmp_path / "index.sqlite-snapshot").glob("ns-*")] == [1, 1]
    # It takes writes, and a sequence number is never reused (d4's rows, deleted, had the highest before d5's).
    idx.replace_document(info("d1", "v2"), [rec("d1#0", "d1", 11, tenant="big")], {})
    assert idx.query_dense(vec(11), 1)[0].id == "d1#0"
    idx.close()
    again = SqliteIndex(path, dim=DIM, model_id="t")
    assert again.query_dense(vec(11), 1)[0].id == "d1#0"
    assert "d1#1" not in {m.id for m in again.query_dense(vec(11), 10)}


def test_an_index_of_a_newer_schema_is_refused_with_the_command_that_rebuilds_it(path):
    SqliteIndex(path, dim=DIM, model_id="t").close()
    conn = sqlite3.connect(str(path))
    conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(IndexError_, match="schema version 99") as e:
        SqliteIndex(path, dim=DIM, model_id="t")
    assert f"citerag reset --index {path}" in str(e.value)


def test_pages_are_stored_compressed_and_read_back_exactly(path):
    page = "日本語のページです。" * 40 + " Ünïcödé and emoji 😀 𝔘𝔫𝔦 at the end."
    chunks = [(0, 200), (200, len(page))]
    records = [Record(id=f"a#{i}", values=vec(i), metadata={"doc_id": "a", "parent_id": "a#p1", "page": 1,
                                                             "chunk_index": i, "text": page[s:e], "char_start": s})
               for i, (s, e) in enumerate(chunks)]
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("a"), records, {"a#p1": page})
    (blob,) = sqlite3.connect(str(path)).execute("SELECT text FROM parents").fetchone()
    assert isinstance(blob, bytes) and len(blob) < len(page.encode("utf-8")) / 4
    assert idx.get_parent("a#p1") == page
    assert idx.document_parts("a") == [(1, None, page)]
    assert {rid: md["text"] for rid, md in idx.fetch(["a#0", "a#1"]).items()} == {"a#0": page[:200],
                                                                                   "a#1": page[200:]}
    assert idx.fetch(["a#1"])["a#1"] == records[1].metadata  # shared keys stored once, read back whole


def test_metadata_a_documents_chunks_share_is_stored_once_and_read_back_whole(path):
    recs = [rec(f"a#{i}", "a", i, tenant="acme", groups=["x", "y"], page=i % 2, flag=i == 0, n=1 if i else 1.0)
            for i in range(4)]
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("a"), recs, {})
    shared = json.loads(sqlite3.connect(str(path)).execute("SELECT shared FROM documents").fetchone()[0])
    assert shared == {"doc_id": "a", "tenant": "acme", "groups": ["x", "y"]}  # 1 and 1.0 are different values
    got = idx.fetch([r.id for r in recs])
    assert all(got[r.id] == r.metadata and type(got[r.id]["n"]) is type(r.metadata["n"]) for r in recs)
    assert [m.id for m in idx.query_dense(vec(0), 10, {"tenant": "acme", "flag": True})] == ["a#0"]
    assert idx.document_metadata("a") == recs[0].metadata


def test_a_float16_index_answers_the_same_top_hits_as_float32_in_half_the_space(tmp_path):
    rng = np.random.default_rng(3)
    batch = [(info(f"d{d}"), [rec(f"d{d}#{j}", f"d{d}", int(rng.integers(1 << 30)), tenant=f"t{d % 3}")
                              for j in range(5)], {}) for d in range(60)]
    f32 = SqliteIndex(tmp_path / "f32.sqlite", dim=DIM, model_id="t")
    f16 = SqliteIndex(tmp_path / "f16.sqlite", dim=DIM, model_id="t", vectors="float16")
    f32.replace_documents(batch)
    f16.replace_documents(batch)
    for s in range(20):
        q = vec(5000 + s)
        a, b = f32.query_dense(q, 5), f16.query_dense(q, 5)
        assert [m.id for m in a] == [m.id for m in b]
        assert [m.score for m in b] == pytest.approx([m.score for m in a], abs=2e-3)
        assert [m.id for m in f32.query_dense(q, 5, {"tenant": "t1"})] == [
            m.id for m in f16.query_dense(q, 5, {"tenant": "t1"})]
    (d32,) = Path(str(tmp_path / "f32.sqlite") + "-snapshot").glob("ns-*/e*/dense.f32")
    (d16,) = Path(str(tmp_path / "f16.sqlite") + "-snapshot").glob("ns-*/e*/dense.f16")
    assert d16.stat().st_size * 2 == d32.stat().st_size == 300 * DIM * 4
    # The index keeps its type whatever a later process is configured with; writes after the widening are seen.
    f16.close()
    again = SqliteIndex(tmp_path / "f16.sqlite", dim=DIM, model_id="t")
    assert again.vectors == "float16"
    assert [m.id for m in again.query_dense(vec(5000), 5)] == [m.id for m in f32.query_dense(vec(5000), 5)]
    again.replace_document(info("new"), [rec("new#0", "new", 777)], {})
    assert again.query_dense(vec(777), 1)[0].id == "new#0"
    assert list(Path(str(tmp_path / "f16.sqlite") + "-snapshot").glob("ns-*/e*/dense.f16"))


@pytest.mark.parametrize("resident", ["never", "auto", "always"])
def test_the_in_memory_copy_answers_what_the_mapped_file_does(path, resident):
    idx = SqliteIndex(path, dim=DIM, model_id="t", resident=resident)
    truth = SqliteIndex(path, dim=DIM, model_id="t", resident="never")
    idx.replace_documents([(info(f"d{d}"), [rec(f"d{d}#{j}", f"d{d}", 7 * d + j) for j in range(3)], {})
                           for d in range(30)])
    for s in range(4):
        assert idx.query_dense(vec(s), 10) == truth.query_dense(vec(s), 10)
    snap = idx._snapshot("")
    assert (snap.resident_bytes > 0) == (resident != "never")
    # Rows a later commit appends reach the copy; replaced rows leave it.
    idx.replace_document(info("d0", "v2"), [rec("d0#0", "d0", 999)], {})
    assert idx.query_dense(vec(999), 1)[0].id == "d0#0"
    assert idx.query_dense(vec(999), 100) == truth.query_dense(vec(999), 100)


def test_a_key_every_row_had_until_a_commit_without_it_still_filters_exactly(path):
    idx = SqliteIndex(path, dim=DIM, model_id="t")
    idx.replace_document(info("a"), [rec("a#0", "a", 1, tenant="x"), rec("a#1", "a", 2, tenant="y")], {})
    idx.replace_document(info("b"), [rec("b#0", "b", 3)], {})  # no tenant
    idx.replace_document(info("c"), [rec("c#0", "c", 4, tenant=["x", "z"])], {})  # several values
    assert {m.id for m in idx.query_dense(vec(1), 10, {"tenant": {"$exists": False}})} == {"b#0"}
    assert {m.id for m in idx.query_dense(vec(1), 10, {"tenant": "x"})} == {"a#0", "c#0"}
    idx.close()
    fresh = SqliteIndex(path, dim=DIM, model_id="t")
    assert {m.id for m in fresh.query_dense(vec(1), 10, {"tenant": {"$in": ["y", "z"]}})} == {"a#1", "c#0"}
