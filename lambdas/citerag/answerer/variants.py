"""Word variants: a question's word also counts as held by a sentence that writes it another way (docs/answers.md
"Word variants"). Process-wide (`use`, from Components), so no signature between the ranking and the gate changes."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from citerag.answerer import rules
from citerag.documents.text import normalize
from citerag.search.query import Query
from citerag.search.sparse import CorpusStats, term_id, tokenize

LEXICON = Path(__file__).parent / "variants.json"

Word = Annotated[str, StringConstraints(min_length=2, max_length=40, strip_whitespace=True)]


class Group(BaseModel):
    """Words that name the same thing. `targets` are matched in a sentence, never looked for in a question (the
    Sudachi synonym dictionary's words that do not trigger expansion)."""
    lang: Literal["en", "ja"]
    words: list[Word] = Field(min_length=1, max_length=16)
    targets: list[Word] = Field(default_factory=list, max_length=16)
    source: str = Field(min_length=3, max_length=300)


class Lexicon(BaseModel):
    about: str
    groups: list[Group] = Field(max_length=5000)


# text -> (surface, normalised form, reading) of each content word written in kana or kanji (Sudachi)
Forms = Callable[[str], list[tuple[str, str, str]]]
rx = partial(rules.compiled, "terms")


class _Config:
    def __init__(self) -> None:
        self.enabled = True
        self.forms: Forms | None = None
        self.lock = threading.Lock()


_config = _Config()


def use(enabled: bool, forms: Forms | None = None) -> None:
    """Set by Components from the settings: whether variants count, and Sudachi's analysis when installed."""
    with _config.lock:
        _config.enabled, _config.forms = enabled, forms
        _expansion.cache_clear()
        _sentence.cache_clear()


@lru_cache(maxsize=1)
def lexicon(path: Path = LEXICON) -> Lexicon:
    return Lexicon.model_validate_json(path.read_text(encoding="utf-8"))


def _words(text: str) -> tuple[str, ...]:
    """Latin words as the index stems them, stop words kept as they are."""
    return tuple(next(iter(tokenize(w)), w) for w in rx("latin_run").findall(normalize(text)))


@dataclass(frozen=True)
class _Spelling:
    """How a word is found in a text: English by its stemmed words in a row, stop words too ("log in" is not in
    "logging"); Japanese as written, a katakana end not inside a longer katakana word (not メール in メールアドレス)."""
    tokens: tuple[str, ...]
    pattern: re.Pattern[str] | None

    @classmethod
    def of(cls, word: str, lang: str) -> _Spelling:
        if lang == "en":
            return cls(_words(word), None)
        text = normalize(word)
        start, end = bool(rx("starts_katakana").search(text)), bool(rx("ends_katakana").search(text))
        rule = "spelled_katakana_both" if start and end else "spelled_katakana_start" if start \
            else "spelled_katakana_end" if end else "spelled"
        return cls((), rx(rule, word=re.escape(text)))

    def found(self, text: str, tokens: tuple[str, ...]) -> bool:
        if self.pattern is not None:
            return bool(self.pattern.search(text))
        n = len(self.tokens)
        return n > 0 and any(tokens[i : i + n] == self.tokens for i in range(len(tokens) - n + 1))


@dataclass(frozen=True)
class Expansion:
    """A question's words that have variants: each variant's spelling with the question's terms it stands for, and
    the Sudachi keys of the question's words with theirs."""
    spellings: tuple[tuple[_Spelling, frozenset[int]], ...]
    keys: dict[tuple[str, ...], frozenset[int]]


def _keys(surface: str, normalized: str, reading: str) -> list[tuple[str, ...]]:
    """A word's spelling-free keys: its normalised form, and its reading with its kanji (okurigana differ)."""
    kanji = "".join(rx("kanji").findall(surface))
    return [("n", normalized)] + ([("r", reading, kanji)] if kanji and reading else [])


@lru_cache(maxsize=4096)
def _expansion(text: str, lang: str) -> Expansion:
    spellings = []
    norm, tokens = normalize(text), _words(text)
    for group in (g for g in lexicon().groups if g.lang == lang):
        for word in group.words:
            if _Spelling.of(word, lang).found(norm, tokens):
                terms = frozenset(term_id(t) for t in tokenize(word))
                spellings += [(_Spelling.of(other, lang), terms) for other in (*group.words, *group.targets)
                              if other != word]
    keys: dict[tuple[str, ...], frozenset[int]] = {}
    forms = _config.forms
    if forms is not None and lang == "ja":
        for surface, normalized, reading in forms(text):
            terms = frozenset(term_id(t) for t in tokenize(surface))
            for key in _keys(surface, normalized, reading):
                keys[key] = keys.get(key, frozenset()) | terms
    return Expansion(tuple(spellings), keys)


def expansion(query: Query) -> Expansion | None:
    if not _config.enabled:
        return None
    found = _expansion(query.text, query.lang)
    return found if found.spellings or found.keys else None


@lru_cache(maxsize=65536)
def _sentence(text: str, lang: str, sudachi: bool) -> tuple[str, tuple[str, ...], frozenset[tuple[str, ...]]]:
    forms = _config.forms if sudachi else None
    keys = frozenset(k for w in forms(text) for k in _keys(*w)) if forms is not None else frozenset()
    return normalize(text), _words(text) if lang == "en" else (), keys


def variant_terms(query: Query, text: str) -> set[int]:
    """The question's terms that `text` holds in another form (the ranking intersects them with those it weighs)."""
    found = expansion(query)
    if found is None:
        return set()
    norm, tokens, keys = _sentence(text, query.lang, bool(found.keys))
    held = {t for spelling, terms in found.spellings if spelling.found(norm, tokens) for t in terms}
    return held.union(*(found.keys[key] for key in keys & found.keys.keys()))


def _indexed(word: str, stats: CorpusStats) -> bool:
    ids = [term_id(t) for t in tokenize(word)]
    return bool(ids) and all(stats.df.get(t, 0) for t in ids)


def known(word: str, query: Query, stats: CorpusStats) -> bool:
    """Whether a question's word no passage holds (a stemmed English token, or a katakana word) has a variant some
    passage holds: then its absence is no sign that the documents are about something else."""
    if not _config.enabled:
        return False
    for group in (g for g in lexicon().groups if g.lang == query.lang):
        own = [w for w in group.words if (tokenize(w) == [word] if query.lang == "en" else normalize(w) == word)]
        if own and any(_indexed(other, stats) for other in (*group.words, *group.targets) if other not in own):
            return True
    forms = _config.forms
    if forms is not None and query.lang == "ja" and not word.isascii():
        # The index's Sudachi words ("ja:" + normalised form) say whether a passage writes it some other way.
        # One word only: a compound's parts may each be indexed where the compound is not.
        words = forms(word)
        return len(words) == 1 and bool(stats.df.get(term_id("ja:" + words[0][1]), 0))
    return False
