"""The Answer every path returns (embedded answerer, local runtimes, InvokeAgent client): the text, and for each
cited span the passages that support it, each with the sentence it was cited for."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from pydantic import BaseModel, Field

from citerag.citations.excerpts import as_source
from citerag.search.passage import Passage


class Citation(BaseModel):
    """A part of the answer text (by character span) and the passages that support it."""

    text: str
    start: int
    end: int
    sources: list[Passage]


class Answer(BaseModel):
    text: str
    citations: list[Citation] = Field(default_factory=list)
    sources: list[Passage] = Field(default_factory=list, description="every cited passage, once, in order")
    answered: bool = True
    trace: list[dict] = Field(default_factory=list)

    def flat_citations(self) -> list[dict]:
        """The CLI's --json shape: [{source_id, uri, title, page, section, excerpt}] for each cited source."""
        return [s.citation() for s in self.sources]


class Sentence(Protocol):
    source_id: str
    sentence: str


def compose(picked: Iterable[Sentence], by_sid: Mapping[str | None, Passage]) -> Answer:
    """Join picked sentences into one text with [S#] markers; one citation per sentence."""
    text = ""
    citations: list[Citation] = []
    sources: dict[str, Passage] = {}
    joiner = ""
    for p in picked:
        src = as_source(by_sid[p.source_id], p.sentence, earlier=sources.get(p.source_id), sentence=p.sentence)
        sources.setdefault(p.source_id, src)
        text += joiner
        start = len(text)
        text += p.sentence
        citations.append(Citation(text=p.sentence, start=start, end=len(text), sources=[src]))
        text += f" [{p.source_id}]"
        joiner = " "
    return Answer(text=text, citations=citations, sources=list(sources.values()))
