"""The embedded answerer: since no LLM runs offline, the answer is built only from sentences of the
retrieved passages, each cited with its source id. It never writes a word the sources do not contain.

It answers in the question's language when a relevant source is in that language, and says plainly
that the documents do not answer when no passage passes the relevance threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

from citerag.documents.text import detect_language, split_sentences
from citerag.search.passage import Passage
from citerag.search.query import Query, analyze
from citerag.search.sparse import CorpusStats, term_id, tokenize

_TERMINAL = tuple("。！.!」』）)")

NOT_FOUND = {
    "en": "The documents do not answer this question.",
    "ja": "ドキュメントには、この質問への回答が見つかりませんでした。",
}


@dataclass(frozen=True)
class Picked:
    source_id: str
    sentence: str
    score: float


def answer_language(question: str) -> str:
    return detect_language(question)


def _looks_like_heading(text: str) -> bool:
    """A short line in Title Case ("Grant of Patent License.", "5. Troubleshooting"): a heading, not a statement."""
    words = text.rstrip(".:：").split()
    if not 1 <= len(words) <= 6 or not all(w.isascii() for w in words):
        return False
    # The content words after the first (not acronyms, numbers or short function words) are all capitalised.
    content = [w for w in words[1:] if len(w) > 3 and w.isalpha() and not w.isupper()]
    return bool(content) and all(w[0].isupper() for w in content)


def pick_sentences(
    question: str | Query,
    passages: list[Passage],
    stats: CorpusStats | None = None,
    *,
    max_sentences: int = 3,
    max_passages: int = 3,
) -> list[Picked]:
    """Choose up to `max_sentences` sentences that best cover the question's terms.

    Scores are IDF-weighted term overlap plus a small prior for better-ranked passages. Later picks must
    add query terms the earlier ones lack, so the answer does not repeat itself.
    """
    query = analyze(question)
    lang = query.lang
    usable = [p for p in passages if p.relevant][:max_passages]
    if any(p.lang == lang for p in usable):
        usable = [p for p in usable if p.lang == lang]
    if not usable:
        return []
    q = set(query.term_ids)
    if not q:
        return []

    def idf(t: int) -> float:
        return stats.idf(t) if stats and stats.n_docs else 1.0

    q_weight = {t: idf(t) for t in q}
    total = sum(q_weight.values()) or 1.0
    candidates: list[tuple[float, int, int, str, set[int]]] = []
    for rank, p in enumerate(usable):
        for pos, s in enumerate(split_sentences(p.text)):
            text = s.text.strip(" …")
            if len(text) < 8 or text.endswith(("?", "？")):
                # Too short to be a statement, or a question (FAQ headings restate the user's question).
                continue
            terms = {term_id(t) for t in tokenize(text)} & q
            score = sum(q_weight[t] for t in terms) / total + 0.15 / (rank + 1)
            if not text.endswith(_TERMINAL):
                score *= 0.6  # headings and fragments read badly as answers
            if _looks_like_heading(text) or (pos == 0 and text[:1].islower()):
                # "Grant of Patent License." restates the question's words without answering it; a passage that
                # starts mid-sentence (a chunk boundary) gives a fragment.
                score *= 0.3
            candidates.append((score, rank, pos, text, terms))
    if not candidates:
        return []
    candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
    picked = [candidates[0]]
    covered = set(candidates[0][4])
    for c in candidates[1:]:
        if len(picked) >= max_sentences:
            break
        gain = sum(q_weight[t] for t in c[4] - covered) / total
        if gain >= 0.15 and c[0] >= 0.5 * picked[0][0]:
            picked.append(c)
            covered |= c[4]
    # Read in document order: by passage rank, then position within the passage.
    picked.sort(key=lambda c: (c[1], c[2]))
    return [Picked(usable[c[1]].source_id, c[3], round(c[0], 4)) for c in picked]
