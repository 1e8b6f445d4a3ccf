"""Fusion of the dense and sparse result lists: reciprocal rank fusion, or a convex combination of
min-max normalised scores. `citerag bench` compares them; Settings picks the measured winner."""

from __future__ import annotations

from collections.abc import Sequence

from citerag.search.ports import Match


def rrf(lists: Sequence[Sequence[Match]], k: int = 60) -> list[tuple[str, float]]:
    scores: dict[str, float] = {}
    for matches in lists:
        for rank, m in enumerate(matches, start=1):
            scores[m.id] = scores.get(m.id, 0.0) + 1.0 / (k + rank)
    return _sorted(scores)


def convex(dense: Sequence[Match], sparse: Sequence[Match], alpha: float = 0.5) -> list[tuple[str, float]]:
    """alpha * norm(dense) + (1 - alpha) * norm(sparse); a record missing from one list scores 0 there."""
    scores: dict[str, float] = {}
    for weight, matches in ((alpha, dense), (1.0 - alpha, sparse)):
        for mid, s in _minmax(matches).items():
            scores[mid] = scores.get(mid, 0.0) + weight * s
    return _sorted(scores)


def _minmax(matches: Sequence[Match]) -> dict[str, float]:
    if not matches:
        return {}
    hi = max(m.score for m in matches)
    lo = min(m.score for m in matches)
    if hi - lo <= 1e-12:
        return {m.id: 1.0 for m in matches}
    return {m.id: (m.score - lo) / (hi - lo) for m in matches}


def _sorted(scores: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
