"""Word variants: a question's word matches a sentence that writes it another way (a synonym, a loanword or a
native term, another spelling), and only then."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citerag.adapters.sudachi_tokens import SudachiTokens, sudachi_installed
from citerag.answerer import variants
from citerag.answerer.ranking import rank_sentences
from citerag.answerer.terms import content_terms, unknown_words
from citerag.cli import app
from citerag.search.passage import Passage
from citerag.search.query import analyze
from citerag.search.sparse import CorpusStats, term_counts, term_id

FIXTURE = Path(__file__).parent / "fixtures" / "variants"
needs_sudachi = pytest.mark.skipif(not sudachi_installed(), reason="needs the japanese extra")


@pytest.fixture
def lexicon_only():
    """The lexicon alone (as where the japanese extra is not installed), and the setting as it was after."""
    before = (variants._config.enabled, variants._config.forms)
    variants.use(True, None)
    yield
    variants.use(*before)


@pytest.fixture
def with_sudachi():
    before = (variants._config.enabled, variants._config.forms)
    variants.use(True, SudachiTokens().forms)
    yield
    variants.use(*before)


def held_share(question: str, sentence: str) -> float:
    """The share of the question's terms the sentence holds, as the ranking counts it."""
    query = analyze(question)
    _, _, ranked = rank_sentences(query, [Passage(source_id="S1", text=sentence, relevant=True, lang=query.lang)])
    return ranked[0].lexical


def test_every_group_of_the_lexicon_says_where_it_came_from_and_names_one_thing_in_one_language():
    data = json.loads(variants.LEXICON.read_text(encoding="utf-8"))
    groups = variants.lexicon().groups
    assert len(groups) == len(data["groups"]) and 20 <= len(groups) <= 500
    for group in groups:
        assert group.source.startswith(("curated:", "WordNet 3.0", "SudachiDict")), group
        words = [*group.words, *group.targets]
        assert len(set(words)) == len(words) >= 2, group
        # A Japanese group holds no Latin spelling: an English word would match in English passages.
        assert group.lang == "en" or not any(w.isascii() for w in words), group


def test_a_bad_lexicon_is_refused_with_what_is_wrong(tmp_path):
    bad = tmp_path / "variants.json"
    bad.write_text(json.dumps({"about": "x", "groups": [{"lang": "fr", "words": ["a"], "source": ""}]}))
    with pytest.raises(ValueError, match=r"lang|words|source"):
        variants.lexicon.__wrapped__(bad)


def test_an_english_synonym_in_the_sentence_holds_the_question_word(lexicon_only):
    # The filter's light: "sign" in the question, "indicator" in the manual.
    question = "When does the filter sign turn red?"
    sentence = "The filter indicator turns red when it needs replacing."
    assert held_share(question, sentence) == 1.0
    variants.use(False)
    assert held_share(question, sentence) < 1.0


def test_a_phrase_matches_as_a_whole_not_by_one_of_its_words(lexicon_only):
    # "log in" is not in "logging", nor "sign in" in "sign": stop words count inside a phrase.
    logging = analyze("What is the default logging level?")
    assert not variants.variant_terms(logging, "Sign in with your account.") & content_terms(logging)
    login = analyze("How do I log in?")
    assert variants.variant_terms(login, "Sign in with your account.") & content_terms(login)


def test_a_katakana_loanword_matches_its_native_term_and_back(lexicon_only):
    sentence = "読み込み専用のファイルは、複製してから編集します。"
    assert held_share("リードオンリーのファイルを編集するには？", sentence) == 1.0
    assert held_share("読み取り専用のファイルを編集するには？",
                      "リードオンリーのファイルは複製してから編集します。") == 1.0
    variants.use(False)
    assert held_share("リードオンリーのファイルを編集するには？", sentence) < 1.0


def test_a_katakana_word_does_not_match_inside_a_longer_one(lexicon_only):
    # メール (email) is not in メールアドレス, nor デフォルト in a word that merely contains it.
    query = analyze("電子メールの送り方は？")
    assert not variants.variant_terms(query, "メールアドレスを登録します。") & content_terms(query)
    assert variants.variant_terms(query, "メールは送信ボタンで送ります。") & content_terms(query)


def test_a_word_the_sentence_already_holds_scores_as_before(lexicon_only):
    # The question's terms and their weights do not change: only sentences holding a variant gain.
    question = "Which argument sets the name?"
    sentence = "The name argument sets the attribute's name."
    on = held_share(question, sentence)
    variants.use(False)
    assert held_share(question, sentence) == on


