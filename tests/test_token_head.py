"""The learned token head (scripts/token_head.py): its gradient is the score's, and training is deterministic."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import token_head as th
from token_states import Question


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _questions(n: int = 6, seed: int = 0) -> list[Question]:
    """Questions whose fact-holding candidates repeat some of the question's tokens, the others do not."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        q = _unit(rng.normal(size=(4, 384)))
        cands, holds = {}, {}
        for i in range(5):
            s = rng.normal(size=(6, 384))
            if i % 2 == 0:
                s[:2] = q[:2] + 0.3 * rng.normal(size=(2, 384))
            cands[i], holds[i] = _unit(s), int(i % 2 == 0)
        out.append(Question(f"f/{k}", "f", "en", True, q, np.ones(4, np.float32), [0, 1, 2, 3, 4], 0, cands,
                            {i: float(rng.normal()) for i in cands}, holds, _unit(rng.normal(size=(3, 384)))))
    return out


def test_the_gradient_of_the_head_matches_finite_differences() -> None:
    qs = _questions()
    rng = np.random.default_rng(1)
    b = th._Batch(qs, th.basis_of(qs, 16), lambda q: q.top)
    W, u, c = rng.normal(size=(16, 6)), 0.1 * rng.normal(size=384), 0.3
    weights = [rng.normal(size=5) for _ in qs]

    def objective(W, u, c) -> float:
        return sum(float(w @ h) for w, h in zip(weights, th._scores(W, u, c, b), strict=True))

    _, gW, gu, gc = th._scores(W, u, c, b, weights)
    eps = 1e-6
    for idx in [(0, 0), (3, 2), (15, 5)]:
        up, down = W.copy(), W.copy()
        up[idx] += eps
        down[idx] -= eps
        assert gW[idx] == pytest.approx((objective(up, u, c) - objective(down, u, c)) / (2 * eps), rel=1e-4, abs=1e-7)
    for i in (0, 200):
        up, down = u.copy(), u.copy()
        up[i] += eps
        down[i] -= eps
        assert gu[i] == pytest.approx((objective(W, up, c) - objective(W, down, c)) / (2 * eps), rel=1e-4, abs=1e-7)
    assert gc == pytest.approx((objective(W, u, c + eps) - objective(W, u, c - eps)) / (2 * eps), rel=1e-4)


def test_training_is_deterministic_and_ranks_the_fact_holding_candidates_first() -> None:
    qs = _questions(seed=2)
    config = th.HeadConfig(rank=16, dim=8, steps=30)
    a, b = th.train(qs, config), th.train(qs, config)
    assert np.array_equal(a.W, b.W) and np.array_equal(a.u, b.u) and a.alpha == b.alpha
    for q, s in zip(qs, th.scores(a, qs), strict=True):
        best = max(s, key=lambda i: q.learned[i] * a.g + a.alpha * s[i])
        assert q.holds[best] == 1
