"""What the answerer quotes beside its best sentence when that sentence announces the fact: the line it leads into
(docs/answers.md, "How a sentence is chosen")."""

from __future__ import annotations

import pytest

from citerag.answerer.extractive import decide
from citerag.search.passage import Passage


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
