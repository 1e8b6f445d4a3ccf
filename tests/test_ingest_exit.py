"""`citerag ingest` exits 3 when any file failed for a system reason (no space left, an I/O error, a permission)
and its summary names the reasons: a full disk that failed 36 of 40 files exited 0, and a scheduled job never
noticed. A file that cannot be indexed for what it holds is reported and is not such a failure."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citerag.adapters.sqlite_index import SqliteIndex
from citerag.cli import app
from citerag.cli.ingest import SYSTEM_FAILURE


def write_docs(folder: Path, n: int = 40) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        body = "\n\n".join(f"Document {i} paragraph {p}: the filter of model {i} lasts {p} months and is washed "
                           f"in warm water every {p + 1} weeks." for p in range(300))
        (folder / f"doc{i:02}.md").write_text(f"# Doc {i}\n\n{body}\n", encoding="utf-8")


def env_for(tmp_path: Path) -> dict[str, str]:
    return {"CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path / "data"),
            "CITERAG_INDEX_PATH": str(tmp_path / "data" / "index.sqlite")}


def ingest(tmp_path: Path, folder: Path):
    r = CliRunner().invoke(app, ["ingest", str(folder), "--json"], env=env_for(tmp_path))
    assert "Traceback" not in r.output
    return r, json.loads(r.stdout)


def test_a_full_disk_exits_3_and_says_so(tmp_path, monkeypatch):
    # SQLite's own "database or disk is full", through the real index: after the first document its file may grow
    # by 10 pages more (a few documents: pages are stored compressed).
    real = SqliteIndex.replace_documents
    limited = []

    def filling(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        if not limited:
            pages = self._conn.execute("PRAGMA page_count").fetchone()[0]
            self._conn.execute(f"PRAGMA max_page_count = {pages + 10}")
            limited.append(pages)
        return out

    monkeypatch.setattr(SqliteIndex, "replace_documents", filling)
    write_docs(tmp_path / "docs")
    r, data = ingest(tmp_path, tmp_path / "docs")
    assert r.exit_code == SYSTEM_FAILURE == 3
    assert data["summary"]["added"] > 0  # some documents went in: it exited 0 before
    assert any("full" in reason for reason in data["system_failures"])
    assert sum(data["system_failures"].values()) == 40 - data["summary"]["added"]


def test_an_io_error_and_a_permission_exit_3_and_the_summary_names_them(tmp_path, monkeypatch):
    from citerag.ingestion import ingestor

    real = ingestor.read_regular_file

    def faulty(path, max_bytes):
        if path.name == "doc03.md":
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        if path.name == "doc07.md":
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(path, max_bytes)

    monkeypatch.setattr(ingestor, "read_regular_file", faulty)
    write_docs(tmp_path / "docs", 10)
    r, data = ingest(tmp_path, tmp_path / "docs")
    assert r.exit_code == 3 and data["summary"]["added"] == 8
    assert data["system_failures"] == {"cannot read: Input/output error": 1, "cannot read: permission denied": 1}
    shown = CliRunner().invoke(app, ["ingest", str(tmp_path / "docs")], env=env_for(tmp_path))
    assert shown.exit_code == 3
    assert "2 files failed for a system reason" in shown.output and "Input/output error (1)" in shown.output


def test_files_that_fail_for_what_they_hold_are_not_a_system_failure(tmp_path):
    write_docs(tmp_path / "docs", 3)
    (tmp_path / "docs" / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    (tmp_path / "docs" / "empty.md").write_bytes(b"")
    r, data = ingest(tmp_path, tmp_path / "docs")
    assert r.exit_code == 0 and data["summary"]["failed"] == 2 and data["system_failures"] == {}
    only_bad = tmp_path / "bad"
    only_bad.mkdir()
    (only_bad / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    r, _ = ingest(tmp_path, only_bad)
    assert r.exit_code == 1


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MB tmpfs, where the machine lets this process mount one."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if shutil.which("mount") is None or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)],
                                                        capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_real_full_disk_exits_3(tmp_path, small_disk):
    write_docs(tmp_path / "docs")
    env = {**os.environ, "CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(small_disk),
           "CITERAG_INDEX_PATH": str(small_disk / "index.sqlite")}
    r = subprocess.run([sys.executable, "-c", "from citerag.cli import main; main()", "ingest", str(tmp_path / "docs"),
                        "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in r.stderr
    assert r.returncode == 3, r.stdout[-500:] + r.stderr[-500:]
    data = json.loads(r.stdout)
    assert any("full" in reason or "space" in reason for reason in data["system_failures"])
