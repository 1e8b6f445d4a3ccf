"""Retrieval metrics with the BEIR / pytrec_eval definitions (linear gain nDCG, recall over all relevant)."""

from __future__ import annotations

import math
from collections.abc import Sequence

Qrels = dict[str, dict[str, int]]


def ndcg_at(ranked: Sequence[str], rels: dict[str, int], k: int) -> float:
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: Sequence[str], rels: dict[str, int], k: int) -> float:
    relevant = {d for d, r in rels.items() if r > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def mrr_at(ranked: Sequence[str], rels: dict[str, int], k: int) -> float:
    for i, d in enumerate(ranked[:k]):
        if rels.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def evaluate(runs: dict[str, list[str]], qrels: Qrels) -> dict[str, float]:
    """Mean metrics over the queries that have judgements (as BEIR does)."""
    qids = [q for q in qrels if q in runs]
    if not qids:
        return {"ndcg@10": 0.0, "recall@5": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    n = len(qids)
    return {
        "ndcg@10": sum(ndcg_at(runs[q], qrels[q], 10) for q in qids) / n,
        "recall@5": sum(recall_at(runs[q], qrels[q], 5) for q in qids) / n,
        "recall@100": sum(recall_at(runs[q], qrels[q], 100) for q in qids) / n,
        "mrr@10": sum(mrr_at(runs[q], qrels[q], 10) for q in qids) / n,
    }


def percentile(values: Sequence[float], p: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    pos = (len(s) - 1) * p / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def wilson_interval(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion (statsmodels' proportion_confint(method="wilson")): on the small
    splits a benchmark can afford (20 questions), 80% means anything from 58% to 92%, and a reader should see that."""
    if n <= 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)
