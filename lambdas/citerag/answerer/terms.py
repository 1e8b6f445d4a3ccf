"""The terms lexical evidence counts: the question's that carry its subject, a sentence's (with the operators,
compounds across の and symbols by name a question may ask about), and the question's words no passage holds."""

from __future__ import annotations

import re
from itertools import pairwise

from citerag.answerer import variants
from citerag.answerer.question_kinds import OPTION_WORDS, WANTS_OPTION
from citerag.documents.text import normalize
from citerag.search.query import Query
from citerag.search.sparse import CorpusStats, term_id, tokenize

_HIRAGANA = re.compile(r"[\u3040-\u309f]")
# What a Japanese question asks with, not about: 何/誰 ("何年", "誰か") and the words of "what does X mean" or
# "how do I", like FILLER's "mean" and "way" in English.
_JA_ASKING = re.compile(r"[何誰]")
_JA_FILLER = frozenset({"意味", "意", "味", "方法", "場合", "必要", "可能", "具体", "体的"})


# Operators a question names ("値に+=を使う前に…"): the search tokenizer drops symbols, yet in a manual the operator
# is often the one term that tells the right sentence from its neighbours. Not "::", which joins a path
# ("std::fs") rather than naming an operator. Dev: Japanese facts 69.6% -> 73.9%, nothing else moved.
_OPERATOR = re.compile(r"(?<![-+*/=!<>&|])(?:\+=|-=|\*=|/=|==|!=|->|=>|&&|\|\||<=|>=)(?![-=>&|])")


def operator_terms(text: str) -> set[int]:
    return {term_id("op:" + m) for m in _OPERATOR.findall(normalize(text))}  # NFKC: "＋＝" is "+="


# "改行の数" and "行数" say the same: a noun joined to the next by の is a compound without it, so the bigram across
# the の ("行数") is a term of the text too. A man page's "-l, --lines 改行の数を表示する" never held "行数" and lost
# "wcで行数を表示するオプションは？" to the sentence listing what wc counts ("改行数、単語数…"). The document's side
# only: as terms of the question, such bigrams are mostly no word ("要素の値": "素値") that every answer lacks (dev:
# Rust-book Japanese facts 82.6% -> 78.3%, recall 78.6% -> 71.4%); on this side no benchmark answer changed.
_WORD_CHAR = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u30a1-\u30fa\u30fc"
_GENITIVE = re.compile(f"(?<=([{_WORD_CHAR}]))の(?=([{_WORD_CHAR}]))")


def compound_terms(text: str) -> set[int]:
    if "の" not in text:  # most sentences, every English one: no second normalisation on the scoring path
        return set()
    return {term_id(m.group(1) + m.group(2)) for m in _GENITIVE.finditer(normalize(text))}


# A symbol standing alone in a sentence, by the names a question calls it ("Which ls option shows entries starting
# with a dot?" for "-a, --all do not ignore entries starting with ."; "ドットで始まるファイル" for ". で始まる"): the
# tokenizer drops symbols, so the one word that told the option from the others matched nothing. A name counts as a
# whole word ("ビット" names no dot, "スライス" no slash); not names that are words of their own ("period" of a
# warranty, "star", "hash"), nor "-", which is also a dash and a list marker.
_SYMBOL_NAMES = {".": ("dot", "ドット", "ピリオド"), "~": ("tilde", "チルダ"), "*": ("asterisk", "アスタリスク"),
                 "/": ("slash", "スラッシュ")}
_NAMES_SYMBOL = {sym: re.compile("|".join(rf"(?<![A-Za-z\u30a1-\u30fa\u30fc]){name}s?(?![A-Za-z\u30a1-\u30fa\u30fc])"
                                          for name in names), re.I) for sym, names in _SYMBOL_NAMES.items()}
# Alone: no Latin letter, digit or symbol of its kind beside it (not "a.b", "and/or", "~/"), and a dot after a space,
# a bracket or nothing (not the full stop of "word." or of Japanese set with "．"); not a "* " bullet.
_LONE_SYMBOL = re.compile(r"(?:(?:^|(?<=[\s「『（(\[\"'“]))(\.)|(?<![A-Za-z0-9_.~*/-])([~*/]))(?![A-Za-z0-9_.~*/-])")
_BULLET = re.compile(r"^\s*[*・]\s")


def named_symbols(query: Query) -> dict[str, set[int]]:
    """The symbols a question names in words, each with its name's terms as the question holds them."""
    text = normalize(query.text)
    return {sym: {term_id(t) for name in _SYMBOL_NAMES[sym] for t in tokenize(name)}
            for sym, pattern in _NAMES_SYMBOL.items() if pattern.search(text)}


def _symbol_terms(text: str, named: dict[str, set[int]]) -> set[int]:
    text = _BULLET.sub("", normalize(text))
    return {t for m in _LONE_SYMBOL.finditer(text) if (sym := m.group(1) or m.group(2)) in named for t in named[sym]}


