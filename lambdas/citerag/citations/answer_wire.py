"""The Answer as JSON on the wire (the AgentCore runtime's final event, span attributes, saved traces) and back:
{text, answered, citations: [{span: {start, end}, text, sources: [{source_id, uri, title, page, section, excerpt}]}],
related: [{uri, title, page, section}]} (section: a Markdown or HTML heading path, or a text file's line range; null
for a PDF page; related: where to look when nothing answered, empty otherwise)."""

from __future__ import annotations

from typing import Any

from citerag.citations.answer import RELATED_MAX, Answer, Citation, related_wire
from citerag.citations.excerpts import spanning
from citerag.search.passage import Passage

# Bounds on what a runtime may send: an answer is a few sentences with a few sources each.
MAX_TEXT = 100_000
MAX_CITATIONS = 200


def source_wire(p: Passage) -> dict[str, Any]:
    return {"source_id": p.source_id, **related_wire(p), "excerpt": p.excerpt}


def to_wire(answer: Answer) -> dict[str, Any]:
    return {"text": answer.text, "answered": answer.answered,
            "citations": [{"span": {"start": c.start, "end": c.end}, "text": c.text,
                           "sources": [source_wire(s) for s in c.sources]} for c in answer.citations],
            "related": [related_wire(p) for p in answer.related]}


def from_wire(data: dict[str, Any], trace: list[dict[str, Any]] | None = None) -> Answer:
    """An Answer from its wire form, read defensively (a remote runtime sends it): spans outside the text, sources
    without ids and anything of the wrong shape are dropped; places to look only when nothing is cited."""
    text = str(data.get("text", ""))[:MAX_TEXT]
    citations: list[Citation] = []
    sources: dict[str, Passage] = {}
    for c in _list(data.get("citations"))[:MAX_CITATIONS]:
        if not isinstance(c, dict):
            continue
        span = c.get("span") if isinstance(c.get("span"), dict) else {}
        srcs = []
        for s in _list(c.get("sources"))[:MAX_CITATIONS]:
            if not isinstance(s, dict) or not s.get("source_id"):
                continue
            sid = str(s["source_id"])[:200]
            excerpt = str(s.get("excerpt", ""))[:MAX_TEXT]
            # Each citation's source with the sentence (and lines) it is cited for; the answer's list of sources
            # holds each source once, as first cited.
            p = Passage(source_id=sid, text=excerpt, excerpt=excerpt, **_place(s))
            if sid in sources:  # listed once, with the lines of every sentence cited to it
                sources[sid].section = spanning(sources[sid].section, p.section)
            else:
                sources[sid] = p.model_copy()
            srcs.append(p)
        start, end = span.get("start"), span.get("end")
        if isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(text) and srcs:
            citations.append(Citation(text=text[start:end], start=start, end=end, sources=srcs))
    answered = bool(data.get("answered")) and bool(citations)
    # Places numbered beside cited sources would make "--open 1" ambiguous: with any citation there are none.
    related = [] if citations else [p for p in map(_located, _list(data.get("related"))[:RELATED_MAX]) if p]
    return Answer(text=text, citations=citations, sources=list(sources.values()), answered=answered,
                  related=related, trace=trace or [])


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _place(item: dict[str, Any]) -> dict[str, Any]:
    """uri, title, page and section of a source or a place read back, bounded; anything of the wrong type dropped."""
    uri, title, page, section = (item.get(k) for k in ("uri", "title", "page", "section"))
    return {"uri": uri[:2000] if isinstance(uri, str) else "", "title": title[:500] if isinstance(title, str) else "",
            "page": page if isinstance(page, int) and not isinstance(page, bool) else None,
            "section": section[:500] if isinstance(section, str) else None}


def _located(item: object) -> Passage | None:
    """A related place read back: a dict with a uri or a title, anything else dropped."""
    place = _place(item) if isinstance(item, dict) else {}
    return Passage(text="", **place) if place.get("uri") or place.get("title") else None
