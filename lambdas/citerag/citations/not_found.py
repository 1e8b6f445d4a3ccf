"""What an answer says when the documents do not answer: in the question's language, and, when every relevant
passage is in the other language, where those passages are (an extractive answerer quotes and cannot translate)."""

from __future__ import annotations

from citerag.documents.text import one_line
from citerag.search.passage import Passage

NOT_FOUND = {
    "en": "The documents do not answer this question.",
    "ja": "ドキュメントには、この質問への回答が見つかりませんでした。",
}
# This answerer quotes and cannot translate: when every passage is in the other language it says where they are.
_ELSEWHERE = {
    "en": "The documents do not answer this question in English. The passages search found are in Japanese "
          "({titles}); ask in Japanese to get an answer quoted from them.",
    "ja": "ドキュメントには、この質問への日本語の回答が見つかりませんでした。検索で見つかった箇所は英語の文書"
          "（{titles}）にあります。英語で質問すると、その文書から引用して回答します。",
}
TITLE_CHARS = 80
# How every message of this answerer that answers nothing begins.
NOT_FOUND_OPENINGS = (*NOT_FOUND.values(), *(m.split("{titles}")[0] for m in _ELSEWHERE.values()))


def in_other_language(lang: str, passages: list[Passage]) -> bool:
    """Whether the relevant passages are all in the other language than the question's (and there are some)."""
    relevant = [p for p in passages if p.relevant]
    return bool(relevant) and lang in NOT_FOUND and all(p.lang in NOT_FOUND and p.lang != lang for p in relevant)


def not_found(lang: str, passages: list[Passage]) -> str:
    """What to say when no sentence answers: NOT_FOUND, naming the documents in the other language when the relevant
    passages are all in it (a Japanese question over an English manual)."""
    lang = lang if lang in NOT_FOUND else "en"
    if not in_other_language(lang, passages):
        return NOT_FOUND[lang]
    titles = list(dict.fromkeys(one_line(p.title)[:TITLE_CHARS] for p in passages if p.relevant
                                and one_line(p.title)))[:2]
    separator = "、" if lang == "ja" else ", "
    return _ELSEWHERE[lang].format(titles=separator.join(titles) or "?")
