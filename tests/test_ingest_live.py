"""An ingest that is usable as it goes: a document is written when its last passage is embedded (a search started
meanwhile finds it; kill -9 loses only the document in progress), with its own ingested time and its "added" line
at that moment, and an ETA that holds steady while batch times vary."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from citerag.cli import app
from citerag.components import Components
from citerag.ingestion import ingestor as ingestor_module
from citerag.ingestion.progress import ProgressTracker
from citerag.settings import Settings

WAIT_S = 120  # a bound on waiting for another thread or process, never a measure of speed


def _docs(folder: Path, words: list[str]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i, word in enumerate(words):
        body = " ".join(f"{word} note {j} says the {word.lower()} valve opens at step {j}." for j in range(12))
        path = folder / f"{i}-{word.lower()}.md"
        path.write_text(f"# {word}\n\n{body}\n", encoding="utf-8")
        out.append(path)
    return out


class _Gated:
    """The hashing embedder, holding any batch that holds `word` until the test opens the gate."""

    def __init__(self, inner, word: str) -> None:
        self.inner, self.word = inner, word
        self.dim = inner.dim
        self.reached, self.gate = threading.Event(), threading.Event()

    def embed_passages(self, texts):
        if any(self.word in t for t in texts):
            self.reached.set()
            assert self.gate.wait(WAIT_S)
        return self.inner.embed_passages(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def test_a_search_during_an_ingest_finds_the_documents_already_done(tmp_path, monkeypatch):
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing", embed_batch_size=1)
    comps = Components(settings)
    files = _docs(tmp_path / "docs", ["ALPHA", "BRAVO"])
    ing = comps.ingestor()
    ing.embedder = _Gated(comps.embedder, "BRAVO")
    clock = {"now": "2026-01-01T10:00:00Z"}
    monkeypatch.setattr(ingestor_module, "_now", lambda: clock["now"])
    heard: list[str] = []
    run = threading.Thread(target=lambda: ing.ingest_paths([tmp_path / "docs"], on_file=lambda r: heard.append(
        f"{r.status} {Path(r.source).name}")))
    run.start()
    try:
        assert ing.embedder.reached.wait(WAIT_S)
        # BRAVO is held in the model: ALPHA's "added" is said, and from then another connection's search finds it.
        deadline = time.monotonic() + WAIT_S
        while not heard and time.monotonic() < deadline:
            time.sleep(0.01)
        assert heard == [f"added {files[0].name}"]
        hits = Components(settings).pipeline().search("ALPHA valve").hits
        assert any(h.uri == files[0].resolve().as_uri() for h in hits)
        assert not any(h.uri == files[1].resolve().as_uri() for h in hits)
    finally:
        clock["now"] = "2026-01-01T10:05:00Z"
        ing.embedder.gate.set()
        run.join(WAIT_S)
    times = {Path(d.source_uri).name: d.ingested_at for d in comps.index.list_documents()}
    assert times == {files[0].name: "2026-01-01T10:00:00Z", files[1].name: "2026-01-01T10:05:00Z"}
    assert heard == [f"added {files[0].name}", f"added {files[1].name}"]


_STALLING_INGEST = """
import os, sys, time
from citerag.adapters import embedders

real = embedders.HashingEmbedder.embed_passages

def stalled(self, texts):
    if any("CHARLIE" in t for t in texts):
        open(os.environ["STALL_MARKER"], "w").close()
        time.sleep(600)
    return real(self, texts)

