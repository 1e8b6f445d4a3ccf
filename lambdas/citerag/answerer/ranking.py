"""Every statement of the passages search found, scored as an answer to the question (the score: docs/answers.md
"How a sentence is chosen"). `extractive` picks the answer from this ranking."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import NamedTuple

import numpy as np

from citerag.answerer import question_kinds as kinds
from citerag.answerer import rules
from citerag.answerer.terms import (
    closed_compounds,
    content_terms,
    filler,
    named_symbols,
    noun_forms,
    open_compounds,
    operator_terms,
    terms_of,
)
from citerag.answerer.variants import variant_terms
from citerag.citations.statements import (
    CAPTION,
    CODE,
    MARKUP,
    ends_statement,
    is_code_line,
    is_row,
    looks_like_heading,
    runs_into_command,
    split_statements,
)
from citerag.documents.chunking import LINE_RANGE
from citerag.documents.text import detect_language, is_cjk, normalize
from citerag.search.passage import Passage
from citerag.search.query import Query, analyze
from citerag.search.sparse import CorpusStats, tokenize

Similarity = Callable[[str, list[str]], list[float]]  # (question, sentences) -> each sentence's cosine to it
# Reorders the scored candidates (the learned order, `sentence_model`); their scores stay as they are.
Order = Callable[[Query, list[Passage], list["Candidate"]], list["Candidate"]]
rx = partial(rules.compiled, "sentences")
N = rules.number
SIMILARITY_WEIGHT = N("similarity_weight")
SIMILARITY_FLOOR = N("similarity_floor")
HEADING_CHARS = 160


@dataclass(frozen=True)
class Candidate:
    rank: int
    pos: int
    last: int
    text: str
    lexical: float
    similarity: float
    factor: float
    bonus: float
    score: float
    evidence: float  # the score without the terms the document's title lent: what the abstention gate reads


def answer_score(lexical: float, similarity: float | None, rank: int, factor: float, bonus: float) -> float:
    """The penalties (fragment, heading, markup) scale the evidence; the question-type bonus is added after."""
    semantic = SIMILARITY_WEIGHT * (similarity - SIMILARITY_FLOOR) if similarity is not None else 0.0
    return (lexical + semantic + 0.05 / (rank + 1)) * factor + bonus


def _as_named(number: str) -> re.Pattern[str]:
    """The question's number as a passage names it: not inside a version or decimal ("Rust 1.0" not in "1.05")."""
    return rx("as_named_decimal" if "." in number else "as_named", number=re.escape(number))


def _path(passage: Passage) -> str:
    """A passage's heading path; "" for a page or a text file's line range, which say nothing of the topic."""
    return passage.section if passage.section and not LINE_RANGE.match(passage.section) else ""


def _own_heading(passage: Passage) -> str:
    """The innermost heading of a Markdown or HTML passage's section, normalised; "" for any other passage."""
    return normalize(path.rsplit(" > ", 1)[-1]).strip() if (path := _path(passage)) else ""


def _heading(passage: Passage) -> str:
    """What a passage is about: its heading path (the innermost headings say the most), else its document's title."""
    return _path(passage)[-HEADING_CHARS:] or passage.title[:HEADING_CHARS]


def shows_code(text: str) -> bool:
    return bool(is_code_line(text) or CODE.search(text))


def does_what_asked(query: Query, code: bool = True) -> Callable[[str], bool] | None:
    """For "How do I <verb>…" ("…を変換するには"): whether a sentence says the verb in any form, not negated, or
    (`code`) shows code. None for other questions and for verbs that say nothing ("get", "use", "know")."""
    def code_shown(text: str) -> bool:
        return code and (shows_code(text) or bool(rx("named_code").search(text)))

    if not kinds.on("how_to"):
        return None
    if asked_ja := kinds.rx("how_to_ja").search(query.text):
        word = normalize(asked_ja.group(1))
        kanji = rx("kanji_tail").search(word)
        said = kinds.rx("said_ja", word=re.escape(kanji.group(0) if kanji else word))
        return lambda text: code_shown(text) or bool(said.search(normalize(text)))
    asked = kinds.rx("how_to").match(query.text)
    verb = tokenize(asked.group(1)) if asked else []
    if not verb or verb[0] in filler() or (verb[0] in _not_actions()
                                           and not rx("finds_a_thing").match(query.text, asked.end())):
        return None
    forms = {verb[0], *noun_forms(verb[0])}
    return lambda text: code_shown(text) or bool(forms & set(tokenize(kinds.rx("negated").sub(" ", text))))


