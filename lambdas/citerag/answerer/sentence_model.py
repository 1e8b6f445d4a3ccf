"""The learned sentence order: a listwise logistic model that only reorders the hand ranking's candidates, their
scores unchanged (docs/answers.md "The order sentences are weighed in"; trained by scripts/train_ranker.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from citerag.answerer import rules
from citerag.answerer.ranking import Candidate
from citerag.search.passage import Passage
from citerag.search.query import Query

WEIGHTS = Path(__file__).with_name("sentence_model.json")

FEATURES = ("score", "score_gap", "hand_rank", "lexical", "lexical_gap", "cosine", "cosine_gap", "cosine_rank",
            "evidence_gap", "log_factor", "kind", "pair", "passage_rank", "first", "position", "length",
            "ja_score_gap", "ja_lexical_gap", "ja_cosine_gap", "ja_cosine_rank", "ja_kind", "ja_length",
            "ja_passage_rank", "asked_item", "passage_gap")
PAIR_COST = rules.number("pair_cost")  # taken back out of the bonus, so `kind` is the kind evidence alone


def _asked_items(question: str, candidates: Sequence[Candidate]) -> np.ndarray:
    """For a question that asks which option, key or setting to give, whether each candidate is an item of a list of
    them ("-g 自動判別の結果を出力します。"): its description shares few of the question's words, so the hand score and
    the cosine rank it low."""
    if not question or not rules.compiled("question_kinds", "asks_for_item").search(question):
        return np.zeros(len(candidates))
    item = rules.compiled("question_kinds", "list_item")
    return np.array([float(bool(item.match(c.text))) for c in candidates])


def _passage_gaps(scores: Sequence[float] | None, candidates: Sequence[Candidate]) -> np.ndarray:
    """How far below the best passage search scored each candidate's passage (0 without the scores). Bounded to
    [-1, 0], the range of the default (convex) fusion's scores the order was fit on: a reranker's scores run wider."""
    if not scores:
        return np.zeros(len(candidates))
    top = max(scores)
    return np.array([max(scores[c.rank] - top, -1.0) if c.rank < len(scores) else 0.0 for c in candidates])


def features(lang: str, candidates: Sequence[Candidate], question: str = "",
             passage_scores: Sequence[float] | None = None) -> np.ndarray:
    """One row per candidate (in FEATURES order), each read against the best of the question's candidates: the
    cosines of the bundled model sit in a narrow band whose level differs per question. `question`: its text, which
    `asked_item` reads (without it, that column is 0)."""
    if not candidates:
        return np.zeros((0, len(FEATURES)))
    score = np.array([c.score for c in candidates])
    lexical = np.array([c.lexical for c in candidates])
    cosine = np.array([c.similarity for c in candidates])
    evidence = np.array([c.evidence for c in candidates])
    pair = np.array([float(c.last != c.pos) for c in candidates])
    kind = np.array([c.bonus for c in candidates]) + PAIR_COST * pair
    order = np.argsort(-cosine, kind="stable")
    cosine_rank = np.empty(len(candidates))
    cosine_rank[order] = np.arange(len(candidates))
    ja = 1.0 if lang == "ja" else 0.0
    cols = {
        "score": score, "score_gap": score - score.max(), "hand_rank": np.log1p(np.arange(len(candidates))),
        "lexical": lexical, "lexical_gap": lexical - lexical.max(), "cosine": cosine,
        "cosine_gap": cosine - cosine.max(), "cosine_rank": np.log1p(cosine_rank),
        "evidence_gap": evidence - evidence.max(),
        "log_factor": np.log(np.array([max(c.factor, 1e-3) for c in candidates])), "kind": kind, "pair": pair,
        "passage_rank": np.array([float(c.rank) for c in candidates]),
        "first": np.array([float(c.pos == 0) for c in candidates]),
        "position": np.log1p(np.array([float(c.pos) for c in candidates])),
        "length": np.log(np.array([max(len(c.text), 1) for c in candidates], dtype=np.float64)),
        "asked_item": _asked_items(question, candidates),
        "passage_gap": _passage_gaps(passage_scores, candidates),
    }
    for name in ("score_gap", "lexical_gap", "cosine_gap", "cosine_rank", "kind", "length", "passage_rank"):
        cols[f"ja_{name}"] = ja * cols[name]
    return np.column_stack([cols[f] for f in FEATURES])


@dataclass(frozen=True)
class SentenceModel:
    """Candidates ordered by w . standardised features, best first; ties keep the hand ranking's order."""
    names: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]

    def scores(self, lang: str, candidates: Sequence[Candidate], question: str = "",
               passage_scores: Sequence[float] | None = None) -> np.ndarray:
        x = features(lang, candidates, question, passage_scores)
        if tuple(self.names) != FEATURES:
            raise ValueError("sentence_model.json was trained on other features: retrain it (scripts/train_ranker.py)")
        return ((x - np.array(self.mean)) / np.array(self.scale)) @ np.array(self.weights)

    def order(self, query: Query, usable: list[Passage], candidates: list[Candidate]) -> list[Candidate]:
        if len(candidates) < 2:
            return candidates
        s = self.scores(query.lang, candidates, query.text, [p.score for p in usable])
        return [candidates[i] for i in np.argsort(-s, kind="stable")]

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> SentenceModel:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(names=tuple(data["features"]), mean=tuple(data["mean"]), scale=tuple(data["scale"]),
                   weights=tuple(data["weights"]))


