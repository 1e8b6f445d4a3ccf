"""The answer in InvokeAgent events, joined with the search results the trace shows: each cited span gets the
passages it cites, with {uri, title, page} and the sentence as excerpt. Used by the Classic client, the local
runtime's callers, the benches and `citerag trace`."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from citerag.citations import claude_format as cf
from citerag.citations import messages_format as mf
from citerag.citations.answer import Answer, Citation
from citerag.citations.payload import results_of
from citerag.search.passage import Passage


def answer_from_events(events: Iterable[dict[str, Any]]) -> Answer:
    text_parts: list[str] = []
    traces: list[dict[str, Any]] = []
    sources: dict[str, Passage] = {}
    answer_raw = ""
    for ev in events:
        if "chunk" in ev:
            data = ev["chunk"].get("bytes", b"")
            text_parts.append(data.decode("utf-8") if isinstance(data, bytes) else str(data))
        elif "trace" in ev:
            traces.append(ev["trace"])
            orch = ev["trace"].get("trace", {}).get("orchestrationTrace", {})
            obs = orch.get("observation", {})
            out = obs.get("actionGroupInvocationOutput")
            if out:
                sources.update({p.source_id: p for p in results_of(out.get("text", "")) if p.source_id})
            raw = orch.get("modelInvocationOutput", {}).get("rawResponse", {}).get("content", "")
            decoded = mf.decode(raw) if isinstance(raw, str) else None
            raw = decoded.text if decoded is not None else raw  # Claude 3.5 on: the response JSON
            if isinstance(raw, str) and "<answer" in raw:
                answer_raw = raw
    text = "".join(text_parts)
    parts = cf.answer(answer_raw) or []
    citations: list[Citation] = []
    cited: dict[str, Passage] = {}
    cursor = 0
    for part in parts:
        if not part.sources:
            continue
        start = text.find(part.text, cursor)
        if start < 0:
            continue  # post-processing replaced this part (e.g. an ungrounded answer became the fallback)
        end = start + len(part.text)
        cursor = end
        srcs = []
        for sid in part.sources:
            # Only ids this turn's searches returned resolve: the parser can check a signature but sees no
            # session, so an id signed for another session (valid signature) is dropped here.
            r = sources.get(sid)
            if r is None:
                continue
            src = cited.get(sid) or r.model_copy(update={"excerpt": _excerpt(part.text, r.text)})
            cited[sid] = src
            srcs.append(src)
        if srcs:
            citations.append(Citation(text=part.text, start=start, end=end, sources=srcs))
    return Answer(text=text, citations=citations, sources=list(cited.values()), answered=bool(citations),
                  trace=traces)


_MASKED = re.compile(r"\[[A-Z][A-Z0-9_]{1,30}\]")  # what the PII masker puts in place of a value


def _excerpt(claim: str, passage: str, limit: int = 300) -> str:
    """The passage text the claim came from: found verbatim, or across the line breaks a text file keeps and the
    values masking replaced ([EMAIL]); the passage start only when the claim is not in it (a model's paraphrase)."""
    i = passage.find(claim)
    if i >= 0:
        return passage[i : i + max(len(claim), 1)][:limit]
    pieces = [r"\s*".join(re.escape(w) for w in part.split()) for part in _MASKED.split(claim)]
    if any(pieces):
        m = re.search(r"[^\n]{1,80}".join(pieces), passage)  # a masked value is on one line
        if m:
            return " ".join(m.group(0).split())[:limit]
    return " ".join(passage.split())[:limit]