@needs_sudachi
@pytest.mark.parametrize(("question", "sentence"), [
    ("ファイルの取扱い方法は？", "ファイルの取り扱い方法を説明します。"),  # okurigana
    ("サーバーの設定ファイルはどこですか？", "サーバの設定ファイルは /etc にあります。"),  # a long vowel mark
    ("インターフェイスの設定はどこですか？", "インタフェースの設定は /etc にあります。"),  # another katakana spelling
])
def test_sudachi_spellings_of_one_word_match(with_sudachi, question, sentence):
    on = held_share(question, sentence)
    variants.use(True, None)
    assert on > held_share(question, sentence)
    assert on == 1.0


def _stats(*texts: str, extra=None) -> CorpusStats:
    stats = CorpusStats()
    for text in texts:
        counts = term_counts(text)
        if extra is not None:
            counts.update(Counter(term_id(t) for t in extra(text)))
        stats.add(counts)
    return stats


def test_a_word_no_passage_holds_is_known_when_a_synonym_is_indexed(lexicon_only):
    # The gate raises its threshold for a question word no passage holds; a synonym indexed is no such sign.
    stats = _stats("The filter indicator turns red.", "Night mode is quiet.")
    assert unknown_words(analyze("What does the filter sign mean?"), stats) == []
    assert unknown_words(analyze("What does the filter glyph mean?"), stats) == ["glyph"]
    stats = _stats("読み込み専用のファイルは複製してから編集します。")
    assert unknown_words(analyze("リードオンリーのファイルは？"), stats) == []
    variants.use(False)
    assert unknown_words(analyze("リードオンリーのファイルは？"), stats) == ["リードオンリー"]


@needs_sudachi
def test_a_katakana_word_is_known_when_the_index_holds_another_spelling(with_sudachi):
    tokens = SudachiTokens()
    stats = _stats("ユーザの設定はホームディレクトリにあります。", extra=tokens.extra)
    assert unknown_words(analyze("ユーザーの設定はどこ？"), stats) == []
    assert unknown_words(analyze("アカウンタビリティの設定はどこ？"), stats) == ["アカウンタビリティ"]


@pytest.mark.parametrize(("question", "expected"), [
    ("What does a red filter sign mean?", "The filter indicator turns red"),
    ("リードオンリーのファイルを編集するには？", "読み込み専用のファイルを編集するには"),
])
def test_ask_answers_a_question_that_uses_another_word_than_the_document(tmp_path, question, expected):
    # End to end with the bundled model and the default gate: without variants both were "not found".
    env = {"CITERAG_DATA_DIR": str(tmp_path / "data")}
    assert CliRunner().invoke(app, ["ingest", str(FIXTURE)], env=env).exit_code == 0
    out = json.loads(CliRunner().invoke(app, ["ask", question, "--json"], env=env).stdout)
    assert out["answered"] and expected in out["answer"]
    assert all(c["uri"].startswith(str(FIXTURE)) or "variants" in c["uri"] for c in out["citations"])
    off = json.loads(CliRunner().invoke(app, ["ask", question, "--json"],
                                        env={**env, "CITERAG_ANSWER_VARIANTS": "false"}).stdout)
    assert not off["answered"]


def test_a_sentence_that_holds_a_variant_of_the_questions_word_lacks_nothing_the_gate_sees(lexicon_only):
    from citerag.answerer.extractive import decide

    passage = Passage(source_id="S1", text="Each project keeps its settings in a hidden directory at its root.",
                      title="Guide", section="Guide > Settings", relevant=True)
    _, decision = decide("Where does each project keep its settings folder?", [passage])
    assert decision.features["sentence_lacks"] == 0.0 and decision.features["passage_lacks"] == 0.0
    assert decision.features["sentence_cover"] == 1.0
    variants.use(False, None)
    _, without = decide("Where does each project keep its settings folder?", [passage])
    assert without.features["sentence_lacks"] > 0.0 and without.features["sentence_cover"] < 1.0


def test_a_passage_that_names_the_asked_document_by_a_variant_is_about_it(lexicon_only):
    from citerag.answerer.extractive import decide

    # "folder" names the folder options document; the replication passage writes "directory".
    options = Passage(source_id="S1", text="The folder options dialog lists the views.", title="Folder options",
                      section="Folder options > Views", relevant=True)
    replication = Passage(source_id="S2", text="Replication copies every file of the shared directory to the server "
                          "every ten minutes.", title="Replication", section="Replication > Schedule", relevant=True)
    question = "How often are the files of the shared folder copied to the server?"
    picked, decision = decide(question, [options, replication])
    assert [p.source_id for p in picked] == ["S2"] and decision.features["about"] == 1.0
    variants.use(False, None)
    _, without = decide(question, [options, replication])
    assert without.features["about"] == 0.0
