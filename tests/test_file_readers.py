"""Every reader of an indexed document's file (serve's /file and /lines, --open, re-ingest) opens it one way: each
component of its path without following a link, and only when the file is the one indexed. A file or any folder
on its path swapped for a link after ingest, a hard link to another file, or an edit, is refused before a byte of
it is served; /lines shows a bounded window whatever the query says."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from citerag.cli import opener
from citerag.cli.serve import CITED_LINES_MAX, CONTEXT_LINES, build_app
from citerag.components import Components
from citerag.errors import CiteragError, DocumentError
from citerag.ingestion.files import read_regular_file
from citerag.ingestion.opening import LinkOnPath, file_hash, open_no_links
from citerag.settings import Settings

PUBLIC = "# Fan guide\n\nError E5 means the fan motor is blocked.\n"
SECRET = "aws_secret_access_key = SECRETSECRETSECRET\n"
ACME = "# Acme\n\nThe acme rotation period is 45 days (ACMEONLY).\n"


@pytest.fixture
def setup(tmp_path):
    docs = tmp_path / "docs" / "sub"
    docs.mkdir(parents=True)
    (docs / "public.md").write_text(PUBLIC, encoding="utf-8")
    (docs / "notes.txt").write_text("".join(f"line {n}\n" for n in range(1, 3001)), encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(SECRET, encoding="utf-8")
    tenant = tmp_path / "tenant"
    tenant.mkdir()
    (tenant / "acme.md").write_text(ACME, encoding="utf-8")
    comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", index_path=tmp_path / "i.sqlite"))
    comps.ingestor().ingest_paths([docs])
    comps.ingestor({"tenant": "acme"}).ingest_paths([tenant])
    client = TestClient(build_app(comps), base_url="http://127.0.0.1:8765")
    return tmp_path, docs, comps, client


def uri(path: Path) -> str:
    return path.resolve().as_uri()


def readers(client, u):
    return [client.get("/file", params={"uri": u}), client.get("/lines", params={"uri": u, "from": "1", "to": "2"})]


def test_an_indexed_file_is_served_by_both_readers(setup):
    _, docs, _, client = setup
    file, lines = readers(client, uri(docs / "public.md"))
    assert file.status_code == 200 and file.text == PUBLIC and file.headers["content-length"] == str(len(PUBLIC))
    assert lines.status_code == 200 and "fan motor is blocked" in lines.text


def swap_file_for_link(tmp_path, docs, target):
    public = docs / "public.md"
    public.unlink()
    public.symlink_to(target)


def swap_folder_for_link(tmp_path, docs, target):
    """docs/sub -> a folder elsewhere holding public.md (the secret under the indexed name)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(target, elsewhere / "public.md")
    shutil.move(str(docs), str(tmp_path / "moved"))
    docs.symlink_to(elsewhere)


def swap_top_folder_for_link(tmp_path, docs, target):
    """docs (two levels up from the file) -> a tree elsewhere with sub/public.md holding the secret."""
    elsewhere = tmp_path / "elsewhere-top"
    (elsewhere / "sub").mkdir(parents=True)
    shutil.copy(target, elsewhere / "sub" / "public.md")
    shutil.move(str(docs.parent), str(tmp_path / "moved-top"))
    docs.parent.symlink_to(elsewhere)


def swap_for_hard_link(tmp_path, docs, target):
    public = docs / "public.md"
    public.unlink()
    os.link(target, public)


@pytest.mark.parametrize("swap", [swap_file_for_link, swap_folder_for_link, swap_top_folder_for_link,
                                  swap_for_hard_link])
@pytest.mark.parametrize("target", ["outside/secret.md", "tenant/acme.md"])
def test_a_swapped_file_is_never_served(setup, swap, target):
    tmp_path, docs, _, client = setup
    u = uri(docs / "public.md")
    swap(tmp_path, docs, tmp_path / target)
    for r in readers(client, u):
        assert r.status_code == 409, r.text
        assert "SECRETSECRET" not in r.text and "ACMEONLY" not in r.text
        assert "link" in r.text or "not the one indexed" in r.text


def test_a_tenants_document_is_not_served_under_its_own_uri(setup):
    tmp_path, _, _, client = setup
    for r in readers(client, uri(tmp_path / "tenant" / "acme.md")):
        assert r.status_code == 404 and "ACMEONLY" not in r.text


def test_a_file_edited_after_ingest_is_refused_until_ingested_again(setup):
    _, docs, comps, client = setup
    (docs / "public.md").write_text(PUBLIC + "\nAn added line.\n", encoding="utf-8")
    for r in readers(client, uri(docs / "public.md")):
        assert r.status_code == 409 and "ingest it again" in r.text
    comps.ingestor().ingest_paths([docs])
    assert all(r.status_code == 200 for r in readers(client, uri(docs / "public.md")))


