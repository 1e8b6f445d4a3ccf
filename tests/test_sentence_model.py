from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from citerag.answerer.extractive import decide
from citerag.answerer.ranking import Candidate
from citerag.answerer.sentence_model import FEATURES, SentenceModel, features, model_from
from citerag.components import Components
from citerag.search.passage import Passage
from citerag.search.query import analyze
from citerag.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def cand(rank: int, pos: int, text: str, score: float, bonus: float = 0.0, cosine: float = 0.85) -> Candidate:
    return Candidate(rank=rank, pos=pos, last=pos, text=text, lexical=score, similarity=cosine, factor=1.0,
                     bonus=bonus, score=score, evidence=score)


def weighing(name: str, weight: float) -> SentenceModel:
    return SentenceModel(names=FEATURES, mean=(0.0,) * len(FEATURES), scale=(1.0,) * len(FEATURES),
                         weights=tuple(weight if f == name else 0.0 for f in FEATURES))


def test_a_learned_order_puts_first_the_sentence_its_weights_favour_and_keeps_the_hand_order_on_ties():
    hand = [cand(0, 0, "The filter sign turns on.", 0.9), cand(1, 3, "Replace it every 12 months.", 0.7, bonus=0.1),
            cand(1, 4, "Wash the pre-filter monthly.", 0.6)]
    query = analyze("How often do I replace the filter?")
    assert weighing("kind", 1.0).order(query, [], hand)[0] is hand[1]
    # Nothing told apart: the hand ranking's order stands.
    assert weighing("kind", 0.0).order(query, [], hand) == hand


def test_the_order_chooses_the_answer_but_the_gate_still_reads_the_hand_scores():
    passages = [Passage(text="The purifier has three fan speeds. Replace the HEPA filter every 12 months. "
                             "The filter sign turns on when it is time.", title="Kumo FAQ", uri="file:///faq.md",
                        section="Filters", source_id="s1")]
    question = "How often should I replace the HEPA filter?"
    _, hand = decide(question, passages)
    last_first = weighing("position", 1.0).order  # the last sentence of the passage first
    picked, learned = decide(question, passages, order=last_first, max_sentences=1)
    assert "The filter sign turns on" in picked[0].sentence  # alone, or read on from the sentence before it
    assert learned.weighed[0].text.startswith("The filter sign")
    assert learned.weighed[0].score < max(w.score for w in learned.weighed)  # the hand score, not the order's
    assert hand.weighed[0].text.startswith("Replace the HEPA filter")


def test_for_a_question_that_asks_which_option_an_item_of_the_option_list_can_come_first():
    # The description of the option shares none of the question's words: the hand score puts it last.
    hand = [cand(0, 0, "入力の文字コードは自動で判別されます。", 0.9),
            cand(0, 3, "判別の結果はファイルに書かれません。", 0.7), cand(0, 7, "-g 推測した結果を表示する。", 0.2)]
    asked = analyze("文字コードの判別結果だけを知りたいときは、どのオプションを指定しますか？")
    assert weighing("asked_item", 1.0).order(asked, [], hand)[0] is hand[2]
    # A question that does not ask for an option or a key, and a sentence that is no item, weigh nothing.
    assert weighing("asked_item", 1.0).order(analyze("文字コードはどう判別されますか？"), [], hand) == hand
    column = features("ja", hand, asked.text)[:, FEATURES.index("asked_item")]
    assert column.tolist() == [0.0, 0.0, 1.0]
    keys = [cand(0, 0, "注釈の高さは行送りに影響しない。", 0.8),
            cand(0, 1, "flat=⟨bool⟩ 注釈の高さを 0 とみなすか．", 0.3)]
    assert weighing("asked_item", 1.0).order(analyze("注釈の高さを0とみなすキーは何ですか？"), [], keys)[0] is keys[1]


def test_fitting_is_deterministic_and_learns_which_feature_marks_the_fact():
    rng = np.random.default_rng(7)
    groups = []
    for _ in range(40):
        cands = [cand(0, i, f"Sentence {i} of a passage.", float(rng.uniform(0.3, 1.0)),
                      bonus=0.1 if i == 0 else 0.0) for i in range(6)]
        cands.sort(key=lambda c: -c.score)
        groups.append((features("en", cands), np.array([1.0 if c.bonus > 0 else 0.0 for c in cands])))
    a, b = model_from(groups), model_from(groups)
    assert a == b
    assert a.weights[FEATURES.index("kind")] == max(a.weights)


def test_the_setting_chooses_the_learned_or_the_hand_order(tmp_path):
    learned = Components(Settings(data_dir=tmp_path / "a")).answering
    hand = Components(Settings(data_dir=tmp_path / "b", answer_ranking="hand")).answering
    assert learned.order is not None and hand.order is None


def test_the_committed_model_reads_the_features_the_code_computes():
    data = json.loads((ROOT / "lambdas/citerag/answerer/sentence_model.json").read_text())
    assert tuple(data["features"]) == FEATURES and "train_ranker.py" in data["about"]
    assert {"en-sqlite", "ja-jlreq"} <= set(data["trained_on"])


