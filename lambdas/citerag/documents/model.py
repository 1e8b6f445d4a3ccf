"""The document model shared by loaders, chunking, indexing and the Lambdas."""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, Field


class Mark(BaseModel):
    """Where one unit a reader can find in a section (a paragraph, a spreadsheet row, a table row) starts in its
    text, and its place as the reader names it ("Setup, ¶ 3", "Prices!A4:C4")."""

    start: int = Field(ge=0)
    place: str


class Section(BaseModel):
    """A parent unit of a document: one PDF page, or one Markdown/HTML section, or a whole text file, or a slide,
    a run of a sheet's rows, a heading's part of a Word document."""

    text: str
    page: int | None = Field(default=None, ge=1, description="1-based page number (PDF only)")
    section: str | None = Field(default=None, description="heading path, e.g. 'Setup > Network'")
    marks: list[Mark] = Field(default_factory=list, description="units of the text, in order: a passage is cited "
                                                                "by the places of the units it spans")


class LoadedDocument(BaseModel):
    source_uri: str
    title: str
    doc_id: str
    content_hash: str
    kind: str
    sections: list[Section]

    @property
    def char_count(self) -> int:
        return sum(len(s.text) for s in self.sections)


class Chunk(BaseModel):
    """One searchable passage. Offsets are character offsets into its parent's text."""

    id: str
    doc_id: str
    parent_id: str
    text: str
    source_uri: str
    title: str
    page: int | None = None
    section: str | None = None
    content_hash: str
    char_start: int
    char_end: int
    chunk_index: int
    lang: str
    places: list[str] = Field(default_factory=list, description="the units the chunk spans, each as 'place\\tits "
                                                              "first words' (see documents.places)")

    def metadata(self) -> dict[str, str | int | float | bool | list[str]]:
        """Pinecone-compatible metadata: no nulls, only string/number/bool/list[str]."""
        md: dict[str, str | int | float | bool | list[str]] = {
            "text": self.text,
            "source_uri": self.source_uri,
            "title": self.title,
            "doc_id": self.doc_id,
            "parent_id": self.parent_id,
            "content_hash": self.content_hash,
            "char_start": self.char_start,
            "char_end": self.char_end,
            "chunk_index": self.chunk_index,
            "lang": self.lang,
        }
        if self.page is not None:
            md["page"] = self.page
        if self.section:
            md["section"] = self.section
        if self.places:
            md["places"] = self.places
        return md


def doc_id_for(source_uri: str) -> str:
    """A stable id for a document, derived from where it lives (not its content, which changes)."""
    return hashlib.sha256(source_uri.encode("utf-8")).hexdigest()[:20]


def content_hash_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
