"""The answer benchmark (`citerag bench-answers`) and the answerer behaviour it measures: whole sentences, the
fact next to the matching sentence, abstention on near misses, and no sentence shown under the wrong source."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citerag.bench import answers as ab
from citerag.citations.answer import Answer, Citation
from citerag.citations.extractive import _statements, pick_sentences
from citerag.cli import app
from citerag.errors import CiteragError
from citerag.search.passage import Passage
from citerag.search.sparse import CorpusStats, term_id, tokenize

DATASET = Path(__file__).resolve().parents[1] / "datasets" / "answers"


@pytest.fixture(scope="module")
def texts() -> ab.DocTexts:
    return ab.DocTexts(ab.load(DATASET).docs)


def test_every_gold_fact_is_in_the_text_the_loader_gives_for_its_file(texts):
    ds = ab.load(DATASET)
    assert len(ds.questions) >= 50
    for q in ds.questions:
        if q.answerable:
            assert any(ab._squash(a) in texts.whole[q.file] for a in q.answers), q.id
    for lang in {q.lang for q in ds.questions}:
        for split in ("dev", "test"):
            sel = [q for q in ds.questions if q.lang == lang and q.split == split]
            assert any(q.answerable for q in sel) and any(not q.answerable for q in sel), (lang, split)


def test_a_bad_question_file_gets_a_line_number(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Refunds take 14 days.\n")
    (tmp_path / "questions-en.jsonl").write_text(
        '{"id": "en-1", "lang": "en", "question": "q?", "answerable": true, "answers": ["14 days"], '
        '"file": "a.txt"}\n{"id": "en-2", "lang": "en", "question": "q?", "answerable": true}\n')
    with pytest.raises(CiteragError, match=r"questions-en\.jsonl line 2"):
        ab.load(tmp_path)


def _answer(sentence: str, uri: str, page: int | None = None) -> Answer:
    src = Passage(source_id="S1", text=sentence, uri=uri, page=page)
    return Answer(text=sentence, citations=[Citation(text=sentence, start=0, end=len(sentence), sources=[src])],
                  sources=[src])


def test_a_sentence_cited_to_a_file_that_does_not_hold_it_is_a_misattribution(texts):
    q = ab.Question(id="en-2", lang="en", question="Who is the license steward?", answerable=True,
                    answers=["Mozilla Foundation"], file="mpl-2.0.pdf")
    sentence = "Mozilla Foundation is the license steward."
    wrong_file = ab.score(q, _answer(sentence, "file:///x/apache-license-2.0.txt"), texts)
    assert wrong_file["misattributed"] and not wrong_file["right"]
    page = next(p for (name, p), t in texts.pages.items() if name == "mpl-2.0.pdf" and "mozillafoundationis" in t)
    wrong_page = ab.score(q, _answer(sentence, "file:///x/mpl-2.0.pdf", page=page % 6 + 1), texts)
    assert wrong_page["misattributed"] and not wrong_page["right"]
    right = ab.score(q, _answer(sentence, "file:///x/mpl-2.0.pdf", page=page), texts)
    assert right["right"] and not right["misattributed"]


def test_masked_personal_data_still_matches_its_source_and_line_breaks_do_not_matter():
    location = ab._squash("Write to\njane.doe@example.com for a refund.")
    assert ab.holds(location, "Write to [EMAIL] for a refund.")
    assert not ab.holds(location, "Write to [EMAIL] for a discount.")


def test_sentences_come_out_whole():
    assert _statements("Rust conveniently provides the vec! macro, which creates a vector. It is short.") == [
        "Rust conveniently provides the vec! macro, which creates a vector.", "It is short."]
    # A text file keeps its line breaks (line-range citations): a wrapped sentence is still one.
    assert _statements("3. Grant of Patent License. Subject to the terms of this License,\neach Contributor "
                       "grants a perpetual license.\n\n4. Redistribution.") == [
        "3. Grant of Patent License.",
        "Subject to the terms of this License, each Contributor grants a perpetual license.", "4. Redistribution."]
    assert _statements("To check, open a shell and enter this line:\n$ rustc --version\nYou should see it.")[0] == \
        "To check, open a shell and enter this line: $ rustc --version"


def test_the_fact_in_the_sentence_after_the_matching_one_is_in_the_answer():
    # The sentence that matches the question ("linker errors") and the one with the fact ("Ubuntu ...
    # build-essential") are neighbours: the answer is the pair, not the first alone.
    text = ("Rust needs a linker. If you get linker errors, install a C compiler. "
            "On Ubuntu, install the build-essential package.")
    picked = pick_sentences("Which package should I install on Ubuntu for linker errors?",
                            [Passage(source_id="S1", text=text)], max_sentences=1)
    assert picked[0].sentence == ("If you get linker errors, install a C compiler. "
                                  "On Ubuntu, install the build-essential package.")


def test_a_question_naming_what_no_document_holds_is_not_answered():
    text = "Vectors store values next to each other in memory. Use push to add an element to a vector."
    stats = CorpusStats()
    stats.add(Counter(term_id(t) for t in tokenize(text)))
    passages = [Passage(source_id="S1", text=text)]
    assert pick_sentences("What is the initial capacity of a vector?", passages, stats, min_score=0.3) == []
    assert pick_sentences("How do I add an element to a vector?", passages, stats, min_score=0.3)


def test_bench_answers_reports_each_language_and_split(tmp_path):
    root = tmp_path / "set"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "refunds.md").write_text(
        "# Refunds\n\nRefunds are paid within 14 days of the\nreturn reaching our warehouse.\n")
    (root / "docs" / "返金.md").write_text("# 返金\n\n返金は商品が倉庫に届いてから14日以内に\n行われます。\n")
    rows = [
        {"id": "en-1", "lang": "en", "question": "When are refunds paid?", "answerable": True,
         "answers": ["14 days"], "file": "refunds.md"},
        {"id": "en-2", "lang": "en", "question": "Refunds are paid within how many days?", "answerable": True,
         "answers": ["14 days"], "file": "refunds.md"},
        {"id": "ja-1", "lang": "ja", "question": "返金は何日以内に行われますか？", "answerable": True,
         "answers": ["14日以内"], "file": "返金.md"},
    ]
    (root / "questions-en.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows[:2]))
    (root / "questions-ja.jsonl").write_text(json.dumps(rows[2], ensure_ascii=False) + "\n")
    r = CliRunner().invoke(app, ["bench-answers", str(root), "--split", "all", "--json"],
                           env={"CITERAG_EMBEDDER": "hashing"})
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert set(res["summary"]) == {"dev/en", "dev/ja", "dev/all", "test/en", "test/all"}
    assert res["summary"]["dev/en"]["fact_with_right_citation"] == 1.0
    assert res["summary"]["dev/ja"]["fact_with_right_citation"] == 1.0
    assert all(not row["misattributed"] for row in res["rows"])
    bad = CliRunner().invoke(app, ["bench-answers", str(tmp_path / "nowhere")], env={"CITERAG_EMBEDDER": "hashing"})
    assert bad.exit_code != 0 and "no docs/ folder" in bad.output


def test_the_excerpt_under_a_source_is_the_cited_sentence_even_across_lines_and_masking():
    from citerag.traces.join import _excerpt

    passage = "1. Scope.\nSubject to the terms of this License,\neach Contributor grants a licence.\nWrite to a@b.co."
    assert _excerpt("Subject to the terms of this License, each Contributor grants a licence.", passage) == \
        "Subject to the terms of this License, each Contributor grants a licence."
    assert _excerpt("Write to [EMAIL].", passage) == "Write to a@b.co."