@cache
def _not_actions() -> frozenset[str]:
    return frozenset(tokenize(" ".join(rules.lexicon("not_actions"))))


@dataclass(frozen=True)
class _Asked:
    """The question, read once: its content terms with their weights, and what tells a sentence that answers it."""
    query: Query
    weight: dict[int, float]
    total: float
    operators: bool
    symbols: dict[str, set[int]]
    closed: dict[str, int]
    numbers: list[re.Pattern[str]]  # the numbers it names, as a passage names them
    days: list[re.Pattern[str]]
    says: Callable[[str], bool] | None  # "How do I <verb>": whether a sentence says the verb
    holds_number: Callable[[str], bool] | None  # for a question that asks for a number
    evidence: list[Callable[[str], bool]]  # of the asked type: each adds to a sentence's score


def _weights(query: Query, terms: set[int], stats: CorpusStats | None) -> dict[int, float]:
    """Each content term's IDF; an operator the question names ("+=") weighs as its rarest word."""
    weight = {t: stats.idf(t) if stats and stats.n_docs else 1.0 for t in terms}
    operators = operator_terms(query.text)
    words = sorted(w for t, w in weight.items() if t not in operators)
    if words:
        # Unindexed, an operator's IDF would be the highest; at the median word's, the dev question on "+=" fails.
        for t in operators & weight.keys():
            weight[t] = words[-1]
    return weight


def _read(query: Query, terms: set[int], stats: CorpusStats | None) -> _Asked:
    weight = _weights(query, terms, stats)
    evidence = [kinds.names if kinds.wants_name(query) else None, kinds.kind_evidence(query),
                kinds.reason_evidence(query)]
    text = normalize(query.text)
    return _Asked(query=query, weight=weight, total=sum(weight.values()) or 1.0,
                  operators=bool(operator_terms(query.text)), symbols=named_symbols(query),
                  closed=closed_compounds(query, terms),
                  numbers=[_as_named(n) for n in set(rx("question_number").findall(text.replace(",", "")))],
                  days=[rx("day", day=re.escape(day)) for day in rx("question_day").findall(text)],
                  says=does_what_asked(query, code=False), holds_number=_numbers(query),
                  evidence=[e for e in evidence if e is not None])


def _off_topic(asked: _Asked, p: Passage, path: str) -> float:
    """missing_number_factor for a passage that lacks a number the question names ("in 1953"), its headings
    included; a day in Japanese form is looked for in Japanese text only (English writes "January 9")."""
    if not asked.numbers and not asked.days:
        return 1.0
    place = normalize(f"{p.title} {path} {p.text}").replace(",", "")
    missing = not all(n.search(place) for n in asked.numbers) \
        or (p.lang == asked.query.lang and not all(day.search(place) for day in asked.days))
    return N("missing_number_factor") if missing else 1.0


def _units(spans: list[str], heading: list[bool], owns: list[bool], lang: str) -> list[tuple[int, int, str]]:
    """(first statement, last statement, text) of each statement and of each pair of neighbours read as one."""
    units: list[tuple[int, int, str]] = []
    for pos, text in enumerate(spans):
        units.append((pos, pos, text))
        complete = (ends_statement(text) and not runs_into_command(text)) or text.endswith((":", "："))
        if pos + 1 < len(spans) and len(text) + len(spans[pos + 1]) <= 500 \
                and not text.endswith(("?", "？")) and complete and not heading[pos + 1] and not owns[pos] \
                and not (is_row(text) and is_row(spans[pos + 1])):
            # The fact often follows the sentence that matches the question: a pair is a unit too. Not a heading
            # with the paragraph under it, a sentence with the next heading, nor two rows of a table.
            joiner = "" if lang == "ja" and is_cjk(text[-1]) else " "
            units.append((pos, pos + 1, text + joiner + spans[pos + 1]))
    return units


