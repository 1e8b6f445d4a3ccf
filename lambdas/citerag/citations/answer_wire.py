"""The Answer as JSON on the wire (the AgentCore runtime's final event, span attributes, saved traces) and back:
{text, answered, citations: [{span: {start, end}, text, sources: [{source_id, uri, title, page, section, excerpt}]}],
related: [{uri, title, page, section}]} (section: a Markdown or HTML heading path, or a text file's line range; null
for a PDF page; related: where to look when nothing answered, empty otherwise)."""

from __future__ import annotations

from typing import Any

from citerag.citations.answer import RELATED_MAX, Answer, Citation, related_wire
from citerag.search.passage import Passage


def source_wire(p: Passage) -> dict[str, Any]:
    return {"source_id": p.source_id, "uri": p.uri, "title": p.title, "page": p.page, "section": p.section,
            "excerpt": p.excerpt}


def to_wire(answer: Answer) -> dict[str, Any]:
    return {"text": answer.text, "answered": answer.answered,
            "citations": [{"span": {"start": c.start, "end": c.end}, "text": c.text,
                           "sources": [source_wire(s) for s in c.sources]} for c in answer.citations],
            "related": [related_wire(p) for p in answer.related]}


def from_wire(data: dict[str, Any], trace: list[dict[str, Any]] | None = None) -> Answer:
    """An Answer from its wire form, read defensively: spans outside the text and sources without ids are dropped."""
    text = str(data.get("text", ""))
    citations: list[Citation] = []
    sources: dict[str, Passage] = {}
    for c in data.get("citations") or []:
        if not isinstance(c, dict):
            continue
        span = c.get("span") or {}
        srcs = []
        for s in c.get("sources") or []:
            if not isinstance(s, dict) or not s.get("source_id"):
                continue
            sid = str(s["source_id"])
            page, section = s.get("page"), s.get("section")
            p = sources.get(sid) or Passage(source_id=sid, text=str(s.get("excerpt", "")), uri=str(s.get("uri", "")),
                                            title=str(s.get("title", "")),
                                            page=page if isinstance(page, int) and not isinstance(page, bool) else None,
                                            section=section[:500] if isinstance(section, str) else None,
                                            excerpt=str(s.get("excerpt", "")))
            sources.setdefault(sid, p)
            srcs.append(p)
        start, end = span.get("start"), span.get("end")
        if isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(text) and srcs:
            citations.append(Citation(text=text[start:end], start=start, end=end, sources=srcs))
    answered = bool(data.get("answered")) and bool(citations)
    places = data.get("related")
    places = places[:RELATED_MAX] if isinstance(places, list) and not answered else []
    related = [p for p in map(_located, places) if p]
    return Answer(text=text, citations=citations, sources=list(sources.values()), answered=answered,
                  related=related, trace=trace or [])


def _located(item: object) -> Passage | None:
    """A related place read back: a dict with a uri or a title, anything else dropped."""
    if not isinstance(item, dict):
        return None
    uri, title, page, section = (item.get(k) for k in ("uri", "title", "page", "section"))
    uri = uri[:2000] if isinstance(uri, str) else ""
    title = title[:500] if isinstance(title, str) else ""
    if not uri and not title:
        return None
    return Passage(text="", uri=uri, title=title,
                   page=page if isinstance(page, int) and not isinstance(page, bool) else None,
                   section=section[:500] if isinstance(section, str) else None)
