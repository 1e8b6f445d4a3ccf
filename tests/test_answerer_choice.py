"""What the answerer quotes when the sentence that matches the question only announces the fact, and how the learned
order reads a Japanese sentence that names an option the question does not (docs/answers.md)."""

from __future__ import annotations

import pytest

from citerag.answerer.extractive import decide
from citerag.answerer.ranking import Candidate
from citerag.answerer.sentence_model import FEATURES, SentenceModel, features
from citerag.search.passage import Passage
from citerag.search.query import analyze


def _answer(question: str, text: str, lang: str) -> tuple[list[str], dict[str, str]]:
    picked, decision = decide(question, [Passage(source_id="S1", text=text, lang=lang, title="guide")])
    return [p.sentence for p in picked], {w.text: w.chosen_by for w in decision.weighed}


@pytest.mark.parametrize(("question", "text", "fact"), [
    # MeCab's dictionary guide: the setting is the line under the one that says where to add it.
    ("ユーザ辞書を使うには mecabrc に何を追加しますか？",
     "辞書のコンパイルには mecab-dict-index を使います。\n\n"
     "ユーザ辞書を使うには /usr/local/etc/mecabrc に以下を追加\n\n"
     "userdic = /home/foo/bar/foo.dic\n\n辞書の形式は CSV です。", "userdic = /home/foo/bar/foo.dic"),
    # lltjp-geometry's manual: a sentence that runs on with a comma into the command.
    ("縦組クラスの自動判定を上書きしたい場合はどうしますか？",
     "縦組クラスは tarticle などです。\n\n縦組クラスの自動判定を上書きしたい場合は，\n\n"
     "\\PassOptionsToPackage{disable}{lltjp-geometry}\n\nと書く．", "\\PassOptionsToPackage{disable}{lltjp-geometry}"),
    ("How do I raise the connection limit in settings.ini?",
     "The limit is set in the configuration file. To raise it, add the following line to settings.ini\n\n"
     "max_connections = 500\n\nRestart the server afterwards.", "max_connections = 500"),
], ids=["ja-以下を追加", "ja-comma", "en-the-following"])
def test_a_sentence_that_announces_what_follows_is_answered_with_the_line_it_leads_into(question, text, fact):
    sentences, chosen = _answer(question, text, "en" if question.isascii() else "ja")
    assert sentences[-1] == fact  # in document order, after the sentence that announces it
    assert chosen[fact] == "the sentence the best one leads into"


def test_a_sentence_that_announces_nothing_is_answered_without_the_next_line():
    # "10以下" is a bound, not "what follows".
    sentences, chosen = _answer("並列数はいくつ以下で指定しますか？",
                                "並列数は10以下の整数で指定する。\n\nオプション -v で詳しく表示する。", "ja")
    assert "オプション -v で詳しく表示する。" not in sentences
    assert "the sentence the best one leads into" not in chosen.values()


def _cand(pos: int, text: str, score: float) -> Candidate:
    return Candidate(rank=0, pos=pos, last=pos, text=text, lexical=score, similarity=0.85, factor=1.0, bonus=0.0,
                     score=score, evidence=score)


# nkf's manual: the question shares more words with the sentence about detection than with the option that does it.
_NKF = [_cand(0, "入力漢字コード系が何であるかを知らなくても、出力漢字コード系のみ指定すれば良い。", 0.9),
        _cand(1, "-g 自動判別の結果を出力します。", 0.3),
        _cand(2, "--guess と同じ動作をするのは nkf です。", 0.2)]
_ASKED = "ファイルの文字コードを nkf がどう判定したかだけを知りたいときは、何を指定しますか？"


def test_the_order_counts_the_latin_terms_a_japanese_sentence_holds_that_the_question_does_not():
    column = features("ja", _NKF, _ASKED)[:, FEATURES.index("ja_new_terms")]
    # None, one (-g), one (--guess: nkf is the question's own).
    assert column[0] == 0.0 and column[1] > 0.0 and column[2] == column[1]
    # English sentences are read as before.
    assert not features("en", _NKF, _ASKED)[:, FEATURES.index("ja_new_terms")].any()


def test_an_order_that_weighs_new_terms_puts_first_the_line_that_names_the_option():
    only = SentenceModel(names=FEATURES, mean=(0.0,) * len(FEATURES), scale=(1.0,) * len(FEATURES),
                         weights=tuple(1.0 if f == "ja_new_terms" else 0.0 for f in FEATURES))
    assert only.order(analyze(_ASKED), [], list(_NKF))[0] is _NKF[1]


def test_the_committed_order_favours_a_japanese_sentence_that_names_what_the_question_lacks():
    weights = dict(zip(FEATURES, SentenceModel.load().weights, strict=True))
    assert weights["ja_new_terms"] > 0
