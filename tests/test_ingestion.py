from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from citerag.components import Components
from citerag.documents.chunking import chunk_document
from citerag.documents.loaders import load_path
from citerag.ingestion.files import uri_to_path
from citerag.search.sparse import encode_query
from citerag.settings import Settings

from conftest import SAMPLES, make_encrypted_pdf, make_pdf


def _vectors(index) -> dict[str, tuple[bytes, list[tuple[int, float]]]]:
    """Each live record's dense vector and sparse vector (term, weight), as the read structure holds them."""
    snap = index._snapshot("")
    ids = snap.ids(range(snap.n))
    sparse: dict[int, list[tuple[int, float]]] = {}
    for seg in snap.postings:
        for term, row, val in zip(seg.expanded_terms().tolist(), seg.rows.tolist(), seg.vals.tolist(), strict=True):
            sparse.setdefault(row, []).append((term, val))
    return {ids[r]: (snap.dense[r].tobytes(), sorted(sparse.get(r, []))) for r in range(snap.n) if snap.live[r]}


def _snapshot(index):
    rows = index._conn.execute("SELECT namespace, id, seq, length, metadata FROM records ORDER BY id")
    docs = index._conn.execute("SELECT * FROM documents ORDER BY doc_id")
    return rows.fetchall(), docs.fetchall(), _vectors(index)


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
    (folder / "latin1.txt").write_bytes("Le café est prêt.".encode("latin-1"))  # Shift_JIS is read now
    (folder / "empty.txt").write_bytes(b"")
    (folder / "deck.key").write_bytes(b"PK")
    (folder / ".hidden.md").write_text("# hidden", encoding="utf-8")
    results = {Path(r.source).name: r for r in fast.ingestor().ingest_paths([folder, tmp_path / "nope.txt"])}
    assert results["good.md"].status == "added"
    assert "password-protected" in results["locked.pdf"].reason
    assert "corrupt" in results["broken.pdf"].reason
    assert "not valid UTF-8" in results["latin1.txt"].reason
    assert "empty" in results["empty.txt"].reason
    assert results["deck.key"].status == "skipped"
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


# --- the pipeline: batches across files, progress by passage, near-duplicates, large transactions ---------------


def _record_rows(index):
    vectors = _vectors(index)
    out = []
    for rid, md in sorted(index.fetch(list(vectors)).items()):
        md.pop("ingested_at")
        out.append((rid, *vectors[rid], md))
    return out


def _many_files(folder: Path, n: int = 6, salt: str = "") -> Path:
    """Files of several passages each; `salt` makes their text new to the run's shared embedding cache."""
    folder.mkdir()
    for i in range(n):
        body = " ".join(f"Topic {i} sentence {j} about filters, fans and sensor {salt}{i * 100 + j}."
                        for j in range(40))
        (folder / f"doc{i}.md").write_text(f"# Document {i}\n\n{body}\n", encoding="utf-8")
    return folder


def test_batched_pipeline_writes_the_same_index_as_one_file_at_a_time(tmp_path):
    folder = _many_files(tmp_path / "docs")
    piped = Components(Settings(data_dir=tmp_path / "a", embedder="hashing"))
    ing = piped.ingestor()
    ing.workers, ing.batch_size, ing.write_batch_passages = 3, 4, 10  # batches span files; several transactions
    results = ing.ingest_paths([folder])
    assert [r.status for r in results] == ["added"] * 6
    one_by_one = Components(Settings(data_dir=tmp_path / "b", embedder="hashing"))
    for f in sorted(folder.iterdir()):
        assert one_by_one.ingestor().ingest_path(f).status == "added"
    assert _record_rows(piped.index) == _record_rows(one_by_one.index)
    assert piped.index.corpus_stats().df == one_by_one.index.corpus_stats().df


