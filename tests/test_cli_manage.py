"""Document management as a user meets it (issue 14): the samples stay out of the user's index, a mistyped --index
is an error, documents can be listed and removed, and a filter on an unknown key names the known ones."""

from __future__ import annotations

import json
import os

from typer.testing import CliRunner

from citerag.cli import app

from conftest import SAMPLES

runner = CliRunner()
FAST = {"CITERAG_EMBEDDER": "hashing", "COLUMNS": "250"}


def run(*args, input=None):
    r = runner.invoke(app, list(args), env=FAST, input=input)
    assert "Traceback" not in r.output
    return r


def _folder(tmp_path):
    folder = tmp_path / "mydocs"
    folder.mkdir()
    (folder / "pump.md").write_text("# Pump\n\nThe pump must be descaled every 90 days with citric acid.\n")
    (folder / "valve.md").write_text("# Valve\n\nThe relief valve opens at 3 bar of pressure.\n")
    return folder


def test_samples_live_in_their_own_index_and_leave_once_the_user_ingests(tmp_path):
    r = run("search", "HEPA filter", "--json")
    assert r.exit_code == 0
    assert any("kumo" in h["uri"] for h in json.loads(r.stdout))  # nothing ingested: the samples answer
    assert json.loads(run("docs", "--json").stdout)["samples"] is True

    folder = _folder(tmp_path)
    assert run("ingest", str(folder), "--json").exit_code == 0
    hits = json.loads(run("search", "HEPA filter descaled valve", "--json").stdout)
    assert hits and all("/mydocs/" in h["uri"] for h in hits)  # only the user's folder, no sample mixed in
    cites = json.loads(run("ask", "How often must the pump be descaled?", "--json").stdout)["citations"]
    assert cites and all("/mydocs/" in c["uri"] for c in cites)
    assert json.loads(run("ask", "What does error E2 mean?", "--json").stdout)["answered"] is False  # no samples
    listed = json.loads(run("docs", "--json").stdout)
    assert listed["samples"] is False
    assert sorted(d["source"].rsplit("/", 1)[1] for d in listed["documents"]) == ["pump.md", "valve.md"]
    # --sync on the user's folder never had samples to keep
    assert json.loads(run("ingest", str(folder), "--sync", "--json").stdout)["summary"]["removed"] == 0


def _without_the_japanese_extra(monkeypatch):
    """As `pip install -e .[local]` leaves an environment: sudachipy cannot be imported."""
    import sys

    from citerag.adapters import sudachi_tokens

    for module in ("sudachipy", "sudachidict_core"):
        monkeypatch.setitem(sys.modules, module, None)
    sudachi_tokens._dictionary.cache_clear()


