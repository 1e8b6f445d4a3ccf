"""The Answer model every path returns (embedded answerer, local agent runtime, InvokeAgent client)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Source(BaseModel):
    source_id: str
    uri: str
    title: str
    page: int | None = None
    excerpt: str = ""


class Citation(BaseModel):
    """A part of the answer text (by character span) and the sources that support it."""

    text: str
    start: int
    end: int
    sources: list[Source]


class Answer(BaseModel):
    text: str
    citations: list[Citation] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list, description="every cited source, once, in order")
    answered: bool = True
    trace: list[dict] = Field(default_factory=list)

    def flat_citations(self) -> list[dict]:
        """The CLI's --json shape: [{source_id, uri, title, page, excerpt}] for each cited source."""
        return [s.model_dump() for s in self.sources]