def test_progress_counts_passages_inside_a_large_file_with_its_page_and_an_eta(fast, tmp_path):
    """The bar used to count files only: with one large file it sat at 11/18 for minutes. It now moves with every
    batch of passages and says which file and page it is on."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a-small.txt").write_text("A small note about the warranty.", encoding="utf-8")
    pages = [f"Page {n} of the manual. " + " ".join(f"Step {n}.{k}: clean the filter part {k}." for k in range(45))
             for n in range(1, 9)]
    (folder / "b-manual.pdf").write_bytes(make_pdf(["\n".join(p[i:i + 90] for i in range(0, len(p), 90))
                                                    for p in pages]))
    seen = []
    ing = fast.ingestor()
    ing.batch_size = 4
    results = ing.ingest_paths([folder], on_progress=seen.append)
    total = sum(r.chunks for r in results)
    in_manual = [p for p in seen if p.current and p.current.endswith("b-manual.pdf")]
    done = [p.passages_done for p in in_manual]
    assert len(set(done)) >= 5, "progress must move inside one file"
    assert all(p.files_done < p.files_total for p in in_manual)
    assert in_manual[-1].pages == 8 and 1 <= max(p.page or 0 for p in in_manual) <= 8
    assert any(p.eta_s is not None for p in in_manual)
    assert seen[-1].passages_done == total == seen[-1].passages_total and seen[-1].passages_exact


def test_near_duplicate_passages_are_embedded_once_and_both_stay_searchable(fast, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    para = ("Permission is hereby granted, free of charge, to any person obtaining a copy of this software and "
            "associated documentation files (the Software), to deal in the Software without restriction, including "
            "without limitation the rights to use, copy, modify, merge and publish it.")
    (folder / "one.txt").write_text(para, encoding="utf-8")
    (folder / "two.txt").write_text(para.upper().replace(", ", " ,  "), encoding="utf-8")
    ing = fast.ingestor()
    misses = fast.embedder.misses
    assert [r.status for r in ing.ingest_paths([folder])] == ["added", "added"]
    assert fast.embedder.misses - misses == 1 and ing.near_duplicates == 1
    hits = fast.index.query_sparse(encode_query("permission granted software", fast.index.corpus_stats()), 5)
    assert {m.metadata["source_uri"].rsplit("/", 1)[-1] for m in hits} == {"one.txt", "two.txt"}


def test_one_document_failing_to_write_does_not_fail_the_others(fast, tmp_path, monkeypatch):
    from citerag.errors import IndexError_

    folder = _many_files(tmp_path / "docs", 4)
    real = fast.index.replace_document
    real_many = fast.index.replace_documents

    def refuse_doc2(info, records, parents, namespace=""):
        if info.source_uri.endswith("doc2.md"):
            raise IndexError_("this document cannot be stored")
        return real(info, records, parents, namespace)

    def refuse_batch(batch, namespace=""):
        if any(info.source_uri.endswith("doc2.md") for info, _, _ in batch):
            raise IndexError_("this document cannot be stored")
        return real_many(batch, namespace)

    monkeypatch.setattr(fast.index, "replace_document", refuse_doc2)
    monkeypatch.setattr(fast.index, "replace_documents", refuse_batch)
    results = {Path(r.source).name: r for r in fast.ingestor().ingest_paths([folder])}
    assert results["doc2.md"].status == "failed" and "cannot be stored" in results["doc2.md"].reason
    assert {n: r.status for n, r in results.items() if n != "doc2.md"} == dict.fromkeys(
        ["doc0.md", "doc1.md", "doc3.md"], "added")
    assert sorted(d.title for d in fast.index.list_documents()) == ["Document 0", "Document 1", "Document 3"]


def test_an_interrupted_ingest_keeps_finished_documents_whole_and_nothing_partial(fast, tmp_path):
    folder = _many_files(tmp_path / "docs", 5, salt="interrupted-")
    inner = fast.embedder.inner
    calls = {"n": 0}

    class InterruptedModel:
        model_id, dim = inner.model_id, inner.dim

        def embed_passages(self, texts):
            calls["n"] += 1
            if calls["n"] == 4:
                raise KeyboardInterrupt  # Ctrl-C while the model works
            return inner.embed_passages(texts)

        def embed_query(self, text):
            return inner.embed_query(text)

    fast.embedder.inner = InterruptedModel()
    ing = fast.ingestor()
    ing.batch_size = 3
    with pytest.raises(KeyboardInterrupt):
        ing.ingest_paths([folder])
    fast.embedder.inner = inner
    stored = fast.index.list_documents()
    assert 0 < len(stored) < 5
    for d in stored:  # every stored document has all its passages
        n = fast.index._conn.execute("SELECT COUNT(*) FROM records r JOIN documents d ON d.docno = r.docno "
                                     "WHERE d.doc_id=?", (d.doc_id,)).fetchone()[0]
        path = uri_to_path(d.source_uri)
        assert path is not None and n == d.n_chunks == len(chunk_document(load_path(path)))
    again = {r.status for r in fast.ingestor().ingest_paths([folder])}
    assert again == {"unchanged", "added"}


def test_a_name_that_is_not_utf8_and_a_loop_of_links_fail_alone(fast, tmp_path):
    # Each stopped the whole ingest with a traceback (UnicodeEncodeError in the embedding cache, RuntimeError from
    # Path.resolve), and the good file beside them was not indexed.
    import os

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / os.fsdecode(b"bad_\xff.txt")).write_text("The launch window opens at dawn.\n")
    (folder / "good.txt").write_text("The pump is descaled every 90 days.\n")
    (folder / "loop1.txt").symlink_to("loop2.txt")
    (folder / "loop2.txt").symlink_to("loop1.txt")
    (folder / "etc").symlink_to("/etc")  # a linked folder is not walked, and says so
    results = {Path(uri_to_path(r.source) or r.source).name: r for r in fast.ingestor().ingest_paths([folder])}
    assert results["etc"].status == "skipped" and "a link to a folder" in results["etc"].reason
    assert results["good.txt"].status == "added" and results[os.fsdecode(b"bad_\xff.txt")].status == "added"
    assert results["loop1.txt"].status == "skipped" and "symlink loop" in results["loop1.txt"].reason
    docs = {d.title: d for d in fast.index.list_documents("")}
    assert "bad_\ufffd" in docs and uri_to_path(docs["bad_\ufffd"].source_uri).exists()  # found again, not "gone"
    assert fast.ingestor().gone([folder]) == []


def test_a_file_swapped_for_a_link_after_the_walk_is_not_followed(fast, tmp_path):
    # Replaced by a link to /etc/passwd between the folder's walk and its read, the file was read through it.
    from citerag.ingestion.files import expand_paths

    folder = tmp_path / "docs"
    folder.mkdir()
    victim = folder / "victim.txt"
    victim.write_text("An ordinary note.\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("The vault combination is 31-7-22.\n")
    files, _ = expand_paths([folder])
    victim.unlink()
    victim.symlink_to(secret)
    (result,) = [fast.ingestor().ingest_path(f) for f in files]  # as the pipeline reads what the walk found
    assert result.status == "failed" and "link" in result.reason
    assert all(uri_to_path(d.source_uri) != secret for d in fast.index.list_documents(""))


def test_a_link_is_typed_and_titled_by_its_own_name(fast, tmp_path):
    # Read as the file it resolves to, a link into a store of extensionless blobs was "unsupported file type", and a
    # dangling link was reported under its target's name.
    folder = tmp_path / "docs"
    (folder / "store").mkdir(parents=True)
    (folder / "store" / "blob1").write_text("# Pump guide\n\nThe pump is descaled every 90 days.\n")
    (folder / "guide.md").symlink_to(folder / "store" / "blob1")
    (folder / "broken.txt").symlink_to(folder / "nowhere.txt")
    outcome = {Path(uri_to_path(r.source) or r.source).name: r for r in fast.ingestor().ingest_paths([folder])}
    assert outcome["blob1"].status == "added"  # read through guide.md, as Markdown
    assert outcome["broken.txt"].status == "failed" and "no such file" in outcome["broken.txt"].reason
    titles = {d.title for d in fast.index.list_documents("")}
    assert "Pump guide" in titles
    (tmp_path / "ext").mkdir()
    (tmp_path / "ext" / "blob2").write_text("The valve opens at 3 bar.\n")
    named = tmp_path / "named.txt"
    named.symlink_to(tmp_path / "ext" / "blob2")
    (result,) = fast.ingestor().ingest_paths([named])  # named by the user: typed as text by its own name
    assert result.status == "added", result.reason
    assert "named" in {d.title for d in fast.index.list_documents("")}


def test_files_an_older_reader_ingested_are_read_again_and_the_rest_stay_unchanged(fast, tmp_path, monkeypatch):
    """A newer citerag that reads a format better (a PDF font it now decodes) re-reads what an older one indexed,
    instead of skipping it as unchanged and keeping the old text."""
    import citerag.ingestion.ingestor as ingestor

    folder = _copy_samples(tmp_path)
    newer = ingestor.READER
    monkeypatch.setattr(ingestor, "READER", "an-older-reader")
    assert {r.status for r in fast.ingestor().ingest_paths([folder])} == {"added"}
    monkeypatch.setattr(ingestor, "READER", newer)
    assert {r.status for r in fast.ingestor().ingest_paths([folder])} == {"replaced"}
    assert {r.status for r in fast.ingestor().ingest_paths([folder])} == {"unchanged"}
    assert len(fast.index.list_documents()) == 6


def test_another_passage_size_cuts_the_files_again(tmp_path):
    folder = _copy_samples(tmp_path)
    small = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", chunk_chars=400))
    small.ingestor().ingest_paths([folder])
    passages = sum(d.n_chunks for d in small.index.list_documents())
    large = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", chunk_chars=1200))
    assert {r.status for r in large.ingestor().ingest_paths([folder])} == {"replaced"}
    assert sum(d.n_chunks for d in large.index.list_documents()) < passages


def test_the_reader_version_follows_the_reading_code(tmp_path):
    from citerag.ingestion.ingestor import _code_digest

    (tmp_path / "loaders.py").write_text("READ = 1\n", encoding="utf-8")
    before = _code_digest(tmp_path)
    assert _code_digest(tmp_path) == before
    (tmp_path / "loaders.py").write_text("READ = 2\n", encoding="utf-8")
    assert _code_digest(tmp_path) != before