def test_an_install_without_the_japanese_extra_answers_from_the_samples_another_install_indexed(monkeypatch):
    assert run("search", "HEPA filter", "--json").exit_code == 0  # this install (japanese extra) indexes them
    _without_the_japanese_extra(monkeypatch)
    r = run("ask", "What does error E2 mean?", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["answered"] is True


def test_an_index_built_with_sudachi_names_the_extra_it_needs_where_that_is_missing(tmp_path, monkeypatch):
    index = tmp_path / "ja.sqlite"
    assert run("ingest", str(_folder(tmp_path)), "--index", str(index)).exit_code == 0
    _without_the_japanese_extra(monkeypatch)
    r = run("search", "pump", "--index", str(index))
    assert r.exit_code == 1
    assert '[japanese]"' in r.output and "pip install" in r.output and "sudachipy" not in r.output


def test_docs_table_lists_source_title_chunks_and_tenant(tmp_path):
    folder = _folder(tmp_path)
    run("ingest", str(folder), "--meta", "tenant=acme")
    r = run("docs")
    assert r.exit_code == 0
    assert "pump.md" in r.stdout and "Valve" in r.stdout and "acme" in r.stdout and "2 documents" in r.stdout
    data = json.loads(run("docs", "--json").stdout)["documents"]
    assert {d["tenant"] for d in data} == {"acme"} and all(d["chunks"] >= 1 and d["ingested_at"] for d in data)


def test_remove_and_reset(tmp_path):
    folder = _folder(tmp_path)
    run("ingest", str(folder))
    r = run("remove", str(folder / "pump.md"))
    assert r.exit_code == 0 and "1 document removed" in r.stdout
    assert [d["title"] for d in json.loads(run("docs", "--json").stdout)["documents"]] == ["Valve"]
    r = run("remove", str(folder / "nothere.md"))
    assert r.exit_code == 1 and "is not in the index" in r.output
    r = run("reset")  # not a terminal: no silent deletion
    assert r.exit_code == 1 and "--yes" in r.output
    assert run("reset", "--yes").exit_code == 0
    assert json.loads(run("docs", "--json").stdout)["samples"] is True  # back to the samples


def test_reset_and_the_index_option_never_touch_what_is_not_an_index(tmp_path):
    # `reset --index ~/Documents` deleted the folder, `--index page.html` the page; opening another program's
    # SQLite database as the index wrote this index's tables into it.
    import sqlite3

    folder = _folder(tmp_path)
    page = tmp_path / "page.html"
    page.write_text("<p>Keep me.</p>")
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE bookmarks (url TEXT)")
    secret = tmp_path / "db.sqlite"  # an encrypted database (SQLCipher) has no SQLite header
    secret.write_bytes(os.urandom(4096))
    todo = tmp_path / "todo.md"  # empty: it was made a database, with a snapshot folder beside it
    todo.write_bytes(b"")
    for target in (folder, page, other, secret, todo):
        r = run("reset", "--yes", "--index", str(target))
        said = "is a folder, not an index file" if target == folder else "is not a citerag index"
        assert r.exit_code == 1 and said in r.output and "nothing was deleted" in r.output
        assert (target == folder) == ("delete it" not in r.output)  # a folder is no damaged index to delete
    assert (folder / "pump.md").exists() and page.read_text() == "<p>Keep me.</p>" and secret.stat().st_size == 4096
    r = run("docs", "--index", str(todo))
    assert r.exit_code == 1 and "is not a citerag index" in r.output
    assert todo.read_bytes() == b"" and not (tmp_path / "todo.md-snapshot").exists()
    for command in (("docs",), ("ingest", str(folder))):
        r = run(*command, "--index", str(other))
        assert r.exit_code == 1 and "is not a citerag index" in r.output
    with sqlite3.connect(other) as conn:
        assert [t for (t,) in conn.execute("SELECT name FROM sqlite_master")] == ["bookmarks"]
    index = tmp_path / "mine.sqlite"
    assert run("ingest", str(folder), "--index", str(index)).exit_code == 0
    assert run("reset", "--yes", "--index", str(index)).exit_code == 0 and not index.exists()


def test_ingest_says_when_indexed_files_are_gone_and_reads_a_linked_file_once(tmp_path):
    # A renamed file stayed searchable under its old name (cited twice) with "nothing to do" and no word of --sync;
    # a link beside its target was "added" twice and counted as two documents.
    folder = _folder(tmp_path)
    (folder / "link.md").symlink_to("pump.md")
    first = json.loads(run("ingest", str(folder), "--json").stdout)
    assert first["summary"]["added"] == 2 and first["files_gone"] == []
    (folder / "pump.md").rename(folder / "pumps.md")
    (folder / "link.md").unlink()
    r = run("ingest", str(folder))
    assert "1 indexed document under these paths has no file any more (deleted or renamed)" in r.stdout
    assert "pump.md; add --sync to remove it" in r.stdout
    (folder / "valve.md").rename(folder / "valves.md")
    r = run("ingest", str(folder))  # both named, not one and "…"
    assert "2 indexed documents" in r.stdout and "pump.md" in r.stdout and "valve.md; add --sync" in r.stdout
    r = run("ingest", str(folder), "--sync", "--json")
    assert json.loads(r.stdout)["summary"]["removed"] == 2 and json.loads(r.stdout)["files_gone"] == []
    assert sorted(d["title"] for d in json.loads(run("docs", "--json").stdout)["documents"]) == ["Pump", "Valve"]


def test_reset_never_deletes_a_database_another_process_holds_locked(tmp_path):
    # A browser holds places.sqlite in exclusive locking mode: it could not be read, and was taken for a damaged
    # index and deleted.
    import sqlite3
    import subprocess
    import sys

    places = tmp_path / "places.sqlite"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        f"c = sqlite3.connect({str(places)!r}, isolation_level=None)\n"
        "c.execute('PRAGMA locking_mode=EXCLUSIVE'); c.execute('PRAGMA journal_mode=WAL')\n"
        "c.execute('CREATE TABLE moz_places (url TEXT)'); c.execute('BEGIN EXCLUSIVE')\n"
        "print('held', flush=True); sys.stdin.read()")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        r = run("reset", "--yes", "--index", str(places))
        assert r.exit_code == 1 and "in use by another process" in r.output and places.exists()
    finally:
        holder.stdin.close()
        holder.wait(10)
    with sqlite3.connect(places) as conn:
        assert [t for (t,) in conn.execute("SELECT name FROM sqlite_master")] == ["moz_places"]


