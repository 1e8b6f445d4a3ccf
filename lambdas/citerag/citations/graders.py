"""Graders that need no LLM: grounding of answer sentences in their cited passages, citation validity, and
relevance of the retrieved context. The local runtime uses them; post-processing can fall back to them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel

from citerag.citations.claude_format import AnswerPart
from citerag.documents.text import detect_language
from citerag.search.query import Query, analyze
from citerag.search.sparse import tokenize


class Grades(BaseModel):
    grounding: float  # share of answer parts supported by the passages they cite
    citation_validity: float  # share of cited ids that a search returned
    context_relevance: float  # mean share of the question's terms found in each retrieved passage
    grounded: bool


def support(claim: str, passage: str) -> float:
    """Share of the claim's terms (stemmed words, CJK bigrams) that occur in the passage.

    A claim in the other language than its passage (a Japanese answer from an English manual) shares no words with
    it, so its anchors are checked instead: the numbers and identifiers it states ("E2", "64", "f64") and, in a
    Japanese claim, the words it writes in Latin script ("rustup", "push"), which a translation keeps and an
    invented claim gets wrong. A claim with no anchor cannot be checked that way. Its words still count: a passage
    read as Japanese may hold English paragraphs (a manual translated in part), which a claim quotes word for word."""
    terms = tokenize(claim)
    share = _share(terms, passage)
    claim_lang = detect_language(claim)
    if share == 1.0 or claim_lang == detect_language(passage):
        return share
    return max(share, _share(anchors(terms, claim_lang), passage))


def anchors(terms: Sequence[str], lang: str) -> list[str]:
    """The terms of a text in `lang` that a text in the other language writes the same: numbers and identifiers
    ("e2", "64", "f64") and, of a Japanese text, its Latin-script words ("rustup")."""
    return [t for t in terms if t.isascii() and (lang == "ja" or any(c.isdigit() for c in t))]


def _share(terms: Sequence[str], passage: str) -> float:
    if not terms:
        return 0.0
    present = set(tokenize(passage))
    return sum(1 for t in terms if t in present) / len(terms)


def grade(
    question: str | Query,
    parts: Sequence[AnswerPart],
    passages: Mapping[str, str],
    *,
    min_support: float = 0.8,
    min_grounding: float = 1.0,
) -> Grades:
    cited = [s for p in parts for s in p.sources]
    validity = sum(1 for s in cited if s in passages) / len(cited) if cited else 1.0
    claims = [p for p in parts if p.sources]
    supported = sum(
        1 for p in claims if max((support(p.text, passages[s]) for s in p.sources if s in passages), default=0.0)
        >= min_support
    )
    grounding = supported / len(claims) if claims else 1.0
    q_terms = analyze(question).tokens
    relevance = _mean(_share(q_terms, t) for t in passages.values())
    return Grades(grounding=grounding, citation_validity=validity, context_relevance=relevance,
                  grounded=grounding >= min_grounding and validity == 1.0)


def _mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0
