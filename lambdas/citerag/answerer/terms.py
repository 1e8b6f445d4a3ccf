"""The terms lexical evidence counts: the question's that carry its subject, a sentence's (operators, compounds across
の, symbols by name), and the question's words no passage holds (docs/answers.md "How a sentence is chosen")."""

from __future__ import annotations

from functools import cache, partial
from itertools import pairwise

from citerag.answerer import rules, variants
from citerag.documents.text import normalize
from citerag.search.query import Query
from citerag.search.sparse import CorpusStats, term_id, tokenize

rx = partial(rules.compiled, "terms")


def operator_terms(text: str) -> set[int]:
    return {term_id("op:" + m) for m in rx("operator").findall(normalize(text))}  # NFKC: "＋＝" is "+="


def compound_terms(text: str) -> set[int]:
    """The document's side only: as terms of a question, bigrams across の are mostly no word ("要素の値": "素値")."""
    if "の" not in text:  # most sentences, every English one: no second normalisation on the scoring path
        return set()
    return {term_id(m.group(1) + m.group(2)) for m in rx("genitive").finditer(normalize(text))}


def named_symbols(query: Query) -> dict[str, set[int]]:
    """The symbols a question names in words, each with its name's terms as the question holds them."""
    text = normalize(query.text)
    return {sym: {term_id(t) for name in names for t in tokenize(name)}
            for sym, names in rules.lexicon("symbol_names").items()
            if rx("names_symbol", names="|".join(names)).search(text)}


def _symbol_terms(text: str, named: dict[str, set[int]]) -> set[int]:
    text = rx("bullet").sub("", normalize(text))
    return {t for m in rx("lone_symbol").finditer(text) if (sym := m.group(1) or m.group(2)) in named
            for t in named[sym]}


def terms_of(text: str, operators: bool, symbols: dict[str, set[int]] | None = None) -> set[int]:
    """A sentence's terms; its operators and lone symbols only when the question names them (most do not)."""
    terms = {term_id(t) for t in tokenize(text)} | compound_terms(text)
    if symbols:
        terms |= _symbol_terms(text, symbols)
    return terms | operator_terms(text) if operators else terms


def closed_compounds(query: Query, q: set[int]) -> dict[str, int]:
    """The question's long content words, each with its term: a sentence may write them open (codename, code name)."""
    if query.lang != "en":
        return {}
    min_chars = rules.number("closed_compound_min_chars")
    words = [(w, tokenize(w)) for w in rx("latin_words").findall(normalize(query.text)) if len(w) >= min_chars]
    return {w: term_id(t[0]) for w, t in words if t and term_id(t[0]) in q}


def open_compounds(text: str, closed: dict[str, int]) -> set[int]:
    words = rx("latin_words").findall(normalize(text))
    return {closed[a + b] for a, b in pairwise(words) if a + b in closed}


def content_terms(query: Query) -> set[int]:
    """The question's terms that carry its subject. In Japanese, bigrams with hiragana are mostly grammar: rare
    enough to weigh a lot, yet an answer phrased differently never holds them."""
    operators = operator_terms(query.text)
    if query.lang != "ja":
        content = set(query.term_ids)
    else:
        filler = set(rules.lexicon("ja_filler"))
        content = {term_id(t) for t in query.tokens
                   if not rx("hiragana").search(t) and not rx("ja_asking").search(t) and t not in filler} \
            or set(query.term_ids)
    return content | operators


@cache
def filler() -> frozenset[str]:
    return frozenset(tokenize(" ".join(rules.lexicon("filler"))))


@cache
def filler_ids() -> frozenset[int]:
    return frozenset(term_id(t) for t in filler())


def noun_forms(stem: str) -> list[str]:
    """A verb's stem and its noun's ("divid" of dividing, "divis" of division)."""
    return [rx(rule).sub(noun, stem) for rule, noun in rules.lexicon("noun_endings").items() if rx(rule).search(stem)]


def unknown_words(query: Query, stats: CorpusStats | None) -> list[str]:
    """The question's words no indexed passage holds in any form (a verb is known by its noun): Latin-script words
    that carry meaning, and katakana words with a bigram no passage has (other bigrams cross word boundaries)."""
    if stats is None or not stats.n_docs:
        return []
    out = [t for t in dict.fromkeys(query.tokens)
           if rx("latin_word").match(t) and t not in filler()
           and not any(stats.df.get(term_id(form), 0) for form in (t, *noun_forms(t)))]
    for word in dict.fromkeys(rx("katakana_word").findall(normalize(query.text))):
        if any(not stats.df.get(term_id(word[i : i + 2]), 0) for i in range(len(word) - 1)):
            out.append(word)
    return [w for w in out if not variants.known(w, query, stats)]  # another spelling or synonym is indexed