def _bonus(asked: _Asked, text: str, paired: bool) -> float:
    """Evidence of the asked type (a number for "how many", code for "which command"), less the cost of a pair."""
    bonus = -N("pair_cost") if paired else 0.0
    if asked.holds_number is not None:
        bonus += N("kind_bonus") if asked.holds_number(text) else -N("no_number_cost")
    for holds in asked.evidence:
        if holds(text):
            bonus += N("kind_bonus")
    return bonus


class _Scored(NamedTuple):
    rank: int
    first: int
    last: int
    text: str
    lexical: float
    factor: float
    bonus: float
    own: float  # the lexical share without the title's terms
    parts: tuple[str, ...]  # the statements it is made of: one, or a statement and its neighbour


def _score_passage(asked: _Asked, rank: int, p: Passage, foreign: bool) -> list[_Scored]:
    q, weight, total = asked.weight.keys(), asked.weight, asked.total
    spans = split_statements(p.text, lines_wrap=p.page is None)
    lines = LINE_RANGE.match(p.section or "")
    path = _path(p)
    # A text file's passage from line 1 starts where the document does, not at a chunk boundary.
    mid_sentence = not (lines and lines.group(1) == "1")
    off_topic = _off_topic(asked, p, path)
    # A sentence is about what its section's heading says: the heading's terms count as the sentence's.
    headed = terms_of(path, False) & q
    # Without headings, the title's terms rank sentences but lend no evidence: a near miss's sentences hold them too.
    titled = set() if path else terms_of(p.title, False) & q
    # Per statement, once: a unit (a statement or a pair) is led on or code when one of its statements is.
    leads_on = [bool(rx("navigation").search(t)) for t in spans]
    code = [is_code_line(t) for t in spans]
    # The section's own heading, at the top of its text, is a heading whatever it looks like.
    own = _own_heading(p)
    owns = [bool(own) and normalize(t).strip() == own for t in spans]
    heading = [looks_like_heading(t) or bool(CAPTION.match(t)) or o for t, o in zip(spans, owns, strict=True)]
    scored = []
    for first, last, text in _units(spans, heading, owns, asked.query.lang):
        if foreign and detect_language(text) != asked.query.lang:
            continue
        if len(text) < 8 or text.endswith(("?", "？")):
            # Too short to be a statement, or a question (FAQ headings restate the user's question).
            continue
        held = (terms_of(text, asked.operators, asked.symbols) | variant_terms(asked.query, text)) & q
        if asked.closed:
            held |= open_compounds(text, asked.closed)
        if held:
            # Only for a sentence that holds a term of the question itself.
            held |= headed
        share = sum(weight[t] for t in held) / total
        lexical = sum(weight[t] for t in held | titled) / total if held else share
        factor = off_topic
        says = asked.says
        if not ends_statement(text) and not (first == last and is_row(text)) \
                and not (says is not None and text.endswith((":", "：")) and says(text)
                         and not rx("points_elsewhere").search(text)):
            # Headings and fragments read badly as answers. Not a table's row, nor a sentence that says the asked
            # action and leads into the code doing it (unless it sends the reader elsewhere).
            factor *= N("fragment_factor")
        if heading[first] or (first == 0 and mid_sentence and text[:1].islower()):
            factor *= N("heading_factor")
        if any(leads_on[first : last + 1]):
            factor *= N("leads_on_factor")
        if len(MARKUP.findall(text)) >= 3 or len(text) > 1200 \
                or any(code[first : last + 1]):
            factor *= N("markup_factor")
        scored.append(_Scored(rank, first, last, text, lexical, factor, _bonus(asked, text, first != last), share,
                              tuple(spans[first : last + 1])))
    return scored


