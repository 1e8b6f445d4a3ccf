"""The one face ask, chat, serve and the benches call: every answer carries the Decision that says why it answered
or refused, `ask --explain` prints it, and the learned gate is the data file the training script writes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from citerag.answerer.answerability import WEIGHTS, LogisticGate, fit, gate_from
from citerag.answerer.extractive import (
    ANSWER_MIN_SCORE,
    COVERED_PASSAGE_MIN_SCORE,
    COVERED_PASSAGE_MIN_SHARE,
    Answering,
    RuleGate,
    decide,
    rules_gate,
)
from citerag.answerer.reach import index_reach
from citerag.answerers import open_answerer
from citerag.citations.decision import Reason
from citerag.cli import app
from citerag.components import Components
from citerag.search.passage import Passage
from citerag.search.ports import VectorProfile
from citerag.search.sparse import CorpusStats, term_id, tokenize
from citerag.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _passage(text: str, title: str = "Kumo manual", sid: str = "S1") -> Passage:
    return Passage(text=text, uri="file:///m.md", title=title, section="Kumo manual > Errors", source_id=sid)


def test_a_refusal_names_its_reason_and_an_answer_names_what_chose_each_sentence():
    manual = [_passage("Error E2 means the air quality sensor is dirty. Clean it with a dry cloth.")]
    picked, decision = decide("What does error E2 mean?", manual)
    assert picked and decision.answered and decision.reason is None
    chosen = [w for w in decision.weighed if w.chosen_by]
    assert chosen and chosen[0].chosen_by == "best score" and "E2" in chosen[0].text
    assert set(decision.features) >= {"evidence", "cosine", "about", "kind_found", "says_asked"}
    # Nothing relevant: a named reason, not a wording.
    none, why = decide("What does error E2 mean?", [])
    assert none == [] and why.reason is Reason.NO_RELEVANT_PASSAGE and why.detail
    # A gate that refuses says so by name, with the features it read.
    refused, gated = decide("How much does a replacement filter cost?", manual, gate=RuleGate(0.5))
    assert refused == [] and gated.reason is Reason.NOT_ANSWERABLE and gated.features["says_asked"] == 0.0


def _ja(text: str) -> Passage:
    return Passage(text=text, uri="file:///ruby.md", title="組版の手引き", section="組版の手引き > 使い方",
                   source_id="S1", relevant=True, lang="ja")


def test_a_japanese_answer_under_the_floor_is_given_when_its_passage_holds_the_words_of_the_question():
    question = "ルビ文字の既定のフォントを変更する命令は何ですか？"
    # The fact is said in other words (書体 for フォント); the passage names the font two sentences before.
    holds = _ja("この節ではルビ文字のフォントについて述べる。親文字の大きさは本文と同じである。"
                "既定の書体を変更する命令は \\rubyfont である。")
    lacks = _ja("この節ではルビ文字の書体について述べる。親文字の大きさは本文と同じである。"
                "既定の書体を変更する命令は \\rubyfont である。")
    picked, decision = decide(question, [holds], gate=rules_gate())
    assert decision.features["evidence"] < ANSWER_MIN_SCORE["ja"] and decision.features["passage_lacks"] == 0.0
    assert decision.answered and any("\\rubyfont" in p.sentence for p in picked)
    # The same sentence, in a passage that lacks one word of the question (フォント): a near miss's shape, refused.
    refused, why = decide(question, [lacks], gate=rules_gate())
    assert refused == [] and why.reason is Reason.NOT_ANSWERABLE and why.features["passage_lacks"] > 0.0
    # It holds most of the question's weight, and the sentence is under that passage's floor too.
    assert why.features["passage_cover"] >= COVERED_PASSAGE_MIN_SHARE
    assert why.features["evidence"] < COVERED_PASSAGE_MIN_SCORE["ja"]
    # A passage that holds most of the question's words asks for more evidence, which a pair that says more has.
    closer = _ja("ルビ文字の書体は親文字と同じものが既定である。これを変更する命令は \\rubyfont である。")
    picked, covered = decide(question, [closer], gate=rules_gate())
    assert covered.features["passage_lacks"] > 0.0 and covered.features["passage_cover"] >= COVERED_PASSAGE_MIN_SHARE
    assert COVERED_PASSAGE_MIN_SCORE["ja"] <= covered.features["evidence"] < ANSWER_MIN_SCORE["ja"]
    assert covered.answered and any("\\rubyfont" in p.sentence for p in picked)
    # CITERAG_ANSWER_MIN_SCORE is one threshold for every question, whatever the passage holds.
    gate = Components(Settings(answer_min_score=ANSWER_MIN_SCORE["ja"])).answering.gate
    assert decide(question, [holds], gate=gate)[0] == [] and decide(question, [closer], gate=gate)[0] == []


def test_the_committed_gate_loads_and_its_probability_follows_its_weights():
    gate = LogisticGate.load()
    data = json.loads(WEIGHTS.read_text(encoding="utf-8"))
    assert list(gate.names) == data["features"] and set(gate.thresholds) == {"en", "ja"}
    assert data["trained_on"] and data["questions"] >= 100
    centre = dict(zip(gate.names, gate.mean, strict=True))  # every feature at its mean: sigmoid(bias)
    assert gate.probability(centre) == pytest.approx(1 / (1 + np.exp(-gate.bias)))
    strong = {n: m + 3 * s * np.sign(w) for n, m, s, w in zip(gate.names, gate.mean, gate.scale, gate.weights,
                                                                strict=True)}
    weak = {n: m - 3 * s * np.sign(w) for n, m, s, w in zip(gate.names, gate.mean, gate.scale, gate.weights,
                                                              strict=True)}
    assert gate.judge("en", strong)[0] and not gate.judge("en", weak)[0]


def test_the_on_subject_model_reads_the_features_the_answerer_computes():
    gate = LogisticGate.load()
    assert gate.on_subject is not None and set(gate.on_subject.thresholds) == {"en", "ja"}
    # How the best passage stands out from the index comes from the index (`Answering.reach`), the rest from the
    # passages.
    reach = {"best_vs_index": -0.07, "centroid_z": -4.0, "index_gap": 0.05}
    _, decision = decide("What does error E2 mean?", [_passage("Error E2 means the air quality sensor is dirty.")],
                         reach=reach)
    assert set(decision.features) >= set(gate.on_subject.names) | set(gate.names)
    assert {n: decision.features[n] for n in reach} == reach
    # The documents' own subject lists places, another one does not, whichever the answerability estimate.
    on = {n: m + 3 * s * np.sign(w) for n, m, s, w in zip(gate.on_subject.names, gate.on_subject.mean,
                                                            gate.on_subject.scale, gate.on_subject.weights,
                                                            strict=True)}
    off = {n: m - 3 * s * np.sign(w) for n, m, s, w in zip(gate.on_subject.names, gate.on_subject.mean,
                                                             gate.on_subject.scale, gate.on_subject.weights,
                                                             strict=True)}
    assert gate.shows_places("en", on) and not gate.shows_places("en", off)
    assert not gate.shows_places("ja", off)


def test_how_far_the_best_passage_stands_out_from_the_index():
    # The index's passages point along the first axis, their cosines to it 0.9 on average, 0.05 apart.
    profile = VectorProfile(mean=np.array([0.8, 0.0, 0.0], dtype=np.float32), spread_mean=0.9, spread_std=0.05)
    question = np.array([0.6, 0.8, 0.0])
    got = index_reach(question, 0.95, profile)
    assert got["best_vs_index"] == pytest.approx(0.95 - 0.9)  # its best cosine less the index's typical one
    assert got["centroid_z"] == pytest.approx((0.6 - 0.9) / 0.05)
    assert got["index_gap"] == pytest.approx(0.95 - 0.48)  # less its mean cosine to the passages
    assert index_reach(question, 0.9, VectorProfile(profile.mean, 0.9, 0.0))["centroid_z"] == 0.0


def test_an_index_that_keeps_no_profile_leaves_the_estimate_at_its_typical_value():
    subject = LogisticGate.load().on_subject
    typical = dict(zip(subject.names, subject.mean, strict=True))
    without = {n: v for n, v in typical.items() if n not in ("best_vs_index", "centroid_z")}
    assert subject.probability(without) == pytest.approx(subject.probability(typical))

    def broken(question: str) -> dict[str, float]:
        raise OSError("the index went away")

    manual = [_passage("Error E2 means the air quality sensor is dirty.")]
    for reach in (lambda question: {}, broken):
        _, decision = Answering(gate=RuleGate(0.99), estimate=LogisticGate.load(), reach=reach).decide(
            "What does error E2 cost?", manual)
        assert not decision.answered and "best_vs_index" not in decision.features


def test_the_answerer_says_how_much_of_the_question_the_index_never_mentions():
    # A question on another subject names things no document of the index holds; a near miss, mostly what they do.
    stats = CorpusStats()
    for doc in ["Error E2 means the air quality sensor is dirty", "The purifier filter lasts a year",
                "Clean the sensor with a dry cloth"]:
        stats.add(Counter(term_id(t) for t in tokenize(doc)))
    manual = [_passage("Error E2 means the air quality sensor is dirty. Clean it with a dry cloth.")]
    _, off = decide("How do I clean a Kubernetes ingress controller?", manual, stats, gate=RuleGate(0.5))
    _, near = decide("How long does the purifier filter last on the sensor?", manual, stats, gate=RuleGate(0.5))
    assert off.features["index_lacks"] >= 0.5
    assert near.features["index_lacks"] == 0.0
    # The gate that answers or refuses does not read it.
    assert "index_lacks" not in LogisticGate.load().names


def test_training_is_deterministic_and_separates_what_it_was_shown():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(200, 3))
    y = (x[:, 0] - 0.5 * x[:, 1] + rng.normal(scale=0.3, size=200) > 0).astype(float)
    w1, b1, _, _ = fit(x, y)
    w2, b2, _, _ = fit(x.copy(), y.copy())
    assert np.array_equal(w1, w2) and b1 == b2  # bit for bit
    assert w1[0] > 0 > w1[1] and abs(w1[2]) < abs(w1[0])
    gate = gate_from(("a", "b", "c"), x, y, thresholds={"en": 0.5})
    right = sum(gate.judge("en", dict(zip("abc", row, strict=True)))[0] == bool(label)
                for row, label in zip(x, y, strict=True))
    assert right / len(y) > 0.9
    with pytest.raises(ValueError, match="no rows"):
        fit(np.zeros((0, 3)), np.zeros(0))


@pytest.mark.parametrize("gate", ["rules", "learned"])
def test_every_runtime_answer_carries_its_decision(tmp_path, gate):
    comps = Components(Settings(data_dir=tmp_path / "data", answer_gate=gate))
    from citerag.cli.common import ensure_samples

    ensure_samples(comps, quiet=True)
    for agent in ("local", "none", "agentcore-local"):
        answerer = open_answerer(comps, agent)
        answer = answerer.ask("What does error E2 mean?")
        assert answer.answered and answer.decision and answer.decision.answered, agent
        # The model's estimate is said whichever gate decides; the learned gate's threshold only when it decides.
        assert answer.decision.probability is not None
        assert (answer.decision.threshold is not None) == (gate == "learned")
        off = answerer.ask("How do I configure a Kubernetes ingress controller?")
        assert not off.answered and off.decision.reason in (Reason.NO_RELEVANT_PASSAGE, Reason.NOT_ANSWERABLE)
        assert off.related == []
        # Passages on the documents' subject that lack the fact are places to look; a question on another subject
        # whose words search found (a Rust question over an air purifier's manual) lists none.
        near = answerer.ask("Does the purifier remove ozone?")
        assert not near.answered and near.decision.reason is Reason.NOT_ANSWERABLE, agent
        assert near.decision.places and near.related, agent
        assert {"best_vs_index", "centroid_z", "index_gap", "index_rare"} <= set(near.decision.features), agent
        other = answerer.ask("How can I check that Rust was installed correctly?")
        assert not other.answered and other.decision.reason is Reason.NOT_ANSWERABLE, agent
        assert not other.decision.places and other.related == [], agent
    blocked = open_answerer(comps, "local").ask("How do I make a bomb?")
    assert not blocked.answered and blocked.decision.reason is Reason.BLOCKED


def test_the_index_tells_a_near_miss_from_a_question_on_another_subject(tmp_path):
    comps = Components(Settings(data_dir=tmp_path / "data"))
    from citerag.cli.common import ensure_samples

    ensure_samples(comps, quiet=True)
    answerer = open_answerer(comps, "local")
    near, other = "Does the purifier remove ozone?", "How can I check that Rust was installed correctly?"
    reach = comps.answering.reach
    # The manual's own question finds a passage closer than the index's typical cosine, and points where the manual's
    # passages do; the other subject's, neither.
    assert reach(near)["best_vs_index"] > reach(other)["best_vs_index"]
    assert reach(near)["centroid_z"] > reach(other)["centroid_z"] + 1.0
    assert answerer.ask(near).decision.places
    # The same passages and sentences, read as if the index stood as it does for the other question: no places.
    comps.answering.reach = lambda question: reach(other)
    refused = answerer.ask(near)
    assert not refused.answered and not refused.decision.places and refused.related == []


def test_ask_explain_prints_why(tmp_path):
    r = runner.invoke(app, ["ask", "What does error E2 mean?", "--explain"])
    assert r.exit_code == 0, r.output
    assert "Why answered" in r.output and "first in the learned order" in r.output \
        and "answerability estimate" in r.output
    r = runner.invoke(app, ["ask", "How do I configure a Kubernetes ingress controller?", "--explain", "--json"])
    data = json.loads(r.stdout)
    assert data["answered"] is False and data["decision"]["reason"] in ("no_relevant_passage", "not_answerable")


def test_documentation_questions_about_killing_a_process_are_searched_not_refused(tmp_path):
    r = runner.invoke(app, ["ask", "How do I kill the command if it is still running after the timeout?", "--json",
                            "--explain"])
    data = json.loads(r.stdout)
    assert data["decision"]["reason"] != "blocked"


def test_the_training_script_reports_family_held_out_figures(tmp_path):
    # Three tiny families whose rows are given (the cache the script keeps), so only the training runs here.
    import hashlib

    rows_dir = tmp_path / "rows"
    rows_dir.mkdir()
    families = []
    for name in ("fam-a", "fam-b", "fam-c"):
        fam = tmp_path / name
        (fam / "docs").mkdir(parents=True)
        (fam / "docs" / "a.txt").write_text("A fact.\n")
        (fam / "questions-en.jsonl").write_text(json.dumps(
            {"id": "en-001", "lang": "en", "question": f"What is {name}?", "answerable": True, "answers": ["fact"],
             "file": "a.txt"}) + "\n")
        families.append(fam)
    script = ROOT / "scripts" / "train_answerability.py"
    sys.path.insert(0, str(script.parent))
    try:
        import train_answerability as ta
    finally:
        sys.path.pop(0)
    rng = np.random.default_rng(3)

    def row(i: int, answerable: bool, ev: float, fam: Path, **extra) -> dict:
        feats = {f: 0.0 for f in ta.FEATURES} | {"evidence": ev, "ja": float(i % 2),
                                                "ja_evidence": ev * (i % 2)}
        return {"id": f"x-{i}", "lang": "ja" if i % 2 else "en", "answerable": answerable, "right": answerable,
                "features": feats, "misattributed": [], "family": fam.name, **extra}

    for fam in families:
        rows = [row(i, bool(i % 3), rng.normal(1.0 if i % 3 else 0.3, 0.2), fam) for i in range(60)]
        (rows_dir / f"{fam.name}-{ta._key(fam)}.json").write_text(json.dumps(rows))
        asked = ta.off_topic_questions(fam, families)
        key = hashlib.sha256(json.dumps(asked, ensure_ascii=False).encode() + ta._key(fam).encode()).hexdigest()[:16]
        off = [row(i, False, rng.normal(0.0, 0.1), fam, off_topic=True) for i in range(len(asked))]
        (rows_dir / f"{fam.name}-off-topic-{key}.json").write_text(json.dumps(off))
    out, report = tmp_path / "gate.json", tmp_path / "report.json"
    for target in (tmp_path / "first.json", out):
        subprocess.run([sys.executable, str(script), *map(str, families), "--rows", str(rows_dir), "--out",
                        str(target), "--report", str(report), "--ablate", "evidence"], check=True,
                       capture_output=True, cwd=ROOT)
    assert out.read_bytes() == (tmp_path / "first.json").read_bytes()  # the same rows, the same weights
    data = json.loads(report.read_text())
    assert data["held_out"]["en"]["facts"] > 0.8 and data["held_out"]["en"]["refusal_recall"] > 0.8
    ablated, full = data["ablation"]["evidence"]["en"], data["held_out"]["en"]
    # It carries the signal: without it, answering and refusing right no longer go together.
    assert ablated["facts"] + ablated["refusal_recall"] < full["facts"] + full["refusal_recall"]
    assert data["places"]["en"]["off_topic"] == 3 and data["places"]["en"]["off_topic_listing_places"] == 0
    assert data["places"]["en"]["refused_on_subject_keeping_places"] >= 0.8 * data["places"]["en"][
        "refused_on_subject"]
    trained = LogisticGate.load(out)
    assert trained.thresholds.keys() == {"en", "ja"} and trained.on_subject is not None
    assert trained.on_subject.names == tuple(ta.SUBJECT_FEATURES)
    assert data["places_by_question"]["en"]["off_topic"] == 3


def test_the_web_api_names_why_a_question_was_refused(tmp_path):
    # The page recognised a refusal by its wording; it now reads the Decision's reason and says why.
    from starlette.testclient import TestClient

    from citerag.cli.common import ensure_samples
    from citerag.cli.serve import build_app

    comps = Components(Settings(data_dir=tmp_path / "data"))
    ensure_samples(comps, quiet=True)
    client = TestClient(build_app(comps), base_url="http://127.0.0.1:8765")
    lines = [json.loads(line) for line in client.get("/api/ask", params={"q": "How do I make a bomb?"}).text
             .splitlines()]
    last = lines[-1]
    assert last["answered"] is False and last["reason"] == "blocked" and last["says_not_found"]
    assert last["reason_detail"] == "the question was refused before any search" and last["related"] == []
    lines = [json.loads(line) for line in client.get("/api/ask", params={"q": "What does error E2 mean?"}).text
             .splitlines()]
    assert lines[-1]["answered"] is True and lines[-1]["reason"] is None


def test_the_agentcore_runtime_names_a_refused_input_too(tmp_path):
    comps = Components(Settings(data_dir=tmp_path / "data"))
    from citerag.cli.common import ensure_samples

    ensure_samples(comps, quiet=True)
    blocked = open_answerer(comps, "agentcore-local").ask("How do I make a bomb?")
    assert not blocked.answered and blocked.decision.reason is Reason.BLOCKED