@pytest.mark.parametrize(("first", "last"), [("0", "0"), ("1", "2000000"), ("", ""), ("2999", "1"),
                                             ("999999999", "999999999")])
def test_lines_shows_a_bounded_window_whatever_the_query(setup, first, last):
    _, docs, _, client = setup
    r = client.get("/lines", params={"uri": uri(docs / "notes.txt"), "from": first, "to": last})
    assert r.status_code == 200
    rows = r.text.count("<span id='L")
    assert 0 < rows <= CITED_LINES_MAX + 2 * CONTEXT_LINES
    assert r.text.count("class='cited'") <= CITED_LINES_MAX


def test_lines_of_a_two_million_line_file_stay_small(tmp_path):
    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "many.txt").write_bytes(b"ab\n" * 2_000_000)
    comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", index_path=tmp_path / "i.sqlite",
                                max_chunks_per_document=100_000))
    comps.ingestor().ingest_paths([folder])
    client = TestClient(build_app(comps), base_url="http://127.0.0.1:8765")
    r = client.get("/lines", params={"uri": uri(folder / "many.txt"), "from": "0", "to": "0"})
    assert r.status_code == 200 and r.text.count("<span id='L") == CONTEXT_LINES + 1
    assert len(r.content) < 100_000  # was 82 MB of HTML


def test_a_long_line_is_shown_cut(setup):
    _, docs, comps, client = setup
    (docs / "wide.txt").write_text("w" * 50_000 + "\nshort\n", encoding="utf-8")
    comps.ingestor().ingest_paths([docs / "wide.txt"])
    r = client.get("/lines", params={"uri": uri(docs / "wide.txt"), "from": "1", "to": "1"})
    assert r.status_code == 200 and len(r.content) < 10_000 and "[…]" in r.text


def test_open_refuses_a_swapped_file_and_opens_the_indexed_one(setup, monkeypatch):
    tmp_path, docs, comps, _ = setup
    seen: list[str] = []
    monkeypatch.setattr(opener, "open_uri", seen.append)

    class Src:
        uri, page = uri(docs / "public.md"), None

    assert opener.open_source([Src()], 1, comps=comps) == Src.uri and seen == [Src.uri]
    swap_folder_for_link(tmp_path, docs, tmp_path / "outside" / "secret.md")
    with pytest.raises(CiteragError, match="link"):
        opener.open_source([Src()], 1, comps=comps)
    with pytest.raises(CiteragError, match="link"):  # without the index at hand: the link is still refused
        opener.open_source([Src()], 1)
    assert seen == [Src.uri]


def test_re_ingest_does_not_follow_a_folder_swapped_for_a_link(setup):
    tmp_path, docs, comps, _ = setup
    resolved = (docs / "public.md").resolve()
    swap_folder_for_link(tmp_path, docs, tmp_path / "outside" / "secret.md")
    with pytest.raises(LinkOnPath):
        read_regular_file(resolved, 1_000_000)
    result = comps.ingestor().ingest_path(resolved)
    assert result.status == "failed" and "link" in result.reason
    doc = comps.index.find_by_uri(resolved.as_uri(), "")  # the indexed version stays, the secret is not read
    assert doc is not None and doc.file_hash == file_hash(PUBLIC.encode())


@pytest.mark.parametrize("make", ["fifo", "dir"])
def test_only_a_regular_file_is_opened(tmp_path, make):
    p = tmp_path / "x.txt"
    os.mkfifo(p) if make == "fifo" else p.mkdir()
    with pytest.raises(DocumentError):
        open_no_links(p)


def test_an_index_from_before_file_hashes_is_read_and_its_public_files_still_served(setup, tmp_path):
    import sqlite3

    _, docs, comps, _ = setup
    comps.index.close() if hasattr(comps.index, "close") else None
    con = sqlite3.connect(tmp_path / "i.sqlite")
    con.execute("ALTER TABLE documents DROP COLUMN file_hash")
    # Such an index recorded the file's SHA-256 as the document's version (the reader was not part of it yet).
    con.execute("UPDATE documents SET content_hash = ? WHERE source_uri = ?",
                (hashlib.sha256((docs / "public.md").read_bytes()).hexdigest(), uri(docs / "public.md")))
    con.commit()
    con.close()
    again = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", index_path=tmp_path / "i.sqlite"))
    doc = again.index.find_by_uri(uri(docs / "public.md"), "")
    assert doc is not None and doc.file_hash == ""
    client = TestClient(build_app(again), base_url="http://127.0.0.1:8765")
    assert [r.status_code for r in readers(client, uri(docs / "public.md"))] == [200, 200]