def test_remove_takes_a_source_as_docs_lists_it(tmp_path):
    # "remove file:///…/pump.md" (what `docs --json` prints) said "file:/…/pump.md is not in the index".
    folder = _folder(tmp_path)
    run("ingest", str(folder))
    source = (folder / "pump.md").resolve().as_uri()
    r = run("remove", source)
    assert r.exit_code == 0 and "1 document removed" in r.stdout
    r = run("remove", source)
    assert r.exit_code == 1 and f"{source} is not in the index" in r.output


def test_a_mistyped_namespace_is_an_error_naming_the_ones_the_index_holds(tmp_path):
    # It read as an empty index: "No documents. Add some with: citerag ingest PATH", "not found" answers.
    folder = _folder(tmp_path)
    assert run("ingest", str(folder)).exit_code == 0
    assert run("ingest", str(folder / "pump.md"), "--namespace", "acme").exit_code == 0  # a new one is made
    for command in (("docs",), ("search", "pump"), ("ask", "How often is the pump descaled?")):
        r = run(*command, "--namespace", "acme-typo", "--json")
        assert r.exit_code == 1
        assert json.loads(r.stdout)["error"] == ("--namespace 'acme-typo': the index holds no documents in it; "
                                                 "its namespaces: '' (the default), 'acme'")
    assert [d["title"] for d in json.loads(run("docs", "--namespace", "acme", "--json").stdout)["documents"]] \
        == ["Pump"]
    # Only in another namespace: the commands name it; status reports every namespace as before.
    assert run("remove", str(folder)).exit_code == 0
    r = run("search", "pump", "--json")
    assert "no documents in the default namespace; its namespaces: 'acme'" in json.loads(r.stdout)["error"]
    assert run("status").exit_code == 0


def test_remove_a_folder_removes_every_document_under_it(tmp_path):
    folder = _folder(tmp_path)
    run("ingest", str(folder))
    assert json.loads(run("remove", str(folder), "--json").stdout)["removed"].__len__() == 2


def test_a_mistyped_index_is_an_error_not_a_new_index(tmp_path):
    typo = tmp_path / "indx.sqlite"
    for args in (["search", "x"], ["ask", "What does error E2 mean?"], ["status"], ["docs"], ["remove", "a.md"]):
        r = run(*args, "--index", str(typo))
        assert r.exit_code == 1, args
        assert "no index at" in r.output and "citerag ingest" in r.output
    assert not typo.exists()
    assert run("ingest", str(SAMPLES / "faq-en.md"), "--index", str(typo)).exit_code == 0  # ingest creates it


def test_an_unknown_filter_key_names_the_known_keys(tmp_path):
    index = str(tmp_path / "i.sqlite")
    run("ingest", str(SAMPLES), "--index", index)
    for cmd in (["search", "filter"], ["ask", "What does error E2 mean?"]):
        r = run(*cmd, "--filter", "langg=ja", "--index", index)
        assert r.exit_code == 1
        assert "'langg'" in r.output and "known keys:" in r.output and "lang" in r.output
    status = json.loads(run("status", "--index", index, "--json").stdout)
    assert "lang" in status["metadata_keys"]["(default)"]
    assert "metadata keys (--filter):" in run("status", "--index", index).stdout


def test_ask_filter_works_without_agent_none(tmp_path):
    index = str(tmp_path / "i.sqlite")
    run("ingest", str(SAMPLES), "--index", index)
    r = run("ask", "How long is the warranty?", "--filter", "lang=en", "--index", index, "--json")
    assert r.exit_code == 0, r.output  # used to fail: "--filter works with --agent none"
    cites = json.loads(r.stdout)["citations"]
    assert cites and not any("ja" in c["uri"].rsplit("/", 1)[1] for c in cites)


def test_asking_for_sudachi_without_the_japanese_extra_names_the_extra(tmp_path, monkeypatch):
    _without_the_japanese_extra(monkeypatch)
    r = runner.invoke(app, ["ingest", str(_folder(tmp_path)), "--index", str(tmp_path / "new.sqlite")],
                      env={**FAST, "CITERAG_SPARSE_TOKENIZER": "sudachi"})
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "CITERAG_SPARSE_TOKENIZER=sudachi needs the japanese extra" in r.output and "built with" not in r.output
