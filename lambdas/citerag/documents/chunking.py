"""Sentence-aware chunking (Japanese and English) within a size budget, with overlap; parent = section."""

from __future__ import annotations

import re
from bisect import bisect_left
from pathlib import PurePosixPath
from urllib.parse import urlparse

from citerag.documents.loaders import SUPPORTED_SUFFIXES
from citerag.documents.model import Chunk, LoadedDocument
from citerag.documents.places import span_place, unit_places
from citerag.documents.text import Span, detect_language, split_sentences

DEFAULT_CHUNK_CHARS = 600
DEFAULT_OVERLAP_CHARS = 120


def chunk_document(
    doc: LoadedDocument,
    *,
    max_chars: int = DEFAULT_CHUNK_CHARS,
    overlap_chars: int = DEFAULT_OVERLAP_CHARS,
) -> list[Chunk]:
    chunks: list[Chunk] = []
    for s_index, section in enumerate(doc.sections):
        parent_id = parent_id_for(doc, s_index)
        lang = detect_language(section.text)
        # A text file's lines, found once: counted from the start again for every chunk, a 100 MB file took hours.
        lines = _Lines(section.text) if doc.kind == "text" and not section.section else None
        for start, end in chunk_spans(section.text, max_chars=max_chars, overlap_chars=overlap_chars):
            idx = len(chunks)
            chunks.append(
                Chunk(
                    id=f"{doc.doc_id}#{idx}",
                    doc_id=doc.doc_id,
                    parent_id=parent_id,
                    text=section.text[start:end],
                    source_uri=doc.source_uri,
                    title=doc.title,
                    page=section.page,
                    section=_place(section, lines, start, end),
                    content_hash=doc.content_hash,
                    char_start=start,
                    char_end=end,
                    chunk_index=idx,
                    lang=lang,
                    places=unit_places(section.text, section.marks, start, end),
                )
            )
    return chunks


def _place(section, lines: _Lines | None, start: int, end: int) -> str | None:
    """A passage's place: the units it spans (paragraphs, rows), else its section's heading path, else (a text
    file) its lines."""
    if section.marks:
        return span_place(section.marks, start, end)
    return section.section or (lines.label(start, end) if lines is not None else None)


LINE_RANGE = re.compile(r"^lines? (\d+)(-\d+)?$")  # what line_range gives: a text file's section is where, not what


def line_range(text: str, start: int, end: int, first_line: int = 1) -> str:
    """Where characters start..end of a plain-text file are: their line range (a text file has no pages or
    headings). `first_line`: the line `text` starts on, when it is a piece of the file."""
    first = first_line + text.count("\n", 0, start)
    return lines_label(first, first_line + text.count("\n", 0, max(start, end - 1)))


class _Lines:
    """Line numbers of offsets in one text, as `line_range` counts them, by bisection over its line breaks."""

    def __init__(self, text: str) -> None:
        self.breaks = [m.start() for m in re.finditer("\n", text)]

    def label(self, start: int, end: int) -> str:
        return lines_label(1 + bisect_left(self.breaks, start), 1 + bisect_left(self.breaks, max(start, end - 1)))


def lines_label(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


def line_bounds(section: str | None) -> tuple[int, int] | None:
    """(first, last) line of a line range section."""
    m = LINE_RANGE.match(section or "")
    return (int(m.group(1)), int(m.group(2)[1:]) if m.group(2) else int(m.group(1))) if m else None


def first_line(section: str | None, uri: str) -> int | None:
    """The line a passage of a plain-text file starts on (its section is a line range); None for any other file,
    whose section is a heading path even where a heading reads "line 5"."""
    # An S3 URI holds the object key as it is ("notes#2.txt"): no fragment or query to parse off.
    path = uri.split("/", 3)[-1] if uri.startswith("s3://") else urlparse(uri).path
    if SUPPORTED_SUFFIXES.get(PurePosixPath(path).suffix.lower()) != "text":
        return None
    bounds = line_bounds(section)
    return bounds[0] if bounds else None


def parent_id_for(doc: LoadedDocument, s_index: int) -> str:
    """Parent ids include the content version, so a stored parent never changes under its id (safe to cache)."""
    section = doc.sections[s_index]
    where = f"p{section.page}" if section.page else f"s{s_index}"
    return f"{doc.doc_id}#{doc.content_hash[:12]}#{where}"


def chunk_spans(text: str, *, max_chars: int, overlap_chars: int) -> list[tuple[int, int]]:
    """(start, end) character ranges: whole sentences packed up to max_chars; the next chunk starts with
    the trailing sentences of the previous one (up to overlap_chars) so an answer spanning a boundary is
    still found. A sentence longer than max_chars is cut at whitespace where possible."""
    if max_chars <= 0:
        raise ValueError("max_chars must be positive")
    sentences = _bounded(split_sentences(text), max_chars)
    if not sentences:
        return []
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(sentences):
        j = i
        while j + 1 < len(sentences) and sentences[j + 1].end - sentences[i].start <= max_chars:
            j += 1
        spans.append((sentences[i].start, sentences[j].end))
        if j + 1 >= len(sentences):
            break
        # Step back over trailing sentences that fit in the overlap, but always make progress.
        k = j + 1
        while k - 1 > i and sentences[j].end - sentences[k - 1].start <= overlap_chars:
            k -= 1
        i = k
    return spans


def _bounded(sentences: list[Span], max_chars: int) -> list[Span]:
    out: list[Span] = []
    for s in sentences:
        start = s.start
        while s.end - start > max_chars:
            window = s.text[start - s.start : start - s.start + max_chars]
            cut = window.rfind(" ")
            cut = cut if cut > max_chars // 2 else max_chars
            piece = window[:cut].rstrip()
            out.append(Span(start, start + len(piece), piece))
            start += cut
            while start < s.end and s.text[start - s.start].isspace():
                start += 1
        if start < s.end:
            out.append(Span(start, s.end, s.text[start - s.start :]))
    return out