def test_the_training_script_reports_family_held_out_figures_bit_for_bit(tmp_path):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import pool_rows
    finally:
        sys.path.pop(0)
    rows_dir = tmp_path / "rows"
    rows_dir.mkdir()
    families = []
    rng = np.random.default_rng(5)
    for name in ("fam-a", "fam-b", "fam-c"):
        fam = tmp_path / name
        (fam / "docs").mkdir(parents=True)
        (fam / "docs" / "a.txt").write_text("A fact.\n")
        families.append(fam)
        rows = []
        for i in range(30):
            # The fact is in the sentence with the kind's evidence, which the hand ranking puts second or lower.
            cands = [[0, j, j, f"Sentence {j}.", 0.5, 0.85, 1.0, 0.1 if j == 2 else 0.0,
                      float(1.0 - 0.1 * j + rng.normal(0, 0.01)), 0.5, int(j == 2)] for j in range(5)]
            rows.append({"id": f"en-{i:03d}", "lang": "en", "answerable": True, "right": False, "features": {},
                         "misattributed": [], "family": name, "question": f"What is fact {i}?",
                         "candidates": cands})
        pool_rows.cache_file(fam, rows_dir, ranking="hand", capture=True).write_text(json.dumps(rows))
    script = ROOT / "scripts" / "train_ranker.py"
    outs = []
    for n in (1, 2):
        out, report = tmp_path / f"model{n}.json", tmp_path / f"report{n}.json"
        subprocess.run([sys.executable, str(script), *map(str, families), "--rows", str(rows_dir), "--offline",
                        "--out", str(out), "--report", str(report)], check=True, capture_output=True, cwd=ROOT)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    data = json.loads((tmp_path / "report1.json").read_text())["held_out"]["en"]
    assert data["first_holds_hand"]["right"] == 0 and data["first_holds_learned"]["right"] == 90
    assert SentenceModel.load(tmp_path / "model1.json").names == FEATURES


def test_a_candidate_from_a_passage_search_scored_far_lower_can_be_put_after_one_from_the_best_passage():
    # The hand score ranks the sentence of the weaker passage first; the search scored its passage far lower.
    hand = [cand(1, 0, "The pre-filter can be washed.", 0.9), cand(0, 2, "Replace the filter every 12 months.", 0.8)]
    passages = [Passage(text="a", score=0.95), Passage(text="b", score=0.40)]
    query = analyze("How often do I replace the filter?")
    assert weighing("passage_gap", 1.0).order(query, passages, hand)[0] is hand[1]
    column = features("en", hand, query.text, [p.score for p in passages])[:, FEATURES.index("passage_gap")]
    assert np.allclose(column, [-0.55, 0.0])
    # A reranker's scores run wider than the fusion's the order was fit on: the gap stays within [-1, 0].
    assert features("en", hand, query.text, [7.5, -2.0])[:, FEATURES.index("passage_gap")].tolist() == [-1.0, 0.0]
    # Without the passages' scores (an older row) the column says nothing.
    assert features("en", hand, query.text)[:, FEATURES.index("passage_gap")].tolist() == [0.0, 0.0]


def test_a_question_weighed_twice_fits_as_if_it_were_asked_twice():
    rng = np.random.default_rng(11)
    groups = []
    for _ in range(12):
        cands = [cand(0, i, f"Sentence {i}.", float(rng.uniform(0.3, 1.0)), bonus=float(rng.uniform(0, 0.2)))
                 for i in range(5)]
        groups.append((features("en", cands), np.array([1.0 if i == int(rng.integers(5)) else 0.0
                                                        for i in range(5)])))
    groups = [g for g in groups if g[1].sum()]
    twice = model_from(groups + groups[:1])
    weighed = model_from(groups, weights=[2.0] + [1.0] * (len(groups) - 1))
    assert np.allclose(twice.weights, weighed.weights, atol=1e-6)
    assert not np.allclose(model_from(groups).weights, weighed.weights, atol=1e-6)
    # Weights of one each change nothing, bit for bit: the committed model stays reproducible.
    assert model_from(groups, weights=[1.0] * len(groups)).mean == model_from(groups).mean


def test_jaquad_questions_for_training_are_none_the_bench_asks_nor_on_their_paragraphs(tmp_path):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import pool_rows
    finally:
        sys.path.pop(0)
    paragraphs = {"100": "北斗は一九〇一年に完成した。", "101": "南星は白い石で造られた。",
                  "102": "東門の設計者は佐藤である。", "103": "西塔は三階建てである。",
                  "104": "中庭には古い井戸がある。"}
    asked = [("1", "100", "一九〇一年", "北斗はいつ完成した?"), ("2", "101", "白い石", "南星は何で造られた?"),
             ("3", "100", "北斗", "一九〇一年に完成したのは?"), ("4", "102", "佐藤", "東門の設計者は誰?"),
             ("5", "103", "五階", "西塔は何階建て?"), ("6", "104", "古い井戸", "中庭には何がある?")]
    (tmp_path / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": k, "title": "建物", "text": v}, ensure_ascii=False) + "\n" for k, v in paragraphs.items()))
    (tmp_path / "queries.jsonl").write_text("".join(
        json.dumps({"_id": q, "text": t}, ensure_ascii=False) + "\n" for q, _, _, t in asked))
    (tmp_path / "answers.jsonl").write_text("".join(
        json.dumps({"_id": q, "answers": [a], "context_doc": c}, ensure_ascii=False) + "\n" for q, c, a, _ in asked))
    qrels = "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{c}\t1\n" for q, c, _, _ in asked)
    (tmp_path / "qrels.tsv").write_text(qrels)
    (tmp_path / "qrels_context_only.tsv").write_text(qrels)
    # The bench asks the first two: the third is on the first one's paragraph, the fifth's answer is not in its own.
    found = pool_rows.jaquad_set(tmp_path, benched=2)
    assert [q.id for q in found.questions] == ["jq-4", "jq-6"]
    assert all(q.answerable and q.file.endswith(c) for q, c in zip(found.questions, ("102", "104"), strict=True))
    assert {d["_id"] for d in found.corpus.corpus} == {"102", "103", "104"}
