"""`citerag bench-index` on a tiny synthetic index: every column of the scale table is measured, for the index and
for the exact numpy floor, and the synthetic data means what it says (tenants filter, query words are indexed)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from citerag.bench.index import CHUNKS_PER_DOC, TENANTS, Synthetic
from citerag.cli import app


def test_bench_index_reports_the_scale_table(tmp_path):
    r = CliRunner().invoke(app, ["bench-index", "--sizes", "500,1000", "--queries", "12", "--no-references",
                                 "--work-dir", str(tmp_path / "b"), "--replacements", "5", "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert set(report["sizes"]) == {"500", "1000"}
    row = report["sizes"]["1000"]
    assert row["build"]["chunks"] == 500 and row["build"]["chunks_per_s"] > 0  # the second step adds 500
    probe = row["citerag"]
    for kind in ("dense", "dense_filtered", "sparse", "sparse_filtered", "hybrid", "hybrid_filtered"):
        assert 0 < probe[kind]["p50_ms"] <= probe[kind]["p95_ms"], kind
    assert probe["open_first_query_s"] > 0 and probe["rss_after_open_mb"] > 0
    for kind in ("dense_small_team", "dense_vs_numpy_1t", "numpy_1t", "hybrid_small_team"):
        assert probe[kind]["cpu_p50_ms"] >= 0 and probe[kind]["p50_ms"] > 0, kind
    # The exact dense search over the in-memory copy of the vectors, and over the mapped file.
    assert set(probe["ratios"]) == {"small_team_vs_unfiltered", "dense_vs_numpy", "dense_mapped_vs_numpy"}
    # (below 1 here: the run replaced documents, whose new vectors the synthetic truth does not have)
    assert 0.5 < probe["exact_recall@10_vs_float32"] <= 1.0 and probe["resident_copy"]["mb"] > 0
    assert all(r["p50"] > 0 and r["cpu_p50"] >= 0 for r in probe["ratios"].values())
    assert row["disk_kb_per_chunk"] == round(row["index_bytes"] / 1000 / 1024, 2)
    assert report["cli_version"]["cpu_s"] > 0
    ingest = row["during_ingest"]
    assert ingest["replacements"] == 5 and ingest["failed_during_ingest"] == 0
    table = CliRunner().invoke(app, ["bench-index", "--sizes", "500", "--queries", "10", "--work-dir",
                                     str(tmp_path / "c"), "--no-references", "--float16"])
    assert table.exit_code == 0 and "filtered/unfiltered hybrid p50" in table.output
    assert "float16:" in table.output and "recall@10 vs float32" in table.output
    assert "2% filter / unfiltered" in table.output and "citerag --version:" in table.output


def test_bench_index_refuses_bad_sizes():
    r = CliRunner().invoke(app, ["bench-index", "--sizes", "ten", "--json"])
    assert r.exit_code == 1 and "chunk counts" in json.loads(r.stdout)["error"]


def test_synthetic_chunks_look_like_real_ones():
    syn = Synthetic(0)
    info, records, parents = syn.document(3)
    assert len(records) == CHUNKS_PER_DOC and info.n_chunks == CHUNKS_PER_DOC
    assert 400 < sum(len(r.metadata["text"]) for r in records) / len(records) < 800
    assert records[0].metadata["tenant"] in {f"tenant-{i}" for i in range(TENANTS)}
    teams = [syn.document(d)[1][0].metadata["team"] for d in range(500)]
    assert teams.count("small") == 10  # 2% of the documents
    assert set(parents) == {r.metadata["parent_id"] for r in records}
    assert syn.document(3)[1][0].metadata == records[0].metadata  # deterministic
    assert syn.document(3, version=1)[1][0].metadata["text"] != records[0].metadata["text"]
