"""Query analysis, done once per question: validation, language and tokens, passed along to every stage
(sparse encoding, relevance grading, packing, sentence selection) instead of each stage re-tokenising."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from citerag.documents.text import detect_language, has_lone_surrogate
from citerag.errors import QueryError
from citerag.search.sparse import term_id, tokenize

MAX_QUERY_CHARS = 2000


@dataclass(frozen=True)
class Query:
    text: str
    lang: str
    tokens: tuple[str, ...] = field(repr=False)

    @cached_property
    def terms(self) -> frozenset[str]:
        return frozenset(self.tokens)

    @cached_property
    def term_counts(self) -> Counter[int]:
        return Counter(term_id(t) for t in self.tokens)

    @cached_property
    def term_ids(self) -> frozenset[int]:
        return frozenset(self.term_counts)


def validate_text(query: Any) -> str:
    """The query text, cleaned; QueryError with the fix when it is unusable."""
    if not isinstance(query, str):
        raise QueryError("the query must be text")
    q = query.replace("\x00", " ").strip()
    if has_lone_surrogate(q):
        # Not echoed: the message would carry the same unwritable character back.
        raise QueryError("the query holds half of a character (a lone UTF-16 surrogate escape such as \\ud83d); "
                         "send the query as plain text")
    if not q:
        raise QueryError("the query is empty; ask a question or give some keywords")
    if len(q) > MAX_QUERY_CHARS:
        # Embedding models read ~512 tokens; a longer "query" is almost always a pasted document.
        raise QueryError(f"the query is {len(q):,} characters long; the limit is {MAX_QUERY_CHARS:,}")
    return q


def analyze(query: Query | Any) -> Query:
    if isinstance(query, Query):
        return query
    text = validate_text(query)
    return Query(text=text, lang=detect_language(text), tokens=tuple(tokenize(text)))
