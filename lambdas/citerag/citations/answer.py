"""The Answer every path returns (embedded answerer, local runtimes, InvokeAgent client): the text, and for each
cited span the passages that support it, each with the sentence it was cited for."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from pydantic import BaseModel, Field

from citerag.citations.claude_format import without_marks
from citerag.citations.decision import Decision
from citerag.citations.excerpts import as_source
from citerag.search.passage import Passage


class Citation(BaseModel):
    """A part of the answer text (by character span) and the passages that support it."""

    text: str
    start: int
    end: int
    sources: list[Passage]


# When nothing answers, the passages search found still say where a reader could look: a paraphrase the answerer
# could not match ("いちばん手軽に" for "最も簡単なのが") is then one click away instead of behind "not found".
RELATED_MAX = 3


class Answer(BaseModel):
    text: str
    citations: list[Citation] = Field(default_factory=list)
    sources: list[Passage] = Field(default_factory=list, description="every cited passage, once, in order")
    answered: bool = True
    related: list[Passage] = Field(default_factory=list, description="when not answered: the passages search "
                                   "found, best first, as places to look; no sentence of theirs is claimed")
    trace: list[dict] = Field(default_factory=list)
    decision: Decision | None = Field(None, description="why the offline answerer answered or refused")

    def flat_citations(self) -> list[dict]:
        """The CLI's --json shape: [{source_id, uri, title, page, section, excerpt}] for each cited source."""
        return [s.citation() for s in self.sources]

    def flat_related(self) -> list[dict]:
        """[{uri, title, page, section}] of each related passage: where it is, not what it says."""
        return [related_wire(p) for p in self.related]


def related_wire(p: Passage) -> dict:
    return {"uri": p.uri, "title": p.title, "page": p.page, "section": p.section}


def where_to_look(passages: Iterable[Passage]) -> list[Passage]:
    """The first RELATED_MAX passages, one per place (a file's page or section), without their text or excerpt."""
    out: dict[tuple, Passage] = {}
    for p in passages:
        key = (p.uri or p.title, p.page, p.section)
        if key not in out:
            out[key] = Passage(text="", uri=p.uri, title=p.title, page=p.page, section=p.section, lang=p.lang,
                               source_id=p.source_id)
        if len(out) == RELATED_MAX:
            break
    return list(out.values())


class Sentence(Protocol):
    source_id: str
    sentence: str


def compose(picked: Iterable[Sentence], by_sid: Mapping[str | None, Passage]) -> Answer:
    """Join picked sentences into one text with [S#] markers; one citation per sentence. A sentence's own
    citation-shaped marks (a document's footnote "[2]", a "[S3]" in its text) are left out of the answer, where they
    would read as citations; the source's excerpt keeps the sentence as written."""
    text = ""
    citations: list[Citation] = []
    sources: dict[str, Passage] = {}
    joiner = ""
    for p in picked:
        src = as_source(by_sid[p.source_id], p.sentence, earlier=sources.get(p.source_id), sentence=p.sentence)
        sources.setdefault(p.source_id, src.model_copy())  # the list's: its lines grow, the citation's do not
        text += joiner
        start = len(text)
        said = without_marks(p.sentence)
        text += said
        citations.append(Citation(text=said, start=start, end=len(text), sources=[src]))
        text += f" [{p.source_id}]"
        joiner = " "
    return Answer(text=text, citations=citations, sources=list(sources.values()))
