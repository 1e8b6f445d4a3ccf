from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from citerag.search.sparse import encode_query

from conftest import SAMPLES, make_encrypted_pdf, make_pdf


def _snapshot(index):
    rows = index._conn.execute("SELECT namespace, id, dense, sparse_idx, sparse_val, metadata FROM records ORDER BY id")
    docs = index._conn.execute("SELECT * FROM documents ORDER BY doc_id")
    return rows.fetchall(), docs.fetchall()


def _copy_samples(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    shutil.copytree(SAMPLES, folder)
    return folder


def test_reingesting_an_unchanged_folder_embeds_nothing_and_changes_nothing(fast, tmp_path):
    folder = _copy_samples(tmp_path)
    first = fast.ingestor().ingest_paths([folder])
    assert {r.status for r in first} == {"added"} and len(first) == 6
    before = _snapshot(fast.index)
    misses = fast.embedder.misses
    again = fast.ingestor().ingest_paths([folder])
    assert {r.status for r in again} == {"unchanged"}
    assert fast.embedder.misses == misses
    assert _snapshot(fast.index) == before


def test_changed_file_is_replaced_and_sync_removes_deleted_files(fast, tmp_path):
    folder = _copy_samples(tmp_path)
    ing = fast.ingestor()
    ing.ingest_paths([folder])
    txt = folder / "support-contacts.txt"
    txt.write_text("Support is now open on Saturdays from 10:00 to 15:00.\n", encoding="utf-8")
    (folder / "faq-en.md").unlink()
    results = {Path(r.source).name: r for r in ing.ingest_paths([folder], sync=True)}
    assert results["support-contacts.txt"].status == "replaced"
    assert results["faq-en.md"].status == "removed"
    uris = {d.source_uri for d in fast.index.list_documents()}
    assert txt.resolve().as_uri() in uris and (folder / "faq-en.md").resolve().as_uri() not in uris
    query = encode_query("Saturdays", fast.index.corpus_stats())
    texts = [m.metadata["text"] for m in fast.index.query_sparse(query, 5)]
    assert any("Saturdays" in t for t in texts)


def test_sync_only_touches_documents_under_the_given_folders(fast, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "one.txt").write_text("first document text.", encoding="utf-8")
    (b / "two.txt").write_text("second document text.", encoding="utf-8")
    ing = fast.ingestor()
    ing.ingest_paths([a, b])
    (b / "two.txt").unlink()
    ing.ingest_paths([a], sync=True)  # b is not being synced: its document stays
    assert len(fast.index.list_documents()) == 2


def test_failed_documents_leave_the_index_unchanged_and_the_batch_continues(fast, tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nThe good document has text.\n", encoding="utf-8")
    (folder / "locked.pdf").write_bytes(make_encrypted_pdf())
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\n%%EOF garbage")
    (folder / "sjis.txt").write_bytes("シフトJISの文書".encode("shift_jis"))
    (folder / "empty.txt").write_bytes(b"")
    (folder / "deck.pptx").write_bytes(b"PK")
    (folder / ".hidden.md").write_text("# hidden", encoding="utf-8")
    results = {Path(r.source).name: r for r in fast.ingestor().ingest_paths([folder, tmp_path / "nope.txt"])}
    assert results["good.md"].status == "added"
    assert "password-protected" in results["locked.pdf"].reason
    assert "corrupt" in results["broken.pdf"].reason
    assert "not valid UTF-8" in results["sjis.txt"].reason
    assert "empty" in results["empty.txt"].reason
    assert results["deck.pptx"].status == "skipped"
    assert "no such file" in results["nope.txt"].reason
    assert ".hidden.md" not in results
    assert [d.title for d in fast.index.list_documents()] == ["Good"]


def test_a_document_that_breaks_on_reingest_keeps_its_previous_version(fast, tmp_path):
    path = tmp_path / "manual.pdf"
    path.write_bytes(make_pdf(["Original manual text about filters."]))
    ing = fast.ingestor()
    assert ing.ingest_path(path).status == "added"
    before = _snapshot(fast.index)
    path.write_bytes(b"%PDF-1.4 truncated")
    assert ing.ingest_path(path).status == "failed"
    assert _snapshot(fast.index) == before


def test_unreadable_file_is_reported(fast, tmp_path, monkeypatch):
    path = tmp_path / "secret.txt"
    path.write_text("secret", encoding="utf-8")

    def deny(path, max_bytes):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("citerag.ingestion.ingestor.read_regular_file", deny)
    r = fast.ingestor().ingest_path(path)
    assert r.status == "failed" and r.reason == "cannot read: permission denied"


def test_extra_metadata_reaches_every_chunk(fast, tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("Tenant scoped text.", encoding="utf-8")
    fast.ingestor({"tenant": "acme", "groups": ["eng", "ops"]}).ingest_path(path)
    (m,) = fast.index.query_dense(np.ones(fast.embedder.dim, dtype=np.float32), 5, {"tenant": "acme"})
    assert m.metadata["groups"] == ["eng", "ops"]
