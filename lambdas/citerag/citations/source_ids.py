"""Source ids, the one scheme every path uses: S<n> in rank order, signed as S<n>-<nonce><mac> (e.g. S3-k7qa9f)
where a parser must verify them without state.

The parser Lambda receives only the model's raw output (no session, no search results), so it cannot look
up which ids a search returned. Each search call picks a 3-character nonce and signs (nonce, n) with a
deployment key; the parser recomputes the 3-character MAC. A made-up or altered id passes with a chance of
1 in 32,768; the client, which sees the search results in the trace, then checks exact membership.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Sequence

from citerag.search.passage import Passage

# ASCII digits without a leading zero: `\d` would take "S١" (Arabic-Indic) or "S１" (full width) for S1, and "S01"
# verifies as S1 too, so an id no search gave would pass as one it did.
SOURCE_ID_RE = re.compile(r"S([1-9][0-9]{0,2})-([a-z2-7]{3})([a-z2-7]{3})")
FIND_RE = re.compile(r"\bS[1-9][0-9]{0,2}-[a-z2-7]{6}\b")


def _b32(data: bytes, n: int) -> str:
    return base64.b32encode(data).decode().lower()[:n]


def nonce_for(*parts: str) -> str:
    """A deterministic per-search nonce: same index, query and results give the same ids."""
    return _b32(hashlib.sha256("\x1f".join(parts).encode()).digest(), 3)


def _mac(key: str, nonce: str, n: int) -> str:
    return _b32(hmac.new(key.encode(), f"{nonce}|{n}".encode(), hashlib.sha256).digest(), 3)


def make(key: str, nonce: str, n: int) -> str:
    return f"S{n}-{nonce}{_mac(key, nonce, n)}"


def verify(key: str, source_id: str) -> bool:
    m = SOURCE_ID_RE.fullmatch(source_id.strip())
    if not m:
        return False
    return hmac.compare_digest(m.group(3), _mac(key, m.group(2), int(m.group(1))))


def assign(passages: Sequence[Passage], key: str | None = None, query: str = "") -> list[Passage]:
    """Copies of `passages` with source ids in rank order: S1, S2, ... or, given a deployment key, signed ids
    whose nonce is derived from the query and the passages (the same search gives the same ids)."""
    if key is None:
        return [p.model_copy(update={"source_id": f"S{n}"}) for n, p in enumerate(passages, start=1)]
    nonce = nonce_for(query, *(p.id for p in passages))
    return [p.model_copy(update={"source_id": make(key, nonce, n)}) for n, p in enumerate(passages, start=1)]