def terms_of(text: str, operators: bool, symbols: dict[str, set[int]] | None = None) -> set[int]:
    """A sentence's terms; its operators only when the question names one, its lone symbols only when the question
    names them (most do not: no need to look)."""
    terms = {term_id(t) for t in tokenize(text)} | compound_terms(text)
    if symbols:
        terms |= _symbol_terms(text, symbols)
    return terms | operator_terms(text) if operators else terms


# A word the question writes closed that a sentence writes open ("codename" and "code name", "filename" and "file
# name", "username" and "user name"): "What was the codename of Debian 1.1?" lost "Debian 1.1 Buzz (…): This was
# the first Debian release with a code name." to sentences on other releases that say "codenamed".
_LATIN_WORDS = re.compile(r"[a-z]+")


def closed_compounds(query: Query, q: set[int]) -> dict[str, int]:
    """The question's long English words that carry its subject, each with its term."""
    if query.lang != "en":
        return {}
    words = {w: term_id(t[0]) for w in _LATIN_WORDS.findall(normalize(query.text)) if len(w) >= 6
             for t in [tokenize(w)] if t}
    return {w: t for w, t in words.items() if t in q}


def open_compounds(text: str, closed: dict[str, int]) -> set[int]:
    words = _LATIN_WORDS.findall(normalize(text))
    return {closed[a + b] for a, b in pairwise(words) if a + b in closed}


def content_terms(query: Query) -> set[int]:
    """The question's terms that carry its subject. In Japanese, bigrams with hiragana are mostly grammar
    ("すか", "か迷"): rare enough to weigh a lot, yet an answer phrased differently never holds them."""
    operators = operator_terms(query.text)
    if query.lang != "ja":
        content = set(query.term_ids)
    else:
        content = {term_id(t) for t in query.tokens
                   if not _HIRAGANA.search(t) and not _JA_ASKING.search(t) and t not in _JA_FILLER} \
            or set(query.term_ids)
    if WANTS_OPTION.search(query.text):
        # "Which option…" names the kind of answer, as 何 does: a manual's sentence on its options in general
        # ("下記のオプションを使って、何を数えて表示するかを選択できます。") held the word and outranked "-w, --words
        # 単語数を表示する".
        content = content - OPTION_WORDS or content
    return content | operators


# Words any question may use that say nothing of its subject: their absence from the documents is no sign. "On my
# machine" is where the user is, not what they ask about (dev: "How do I remove Rust and rustup from my machine?").
# Nouns that name the kind of answer asked for ("What is the warranty period…?") are the question's type, like "how
# long": a document states the period ("a two-year warranty") without the word. No dev answer changed; not "year" or
# "date", whose absence does mark documents that state none (dev: "In what year was the MPL 2.0 released?").
FILLER = frozenset(tokenize(
    "my me mine you your we our us someone somebody anyone people person they them themselves it long many much "
    "machine computer pc laptop "
    "period duration length amount number size type name value reason purpose difference meaning "
    "often count get got do does did make made use used need want can could should would call called mean means "
    "happen happens work way ways thing things kind good best better possible able exist exactly actually really "
    "also still there here how what which who whom whose when where why is are was were be been am the a an to "
    "of in on at by for with and or not no yes if than then so"))
FILLER_IDS = frozenset(term_id(t) for t in FILLER)
_LATIN_WORD = re.compile(r"^[a-z][a-z0-9_.-]*$")


_KATAKANA_WORD = re.compile(r"[\u30a1-\u30fa\u30fc]{2,}")
# A verb's stem and its noun's, as the stemmer leaves them ("divid" of dividing, "divis" of division; "permit",
# "permiss"; "describ", "descript"; "reduc", "reduct"): a question about dividing integers asks about what the manual
# calls integer division, not for a word the documents lack. Not "-vert" ("revert" is not "reverse"), and only
# stems long enough to be a verb's ("ab" is not "apt").
_NOMINALIZED = [(re.compile(ending), noun) for ending, noun in
                ((r"(?<=\w{4})d$", "s"), (r"(?<=\w)mit$", "miss"), (r"(?<=\w{4})b$", "pt"), (r"(?<=\w{4})c$", "ct"))]


def noun_forms(stem: str) -> list[str]:
    return [pattern.sub(noun, stem) for pattern, noun in _NOMINALIZED if pattern.search(stem)]


def unknown_words(query: Query, stats: CorpusStats | None) -> list[str]:
    """The question's words no indexed passage contains, in any form (a verb counts as known by its noun):
    Latin-script words that carry meaning, and katakana words ("キャパシティ", "ナイトリー") one of whose bigrams no
    passage has. Kanji and kana text has no word boundaries without a dictionary, and its bigrams cross them, so
    their absence says little."""
    if stats is None or not stats.n_docs:
        return []
    out = [t for t in dict.fromkeys(query.tokens)
           if _LATIN_WORD.match(t) and t not in FILLER
           and not any(stats.df.get(term_id(form), 0) for form in (t, *noun_forms(t)))]
    for word in dict.fromkeys(_KATAKANA_WORD.findall(normalize(query.text))):
        if any(not stats.df.get(term_id(word[i : i + 2]), 0) for i in range(len(word) - 1)):
            out.append(word)
    return [w for w in out if not variants.known(w, query, stats)]  # another spelling or synonym is indexed
