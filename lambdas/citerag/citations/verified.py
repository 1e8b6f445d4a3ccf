"""What a code-defined agent does with the model's answer before anyone sees it (the AgentCore runtime; the Classic
agent does the same with its parser Lambda and post-processing prompt):

1. every cited id must be one this turn's searches returned (membership) and carry a valid signature: otherwise a
   reprompt that says exactly which ids to drop;
2. grading: a cited part whose words are not in the passages it cites is dropped (grounding), and an answer whose
   cited passages share nothing with the question is not shown as an answer (usefulness);
3. PII masking per part, so every masked sentence keeps its own citation span;
4. the Answer: text, and for each cited span the passages with {uri, title, page, section, excerpt}.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel

from citerag.citations import source_ids
from citerag.citations.answer import Answer, Citation, where_to_look
from citerag.citations.claude_format import AnswerPart
from citerag.citations.excerpts import as_source
from citerag.citations.graders import anchors, grade, support
from citerag.citations.pii import PiiMasker
from citerag.documents.text import detect_language
from citerag.search.passage import Passage
from citerag.search.query import Query, analyze
from citerag.search.sparse import tokenize

FALLBACK = {
    "en": "I could not answer this from the documents.",
    "ja": "ドキュメントからはこの質問に回答できませんでした。",
}


def unverified_ids(parts: Iterable[AnswerPart], returned: Mapping[str, Passage], keys: Sequence[str]) -> list[str]:
    """Cited ids this turn's searches did not return, or whose signature no current key verifies (sorted)."""
    bad = set()
    for part in parts:
        for sid in part.sources:
            if sid not in returned or not any(source_ids.verify(k, sid) for k in keys):
                bad.add(sid)
    return sorted(bad)


# How every reprompt begins: an offline model tells them from the user's question by these.
REPROMPT_MARKERS = ("The answer cites ", "Your reply had no <answer>")


def reprompt(bad: Sequence[str] | None = None, *, no_answer: bool = False) -> str:
    """The message the model gets back when its answer cannot be shown: what is wrong and how to fix it."""
    if no_answer:
        return (f"{REPROMPT_MARKERS[1]}. Give the final answer as <answer><answer_part><text>...</text><sources>"
                "<source>SOURCE_ID</source></sources></answer_part></answer>, citing only source ids copied from "
                "this turn's search_documents results, or call search_documents first.")
    shown = ", ".join(list(bad or [])[:5])
    return (f"{REPROMPT_MARKERS[0]}{shown}, which no search_documents call in this turn returned. Cite only source ids "
            "copied exactly from this turn's search results (they look like S1-abcdef); call search_documents again "
            "if you need other passages, and answer again in <answer> form.")


class Grades(BaseModel):
    grounding: float
    citation_validity: float
    context_relevance: float
    dropped_parts: int
    useful: bool
    pii_masked: list[str]


def finish(question: str | Query, parts: Sequence[AnswerPart], returned: Mapping[str, Passage], masker: PiiMasker,
           *, min_support: float = 0.5) -> tuple[Answer, Grades]:
    """Grade, mask and assemble the verified parts into the Answer the user sees."""
    passages = {sid: p.text for sid, p in returned.items()}
    parts = [p for p in parts if p.text.strip()]
    g = grade(question, parts, passages, min_support=min_support)
    kept = [p for p in parts if not p.sources
            or max((support(p.text, passages[s]) for s in p.sources if s in passages), default=0.0) >= min_support]
    cited = [p for p in kept if p.sources]
    question_text = question.text if isinstance(question, Query) else question
    useful = not cited or any(_shares_terms(question, passages[s]) for p in cited for s in p.sources)
    fired: list[str] = []
    if not kept or not useful or (parts and any(p.sources for p in parts) and not cited):
        text = FALLBACK.get(detect_language(question_text), FALLBACK["en"])
        return Answer(text=text, answered=False, related=where_to_look(returned.values())), Grades(
            grounding=g.grounding, citation_validity=g.citation_validity, context_relevance=g.context_relevance,
            dropped_parts=len(parts) - len(kept), useful=useful, pii_masked=[])
    text, citations, sources = "", [], {}
    for p in kept:
        masked, rules = masker.mask(p.text)
        fired += rules
        if text:
            text += " "
        start = len(text)
        text += masked
        srcs = []
        for sid in dict.fromkeys(p.sources):
            src = as_source(returned[sid], masked, mask=lambda t: masker.mask(t)[0], earlier=sources.get(sid))
            sources.setdefault(sid, src.model_copy())  # the list's: its lines grow, the citation's do not
            srcs.append(src)
        if srcs:
            citations.append(Citation(text=masked, start=start, end=len(text), sources=srcs))
    answer = Answer(text=text, citations=citations, sources=list(sources.values()), answered=bool(citations),
                    related=[] if citations else where_to_look(returned.values()))
    return answer, Grades(grounding=g.grounding, citation_validity=g.citation_validity,
                          context_relevance=g.context_relevance, dropped_parts=len(parts) - len(kept), useful=True,
                          pii_masked=sorted(set(fired)))


def _shares_terms(question: str | Query, passage: str) -> bool:
    query = analyze(question)
    terms = query.tokens
    if query.lang != detect_language(passage):
        # A Japanese question over an English passage shares only its anchors ("E2", "rustup"): those must be
        # there when it has any; without, the passage's relevance is what search graded (README "Questions in one
        # language, documents in another").
        terms = anchors(terms, query.lang)
        if not terms:
            return True
    present = set(tokenize(passage))
    return any(t in present for t in terms)
