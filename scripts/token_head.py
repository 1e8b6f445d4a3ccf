"""A learned token-interaction head over the bundled model's token states (scripts/token_states.py), in numpy.

    score(q, s) = sum_i a_i max_j cos(W q_i, W s_j),   a = softmax over the question's content tokens of (Q u + c r)

where q_i are the question's content-token states, s_j the candidate's (heading + sentence), r the tokens' rarity,
and W acts on the states' first `rank` principal directions (a fixed basis from the training questions' tokens):
a full projection to `dim` directions, or (`diagonal`) one weight per direction. Trained listwise over each
question's candidates (the first TOP of the held-out learned order) with the learned order's score as an offset:
z_k = g * learned_k + alpha * score_k, loss = -log of the softmax mass of z on the candidates holding the fact;
the max is differentiated through its argmax. Plain full-batch Adam, no randomness: the same questions give the
same weights bit for bit (one BLAS thread).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from token_states import Question


@dataclass(frozen=True)
class HeadConfig:
    rank: int = 128
    dim: int = 64
    diagonal: bool = False
    steps: int = 150
    lr: float = 0.01
    l2: float = 0.01  # on W - W0 and on u, per question's mean loss
    alpha0: float = 5.0


@dataclass
class Head:
    basis: np.ndarray
    W: np.ndarray
    u: np.ndarray
    c: float
    alpha: float
    g: float
    config: HeadConfig = field(default_factory=HeadConfig)


class _Batch:
    """The questions' token states concatenated once, in the basis; candidates are those `pick` names."""

    def __init__(self, qs: list[Question], basis: np.ndarray, pick) -> None:
        self.qs = qs
        self.picked = [list(pick(q)) for q in qs]
        self.qseg, self.cseg = [], []
        nq = ns = 0
        for q, picked in zip(qs, self.picked, strict=True):
            self.qseg.append((nq, nq + len(q.q)))
            nq += len(q.q)
            segs = []
            for i in picked:
                segs.append((ns, ns + len(q.cands[i])))
                ns += len(q.cands[i])
            self.cseg.append(segs)
        self.raw_q = np.vstack([q.q for q in qs]).astype(np.float64)
        self.Q = self.raw_q @ basis
        self.S = np.vstack([q.cands[i] for q, picked in zip(qs, self.picked, strict=True) for i in picked]
                           ).astype(np.float64) @ basis
        self.rarity = np.concatenate([q.qw for q in qs]).astype(np.float64)