def _under(head: str, text: str) -> str:
    return f"{head}: {text}" if head else text


def _cosines(similarity: Similarity, question: str, raw: list[_Scored], heads: list[str]) -> list[float | None]:
    """Each unit's cosine to the question. With a model that gives vectors, a pair's vector is its statements',
    weighed by length (close to a mean-pooling model's; embedding pairs too doubled a first answer's work)."""
    vectors = getattr(similarity, "vectors", None)
    if vectors is None:
        return list(similarity(question, [_under(heads[r.rank], r.text) for r in raw]))
    texts = list(dict.fromkeys(_under(heads[r.rank], part) for r in raw for part in r.parts))
    qv, matrix = vectors(question, texts)
    at = {t: i for i, t in enumerate(texts)}
    out: list[float | None] = []
    for r in raw:
        rows = [at[_under(heads[r.rank], part)] for part in r.parts]
        if len(rows) == 1:
            out.append(float(matrix[rows[0]] @ qv))
            continue
        weights = np.array([len(part) for part in r.parts], dtype=np.float32)[:, None]
        v = (matrix[rows] * weights).sum(axis=0)
        norm = float(np.linalg.norm(v)) or 1.0
        out.append(float(v @ qv) / norm)
    return out


def rank_sentences(question: str | Query, passages: list[Passage], stats: CorpusStats | None = None, *,
                   similarity: Similarity | None = None, max_passages: int = 5,
                   order: Order | None = None) -> tuple[Query, list[Passage], list[Candidate]]:
    """Every statement in the relevant passages, scored as an answer to the question, best first (the learned
    order, when one is given, only reorders them)."""
    query = analyze(question)
    usable = [p for p in passages if p.relevant][:max_passages]
    terms = content_terms(query)
    if not usable or not terms:
        return query, usable, []
    asked = _read(query, terms, stats)
    # In the question's language when a source is in it, sentence by sentence (a manual translated in part).
    own_language = any(p.lang == query.lang for p in usable)
    heads = [_heading(p) for p in usable]
    raw = [unit for rank, p in enumerate(usable)
           for unit in _score_passage(asked, rank, p, own_language and p.lang != query.lang)]
    if not raw:
        return query, usable, []
    # The model reads each sentence under its heading (or its document's title), which says what it is about.
    sims: list[float | None] = _cosines(similarity, query.text, raw, heads) if similarity else [None] * len(raw)
    candidates = []
    for r, sim in zip(raw, sims, strict=True):
        score = round(answer_score(r.lexical, sim, r.rank, r.factor, r.bonus), 4)
        evidence = round(answer_score(r.own, sim, r.rank, r.factor, r.bonus), 4)
        candidates.append(Candidate(r.rank, r.first, r.last, r.text, round(r.lexical, 4), round(sim or 0.0, 4),
                                    r.factor, r.bonus, score, evidence))
    candidates.sort(key=lambda c: (-c.score, c.rank, c.pos))
    return query, usable, order(query, usable, candidates) if order is not None else candidates


def _when(asks: Callable[[Query], bool],
          holds: Callable[[str], bool]) -> Callable[[Query], Callable[[str], bool] | None]:
    return lambda query: holds if asks(query) else None


def _numbers(query: Query) -> Callable[[str], bool] | None:
    return kinds.number_evidence(query) if kinds.asks_for_number(query) else None


# Each kind of rules/kinds.json: what tells a sentence answers a question of that kind (None: the question is not
# of it, or the kind is switched off). The person kind weighs no sentence: it adds the lead sentence.
EVIDENCE: dict[str, Callable[[Query], Callable[[str], bool] | None]] = {
    **dict.fromkeys(("number", "year", "count", "time", "limit"), _numbers),
    "how_to": does_what_asked,
    "type": _when(kinds.wants_type, kinds.names_type),
    "name": _when(kinds.wants_name, kinds.names),
    "called": _when(kinds.wants_called, kinds.names),
    "person": _when(kinds.wants_person, lambda text: True),
    "which": kinds.kind_evidence,
    "reason": kinds.reason_evidence,
}