def fit(groups: Sequence[tuple[np.ndarray, np.ndarray]], *, l2: float = 1.0, iterations: int = 50,
        weights: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Listwise (softmax over each question's candidates, the target spread over those that hold the fact), L2, by
    Newton's method from zero: the same (features, labels) per question give the same (weights, mean, scale).
    `weights`: one per question, how much its loss counts (and its candidates in the mean and scale); 1 each
    without."""
    per = [1.0] * len(groups) if weights is None else list(weights)
    if len(per) != len(groups):
        raise ValueError("one weight per question")
    kept = [(x, y, v) for (x, y), v in zip(groups, per, strict=True) if len(x) and y.sum() > 0 and v > 0]
    if not kept:
        raise ValueError("no question with a candidate that holds the fact: nothing to fit")
    stacked = np.vstack([x for x, _, _ in kept])
    # Weights of 1 give the plain mean and standard deviation bit for bit (x * 1.0 is x, summed in the same order).
    rows = np.concatenate([np.full(len(x), v) for x, _, v in kept])
    mean = np.average(stacked, axis=0, weights=rows)
    scale = np.sqrt(np.average((stacked - mean) ** 2, axis=0, weights=rows))
    scale[scale < 1e-9] = 1.0
    zs = [((x - mean) / scale, y / y.sum(), v) for x, y, v in kept]

    def loss(w: np.ndarray) -> float:
        total = 0.5 * l2 * float(w @ w)
        for z, t, v in zs:
            s = z @ w
            top = s.max()
            total += v * float(top + np.log(np.exp(s - top).sum()) - t @ s)
        return total

    w = np.zeros(stacked.shape[1])
    current = loss(w)
    for _ in range(iterations):
        gradient = l2 * w
        hessian = np.diag(np.full(len(w), l2))
        for z, t, v in zs:
            s = z @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            zp = z.T @ p
            gradient = gradient + v * (z.T @ (p - t))
            hessian = hessian + v * ((z * p[:, None]).T @ z) - v * np.outer(zp, zp)
        step = np.linalg.solve(hessian, gradient)
        # Damped: halve the step until the loss falls (a full Newton step may overshoot far from the optimum).
        for _ in range(30):
            candidate = loss(w - step)
            if candidate <= current:
                break
            step = step / 2
        w, current = w - step, min(current, candidate)
        if np.max(np.abs(step)) < 1e-10:
            break
    return w, mean, scale


def model_from(groups: Sequence[tuple[np.ndarray, np.ndarray]], l2: float = 1.0,
               weights: Sequence[float] | None = None) -> SentenceModel:
    """The order fit on `groups` (see `fit`; `weights`, one per question, how much each counts)."""
    w, mean, scale = fit(groups, l2=l2, weights=weights)
    return SentenceModel(names=FEATURES, mean=tuple(map(float, mean)), scale=tuple(map(float, scale)),
                         weights=tuple(map(float, w)))
