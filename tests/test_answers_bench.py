"""The answer benchmark (`citerag bench-answers`) and the answerer behaviour it measures: whole sentences, the
fact next to the matching sentence, abstention on near misses, and no sentence shown under the wrong source."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citerag.answerer.extractive import (
    ANSWER_MIN_SCORE,
    UNKNOWN_KANA_WORD_MIN_SCORE,
    UNKNOWN_WORD_MIN_SCORE,
    pick_sentences,
)
from citerag.answerer.ranking import rank_sentences
from citerag.bench import answers as ab
from citerag.citations.answer import Answer, Citation
from citerag.citations.statements import split_statements
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
            for name in (q.file, *q.also):  # every file credited with the fact states it
                assert any(ab.squash(a) in texts.whole[name] for a in q.answers), (q.id, name)
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
    # "yes" is not true; an empty file is no question set; a repeated id is named.
    row = '{"id": "en-1", "lang": "en", "question": "q?", "answerable": %s, "answers": ["14 days"], "file": "a.txt"}\n'
    (tmp_path / "questions-en.jsonl").write_text(row % '"yes"')
    with pytest.raises(CiteragError, match=r"line 1: answerable"):
        ab.load(tmp_path)
    (tmp_path / "questions-en.jsonl").write_text("")
    with pytest.raises(CiteragError, match="hold no questions"):
        ab.load(tmp_path)
    (tmp_path / "questions-en.jsonl").write_text(row % "true" + row % "true")
    with pytest.raises(CiteragError, match="question id 'en-1' is used twice"):
        ab.load(tmp_path)


def _answer(sentence: str, uri: str, page: int | None = None, excerpt: str | None = None) -> Answer:
    src = Passage(source_id="S1", text=sentence, uri=uri, page=page, excerpt=sentence if excerpt is None else excerpt)
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


def test_an_excerpt_that_is_not_the_cited_sentence_is_counted(texts):
    q = ab.Question(id="en-2", lang="en", question="Who is the license steward?", answerable=True,
                    answers=["Mozilla Foundation"], file="mpl-2.0.pdf")
    sentence = "Mozilla Foundation is the license steward."
    page = next(p for (name, p), t in texts.pages.items() if name == "mpl-2.0.pdf" and "mozillafoundationis" in t)
    shown = ab.score(q, _answer(sentence, "file:///x/mpl-2.0.pdf", page=page), texts)
    assert shown["right"] and not shown["stray_excerpts"]
    # The passage's first words under the source, as when the cited sentence was not found in it:
    first = "Mozilla Public License"
    start = ab.score(q, _answer(sentence, "file:///x/mpl-2.0.pdf", page=page, excerpt=first), texts)
    assert start["right"] and start["stray_excerpts"] == [{"excerpt": first, "cited": f"mpl-2.0.pdf p.{page}"}]
    assert ab.summarize([{**start, "ms": 1.0}])["test/en"]["stray_excerpts"] == 1


def test_a_refused_question_counts_as_leading_to_its_fact_only_when_a_place_to_look_holds_it(texts):
    q = ab.Question(id="ja-2", lang="ja", question="ベクタがスコープから外れると、その要素はどうなりますか？",
                    answerable=True, answers=["その中身もドロップされます"], file="rust-book-ja-vectors.md")
    uri = "file:///x/rust-book-ja-vectors.md"
    holding = next(sec for (name, sec), t in texts.sections.items()
                   if name == q.file and ab.squash(q.answers[0]) in t)
    other = next(sec for (name, sec) in texts.sections if name == q.file and sec != holding)

    def refused(*sections: str) -> dict:
        places = [Passage(text="", uri=uri, title="v", section=s) for s in sections]
        return ab.score(q, Answer(text="ドキュメントには…", answered=False, related=places), texts)
    assert refused(other, holding)["pointed"] and not refused(other)["pointed"] and not refused()["pointed"]
    row = {**refused(holding), "ms": 1.0}
    assert row["abstained"] and not row["right"]
    m = ab.summarize([row, {**refused(other), "ms": 1.0}])["test/ja"]
    assert (m["refused_answerable"], m["refused_with_fact_at_a_place"]) == (2, 1)


def test_a_place_to_look_is_its_own_text_not_the_whole_file(tmp_path):
    (tmp_path / "g.md").write_text("# Guide\n\n## Example\n\nFirst fact.\n\n## Other\n\nNothing.\n\n"
                                   "## Example\n\nSecond fact.\n", encoding="utf-8")
    (tmp_path / "n.txt").write_text("Line one.\nThe fact is on line two.\nLine three.\n", encoding="utf-8")
    texts = ab.DocTexts([tmp_path / "g.md", tmp_path / "n.txt"])
    example = next(sec for (name, sec) in texts.sections if name == "g.md" and sec.endswith("Example"))
    # Two sections under one heading path are one place; a place the loader never gave holds nothing.
    assert "firstfact" in texts.place("g.md", None, example) and "secondfact" in texts.place("g.md", None, example)
    assert texts.place("g.md", None, "Guide > Nowhere") == ""
    assert texts.place("g.md", None, None) == texts.whole["g.md"]  # indexed whole, as a JaQuAD paragraph is
    assert texts.place("n.txt", None, "line 1") == ab.squash("Line one.")
    assert texts.place("n.txt", None, "line 3") == ab.squash("Line three.")
    assert "thefactisonlinetwo" in texts.place("n.txt", None, "lines 1-2")


def test_masked_personal_data_still_matches_its_source_and_line_breaks_do_not_matter():
    location = ab.squash("Write to\njane.doe@example.com for a refund.")
    assert ab.holds(location, "Write to [EMAIL] for a refund.")
    assert not ab.holds(location, "Write to [EMAIL] for a discount.")


def test_sentences_come_out_whole():
    assert split_statements("Rust conveniently provides the vec! macro, which creates a vector. It is short.") == [
        "Rust conveniently provides the vec! macro, which creates a vector.", "It is short."]
    # A text file keeps its line breaks (line-range citations): a wrapped sentence is still one.
    assert split_statements("3. Grant of Patent License. Subject to the terms of this License,\neach Contributor "
                       "grants a perpetual license.\n\n4. Redistribution.") == [
        "3. Grant of Patent License.",
        "Subject to the terms of this License, each Contributor grants a perpetual license.", "4. Redistribution."]
    statements = split_statements("To check, open a shell and enter this line:\n$ rustc --version\nYou should see it.")
    assert statements[0] == "To check, open a shell and enter this line: $ rustc --version"


def test_a_macro_or_operator_mark_does_not_end_a_sentence():
    # "panic!” section" (a macro inside quotes) and "?演算子" (the ? operator before Japanese text) are not sentence
    # ends; a question mark or bang followed by a space still is.
    assert split_statements("See the “Errors with panic!” section in Chapter 9. Then compile.") == [
        "See the “Errors with panic!” section in Chapter 9.", "Then compile."]
    assert split_statements("main関数で?演算子を使うと、コンパイルエラーになります。次に進みます。") == [
        "main関数で?演算子を使うと、コンパイルエラーになります。", "次に進みます。"]
    assert split_statements("Is it safe? Yes, it is.") == ["Is it safe?", "Yes, it is."]


def test_a_sentence_that_only_leads_the_reader_on_is_not_the_answer():
    # "Let's see what happens when X" restates the question in its own words and answers nothing.
    text = ("Let’s see what happens when we use the ? operator in main. "
            "The ? operator can only be used in functions that return Result.")
    picked = pick_sentences("Can I use the ? operator in main?", [Passage(source_id="S1", text=text)],
                            max_sentences=1)
    assert picked[0].sentence == "The ? operator can only be used in functions that return Result."
    ja = ("main関数で?演算子を使用したらどうなるか見てみましょう。"
          "?演算子は戻り値にResultを持つ関数でしか使用できません。")
    picked = pick_sentences("main関数の中で?演算子を使うことはできますか？",
                            [Passage(source_id="S1", text=ja, lang="ja")], max_sentences=1)
    assert picked[0].sentence == "?演算子は戻り値にResultを持つ関数でしか使用できません。"


def test_a_japanese_question_naming_a_katakana_word_no_document_holds_is_not_answered():
    text = "ベクタは値をメモリ上で隣り合わせに並べます。ベクタに要素を追加するにはpushメソッドを使います。"
    stats = CorpusStats()
    stats.add(Counter(term_id(t) for t in tokenize(text)))
    passages = [Passage(source_id="S1", text=text, lang="ja")]
    # Both questions' best sentences pass the threshold; only the one naming a word no passage has is refused.
    unknown = "ベクタのキャパシティを確保するメソッドは何ですか？"
    assert rank_sentences(unknown, passages, stats)[2][0].score > 0.1
    assert pick_sentences(unknown, passages, stats, min_score=0.1) == []
    assert pick_sentences("ベクタに要素を追加するメソッドは何ですか？", passages, stats, min_score=0.1)


def test_a_katakana_word_no_document_holds_weighs_as_an_identifier_in_a_question_for_a_command():
    # "ナイトリー版をインストールするコマンド": the Rust book has no nightly, and its install command was the answer.
    text = "Rustを最新版に更新するコマンドはrustup updateです。64ビットアーキテクチャなら、usize型は64ビットです。"
    stats = CorpusStats()
    stats.add(Counter(term_id(t) for t in tokenize(text)))
    passages = [Passage(source_id="S1", text=text, lang="ja")]

    def similarity(question, sentences):  # stands in for the bundled model
        return [0.96] * len(sentences)

    def answer(question):
        best = rank_sentences(question, passages, stats, similarity=similarity)[2][0]
        assert UNKNOWN_KANA_WORD_MIN_SCORE < best.evidence < UNKNOWN_WORD_MIN_SCORE["ja"]
        return pick_sentences(question, passages, stats, similarity=similarity, min_score=0.1)

    assert answer("Rustをナイトリー版に更新するコマンドは何ですか？") == []
    # Elsewhere a katakana word may be spelt another way than the documents spell it ("マシン", "マシーン"), also in
    # a question of how to do something.
    assert answer("64ビットのマシンでusize型は何ビットですか？")
    assert answer("64ビットのマシンでusize型が何ビットかを知る方法は？")


def test_a_question_that_asks_for_a_number_is_not_answered_by_sentences_that_state_none():
    # The near misses "Which version of Visual Studio…" and "Rustの安定版は何週間ごとに…": the documents discuss
    # the topic in the question's own words but never give the number it asks for.
    en = Passage(source_id="S1", text="At some point in the installation, you will be prompted to install Visual "
                                      "Studio. It provides a linker and the native libraries needed to compile.")
    ja = Passage(source_id="S2", text="Rustの安定版はrustupでインストールします。新しい安定版がリリースされたら、"
                                      "rustup updateで更新できます。", lang="ja")
    assert pick_sentences("Which version of Visual Studio does the installer need?", [en], min_score=0.3) == []
    assert pick_sentences("Rustの新しい安定版は何週間ごとにリリースされますか？", [ja], min_score=0.3) == []
    # Without abstention (min_score 0) the best sentence is still given; a question asking for no number is answered.
    assert pick_sentences("Which version of Visual Studio does the installer need?", [en], min_score=0.0)
    assert pick_sentences("What does the installer prompt you to install?", [en], min_score=0.3)
    assert pick_sentences("Rustの新しい安定版はどうやって更新しますか？", [ja], min_score=0.3)


def test_a_version_or_a_value_asked_for_is_a_number_and_a_digit_in_a_name_is_not_one():
    # "In which Node.js version was the punycode module removed?" got "In a future major version of Node.js this
    # module will be removed."; "What is the numeric value of ASN1_MAX_NAME_SIZE?" a sentence whose only digits are
    # the constant's own and ASN.1's.
    node = Passage(source_id="S1", text="In a future major version of Node.js this module will be removed.")
    asn = Passage(source_id="S2", text="ASN1_MAX_NAME_SIZE is the maximum number of characters allowed for an ASN.1 "
                                       "identifier.")
    assert pick_sentences("In which Node.js version was the punycode module removed?", [node], min_score=0.3) == []
    assert pick_sentences("What is the numeric value of ASN1_MAX_NAME_SIZE?", [asn], min_score=0.3) == []
    assert pick_sentences("What is the typical size of an ASN.1 identifier in bytes?", [asn], min_score=0.3) == []
    stated = [Passage(source_id="S3", text="The punycode module was removed in Node.js v22."),
              Passage(source_id="S4", text="ASN1_MAX_NAME_SIZE is 64, the maximum length of an ASN.1 identifier.")]
    assert pick_sentences("In which Node.js version was the punycode module removed?", stated[:1], min_score=0.3)
    assert pick_sentences("What is the numeric value of ASN1_MAX_NAME_SIZE?", stated[1:], min_score=0.3)
    # Asking by a numerical value, or what a version does, is not asking for one.
    notes = Passage(source_id="S6", text="This version adds a night mode and a larger filter indicator.")
    assert pick_sentences("What does this version add?", [notes], min_score=0.3)
    sort = Passage(source_id="S5", text="-n, --numeric-sort compare according to string numerical value")
    assert pick_sentences("Which sort option compares according to numerical value?", [sort], min_score=0.3)


def test_a_who_question_gets_the_lead_sentence_that_names_the_person_the_matching_sentence_leaves_out():
    # Articles about a person name them once, then drop the subject: the sentence that matches the question
    # answers "who" only with the lead sentence.
    ja = Passage(source_id="S1", title="山田花子", lang="ja",
                 text="山田花子は、日本の建築家である。東京で生まれ、京都の大学で学んだ。"
                      "木造の図書館を設計し、建築賞を受賞した。")
    picked = pick_sentences("木造の図書館を設計し、建築賞を受賞した建築家は誰ですか？", [ja], min_score=0.3)
    assert [p.sentence for p in picked] == ["山田花子は、日本の建築家である。",
                                            "木造の図書館を設計し、建築賞を受賞した。"]
    en = Passage(source_id="S2", title="Ada Park",
                 text="Ada Park is a bridge engineer. She designed the river crossing at Elm Point in 1990.")
    assert pick_sentences("Who designed the river crossing at Elm Point?", [en], min_score=0.3)[0].sentence \
        == "Ada Park is a bridge engineer."
    # Not for other questions, nor when the answer already names the subject.
    when = pick_sentences("When was the river crossing at Elm Point designed?", [en], min_score=0.3)
    assert [p.sentence for p in when] == ["She designed the river crossing at Elm Point in 1990."]
    assert len(pick_sentences("Who is Ada Park?", [en], min_score=0.3, max_sentences=1)) == 1
    one = pick_sentences("Who designed the river crossing at Elm Point?", [en], min_score=0.3, max_sentences=1)
    assert [p.sentence for p in one] == ["She designed the river crossing at Elm Point in 1990."]


def test_a_who_question_gets_the_lead_that_names_the_person_with_a_middle_name_the_title_leaves_out():
    # JaQuAD's "アルトン・エリス" opens "アルトン・ニーアマイア・エリスは、…": the lead names the title's person.
    ja = Passage(source_id="S1", title="山田・花子", lang="ja",
                 text="山田・ミドル・花子は、日本の建築家である。東京で生まれ、京都の大学で学んだ。"
                      "木造の図書館を設計し、建築賞を受賞した。")
    picked = pick_sentences("木造の図書館を設計し、建築賞を受賞した建築家は誰ですか？", [ja], min_score=0.3)
    assert picked[0].sentence == "山田・ミドル・花子は、日本の建築家である。"
    en = Passage(source_id="S2", title="Ada Park",
                 text="Ada Lovelace Park is a bridge engineer. She designed the river crossing at Elm Point in 1990.")
    assert pick_sentences("Who designed the river crossing at Elm Point?", [en], min_score=0.3)[0].sentence \
        == "Ada Lovelace Park is a bridge engineer."
    # A lead that opens with the first name and goes on to someone else is not the person's.
    other = Passage(source_id="S3", title="Ada Park",
                    text="Ada Lovelace wrote about engines, and Park is a town. She designed the river crossing at Elm "
                         "Point in 1990.")
    assert [p.sentence for p in pick_sentences("Who designed the river crossing at Elm Point?", [other],
                                               min_score=0.3)] \
        == ["She designed the river crossing at Elm Point in 1990."]


def test_the_model_reads_each_sentence_under_its_heading_or_its_documents_title():
    # A sentence alone often does not say what it is about ("浮動小数点数は…" under "浮動小数点型"); a text file's
    # line range says nothing, so its title stands in.
    seen: list[str] = []

    def similarity(question: str, sentences: list[str]) -> list[float]:
        seen.extend(sentences)
        return [0.9] * len(sentences)

    md = Passage(source_id="S1", title="rust-book-ja-data-types", section="データ型 > スカラー型 > 浮動小数点型",
                 text="浮動小数点数は、IEEE-754規格に従って表現されています。", lang="ja")
    txt = Passage(source_id="S2", title="apache-license-2.0", section="lines 71-80",
                  text="Each Contributor hereby grants to You a perpetual patent license.")
    rank_sentences("小数を扱う型はどの規格で表現されますか？", [md], similarity=similarity)
    rank_sentences("How long is the patent license?", [txt], similarity=similarity)
    assert seen == ["データ型 > スカラー型 > 浮動小数点型: 浮動小数点数は、IEEE-754規格に従って表現されています。",
                    "apache-license-2.0: Each Contributor hereby grants to You a perpetual patent license."]
    # A runaway heading path is cut to its innermost part: the sentence is what the model must read.
    deep = md.model_copy(update={"section": " > ".join(["Part"] * 100) + " > 浮動小数点型"})
    seen.clear()
    rank_sentences("小数を扱う型はどの規格で表現されますか？", [deep], similarity=similarity)
    head, sentence = seen[0].split(": ", 1)
    assert head.endswith("> 浮動小数点型") and len(head) <= 160 < len(deep.section)
    assert sentence == "浮動小数点数は、IEEE-754規格に従って表現されています。"


def test_a_passage_without_the_year_the_question_names_does_not_answer_it():
    # "How many visitors in 1953?" is a near miss for a passage about 2005: the sentence from the passage that
    # has the year wins, and with only the 2005 passage the score drops under the threshold.
    p2005 = Passage(source_id="S1", text="In 2005 the library had 17,000 registered visitors.")
    p1953 = Passage(source_id="S2", text="In 1953 the library had about 4,000 registered visitors.")
    question = "How many registered visitors did the library have in 1953?"
    assert pick_sentences(question, [p2005, p1953], max_sentences=1)[0].source_id == "S2"
    alone = pick_sentences(question, [p2005], max_sentences=1)[0].score
    assert alone < pick_sentences(question, [p1953], max_sentences=1)[0].score * 0.7


def test_a_runner_up_close_to_the_best_joins_the_answer_even_without_new_question_words():
    # The best sentence restates the question; the fact is in the runner-up, which holds no question word the
    # best lacks.
    passages = [Passage(source_id="S1", text="The default integer type of Rust is discussed in the chapter on types."),
                Passage(source_id="S2", text="Rust integer types default to i32.")]
    picked = pick_sentences("What is the default integer type of Rust?", passages)
    assert [p.source_id for p in picked] == ["S1", "S2"]


def test_abstention_thresholds_are_per_language_unless_one_number_is_given():
    text = "Vectors store values next to each other in memory."
    passages = [Passage(source_id="S1", text=text)]
    question = "Where do vectors store values?"
    assert pick_sentences(question, passages, min_score={"en": 0.1, "ja": 9.0})
    assert pick_sentences(question, passages, min_score={"en": 9.0, "ja": 0.1}) == []
    assert pick_sentences(question, passages, min_score=9.0) == []


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


@pytest.mark.parametrize(("text", "asked", "answer", "missing"), [
    # Where the user is ("my computer") says nothing of the subject.
    ("To update Rust, run rustup update from your shell. "
     "To uninstall Rust and rustup, run rustup self uninstall from your shell.",
     "How do I uninstall Rust and rustup from my computer?", "rustup self uninstall",
     "How do I uninstall Rust and rustup with Homebrew?"),
    # "period" asks for a time, as "how long" does; the manual states it without the word.
    ("The purifier has a two-year warranty from the date of purchase. "
     "Register the purifier in the app within 30 days to extend the warranty by one year.",
     "What is the warranty period if I register in the app?", "extend the warranty by one year",
     "What is the warranty period if I register in the shop?"),
], ids=["where-the-user-is", "kind-of-answer"])
def test_a_word_that_says_nothing_of_the_subject_is_not_one_the_documents_lack(text, asked, answer, missing):
    stats = CorpusStats()
    stats.add(Counter(term_id(t) for t in tokenize(text)))
    passages = [Passage(source_id="S1", text=text)]
    picked = pick_sentences(asked, passages, stats, min_score=0.2, unknown_word_min_score=1.5, max_sentences=1)
    assert picked and answer in picked[0].sentence
    # A word that names the subject, absent from every document, still asks for the higher score.
    assert pick_sentences(missing, passages, stats, min_score=0.2, unknown_word_min_score=1.5,
                          max_sentences=1) == []


@pytest.mark.parametrize(("asked", "missing", "answer"), [
    ("Does Rust truncate when dividing integers?", "Does Rust truncate when shifting integers?",
     "truncates toward zero"),
    ("Do signed integer types permit being negative?", "Do signed integer types forbid being negative?",
     "permission to be negative"),
], ids=["dividing-division", "permit-permission"])
def test_a_verb_is_not_a_word_the_documents_lack_when_they_use_its_noun(asked, missing, answer):
    # The Rust book says "Integer division truncates toward zero": asked about dividing, the answer was refused as
    # one that names a word no document holds.
    text = ("Rust supports addition, subtraction, multiplication, division, and remainder. In Rust, integer division "
            "truncates toward zero. Signed integer types need no permission to be negative.")
    stats = CorpusStats()
    stats.add(Counter(term_id(t) for t in tokenize(text)))
    passages = [Passage(source_id="S1", text=text)]
    picked = pick_sentences(asked, passages, stats, min_score=0.1, unknown_word_min_score=1.5, max_sentences=1)
    assert picked and answer in picked[0].sentence
    # A verb whose noun no document uses is still a word they lack.
    assert pick_sentences(missing, passages, stats, min_score=0.1, unknown_word_min_score=1.5) == []


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
    assert res["summary"]["dev/en"]["fact_with_right_citation_ci95"] == [0.2065, 1.0]  # 1 of 1: hardly a measure
    # Read in an 80-column terminal, every figure whole (eleven columns across cut them to "95.…").
    table = CliRunner().invoke(app, ["bench-answers", str(root), "--split", "dev"],
                               env={"CITERAG_EMBEDDER": "hashing", "COLUMNS": "80"})
    assert table.exit_code == 0, table.output
    fact = next(line for line in table.output.splitlines() if "fact + right citation" in line)
    assert "100.0%" in fact
    assert any("95% CI" in line and "21-100%" in line for line in table.output.splitlines())
    assert "…" not in table.output
    bad = CliRunner().invoke(app, ["bench-answers", str(tmp_path / "nowhere")], env={"CITERAG_EMBEDDER": "hashing"})
    assert bad.exit_code != 0 and "no such folder" in bad.output


def test_a_wrong_answer_says_where_its_fact_was_among_what_the_answerer_read(tmp_path):
    # The fact ("two weeks") is in the passage search gave, in a sentence that shares one word with the question:
    # the answer quotes the sentence that restates the question, and the report says the fact ranked below it.
    root = tmp_path / "set"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "refunds.md").write_text(
        "# Refunds\n\nRefunds are paid to the card that paid for the order, never in cash.\n\n"
        "Shipping costs are not refunded. Allow two weeks for the money to arrive.\n")
    (root / "questions-en.jsonl").write_text(json.dumps(
        {"id": "en-1", "lang": "en", "question": "When are refunds paid to the card?", "answerable": True,
         "answers": ["two weeks"], "file": "refunds.md"}) + "\n")
    env = {"CITERAG_EMBEDDER": "hashing", "COLUMNS": "200"}
    r = CliRunner().invoke(app, ["bench-answers", str(root), "--split", "dev", "--json"], env=env)
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    fact = res["rows"][0]["fact_at"]
    assert not res["rows"][0]["right"]
    assert fact["stage"] == "ranked_lower" and fact["rank"] > 1 and fact["lexical"] < fact["best_lexical"]
    assert res["summary"]["dev/en"]["wrong_fact_at"] == {"ranked_lower": 1}
    listed = CliRunner().invoke(app, ["bench-answers", str(root), "--split", "dev", "--failures"], env=env)
    assert listed.exit_code == 0, listed.output
    assert f"fact: ranked {fact['rank']} of {fact['of']}" in listed.output
    assert "dev/en: the facts of the wrong answers were ranked below the chosen sentence 1" in listed.output


def test_a_fact_search_never_gave_and_a_fact_the_gate_refused_are_told_apart():
    from citerag.answerer.extractive import Answering

    q = ab.Question(id="en-1", lang="en", question="How long is the patent license?", answerable=True,
                    answers=["perpetual"], file="LICENSE")
    holding = [Passage(source_id="S1", text="The patent license is perpetual, worldwide and royalty-free.")]
    elsewhere = [Passage(source_id="S2", text="The license covers the Work and Derivative Works.")]
    candidates = Answering().candidates
    assert ab.fact_at(q, elsewhere, candidates, abstained=True) == {"stage": "not_retrieved", "passages": 1}
    refused = ab.fact_at(q, holding, candidates, abstained=True)
    assert refused["stage"] == "refused" and refused["rank"] == 1
    assert ab.fact_at(q, holding, candidates, abstained=False)["stage"] == "not_shown"


def test_jaquad_questions_about_a_held_out_paragraph_are_near_misses_and_the_rest_are_answerable(tmp_path):
    from citerag.bench import answers_jaquad as aj

    # Paragraph ids chosen so that one is held out of the index and the others are not.
    ids = [str(i) for i in range(1, 40)]
    out = next(i for i in ids if aj.held_out(i))
    kept = [i for i in ids if not aj.held_out(i)][:2]
    corpus = [{"_id": out, "title": "富士山", "text": "富士山の標高は3776メートルである。"},
              {"_id": kept[0], "title": "富士山", "text": "富士山は静岡県と山梨県にまたがる活火山である。"},
              {"_id": kept[1], "title": "琵琶湖", "text": "琵琶湖は滋賀県にある日本最大の湖である。"}]
    queries = [{"_id": "1", "text": "富士山の標高は何メートルですか？"},
               {"_id": "3", "text": "富士山はどの県にまたがっていますか？"},
               {"_id": "5", "text": "日本最大の湖は何ですか？"}]
    answers = [{"_id": "1", "answers": ["3776メートル"], "context_doc": out},
               {"_id": "3", "answers": ["静岡県と山梨県"], "context_doc": kept[0]},
               {"_id": "5", "answers": ["琵琶湖"], "context_doc": kept[1]}]
    root = tmp_path / "jaquad"
    root.mkdir()
    for name, rows in (("corpus", corpus), ("queries", queries), ("answers", answers)):
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    (root / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{a['_id']}\t{a['context_doc']}\t1\n" for a in answers))
    ds = aj.load(root, 10)
    by_id = {q.id: q for q in ds.questions}
    assert not by_id["jq-1"].answerable and by_id["jq-1"].near == f"jaquad-contexts:{out}"
    assert by_id["jq-3"].answerable and by_id["jq-3"].file == f"jaquad-contexts:{kept[0]}"
    assert {d["_id"] for d in ds.corpus.corpus} == set(kept)
    r = CliRunner().invoke(app, ["bench-answers", str(root), "--split", "all", "--json"],
                           env={"CITERAG_EMBEDDER": "hashing"})
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["documents"] == 2 and len(res["rows"]) == 3
    assert all(not row["misattributed"] for row in res["rows"])


def test_the_excerpt_under_a_source_is_the_cited_sentence_even_across_lines_and_masking():
    from citerag.citations.excerpts import excerpt

    passage = "1. Scope.\nSubject to the terms of this License,\neach Contributor grants a licence.\nWrite to a@b.co."
    assert excerpt("Subject to the terms of this License, each Contributor grants a licence.", passage) == \
        "Subject to the terms of this License, each Contributor grants a licence."
    assert excerpt("Write to [EMAIL].", passage) == "Write to [EMAIL]."  # masked in the answer, masked here
    # The answer joins a Japanese pair with no space where the PDF's text keeps a line break between them (this
    # showed the passage's first 300 characters under the source instead).
    ja = "4. お手入れ\nボタンを5秒間長押ししてリセットしてください。\n交換用フィルターは純正品をお使いください。"
    pair = "ボタンを5秒間長押ししてリセットしてください。交換用フィルターは純正品をお使いください。"
    assert excerpt(pair, ja) == pair
    assert excerpt("A sentence the passage does not hold.", passage).startswith("1. Scope.")
    # A masked value may run over a line break; and what the answer masks stays masked under the source even when
    # the sentence is not found (a paraphrase shows the passage's start, masked).
    assert excerpt("Write to [NAME] for refunds.", "Write to Jane\nDoe for refunds.") == "Write to [NAME] for refunds."
    assert excerpt("Mail [EMAIL] about it.", "Write to a@b.co for refunds.") == "Write to [EMAIL] for refunds."
    # Masked before it is cut: an address the 300-character cut would split is still masked whole.
    cut = excerpt("A paraphrase.", "x" * 290 + " john.doe@example.com wrote this.")
    assert "john" not in cut and "[EMAIL]" in cut
    # With the rules the answer was masked by (an extra rule the default ones lack).
    from citerag.citations.pii import PiiMasker

    staff = PiiMasker(extra={"employee_id": r"\bE\d{6}\b"})
    assert excerpt("Ask [EMPLOYEE_ID].", "Employee E123456 handles it.", mask=lambda t: staff.mask(t)[0]) == \
        "Employee [EMPLOYEE_ID] handles it."
    # Nothing to look for is not found anywhere, and many labels cost no more than one (a regex with a lazy gap per
    # label took minutes on this).
    assert excerpt(" ", passage).startswith("1. Scope.") and excerpt("[EMAIL].", passage).startswith("1. Scope.")
    assert excerpt("[EMAIL] x" * 6 + " y", "x " * 5000).startswith("x x")


def test_the_code_defined_agent_keeps_masked_personal_data_masked_under_the_source():
    from citerag.citations.claude_format import AnswerPart
    from citerag.citations.pii import PiiMasker
    from citerag.citations.verified import finish

    said = "For refunds, write to Hanako Sato at hanako.sato@example.com within 30 days."
    passage = Passage(source_id="S1", text=f"# Refunds\n{said}\nRefunds are paid to the card.", uri="file:///r.md")
    answer, _ = finish("Who do I write to for a refund?", [AnswerPart(text=said, sources=["S1"])], {"S1": passage},
                       PiiMasker())
    shown = [answer.text, *(c.text for c in answer.citations), *(s["excerpt"] for s in answer.flat_citations())]
    assert "[EMAIL]" in answer.text and not any("hanako.sato@" in t for t in shown)
    assert answer.sources[0].excerpt == "For refunds, write to Hanako Sato at [EMAIL] within 30 days."


def test_a_sentence_with_masked_personal_data_keeps_its_citation_and_stays_masked_under_it(tmp_path):
    # The parser masks the e-mail address in the answer; the masked sentence used to lose its source (shown, but
    # cited to nothing) and the excerpt under the source showed the address the answer hid.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "support.md").write_text("# Support\n\nFor refunds, write to Hanako Sato at hanako.sato@example.com "
                                     "within 30 days of purchase.\n\nRefunds are paid to the original card.\n")
    env = {"CITERAG_EMBEDDER": "hashing", "CITERAG_INDEX_PATH": str(tmp_path / "index.sqlite")}
    assert CliRunner().invoke(app, ["ingest", str(docs)], env=env).exit_code == 0
    r = CliRunner().invoke(app, ["ask", "Who do I write to for a refund?", "--json"], env=env)
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["answered"] and "[EMAIL]" in data["answer"] and "hanako.sato@" not in r.stdout
    sentence = next(s for s in data["sentences"] if "[EMAIL]" in s["text"])
    assert sentence["sources"] and data["answer"][sentence["start"]:sentence["end"]] == sentence["text"]
    assert data["citations"][0]["uri"].endswith("support.md") and "[EMAIL]" in data["citations"][0]["excerpt"]


def test_the_sentence_that_restates_the_question_takes_its_neighbour_that_names_the_answer():
    # The first sentence matches the question best but only restates it; the next one names the area asked for.
    text = ("明治政府は区域を東は生田川、西は宇治川と限定した上で、外国人が居留地外に居住することを認めた。"
            "この区域を雑居地といい、居留地返還まで存続した。")
    question = "外国人が居留地以外に居住することが認められた区域を何というか？"
    picked = pick_sentences(question, [Passage(source_id="S1", text=text, lang="ja")], max_sentences=1)
    assert "雑居地" in picked[0].sentence and picked[0].sentence.startswith("明治政府")


def test_a_latin_word_no_document_holds_makes_a_japanese_answer_need_a_higher_score():
    # "FreeBSD" is in no document: the install sentence scores above the Japanese threshold (0.9) but not high
    # enough to answer a question about a system the documents never name; "Linux", which they name, is answered.
    text = ("Rustをインストールするには、rustupというツールを使います。"
            "LinuxかmacOSなら、端末で以下のコマンドを入力してRustをインストールします。")
    stats = CorpusStats()
    stats.add(Counter(term_id(t) for t in tokenize(text)))
    passages = [Passage(source_id="S1", text=text, lang="ja")]

    def similarity(question: str, sentences: list[str]) -> list[float]:
        return [0.9] * len(sentences)

    freebsd = "FreeBSDにRustをインストールするにはどうすればいいですか？"
    _, _, ranked = rank_sentences(freebsd, passages, stats, similarity=similarity)
    assert ANSWER_MIN_SCORE["ja"] < ranked[0].score < UNKNOWN_WORD_MIN_SCORE["ja"]
    assert pick_sentences(freebsd, passages, stats, similarity=similarity, min_score=ANSWER_MIN_SCORE) == []
    linux = "LinuxにRustをインストールするにはどうすればいいですか？"
    assert pick_sentences(linux, passages, stats, similarity=similarity, min_score=ANSWER_MIN_SCORE)
