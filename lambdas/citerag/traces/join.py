"""The answer in InvokeAgent events, joined with the search results the trace shows: each cited span gets the
passages it cites, with {uri, title, page} and the sentence as excerpt. Used by the Classic client, the local
runtime's callers, the benches and `citerag trace`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from citerag.citations import claude_format as cf
from citerag.citations import messages_format as mf
from citerag.citations.answer import Answer, Citation, where_to_look
from citerag.citations.excerpts import as_source
from citerag.citations.payload import results_of
from citerag.citations.pii import MASK_LABEL
from citerag.search.passage import Passage


def answer_from_events(events: Iterable[dict[str, Any]], mask: Callable[[str], str] | None = None) -> Answer:
    """`mask`: the rules the answer was masked with (the parser's), for an excerpt that is not the cited sentence
    (a model's paraphrase: the passage's start); the default rules when not given."""
    text_parts: list[str] = []
    traces: list[dict[str, Any]] = []
    sources: dict[str, Passage] = {}
    answer_raw = ""
    shown: list[tuple[int, str]] = []  # (offset in the answer, text) of each part the chunks attribute
    offset = 0
    guarded = False
    for ev in events:
        if "chunk" in ev:
            data = ev["chunk"].get("bytes", b"")
            text_parts.append(data.decode("utf-8") if isinstance(data, bytes) else str(data))
            for c in (ev["chunk"].get("attribution") or {}).get("citations") or []:
                part = (c.get("generatedResponsePart") or {}).get("textResponsePart") or {}
                if isinstance(part.get("text"), str) and isinstance((part.get("span") or {}).get("start"), int):
                    shown.append((offset + part["span"]["start"], part["text"]))
            offset += len(text_parts[-1])
        elif "trace" in ev:
            traces.append(ev["trace"])
            # botocore's bedrock-agent-runtime model: Trace.guardrailTrace.action is INTERVENED or NONE.
            guarded = guarded or ev["trace"].get("trace", {}).get("guardrailTrace", {}).get("action") == "INTERVENED"
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
        claim = part.text
        start = text.find(claim, cursor)
        if start < 0:
            # Masking changed the part ("write to [EMAIL]"): the attributed span that is this part with personal
            # data replaced is what the user sees, and it keeps the part's sources.
            at = next(((o, t) for o, t in shown
                       if o >= cursor and text[o : o + len(t)] == t and _masked_form(t, claim)), None)
            if at is None:
                continue  # post-processing replaced this part (e.g. an ungrounded answer became the fallback)
            start, claim = at
        end = start + len(claim)
        cursor = end
        srcs = []
        for sid in part.sources:
            # Only ids this turn's searches returned resolve: the parser can check a signature but sees no
            # session, so an id signed for another session (valid signature) is dropped here.
            r = sources.get(sid)
            if r is None:
                continue
            src = as_source(r, claim, mask=mask, earlier=cited.get(sid))
            cited.setdefault(sid, src.model_copy())  # the list's: its lines grow, the citation's do not
            srcs.append(src)
        if srcs:
            citations.append(Citation(text=claim, start=start, end=end, sources=srcs))
    return Answer(text=text, citations=citations, sources=list(cited.values()), answered=bool(citations),
                  # Not after a guardrail intervened: what it blocked may be what the places would show.
                  related=[] if citations or guarded else where_to_look(sources.values()), trace=traces)


def _masked_form(shown: str, claim: str) -> bool:
    """Is `shown` the claim with some values masked? Each [LABEL] stands for a short run of text."""
    pieces = MASK_LABEL.split(shown)
    return len(pieces) > 1 and re.fullmatch(".{1,80}?".join(re.escape(p) for p in pieces), claim, re.S) is not None
