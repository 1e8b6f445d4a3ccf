"""`citerag ingest --watch`: the index follows a folder (new, changed, moved and deleted files, a burst of saves
as one change, editors' temporary files ignored), and starting again catches up with what changed meanwhile."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("watchfiles")
from typer.testing import CliRunner
from watchfiles import Change

from citerag.cli import app
from citerag.components import Components
from citerag.ingestion.watch import FolderSync
from citerag.settings import Settings

WAIT_S = 120  # a bound on waiting for the file system's notifications, never a measure of speed


def _write(path: Path, word: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {word}\n\nThe {word} pump runs for {len(word)} minutes before the {word} valve opens.\n",
                    encoding="utf-8")
    return path


def _indexed(comps: Components) -> dict[str, int]:
    return {Path(d.source_uri).name: d.n_chunks for d in comps.index.list_documents()}


@pytest.fixture
def watched(tmp_path):
    comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing"))
    folder = tmp_path / "docs"
    folder.mkdir()
    heard: list[str] = []
    sync = FolderSync(comps.ingestor(), [folder], on_file=lambda r: heard.append(f"{r.status} {Path(r.source).name}"))
    return comps, folder, sync, heard


def test_new_changed_moved_and_deleted_files_keep_the_index_in_step(watched):
    comps, folder, sync, heard = watched
    a = _write(folder / "alpha.md", "alpha")
    sync.apply({(Change.added, str(a))})
    assert _indexed(comps) == {"alpha.md": 1} and heard == ["added alpha.md"]
    _write(a, "alphabet")
    sync.apply({(Change.modified, str(a))})
    assert heard[-1] == "replaced alpha.md"
    hits = comps.pipeline().search("alphabet pump").hits
    assert hits and "alphabet" in hits[0].text
    moved = folder / "sub" / "renamed.md"
    moved.parent.mkdir()
    a.rename(moved)
    sync.apply({(Change.deleted, str(a)), (Change.added, str(moved))})
    assert _indexed(comps) == {"renamed.md": 1}
    assert sorted(heard[-2:]) == ["added renamed.md", "removed alpha.md"]
    moved.unlink()
    sync.apply({(Change.deleted, str(moved))})
    assert _indexed(comps) == {} and heard[-1] == "removed renamed.md"


def test_a_burst_of_saves_is_one_ingest_and_temporary_files_are_ignored(watched):
    _, folder, sync, heard = watched
    b = _write(folder / "bravo.md", "bravo")
    swap, backup = folder / ".bravo.md.swp", folder / "bravo.md~"
    swap.write_bytes(b"\0vim swap")
    backup.write_text("old", encoding="utf-8")
    burst = {(Change.added, str(b)), (Change.modified, str(b)), (Change.added, str(swap)),
             (Change.modified, str(swap)), (Change.deleted, str(swap)), (Change.added, str(backup))}
    results = sync.apply(burst)
    assert [(r.status, Path(r.source).name) for r in results] == [("added", "bravo.md")]
    assert heard == ["added bravo.md"]


def test_a_folder_moved_away_takes_its_documents_with_it(watched):
    comps, folder, sync, heard = watched
    sub = folder / "manuals"
    _write(sub / "one.md", "one")
    _write(sub / "two.md", "two")
    sync.apply({(Change.added, str(sub))})  # a folder moved in is ingested whole
    assert _indexed(comps) == {"one.md": 1, "two.md": 1}
    shutil.rmtree(sub)
    sync.apply({(Change.deleted, str(sub))})
    assert _indexed(comps) == {} and sorted(heard[-2:]) == ["removed one.md", "removed two.md"]


def test_starting_again_catches_up_with_what_changed_while_nothing_watched(watched):
    comps, folder, sync, heard = watched
    change, drop = (_write(folder / f"{w}.md", w) for w in ("change", "drop"))
    _write(folder / "keep.md", "keep")
    sync.catch_up()
    _write(change, "changed")
    drop.unlink()
    _write(folder / "new.md", "new")
    heard.clear()
    results = {Path(r.source).name: r.status for r in sync.catch_up()}
    assert results == {"keep.md": "unchanged", "change.md": "replaced", "new.md": "added", "drop.md": "removed"}
    assert "removed drop.md" in heard and "added new.md" in heard
    assert _indexed(comps) == {"keep.md": 1, "change.md": 1, "new.md": 1}


def test_the_watcher_catches_up_with_changes_made_before_it_ran(watched):
    comps, folder, sync, heard = watched
    old = _write(folder / "old.md", "old")
    sync.catch_up()
    since = time.time()
    time.sleep(0.01)  # a file time after `since`, on file systems that keep fine times
    _write(folder / "late.md", "late")
    old.unlink()
    heard.clear()
    batches = list(sync.watch(iter([set()]), since=since))  # the watcher's first batch: nothing seen yet
    assert sorted(heard) == ["added late.md", "removed old.md"] and len(batches) == 1
    assert _indexed(comps) == {"late.md": 1}


def test_ingest_watch_follows_the_file_system_until_stopped(tmp_path, monkeypatch):
    """The command a user runs, on the file system's own notifications (watchfiles)."""
    from citerag.cli import watch as cli_watch

    folder = tmp_path / "docs"
    _write(folder / "first.md", "first")
    env = {"CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path / "data")}
    stop = threading.Event()
    real = cli_watch.watch_folders
    monkeypatch.setattr(cli_watch, "watch_folders", lambda *a, **k: real(*a, **k, stop_event=stop))
    outcome: dict = {}
    run = threading.Thread(target=lambda: outcome.setdefault(
        "r", CliRunner().invoke(app, ["ingest", str(folder), "--watch", "--json"], env=env)))
    run.start()
    comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing"))

    def until(wanted: dict[str, int]) -> dict[str, int]:
        deadline, seen = time.monotonic() + WAIT_S, {}
        while time.monotonic() < deadline:
            if (tmp_path / "data" / "index.sqlite").exists():
                seen = _indexed(comps)
                if seen == wanted:
                    break
            time.sleep(0.1)
        return seen

    try:
        assert until({"first.md": 1}) == {"first.md": 1}
        # Written while the watcher may still be starting: caught by its notifications or by its first catch-up.
        _write(folder / "second.md", "second")
        assert until({"first.md": 1, "second.md": 1}) == {"first.md": 1, "second.md": 1}
        (folder / "first.md").unlink()
        assert until({"second.md": 1}) == {"second.md": 1}
    finally:
        stop.set()
        run.join(WAIT_S)
    lines = [json.loads(line) for line in outcome["r"].stdout.splitlines() if line.startswith('{"source"')]
    changes = [(Path(x["source"]).name, x["status"]) for x in lines if x["status"] != "unchanged"]
    assert changes == [("second.md", "added"), ("first.md", "removed")]


def test_ctrl_c_stops_ingest_watch_with_its_own_line_only(tmp_path):
    # watchfiles, told not to raise on Ctrl-C, logged "KeyboardInterrupt caught, stopping watch" on the terminal
    # above the command's "Stopped watching".
    import os
    import signal
    import subprocess
    import sys

    folder = tmp_path / "docs"
    _write(folder / "first.md", "first")
    env = {**os.environ, "CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.Popen([sys.executable, "-c", "from citerag.cli import main; main()", "ingest", str(folder),
                             "--watch"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing"))

    def until(wanted: dict[str, int]) -> None:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and proc.poll() is None:
            if (tmp_path / "data" / "index.sqlite").exists() and _indexed(comps) == wanted:
                return
            time.sleep(0.1)

    try:
        until({"first.md": 1})
        # A file the watcher itself indexes (a notification or its first catch-up): Ctrl-C then reaches it watching.
        _write(folder / "second.md", "second")
        until({"first.md": 1, "second.md": 1})
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=WAIT_S)
    finally:
        proc.kill()
    assert "first.md" in out and "second.md" in out
    assert "Stopped watching" in err
    assert "KeyboardInterrupt" not in err and "Traceback" not in err
