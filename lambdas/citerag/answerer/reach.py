"""How far a question's best passage stands out from the index it was found in: whether the documents are on the
question's subject, in terms that hold across indexes (docs/answers.md "Places to look")."""

from __future__ import annotations

import numpy as np

from citerag.search.ports import VectorProfile


def index_reach(question: np.ndarray, best: float, profile: VectorProfile) -> dict[str, float]:
    """`best_vs_index`: the question's best cosine over the index less the index's typical cosine (its passages'
    mean cosine to the direction they point): an index on one subject lifts both alike. `centroid_z`: the question's
    cosine to that direction, in standard deviations of the passages' from their mean. `index_gap`: its best cosine
    less its mean cosine to the passages (recorded, not read: it marks down a question on the index's whole subject)."""
    q = np.asarray(question, dtype=np.float64)
    mean = np.asarray(profile.mean, dtype=np.float64)
    norm = float(np.linalg.norm(mean))
    toward = float(q @ mean)
    centroid_z = (toward / norm - profile.spread_mean) / profile.spread_std \
        if norm > 0.0 and profile.spread_std > 1e-9 else 0.0
    return {"best_vs_index": float(best) - profile.spread_mean, "centroid_z": centroid_z,
            "index_gap": float(best) - toward}