embedders.HashingEmbedder.embed_passages = stalled
from citerag.cli import main
sys.argv = ["citerag", "ingest", sys.argv[1]]
main()
"""


def test_kill_9_in_the_middle_loses_only_the_document_in_progress(tmp_path):
    folder = tmp_path / "docs"
    files = _docs(folder, ["ALPHA", "BRAVO", "CHARLIE", "DELTA"])
    marker = tmp_path / "stalled"
    env = {**os.environ, "CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path / "data"),
           "CITERAG_EMBEDDING_CACHE_PATH": str(tmp_path / "cache.sqlite"), "CITERAG_EMBED_BATCH_SIZE": "1",
           "STALL_MARKER": str(marker)}
    proc = subprocess.Popen([sys.executable, "-c", _STALLING_INGEST, str(folder)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing"))
    try:
        deadline = time.monotonic() + WAIT_S
        done: set[str] = set()
        while time.monotonic() < deadline and not (marker.exists() and len(done) == 2):
            if proc.poll() is not None:
                pytest.fail(f"the ingest ended early: {proc.stderr.read().decode()[-2000:]}")
            if (tmp_path / "data" / "index.sqlite").exists():
                done = {Path(d.source_uri).name for d in comps.index.list_documents()}
            time.sleep(0.1)
        assert marker.exists() and done == {files[0].name, files[1].name}
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(WAIT_S)
    # What was written is whole; the document in progress and the one after it are not there at all.
    db = sqlite3.connect(tmp_path / "data" / "index.sqlite")
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.close()
    fresh = Components(Settings(data_dir=tmp_path / "data", embedder="hashing"))
    docs = {Path(d.source_uri).name: d for d in fresh.index.list_documents()}
    assert set(docs) == {files[0].name, files[1].name}
    # Ingest again: the two written are unchanged, the other two are added.
    r = CliRunner().invoke(app, ["ingest", str(folder), "--json"],
                           env={k: env[k] for k in ("CITERAG_EMBEDDER", "CITERAG_DATA_DIR",
                                                    "CITERAG_EMBEDDING_CACHE_PATH")})
    assert '"unchanged": 2' in r.stdout and '"added": 2' in r.stdout, r.output
    hits = fresh.pipeline().search("BRAVO valve opens at step 11").hits
    assert hits and hits[0].uri == files[1].resolve().as_uri()


def test_the_cli_says_added_for_each_document(tmp_path):
    _docs(tmp_path / "docs", ["ALPHA", "BRAVO"])
    r = CliRunner().invoke(app, ["ingest", str(tmp_path / "docs")],
                           env={"CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path / "data")})
    lines = r.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["added", "added"]  # once each, not again in the summary
    assert lines[-1].startswith("2 added;")


def test_the_eta_holds_steady_while_batch_times_vary():
    """A busy machine: batches of 16 passages take 0.5x or 2.5x the usual time at random. The ETA from the last
    batch alone swung fivefold; this one stays within a quarter of the time left at the machine's mean speed once 200
    passages are done, and never jumps by more than a tenth between batches."""
    rng = np.random.default_rng(7)
    now = [0.0]
    total = 3200
    t = ProgressTracker(1, 1, clock=lambda: now[0])
    t.file_read(1, total)
    t.all_chunked = True
    durations = [16 * 0.3 * (0.5 if rng.random() < 0.5 else 2.5) for _ in range(total // 16)]
    etas = []
    for n, d in enumerate(durations):
        now[0] += d
        t.batch_done(16, 16)
        eta = t.snapshot().eta_s
        if (n + 1) * 16 >= 200 and n + 1 < len(durations):
            expected = (total - (n + 1) * 16) * 0.3 * 1.5  # what is left, at the machine's mean speed
            assert abs(eta - expected) <= 0.25 * expected, (n, eta, expected)
        etas.append(eta)
    jumps = [abs(b - a) / a for a, b in pairwise(etas[12:150])]  # while minutes are left
    assert max(jumps) <= 0.10


def test_the_estimate_of_files_not_read_yet_ignores_one_odd_file_of_their_type():
    """Three PDFs read: two of text (1 passage a kilobyte) and one of scans (1 passage in 1 MB). The 7 MB of
    PDFs not read yet are estimated from the median file (about 7,000 passages), not from the bytes of all three
    (about 30)."""
    t = ProgressTracker(10, 10_000_000, bytes_by_kind={".pdf": 9_000_000, ".md": 1_000_000})
    t.file_read(1_000_000, 1, ".pdf")
    t.file_read(500_000, 500, ".pdf")
    t.file_read(500_000, 500, ".pdf")
    t.file_read(10_000, 50, ".md")
    expected = 1051 + 7_000_000 * 0.001 + 990_000 * 50 / 10_000
    assert abs(t.total() - expected) <= 1
