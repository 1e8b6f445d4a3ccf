"""The answerability model over `extractive._features`: whether the best sentence holds the fact, and whether a
refusal lists places to look (docs/answers.md "When it refuses"; trained by scripts/train_answerability.py)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

WEIGHTS = Path(__file__).with_name("answerability.json")


@dataclass(frozen=True)
class LogisticGate:
    """P(the best sentence answers) = sigmoid(w . standardised features + b); answered when it reaches the
    threshold of the question's language."""
    names: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    thresholds: Mapping[str, float]
    # Whether the documents are on the question's subject (its thresholds: the floor per language): a refusal lists
    # places to look only when they are, as search calls passages relevant to a question on another subject too.
    on_subject: LogisticGate | None = None

    def probability(self, features: Mapping[str, float]) -> float:
        # A feature the decision lacks (an index that keeps no vector profile) weighs as the typical value.
        z = self.bias + sum(w * (float(features.get(n, m)) - m) / s
                            for n, m, s, w in zip(self.names, self.mean, self.scale, self.weights, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def shows_places(self, lang: str, features: Mapping[str, float]) -> bool:
        return self.on_subject is None or self.on_subject.judge(lang, features)[0]

    def judge(self, lang: str, features: Mapping[str, float]) -> tuple[bool, float | None, float | None]:
        p = self.probability(features)
        threshold = self.thresholds.get(lang, self.thresholds.get("en", 0.5))
        return p >= threshold, round(p, 4), threshold

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> LogisticGate:
        return cls.of(json.loads(path.read_text(encoding="utf-8")))

    @classmethod
    def of(cls, data: Mapping) -> LogisticGate:
        on_subject = data.get("on_subject")
        return cls(names=tuple(data["features"]), mean=tuple(data["mean"]), scale=tuple(data["scale"]),
                   weights=tuple(data["weights"]), bias=float(data["bias"]), thresholds=dict(data["thresholds"]),
                   on_subject=cls.of(on_subject) if on_subject else None)


def fit(x: np.ndarray, y: np.ndarray, *, l2: float = 1.0, iterations: int = 50) -> tuple[np.ndarray, float,
                                                                                        np.ndarray, np.ndarray]:
    """Standardise, then Newton's method (IRLS) on the L2-penalised log loss: deterministic, so the same pool gives
    the same weights bit for bit. Returns (weights, bias, mean, scale)."""
    if len(x) == 0 or x.ndim != 2:
        raise ValueError("no rows to fit: the pool needs at least two families with questions")
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[-1] = 0.0  # the bias is not shrunk
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -50, 50)))
        gradient = z.T @ (p - y) + penalty * w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return w[:-1], float(w[-1]), mean, scale


def gate_from(names: Sequence[str], x: np.ndarray, y: np.ndarray, thresholds: Mapping[str, float],
              l2: float = 1.0) -> LogisticGate:
    weights, bias, mean, scale = fit(x, y, l2=l2)
    return LogisticGate(names=tuple(names), mean=tuple(map(float, mean)), scale=tuple(map(float, scale)),
                        weights=tuple(map(float, weights)), bias=bias, thresholds=dict(thresholds))
