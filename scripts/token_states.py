"""What scripts/token_match_screen.py reads: per question of the pool, the bundled model's token states of the
question's content tokens and of its candidate sentences, cached per family.

For each row of `train_answerability.py --ranking held-out` that has features (the gate weighed a sentence), the
chosen sentence is the captured candidate with the row's cosine, lexical share and bonus (the best of them by the
held-out learned order); the candidates kept are the first `TOP` of that order plus the chosen one, each read as the
model reads it (its passage's heading, then the sentence), and the chosen one's whole passage. States are the last
layer's (citerag.adapters.e5_tokens), L2-normalised per token; a question keeps its content tokens (not a filler or
stop word, not hiragana alone), each with its rarity (minus the unigram log-probability, over the question's highest).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pool_rows import candidate, key, rows_of
from train_answerability import held_out_order, rows_for

from citerag.adapters.e5_tokens import E5Tokens
from citerag.answerer import rules
from citerag.search.sparse import STOPWORDS

TOP = 8
LAYOUT = "top8-heading-passage-v1"  # what a cache file holds; a file of another layout is rebuilt
_HIRA = re.compile(r"[\u3040-\u309f\u30fc何]")
_WORD = re.compile(r"[0-9A-Za-z\u00c0-\u024f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff10-\uff5a]")
_TOLERANCE = 1e-4  # the row's features are the candidate's, rounded by JSON


@dataclass
class Question:
    """One row's states: `q` [n, 384] content tokens of the question and their rarity `qw`; `cands` maps a
    candidate's index (in the hand ranking's capture) to its [m, 384] states; `top` is the held-out learned order's
    first TOP; `passage` the chosen candidate's passage."""

    key: str
    family: str
    lang: str
    answerable: bool
    q: np.ndarray
    qw: np.ndarray
    top: list[int]
    chosen: int
    cands: dict[int, np.ndarray]
    learned: dict[int, float]
    holds: dict[int, int]
    passage: np.ndarray


