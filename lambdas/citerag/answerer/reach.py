"""How far a question's best passage stands out from the index it was found in: whether the documents are on the
question's subject, in terms that hold across indexes (docs/answers.md "Places to look")."""

from __future__ import annotations

import numpy as np

from citerag.search.ports import VectorProfile


def index_reach(question: np.ndarray, best: float, profile: VectorProfile) -> dict[str, float]:
    """`index_gap`: the question's best cosine over the index less its mean cosine to the index's passages (an index
    on one subject lifts both alike). `centroid_z`: its cosine to the direction the index's passages point, in
    standard deviations of theirs from their own."""
    q = np.asarray(question, dtype=np.float64)
    mean = np.asarray(profile.mean, dtype=np.float64)
    norm = float(np.linalg.norm(mean))
    toward = float(q @ mean)
    centroid_z = (toward / norm - profile.spread_mean) / profile.spread_std \
        if norm > 0.0 and profile.spread_std > 1e-9 else 0.0
    return {"index_gap": float(best) - toward, "centroid_z": centroid_z}
