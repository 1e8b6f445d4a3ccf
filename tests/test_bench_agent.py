"""`citerag bench-agent` runs the Classic and AgentCore paths (protocol and native citations) side by side on the
same index and questions, in one run."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from citerag.cli import app


def _dataset(root):
    docs = [("d1", "Error E2 means the air quality sensor is dirty. Clean the sensor window with a dry swab."),
            ("d2", "Replace the HEPA filter every 12 months, or when the filter sign turns red."),
            ("d3", "The warranty lasts two years from the date of purchase.")]
    questions = [("q1", "What does error E2 mean?", "d1", "the air quality sensor is dirty"),
                 ("q2", "How often should I replace the HEPA filter?", "d2", "every 12 months"),
                 ("q3", "How long is the warranty?", "d3", "two years")]
    root.mkdir()
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": "", "text": t}) + "\n"
                                               for i, t in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t, _, _ in questions))
    (root / "qrels_context_only.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t1\n" for q, _, d, _ in questions))
    (root / "answers.jsonl").write_text("".join(json.dumps({"_id": q, "answers": [a], "context_doc": d}) + "\n"
                                                for q, _, d, a in questions))


def test_side_by_side_run_reports_each_agent(tmp_path, monkeypatch):
    _dataset(tmp_path / "ds")
    monkeypatch.setenv("CITERAG_EMBEDDER", "hashing")
    res = CliRunner().invoke(app, ["bench-agent", str(tmp_path / "ds"), "--questions", "3", "--json",
                                   "--agent", "local,agentcore-local,agentcore-native"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["questions"] == 3 and set(data["agents"]) == {"local", "agentcore-local", "agentcore-native"}
    for name, r in data["agents"].items():
        assert r["questions"] == 3 and r["cited_passage_contains_gold_answer"] >= 2 / 3, name
        assert r["citations_resolved"] == 1.0
    bad = CliRunner().invoke(app, ["bench-agent", str(tmp_path / "ds"), "--agent", "local,nope", "--json"])
    assert bad.exit_code == 1 and "choose from" in json.loads(bad.output)["error"]
