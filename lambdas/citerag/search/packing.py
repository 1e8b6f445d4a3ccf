"""Packing search results into a byte budget for the whole serialized JSON response.

Best results come first and keep the most room. When everything does not fit, long passages are cut
around their best-matching sentences instead of dropping whole results; results are dropped from the
tail only when the remaining room per result would be too small to be useful. Sizes are measured on the
final UTF-8 JSON, so escapes count and a character is never split (texts are cut as str, never as bytes).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from citerag.documents.chunking import first_line, line_range
from citerag.documents.text import split_sentences
from citerag.search.passage import Passage
from citerag.search.query import Query
from citerag.search.sparse import tokenize

ELLIPSIS = " … "
MIN_PASSAGE_BYTES = 240

Builder = Callable[[list[Passage]], dict[str, Any]]


def json_size(obj: Any) -> int:
    return len(dumps(obj).encode("utf-8"))


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _text_cost(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8")) - 2


def pack(
    items: Sequence[Passage],
    build: Builder,
    budget: int,
    query: str | Query,
    *,
    min_passage_bytes: int = MIN_PASSAGE_BYTES,
    size: Callable[[Any], int] = json_size,
    text_cost: Callable[[str], int] | None = None,
) -> tuple[dict[str, Any], list[Passage]]:
    """Return (payload, kept passages, texts cut to fit). `build(passages)` makes the payload.

    `size(payload)` measures what is actually sent (by default compact UTF-8 JSON); `text_cost(text)` is what
    one text adds to it (by default its JSON-escaped UTF-8 length). A Lambda response that embeds the body as
    a JSON string and is sent ASCII-escaped passes both. Raises ValueError if even an empty result list does
    not fit the budget."""
    cost = text_cost or _text_cost
    items = list(items)
    if size(build([])) > budget:
        raise ValueError(f"budget of {budget} bytes is too small for the response envelope")
    if size(build(items)) <= budget:
        return build(items), items

    terms = set(tokenize(query)) if isinstance(query, str) else set(query.terms)
    n = len(items)
    while n > 0:
        kept = items[:n]
        base = size(build([it.model_copy(update={"text": ""}) for it in kept]))
        room = budget - base
        costs = [cost(it.text) for it in kept]
        shares = _water_fill(costs, room)
        # Every result must keep a useful part (a sentence, or all of a short text); if one cannot, drop a
        # result from the tail instead. Empty texts cost nothing and always stay.
        if n == 1 or all(share >= min(min_passage_bytes, c) for share, c in zip(shares, costs, strict=True)):
            out = [_cut_passage(it, terms, share, cost) for it, share in zip(kept, shares, strict=True)]
            # A result cut down to nothing is dropped; one that was empty to begin with costs nothing and stays.
            out = [o for o, it in zip(out, kept, strict=True) if o.text or not it.text] or out[:1]
            payload = _shrink_until_fits(out, build, budget, terms, size, cost)
            if payload is not None:
                return payload, out
        n -= 1
    return build([]), []


def _water_fill(costs: list[int], room: int) -> list[int]:
    """Max-min fair shares: short texts keep all they need, long ones split the rest equally."""
    shares = [0] * len(costs)
    order = sorted(range(len(costs)), key=lambda i: costs[i])
    left, remaining = max(room, 0), len(costs)
    for i in order:
        fair = left // remaining
        shares[i] = min(costs[i], fair)
        left -= shares[i]
        remaining -= 1
    return shares


def _shrink_until_fits(out: list[Passage], build: Builder, budget: int, terms: set[str], size, cost):
    for _ in range(50):
        payload = build(out)
        n = size(payload)
        if n <= budget:
            return payload
        # Estimation slack (separators, ellipses): trim the longest text a little.
        j = max(range(len(out)), key=lambda i: cost(out[i].text))
        cur = cost(out[j].text)
        out[j] = _cut_passage(out[j], terms, max(0, cur - max(n - budget, cur // 10)), cost)
    return None


def _cut_passage(p: Passage, terms: set[str], max_bytes: int, cost: Callable[[str], int]) -> Passage:
    """The passage cut to fit; a text file's names the lines it still holds (its sentence citations count lines
    from there)."""
    text, start, end, lead = _cut(p.text, terms, max_bytes, cost, p.focus)
    if text == p.text:
        return p.model_copy()
    update: dict[str, Any] = {"text": text, "focus": _moved(p.focus, start, end, lead)}
    first = first_line(p.section, p.uri)
    if first is not None:
        update["section"] = line_range(p.text, start, end, first_line=first)
    return p.model_copy(update=update)


def _moved(focus: tuple[int, int] | None, start: int, end: int, lead: int) -> tuple[int, int] | None:
    """The focus in the cut text, which holds text[start:end] after `lead` characters of ellipsis."""
    if focus is None or not (start < focus[1] and focus[0] < end):
        return None
    return max(focus[0], start) - start + lead, min(focus[1], end) - start + lead


def cut_to_bytes(text: str, terms: set[str], max_bytes: int, cost: Callable[[str], int] | None = None) -> str:
    """Cut text to at most max_bytes (JSON-escaped UTF-8) around the sentences that best match `terms`."""
    return _cut(text, terms, max_bytes, cost or _text_cost)[0]


def _cut(text: str, terms: set[str], max_bytes: int, measure: Callable[[str], int],
         focus: tuple[int, int] | None = None) -> tuple[str, int, int, int]:
    """The cut text, where what it keeps of `text` starts and ends, and how many characters of ellipsis come
    before it: grown from the sentence that holds most of the terms, among those of `focus` (the chunk search
    matched) when given."""
    if measure(text) <= max_bytes:
        return text, 0, len(text), 0
    if max_bytes <= 0:
        return "", 0, 0, 0
    sentences = split_sentences(text)
    if not sentences:
        kept = _kept_prefix(text, max_bytes, measure)
        return _with_ellipsis(text, kept), 0, kept, 0
    scores = [len(terms.intersection(tokenize(s.text))) for s in sentences]
    # A window of a long parent holds more than the chunk that matched; a sentence elsewhere in it may share more
    # words with the query ("--exclude-dir … ディレクトリを再帰検索している" around grep's "-r, --recursive" row),
    # and a cut grown from there left the match out.
    seeds = [i for i, s in enumerate(sentences) if focus and s.start < focus[1] and focus[0] < s.end] \
        or range(len(sentences))
    best = max(seeds, key=lambda i: (scores[i], -i))
    chosen = {best}
    if measure(sentences[best].text) > max_bytes:
        s = sentences[best]
        kept = _kept_prefix(s.text, max_bytes, measure)
        return _with_ellipsis(s.text, kept), s.start, s.start + kept, 0
    # Grow around the best sentence, preferring the better-scoring neighbour, while it fits; between equals, the
    # side grown less, the one before first: what reads a sentence often comes just before it (a man page's option
    # line over its description: "-h, --human-readable" was cut off, and with it the answer, because the text after
    # the description always went first).
    lo = hi = best
    while True:
        options = []
        if lo > 0:
            options.append((scores[lo - 1], best - lo, -1))
        if hi < len(sentences) - 1:
            options.append((scores[hi + 1], hi - best, 1))
        grew = False
        for _, _, side in sorted(options, key=lambda o: (-o[0], o[1], o[2])):
            cand = lo - 1 if side < 0 else hi + 1
            trial = _render(text, sentences, chosen | {cand})
            if measure(trial) <= max_bytes:
                chosen.add(cand)
                lo, hi = min(lo, cand), max(hi, cand)
                grew = True
                break
        if not grew:
            break
    return _render(text, sentences, chosen), sentences[lo].start, sentences[hi].end, len(_ELLIPSIS) if lo > 0 else 0


_ELLIPSIS = "… "


def _render(text: str, sentences, chosen: set[int]) -> str:
    idx = sorted(chosen)
    lo, hi = idx[0], idx[-1]
    body = text[sentences[lo].start : sentences[hi].end]
    prefix = _ELLIPSIS if lo > 0 else ""
    suffix = " …" if hi < len(sentences) - 1 else ""
    return prefix + body + suffix


def _kept_prefix(text: str, max_bytes: int, cost: Callable[[str], int]) -> int:
    """How many characters of text fit, with an ellipsis after them (the longest such prefix)."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cost(text[:mid] + "…") <= max_bytes:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _with_ellipsis(text: str, kept: int) -> str:
    return (text[:kept] + "…") if kept else ""


def drop_tail(
    items: Sequence[Passage], build: Builder, budget: int, size: Callable[[Any], int] = json_size
) -> tuple[dict[str, Any], list[Passage]]:
    """The common approach, kept for comparison in benchmarks: drop whole results until the payload fits."""
    kept = list(items)
    while kept and size(build(kept)) > budget:
        kept.pop()
    return build(kept), kept


__all__ = ["cut_to_bytes", "drop_tail", "dumps", "json_size", "pack"]