def _unit(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = np.linalg.norm(x, axis=1, keepdims=True) + 1e-9
    return x / n, n


def _scores(W, u, c, b: _Batch, grad_of: list[np.ndarray] | None = None):
    """Each question's head scores over its picked candidates; with grad_of (dL/dscore per question), also the
    gradients of W, u and c."""
    P, pn = _unit(b.Q @ W)
    T, tn = _unit(b.S @ W)
    logit = b.raw_q @ u + c * b.rarity
    out = []
    if grad_of is not None:
        dP, dT, dlogit = np.zeros_like(P), np.zeros_like(T), np.zeros_like(logit)
    for n, ((q0, q1), segs) in enumerate(zip(b.qseg, b.cseg, strict=True)):
        s0 = segs[0][0]
        C = P[q0:q1] @ T[s0:segs[-1][1]].T
        a = np.exp(logit[q0:q1] - logit[q0:q1].max())
        a /= a.sum()
        m = np.empty((q1 - q0, len(segs)))
        arg = np.empty((q1 - q0, len(segs)), dtype=int)
        rows = np.arange(q1 - q0)
        for k, (a0, a1) in enumerate(segs):
            j = C[:, a0 - s0:a1 - s0].argmax(1)
            arg[:, k], m[:, k] = j + a0, C[rows, j + a0 - s0]
        out.append(a @ m)
        if grad_of is not None:
            gh = grad_of[n]
            e = m @ gh
            dlogit[q0:q1] += a * (e - a @ e)
            G = a[:, None] * gh[None, :]
            for k in range(len(segs)):
                tj, g, mk = T[arg[:, k]], G[:, k][:, None], m[:, k][:, None]
                dP[q0:q1] += g * (tj - mk * P[q0:q1])  # d cos(p, t) / dp, before p's norm
                np.add.at(dT, arg[:, k], g * (P[q0:q1] - mk * tj))
    if grad_of is None:
        return out
    gW = b.Q.T @ (dP / pn) + b.S.T @ (dT / tn)
    return out, gW, b.raw_q.T @ dlogit, float(dlogit @ b.rarity)


def basis_of(qs: list[Question], rank: int) -> np.ndarray:
    """The first `rank` principal directions (uncentred) of the questions' and candidates' token states."""
    m = np.zeros((384, 384))
    for q in qs:
        m += q.q.T.astype(np.float64) @ q.q
        for s in q.cands.values():
            m += s.T.astype(np.float64) @ s
    w, v = np.linalg.eigh(m)
    v = v[:, np.argsort(-w, kind="stable")[:rank]]
    return v * np.sign(v[np.abs(v).argmax(0), np.arange(rank)])  # a fixed sign per direction


def trainable(q: Question) -> bool:
    """An answerable question with a candidate holding the fact and one not, among the first TOP."""
    held = [q.holds[i] for i in q.top]
    return q.answerable and 0 < sum(held) < len(held)


def train(qs: list[Question], config: HeadConfig = HeadConfig(), log=None) -> Head:
    basis = basis_of(qs, config.rank)
    b = _Batch(qs, basis, lambda q: q.top)
    y = [np.array([q.holds[i] for i in q.top], float) for q in qs]
    learned = [np.array([q.learned[i] for i in q.top]) for q in qs]
    W0 = np.eye(config.rank) if config.diagonal else np.eye(config.rank)[:, :config.dim]
    params = {"W": W0.copy(), "u": np.zeros(384), "c": np.zeros(1), "alpha": np.array([config.alpha0]),
              "g": np.ones(1)}
    m1 = {k: np.zeros_like(v) for k, v in params.items()}
    m2 = {k: np.zeros_like(v) for k, v in params.items()}
    n = len(qs)
    for t in range(1, config.steps + 1):
        W, u, c, alpha, g = params["W"], params["u"], params["c"][0], params["alpha"][0], params["g"][0]
        hs = _scores(W, u, c, b)
        loss, gz, ga, gg = 0.0, [], 0.0, 0.0
        for h, yy, ll in zip(hs, y, learned, strict=True):
            z = g * ll + alpha * h
            p = np.exp(z - z.max())
            p /= p.sum()
            pos = float(p @ yy)
            loss -= np.log(pos)
            d = p - p * yy / pos
            gz.append(alpha * d)
            ga += float(d @ h)
            gg += float(d @ ll)
        _, gW, gu, gc = _scores(W, u, c, b, gz)
        if config.diagonal:
            gW = np.diag(np.diag(gW))
        grads = {"W": gW / n + config.l2 * (W - W0), "u": gu / n + config.l2 * u, "c": np.array([gc / n]),
                 "alpha": np.array([ga / n]), "g": np.array([gg / n])}
        for k, gr in grads.items():
            m1[k] = 0.9 * m1[k] + 0.1 * gr
            m2[k] = 0.999 * m2[k] + 0.001 * gr * gr
            params[k] = params[k] - config.lr * (m1[k] / (1 - 0.9**t)) / (np.sqrt(m2[k] / (1 - 0.999**t)) + 1e-8)
        if log and (t == 1 or t % 50 == 0):
            log(f"step {t}: listwise loss {loss / n:.4f}")
    return Head(basis, params["W"], params["u"], float(params["c"][0]), float(params["alpha"][0]),
                float(params["g"][0]), config)


def scores(head: Head, qs: list[Question]) -> list[dict[int, float]]:
    """The head's score of every cached candidate of each question."""
    b = _Batch(qs, head.basis, lambda q: sorted(q.cands))
    hs = _scores(head.W, head.u, head.c, b)
    return [dict(zip(picked, h.tolist(), strict=True)) for picked, h in zip(b.picked, hs, strict=True)]
