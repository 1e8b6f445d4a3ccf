"""The one passage type: what search found, what the model read, and what a citation points at.

A passage is born from an index match (`from_match`), gets a `source_id` when it is packed into a search
response, travels to the model as `wire()` JSON, comes back from a trace with `from_wire`, and ends as one of an
answer's sources with the cited sentence as its `excerpt`. Its only other form is the record metadata the index
stores (`documents.model.Chunk.metadata`), which follows Pinecone's rules (no nulls, flat values).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

# What the model reads for each result, in this order (the search response's JSON).
WIRE_FIELDS = ("source_id", "text", "uri", "title", "page", "section", "score")


class Passage(BaseModel):
    id: str = Field("", description="index record id (chunk id)")
    text: str
    uri: str = ""
    title: str = ""
    page: int | None = Field(None, description="1-based PDF page")
    section: str | None = Field(None, description="heading path for Markdown and HTML")
    places: list[str] = Field(default_factory=list, description="the units (paragraphs, rows) the passage spans, "
                                                                "each 'place\\tits first words': a citation names "
                                                                "the one its sentence is in")
    lang: str = "en"
    doc_id: str = ""
    parent_id: str = ""
    char_start: int | None = Field(None, description="offset of the chunk in its parent's text")
    char_end: int | None = None
    focus: tuple[int, int] | None = Field(None, description="where in `text` the matched chunk lies, once `text` is "
                                                            "its parent or a window of it")
    score: float = 0.0
    dense_score: float | None = None
    coverage: float = 0.0
    relevance: float | None = None
    relevant: bool = True
    source_id: str | None = Field(None, description="the id the model cites; set when results are packed")
    excerpt: str = Field("", description="the cited sentence; set when the passage supports an answer")
    metadata: dict[str, Any] = Field(default_factory=dict, description="the index record's metadata, as stored")

    @classmethod
    def from_match(cls, match_id: str, score: float, md: dict[str, Any], dense_score: float | None = None) -> Passage:
        return cls(
            id=match_id,
            text=str(md.get("text", "")),
            uri=str(md.get("source_uri", "")),
            title=str(md.get("title", "")),
            page=_int_or_none(md.get("page")),
            section=md.get("section") if isinstance(md.get("section"), str) else None,
            places=_places(md.get("places")),
            lang=str(md.get("lang", "en")),
            doc_id=str(md.get("doc_id", "")),
            parent_id=str(md.get("parent_id", match_id)),
            char_start=_int_or_none(md.get("char_start")),
            char_end=_int_or_none(md.get("char_end")),
            score=round(float(score), 6),
            dense_score=dense_score,
            metadata=md,
        )

    def wire(self) -> dict[str, Any]:
        """The result as the model reads it: source id, text, where it is from, score."""
        item: dict[str, Any] = {"source_id": self.source_id, "text": self.text, "uri": self.uri, "title": self.title,
                                "page": self.page, "section": self.section, "score": round(self.score, 4)}
        if item["source_id"] is None:
            del item["source_id"]
        if not self.section:
            del item["section"]
        if self.places:
            item["places"] = self.places
        return item

    @classmethod
    def from_wire(cls, item: Any) -> Passage | None:
        """A result read back from a search response (a trace, a log): None when it is not one."""
        if not isinstance(item, dict) or not isinstance(item.get("source_id"), str):
            return None
        score = item.get("score")
        return cls(source_id=item["source_id"], text=str(item.get("text", "")), uri=str(item.get("uri", "")),
                   title=str(item.get("title", "")), page=_int_or_none(item.get("page")),
                   section=item.get("section") if isinstance(item.get("section"), str) else None,
                   places=_places(item.get("places")),
                   score=float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else 0.0)

    def citation(self) -> dict[str, Any]:
        """What a user checks: the CLI's and API's flat source shape."""
        return {"source_id": self.source_id, "uri": self.uri, "title": self.title, "page": self.page,
                "section": self.section, "excerpt": self.excerpt}


def location(page: Any, section: Any) -> str:
    """Where in its file a passage is, as a reader finds it: "page 5" in a PDF (a scanned one too), else its
    section (a Markdown, HTML or EPUB heading path, a text file's lines, a Word heading and paragraph or table row,
    a sheet's cells "Plans!A3:C3", a slide "slide 3: Pricing"); "" when neither is known."""
    if isinstance(page, int) and not isinstance(page, bool) and page > 0:
        return f"page {page}"
    return section if isinstance(section, str) else ""


MAX_PLACES = 200  # a passage of 600 characters spans far fewer units; a wire item with more is not one of ours


def _places(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [v[:300] for v in value[:MAX_PLACES] if isinstance(v, str) and "\t" in v]


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)