class Encoder:
    def __init__(self) -> None:
        self.model = E5Tokens()
        self.filler = set(rules.lexicon("filler")) | set(STOPWORDS)

    def _unit(self, states: np.ndarray) -> np.ndarray:
        return (states / np.linalg.norm(states, axis=1, keepdims=True)).astype(np.float32)

    def question(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        st = self.model.encode(text, is_query=True)
        idx, rarity = [], []
        for i, ((a, b), c) in enumerate(zip(st.spans, st.content, strict=True)):
            if not c or b <= a:
                continue
            wa, wb = a, b  # the whole word the piece belongs to
            while wa > 0 and not text[wa - 1].isspace():
                wa -= 1
            while wb < len(text) and not text[wb].isspace():
                wb += 1
            if re.sub(r"[^\w]", "", text[wa:wb].lower()) in self.filler or not _WORD.search(_HIRA.sub("", text[a:b])):
                continue
            idx.append(i)
            rarity.append(-float(self.model._scores[st.ids[i]]))
        if not idx:
            idx = [i for i, c in enumerate(st.content) if c]
            rarity = [1.0] * len(idx)
        w = np.array(rarity)
        return self._unit(st.states[idx]), (w / w.max()).astype(np.float32)

    def sentence(self, text: str) -> np.ndarray:
        st = self.model.encode(text, is_query=False)
        return self._unit(st.states[st.content] if st.content.any() else st.states)


def _heading(c: list) -> str:
    unit, length = c[10][0]
    return unit[: len(unit) - length]


def _passage(cands: list[list], rank: int) -> str:
    statements: dict[int, str] = {}
    head = ""
    for c in cands:
        if c[0] == rank:
            head = _heading(c)
            for j, (unit, length) in enumerate(c[10]):
                statements.setdefault(c[1] + j, unit[len(unit) - length:])
    return head + " ".join(statements[p] for p in sorted(statements))


def weighed(family: Path, families: list[Path], rows: Path):
    """Per held-out row the gate weighed a sentence for: (row id, hand row with its captured candidates, the
    held-out learned scores, the chosen candidate, the learned order's first TOP)."""
    hand = {r["id"]: r for r in rows_of(family, rows, ranking="hand", capture=True)}
    model = held_out_order(family, families, rows)
    for r in rows_for(family, families, rows, "held-out"):
        h, ft = hand.get(r["id"]), r["features"]
        if not ft or not h or not h.get("candidates"):
            continue
        cands = h["candidates"]
        s = model.scores(h["lang"], [candidate(c) for c in cands], h["question"], h.get("passage_scores"))
        same = [i for i, c in enumerate(cands) if abs(c[7] - ft["bonus"]) < _TOLERANCE
                and abs(c[5] - ft["cosine"]) < _TOLERANCE and abs(c[4] - ft["lexical"]) < _TOLERANCE]
        if not same:
            raise SystemExit(f"{family.name}/{r['id']}: no captured candidate has the row's features; "
                             "the row caches are from different code, rebuild them (--rows)")
        yield r["id"], h, s, max(same, key=lambda i: s[i]), [int(i) for i in np.argsort(-s, kind="stable")[:TOP]]


def _build(family: Path, families: list[Path], rows: Path, enc: Encoder) -> list[Question]:
    out = []
    for rid, h, s, chosen, top in weighed(family, families, rows):
        cands = h["candidates"]
        q, qw = enc.question(h["question"])
        kept = [*top, *([chosen] if chosen not in top else [])]
        out.append(Question(f"{family.name}/{rid}", family.name, h["lang"], bool(h["answerable"]), q, qw, top,
                            chosen, {i: enc.sentence(_heading(cands[i]) + cands[i][3]) for i in kept},
                            {i: float(s[i]) for i in kept}, {i: int(cands[i][-1]) for i in kept},
                            enc.sentence(_passage(cands, cands[chosen][0]))))
    return out


def _save(path: Path, qs: list[Question]) -> None:
    arrays, meta = {}, []
    for n, q in enumerate(qs):
        arrays[f"{n}_q"], arrays[f"{n}_qw"], arrays[f"{n}_p"] = q.q, q.qw, q.passage
        for i, states in q.cands.items():
            arrays[f"{n}_c{i}"] = states
        meta.append({"key": q.key, "family": q.family, "lang": q.lang, "answerable": q.answerable, "top": q.top,
                     "chosen": q.chosen, "cands": sorted(q.cands), "learned": list(map(q.learned.get, sorted(q.cands))),
                     "holds": list(map(q.holds.get, sorted(q.cands)))})
    np.savez(path.with_suffix(".npz"), **arrays)
    path.with_suffix(".json").write_text(json.dumps({"layout": LAYOUT, "questions": meta}), encoding="utf-8")


def _load(path: Path) -> list[Question] | None:
    try:
        meta = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        if meta.get("layout") != LAYOUT:
            return None
        with np.load(path.with_suffix(".npz"), allow_pickle=False) as z:
            return [Question(m["key"], m["family"], m["lang"], m["answerable"], z[f"{n}_q"], z[f"{n}_qw"], m["top"],
                             m["chosen"], {i: z[f"{n}_c{i}"] for i in m["cands"]},
                             dict(zip(m["cands"], m["learned"], strict=True)),
                             dict(zip(m["cands"], m["holds"], strict=True)), z[f"{n}_p"])
                    for n, m in enumerate(meta["questions"])]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing or unreadable: rebuilt


def questions(families: list[Path], rows: Path, states: Path, include: set[str], log=print) -> list[Question]:
    """The questions of the families named in `include`, from `states` when cached (keyed by the families' files
    and the answerer's code), else encoded and cached."""
    states.mkdir(parents=True, exist_ok=True)
    enc: Encoder | None = None
    out = []
    # A family's rows are asked with an order fit on the other families' rows: every family's key goes in.
    mark = hashlib.sha256("|".join(key(f) for f in families).encode()).hexdigest()[:8]
    for family in (f for f in families if f.name in include):
        path = states / f"{family.name}-{key(family)}-{mark}"
        qs = _load(path)
        if qs is None:
            enc = enc or Encoder()
            qs = _build(family, families, rows, enc)
            _save(path, qs)
            log(f"encoded {family.name}: {len(qs)} questions")
        out += qs
    return out
