"""Measure a learned question-sentence score from the bundled model's vectors against the cosine, family-held-out on
the development pool (docs/answers.md "Measured and not kept").

The score is w . (q * s) (+ b): q the question's vector, s a candidate's, both as the ranking embeds them. With every
weight equal it is the cosine rescaled; fit, it may weigh the dimensions on which a sentence that answers differs
from one that is only on the topic. Fit by L2-penalised logistic regression towards the rescaled cosine, either
pointwise (P(a candidate holds the fact), over every question's candidates, near misses' included) or listwise (a
softmax over each answerable question's candidates). `--difference` adds w2 . |q - s| (penalised towards 0).

    python scripts/train_bilinear.py datasets/answers datasets/pool --objective listwise --report bilinear.json

Rows are the pool's candidates (the first TRAIN_FIRST of each question, in the hand order, to fit on; every one to
score) as `scripts/train_ranker.py` captures them (asked ranked by hand, a gate that always answers; `--rows DIR`,
the same cache), near misses' candidates included (every one labelled wrong). Each candidate's vector is built from
its statements' vectors read under their heading, and the question's as a query, exactly as the ranking embeds them
(cached in `--rows` too, keyed by the questions and the texts). Label: citing the candidate alone makes the answer
right.

Every figure is family-held-out: a family's candidates are scored by a model fit on the other families alone. The
L2 penalty is chosen on the 13 development families only (by `within` for the listwise fit, by `best_vs_near` for
the pointwise one); the 4 test families are reported apart, in aggregate.
Reported per language:
- `within`: for answerable questions, the share of (right, wrong) candidate pairs the score orders right (AUC),
  and how often the score's first candidate holds the fact;
- `best_vs_near`: across questions, whether the first candidate of the hand order (what the gates read) is that of
  an answerable question and holds the fact, against a near miss's (AUC);
- `order`: the learned sentence order (sentence_model.FEATURES) with the score's two columns added, how often its
  first candidate holds the fact, against the same order without them (both fit as train_ranker.py fits);
- `gate`: the learned gate (train_answerability.FEATURES) with the first candidate's score added, facts / refusal
  recall / precision against the same gate without it (both as train_answerability.py evaluates);
- `rules_and_score`: the rules gate also refusing when the first candidate's score is under a percentile of the
  development families' (those the rules answer), facts and near misses refused.
With `--jaquad DIR` (a folder of the JaQuAD retrieval set, as `citerag bench-answers` reads it: answers.jsonl,
queries.jsonl, corpus.jsonl), every fit also learns from JaQuAD questions, never scored: each sentence of a
question's context paragraph that holds a gold answer string is a candidate that holds the fact, its other sentences
are candidates on the same topic that do not. Only questions after the first 400 of answers.jsonl whose paragraph
none of the first 400 uses: the benches ask the first 400 (`citerag bench-answers <jaquad> --questions 400`,
`citerag bench-agent jaquad --questions 200`), so nothing they ask about is learned from. JaQuAD is CC BY-SA 3.0:
read where it lies, never copied; its vectors are cached in `--rows`.
Deterministic: the same rows give the same weights bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pool_rows import TEST_FAMILIES, candidate, families_of, pool_arguments, rows_of
from train_answerability import FEATURES as GATE_FEATURES
from train_answerability import figures as gate_figures
from train_answerability import held_out as gate_held_out
from train_ranker import L2 as RANKER_L2

from citerag.adapters.embedders import embedding_similarity
from citerag.answerer.extractive import rules_gate
from citerag.answerer.ranking import HEADING_CHARS, _under
from citerag.answerer.sentence_model import features as order_features
from citerag.answerer.sentence_model import fit as order_fit
from citerag.bench import answers as ab
from citerag.citations.statements import split_statements
from citerag.components import Components
from citerag.settings import Settings

L2_GRID = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0)
TRAIN_FIRST = 40  # candidates per question fit on, in the hand order: the ones on the topic, and fewer rows


def vectors(family: Path, rows: list[dict], cache: Path, similarity) -> tuple[np.ndarray, list[np.ndarray]]:
    """(question vectors, per question its candidates' vectors), cached beside the family's rows."""
    ds = ab.load(family)
    questions = [q for q in ds.questions if q.split in ("dev", "test")]
    if [q.id for q in questions] != [r["id"] for r in rows]:
        raise SystemExit(f"{family.name}: the cached rows are not this family's questions: delete {cache}")
    h = hashlib.sha256(json.dumps([[q.question, [c[-2] for c in r.get("candidates") or []]]
                                   for q, r in zip(questions, rows, strict=True)], ensure_ascii=False).encode())
    cached = cache / f"{family.name}-vectors-{h.hexdigest()[:16]}.npz"
    if cached.exists():
        data = np.load(cached)
        qs, flat, counts = data["q"], data["s"], data["n"]
        return qs, np.split(flat, np.cumsum(counts)[:-1])
    qs, per = [], []
    for q, r in zip(questions, rows, strict=True):
        cands = r.get("candidates") or []
        texts = list(dict.fromkeys(t for c in cands for t, _ in c[-2]))
        qv, matrix = similarity.vectors(q.question, texts)
        at = {t: i for i, t in enumerate(texts)}
        qs.append(qv)
        per.append(np.array([unit_vector(matrix[[at[t] for t, _ in c[-2]]], [n for _, n in c[-2]])
                             for c in cands],
                            dtype=np.float32).reshape(len(cands), len(qv)))
    counts = np.array([len(p) for p in per])
    np.savez(cached, q=np.array(qs, dtype=np.float32), s=np.concatenate(per), n=counts)
    return np.array(qs, dtype=np.float32), per


SCALE = 384.0  # the model's dimensions: q * s summed is the cosine, so each element is of order 1 / SCALE


def unit_vector(parts: np.ndarray, lengths: Sequence[int]) -> np.ndarray:
    """A candidate's vector from its statements' vectors, weighed by length, as `ranking._cosines` builds a pair's."""
    if len(parts) == 1:
        return parts[0]
    v = (parts * np.asarray(lengths, dtype=np.float32)[:, None]).sum(axis=0)
    return v / (float(np.linalg.norm(v)) or 1.0)


DIFFERENCE = {"on": False}  # `--difference`: the score also weighs |q - s|


def interactions(q: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Per candidate (row of `s`), q * s scaled so its mean over dimensions is the cosine; with `--difference`, then
    |q - s|, scaled so each element is of the same order."""
    q64, s64 = np.asarray(q, dtype=np.float64)[None, :], np.asarray(s, dtype=np.float64)
    product = SCALE * (s64 * q64)
    return np.hstack([product, np.sqrt(SCALE) * np.abs(q64 - s64)]) if DIFFERENCE["on"] else product


def fit_pointwise(x: np.ndarray, y: np.ndarray, *, l2: float, iterations: int = 50) -> tuple[np.ndarray, float]:
    """Logistic regression on `interactions`, L2-penalised towards the rescaled cosine (every weight alpha, alpha
    and the bias fit first on the cosine alone), by Newton's method from that start: deterministic, the same rows
    give the same weights bit for bit. Returns (weights, bias)."""
    if len(x) == 0 or y.min() == y.max():
        raise ValueError("both labels are needed to fit")
    dims = int(SCALE)
    cosine = x[:, :dims].mean(axis=1)
    coef = _newton(np.column_stack([cosine, np.ones(len(x))]), y, np.zeros(2), np.zeros(2), iterations)
    d = x.shape[1]
    towards = np.concatenate([np.full(dims, coef[0] / dims), np.zeros(d - dims)])
    prior = np.concatenate([towards, [0.0]])
    start = np.concatenate([towards, [coef[1]]])
    penalty = np.concatenate([np.full(d, l2), [0.0]])
    w = _newton(np.column_stack([x, np.ones(len(x))]), y, prior, penalty, iterations, start=start)
    return w[:-1], float(w[-1])


def fit_listwise(groups: Sequence[tuple[np.ndarray, np.ndarray]], *, l2: float,
                 iterations: int = 50) -> np.ndarray:
    """Listwise (a softmax over each question's candidates, the target spread over those that hold the fact): the
    weights that put first the candidate that answers, against the others of the same question only. Penalised
    towards the rescaled cosine, by damped Newton steps from it: deterministic. Returns the weights (no bias: it
    cancels within a question)."""
    groups = [(x, y) for x, y in groups if len(x) and y.sum() > 0]
    if not groups:
        raise ValueError("no question with a candidate that holds the fact: nothing to fit")
    z = np.vstack([x for x, _ in groups])
    t = np.concatenate([y / y.sum() for _, y in groups])
    starts = np.cumsum([0] + [len(x) for x, _ in groups[:-1]])
    d = z.shape[1]
    dims = int(SCALE)
    alpha = _softmax_newton(z[:, :dims].mean(axis=1, keepdims=True), t, starts, np.zeros(1), np.zeros(1),
                            iterations)[0]
    prior = np.concatenate([np.full(dims, alpha / dims), np.zeros(d - dims)])
    return _softmax_newton(z, t, starts, prior, np.full(d, l2), iterations)


def _softmax_newton(z: np.ndarray, t: np.ndarray, starts: np.ndarray, prior: np.ndarray, penalty: np.ndarray,
                    iterations: int) -> np.ndarray:
    sizes = np.diff(np.append(starts, len(z)))

    def probabilities(w: np.ndarray) -> tuple[np.ndarray, float]:
        s = z @ w
        top = np.repeat(np.maximum.reduceat(s, starts), sizes)
        e = np.exp(s - top)
        total = np.add.reduceat(e, starts)
        p = e / np.repeat(total, sizes)
        loss = float((np.log(total) + top[starts]).sum() - t @ s + 0.5 * penalty @ ((w - prior) ** 2))
        return p, loss

    w = prior.copy()
    p, current = probabilities(w)
    for _ in range(iterations):
        gradient = z.T @ (p - t) + penalty * (w - prior)
        zp = np.add.reduceat(z * p[:, None], starts)
        hessian = (z * p[:, None]).T @ z - zp.T @ zp + np.diag(penalty) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        # Damped: halve the step until the loss falls (a full Newton step may overshoot far from the optimum).
        for _ in range(30):
            p_next, loss = probabilities(w - step)
            if loss <= current:
                break
            step = step / 2
        else:
            break
        w, p, current = w - step, p_next, loss
        if np.max(np.abs(step)) < 1e-9:
            break
    return w


def _newton(z: np.ndarray, y: np.ndarray, prior: np.ndarray, penalty: np.ndarray, iterations: int,
            start: np.ndarray | None = None) -> np.ndarray:
    w = prior.copy() if start is None else start.copy()
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -50, 50)))
        gradient = z.T @ (p - y) + penalty * (w - prior)
        hessian = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.max(np.abs(step)) < 1e-9:
            break
    return w


def scores(weights: np.ndarray, bias: float, q: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The logit of each candidate (row of `s`) holding the fact asked by the question of vector `q`."""
    return interactions(q, s) @ weights + bias


BENCHED = 400  # the JaQuAD questions the benches ask: neither they nor their paragraphs are learned from


def jaquad_items(folder: Path, cache: Path, similarity) -> list[dict]:
    """JaQuAD questions as candidate lists (see the module's docstring), each sentence read under its article's
    title as the ranking reads a passage without headings."""
    def lines(name: str) -> list[dict]:
        return [json.loads(line) for line in (folder / name).read_text(encoding="utf-8").splitlines() if line]

    answers, queries = lines("answers.jsonl"), {r["_id"]: r["text"] for r in lines("queries.jsonl")}
    corpus = {r["_id"]: r for r in lines("corpus.jsonl")}
    benched = {a["context_doc"] for a in answers[:BENCHED]}
    asked = [a for a in answers[BENCHED:] if a["context_doc"] not in benched]
    plan = []
    for a in asked:
        doc = corpus[a["context_doc"]]
        spans = [t for t in split_statements(doc["text"], lines_wrap=True)
                 if len(t) >= 8 and not t.endswith(("?", "？"))]
        labels = [float(any(g in t for g in a["answers"])) for t in spans]
        plan.append((queries[a["_id"]], [_under(doc["title"][:HEADING_CHARS], t) for t in spans], labels))
    h = hashlib.sha256(json.dumps(plan, ensure_ascii=False).encode()).hexdigest()[:16]
    cached = cache / f"jaquad-vectors-{h}.npz"
    if cached.exists():
        data = np.load(cached)
        qs, per = data["q"], np.split(data["s"], np.cumsum(data["n"])[:-1])
    else:
        qs, per = [], []
        for question, texts, _ in plan:
            qv, matrix = similarity.vectors(question, texts)
            qs.append(qv)
            per.append(matrix)
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(cached, q=np.array(qs, dtype=np.float32), s=np.concatenate(per),
                 n=np.array([len(p) for p in per]))
    return [{"family": "jaquad", "lang": "ja", "answerable": True, "q": qv, "s": sv, "y": np.array(labels)}
            for (_, _, labels), qv, sv in zip(plan, qs, per, strict=True)]


def auc(pos: np.ndarray, neg: np.ndarray) -> float | None:
    if not len(pos) or not len(neg):
        return None
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size)


def design(items: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    x = np.vstack([interactions(it["q"], it["s"][:TRAIN_FIRST]) for it in items])
    y = np.concatenate([it["y"][:TRAIN_FIRST] for it in items])
    return x, y


def fit(items: list[dict], l2: float, objective: str) -> tuple[np.ndarray, float]:
    if objective == "pointwise":
        return fit_pointwise(*design(items), l2=l2)
    groups = [(interactions(it["q"], it["s"][:TRAIN_FIRST]), it["y"][:TRAIN_FIRST])
              for it in items if it["answerable"]]
    return fit_listwise(groups, l2=l2), 0.0


def held_out_scores(items: list[dict], names: list[str], l2: float, objective: str,
                    extra: list[dict]) -> dict[str, tuple[np.ndarray, float]]:
    """Per family, the weights fit on the other families' candidates (and `extra`'s, never scored)."""
    return {name: fit([it for it in items if it["family"] != name] + extra, l2, objective) for name in names}


def within(items: list[dict], score) -> dict:
    aucs, first = [], 0
    mine = [it for it in items if it["answerable"] and len(it["y"])]
    for it in mine:
        s = score(it)
        a = auc(s[it["y"] == 1], s[it["y"] == 0])
        if a is not None:
            aucs.append(a)
        first += int(it["y"][int(np.argmax(s))])
    return {"auc": round(float(np.mean(aucs)), 4), "questions": len(aucs), "first_holds": first,
            "of": len(mine)}


def best_vs_near(items: list[dict], score) -> dict:
    good = np.array([score(it)[0] for it in items if it["answerable"] and len(it["y"]) and it["y"][0] == 1])
    near = np.array([score(it)[0] for it in items if not it["answerable"] and len(it["y"])])
    return {"auc": round(auc(good, near) or 0.0, 4), "right_first": len(good), "near_misses": len(near)}


def _question(it: dict) -> str:
    return it.get("row", {}).get("question", "")


def order_columns(it: dict, raw: np.ndarray) -> np.ndarray:
    return np.column_stack([order_features(it["lang"], it["cands"], _question(it)), raw - raw.max(), raw])


def order_first_holds(items: list[dict], names: list[str], raw: dict[str, dict[int, np.ndarray]] | None) -> dict:
    """How often the learned order's first candidate holds the fact, each family ordered by a model fit on the
    others (as train_ranker.py); with `raw`, the score's columns added (values from the same fold's weights)."""
    held: dict[int, int] = {}
    for name in names:
        def cols(it: dict, fold: str = name) -> np.ndarray:
            base = order_features(it["lang"], it["cands"], _question(it))
            return base if raw is None else order_columns(it, raw[fold][it["i"]])
        train = [(cols(it), it["y"]) for it in items if it["family"] != name and it["answerable"] and len(it["y"])]
        w, mean, scale = order_fit(train, l2=RANKER_L2)
        for it in items:
            if it["family"] == name and it["answerable"] and len(it["y"]):
                s = ((cols(it) - mean) / scale) @ w
                held[it["i"]] = int(it["y"][int(np.argmax(s))])
    return held


def gate_with(items: list[dict], names: list[str], raw: dict[str, dict[int, np.ndarray]] | None) -> dict:
    """The learned gate, each family decided by a gate fit on the others (as train_answerability.py), with the
    first candidate's score added from the weights fit without that family (in-sample on the others)."""
    decided = np.zeros(len(items), dtype=bool)
    feats = GATE_FEATURES if raw is None else (*GATE_FEATURES, "bilinear")
    for name in names:
        rows = [with_score(it, raw[name] if raw is not None else None) for it in items]
        _, d = gate_held_out(rows, [name], feats)
        mine = np.array([it["family"] == name for it in items])
        decided[mine] = d[mine]
    rows = [it["row"] for it in items]
    return {lang: {k: (round(v[k], 4) if isinstance(v[k], float) else v[k])
                   for k in ("facts_right", "answerable", "refused_near", "near_misses", "facts", "refusal_recall",
                             "refusal_precision")}
            for lang, v in gate_figures(rows, decided).items()}


def with_score(it: dict, raw: dict[int, np.ndarray] | None) -> dict:
    r = dict(it["row"])
    if raw is not None and r["features"]:
        r["features"] = {**r["features"], "bilinear": float(raw[it["i"]][0]) if len(it["y"]) else 0.0}
    return r


CUTS = (0, 5, 10, 15, 20, 30)


def rules_and_score(items: list[dict], raw: dict[str, dict[int, np.ndarray]]) -> dict:
    """The rules gate, also refusing when the first candidate's held-out score is under the given percentile of the
    scores of the development families' questions the rules answer (per language); on the development and the
    test families."""
    rows = [it["row"] for it in items]
    dev = np.array([r["family"] not in TEST_FAMILIES for r in rows])
    rules = rules_gate()
    by_rules = np.array([bool(r["features"]) and rules.judge(r["lang"], r["features"])[0] for r in rows])
    first = np.array([raw[it["family"]][it["i"]][0] if len(it["y"]) else -np.inf for it in items])
    out: dict = {}
    for cut in CUTS:
        decided = by_rules.copy()
        for lang in ("en", "ja"):
            mine = np.array([r["lang"] == lang for r in rows])
            floor = np.percentile(first[mine & by_rules & dev], cut) if cut else -np.inf
            decided &= ~mine | (first >= floor)
        for part, keep in (("development", lambda n: n not in TEST_FAMILIES), ("test", lambda n: n in TEST_FAMILIES)):
            idx = [i for i, r in enumerate(rows) if keep(r["family"])]
            out.setdefault(part, {})[str(cut)] = {
                lang: {k: (round(v[k], 4) if isinstance(v[k], float) else v[k])
                       for k in ("facts_right", "answerable", "refused_near", "near_misses", "refusal_precision")}
                for lang, v in gate_figures([rows[i] for i in idx], decided[idx]).items()}
    return out


def summary(r: dict) -> None:
    print(f"{r['objective']}{' with |q - s|' if r['difference'] else ''}, l2 {r['l2']}, "
          f"JaQuAD questions {r['jaquad_questions']}, weights {r['weights_sha256']}")
    for part in ("all", "development", "test"):
        for lang in ("en", "ja"):
            w, b = r[part][lang]["within"], r[part][lang]["best_vs_near"]
            print(f"{part:11} {lang}: within-question AUC cosine {w['cosine']['auc']:.4f} learned "
                  f"{w['bilinear']['auc']:.4f} hand score {w['hand_score']['auc']:.4f}; first holds "
                  f"{w['cosine']['first_holds']} / {w['bilinear']['first_holds']} / {w['hand_score']['first_holds']}"
                  f" of {w['cosine']['of']}; right first vs near miss AUC {b['cosine']['auc']:.4f} / "
                  f"{b['bilinear']['auc']:.4f} / {b['hand_score']['auc']:.4f}")
    for part, langs in r["order_first_holds"].items():
        for lang, v in langs.items():
            print(f"learned order, {part} {lang}: first holds {v['without']} -> {v['with']} of {v['of']} "
                  f"(+{v['gained']} -{v['lost']})")
    for tag, langs in r["gate"].items():
        for lang, v in langs.items():
            print(f"learned gate {tag} the score, {lang}: facts {v['facts_right']}/{v['answerable']}, refused "
                  f"{v['refused_near']}/{v['near_misses']} near misses, precision {v['refusal_precision']}")
    for part, cuts in r["rules_and_score"].items():
        for cut, langs in cuts.items():
            print(f"rules + score over the {cut}th percentile, {part}: " + "; ".join(
                f"{lang} facts {v['facts_right']}/{v['answerable']} refused {v['refused_near']}/{v['near_misses']}"
                f" precision {v['refusal_precision']}" for lang, v in langs.items()))


def main() -> None:
    ap = pool_arguments(__doc__.split("\n\n")[0], "citerag-ranker-rows")
    ap.add_argument("--l2", type=float, help="skip the choice on the development families")
    ap.add_argument("--difference", action="store_true", help="the score also weighs |q - s| (towards 0)")
    ap.add_argument("--jaquad", type=Path, help="also learn from JaQuAD questions (see above)")
    ap.add_argument("--objective", choices=("pointwise", "listwise"), default="listwise",
                    help="fit P(holds the fact) over every candidate, or the first of each question's candidates")
    args = ap.parse_args()
    DIFFERENCE["on"] = args.difference
    families = families_of(args.pool)
    names = [f.name for f in families]
    with tempfile.TemporaryDirectory(prefix="citerag-bilinear-") as tmp:
        comps = Components(Settings(index_path=Path(tmp) / "index.sqlite"))
        similarity = embedding_similarity(comps.embedder)
        items: list[dict] = []
        rows_by: dict[str, list[dict]] = {}
        for f in families:
            rows = rows_of(f, args.rows, ranking="hand", capture=True)
            rows_by[f.name] = rows
            qs, per = vectors(f, rows, args.rows, similarity)
            for r, qv, sv in zip(rows, qs, per, strict=True):
                cands = r.get("candidates") or []
                items.append({"i": len(items), "family": f.name, "lang": r["lang"], "answerable": r["answerable"],
                              "row": r, "q": qv, "s": sv, "y": np.array([float(c[-1]) for c in cands]),
                              "cands": [candidate(c) for c in cands]})
        extra = jaquad_items(args.jaquad, args.rows, similarity) if args.jaquad else []
    dev_names = [n for n in names if n not in TEST_FAMILIES]
    report: dict = {"families": names, "questions": len(items),
                    "candidates": int(sum(len(it["y"]) for it in items))}
    dev_items = [it for it in items if it["family"] not in TEST_FAMILIES]
    # The penalty: chosen on the development families alone, by the within-question AUC, family-held-out.
    # The penalty, chosen on the development families alone, family-held-out: for the listwise fit by how it orders
    # each question's candidates, for the pointwise one by how it tells a right first candidate from a near miss's.
    def criterion(score) -> float:
        if args.objective == "listwise":
            return within(dev_items, score)["auc"]
        return best_vs_near(dev_items, score)["auc"]

    choice: dict = {"cosine": criterion(lambda it: np.array([c.similarity for c in it["cands"]]))}
    print(f"cosine: development AUC {choice['cosine']}", flush=True)
    for l2 in ([args.l2] if args.l2 else L2_GRID):
        fits = held_out_scores(dev_items, dev_names, l2, args.objective, extra)
        choice[l2] = criterion(lambda it, fits=fits: scores(*fits[it["family"]], it["q"], it["s"]))
        print(f"l2 {l2}: development AUC {choice[l2]}", flush=True)
    l2 = max((k for k in choice if k != "cosine"), key=lambda k: (choice[k], -k))
    report["objective"] = args.objective
    report["l2_choice"] = choice
    report["l2"] = l2
    fits = held_out_scores(items, names, l2, args.objective, extra)

    def learned(it: dict) -> np.ndarray:
        return scores(*fits[it["family"]], it["q"], it["s"])

    def cosine(it: dict) -> np.ndarray:
        return np.array([c.similarity for c in it["cands"]])

    def hand(it: dict) -> np.ndarray:
        return np.array([c.score for c in it["cands"]])

    for part, keep in (("all", lambda n: True), ("development", lambda n: n not in TEST_FAMILIES),
                       ("test", lambda n: n in TEST_FAMILIES)):
        report[part] = {}
        for lang in ("en", "ja"):
            sel = [it for it in items if keep(it["family"]) and it["lang"] == lang]
            report[part][lang] = {
                "within": {k: within(sel, f) for k, f in (("cosine", cosine), ("bilinear", learned),
                                                         ("hand_score", hand))},
                "best_vs_near": {k: best_vs_near(sel, f) for k, f in (("cosine", cosine), ("bilinear", learned),
                                                                     ("hand_score", hand))}}
    # The learned order with the score added. Each fold's sentence model reads the score from the weights fit
    # without its held-out family, on every family (in-sample on the ones it trains on): nothing it is measured on
    # was seen by either model.
    raw = {name: {it["i"]: scores(*fits[name], it["q"], it["s"]) for it in items if len(it["y"])}
           for name in names}
    without, with_ = order_first_holds(items, names, None), order_first_holds(items, names, raw)
    report["order_first_holds"] = {}
    for part, keep in (("all", lambda n: True), ("test", lambda n: n in TEST_FAMILIES)):
        for lang in ("en", "ja"):
            mine = [i for i in without if items[i]["lang"] == lang and keep(items[i]["family"])]
            report["order_first_holds"].setdefault(part, {})[lang] = {
                "without": sum(without[i] for i in mine), "with": sum(with_[i] for i in mine),
                "gained": sum(with_[i] > without[i] for i in mine),
                "lost": sum(with_[i] < without[i] for i in mine), "of": len(mine)}
    # The learned gate with the first candidate's score added (as train_answerability.py evaluates it, on the rows
    # asked in the hand order).
    report["gate"] = {"without": gate_with(items, names, None), "with": gate_with(items, names, raw)}
    report["rules_and_score"] = rules_and_score(items, raw)
    report["jaquad_questions"] = len(extra)
    report["difference"] = args.difference
    w, b = fit(items + extra, l2, args.objective)
    report["weights_sha256"] = hashlib.sha256(np.asarray(w).tobytes() + np.float64(b).tobytes()).hexdigest()[:16]
    summary(report)
    if args.report:
        args.report.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if args.out:
        args.out.write_text(json.dumps({  # for a rerun's comparison: nothing reads it
            "about": "w . (q * s) * 384 + b, a candidate's score as an answer (pointwise: the logit of holding the "
                     "fact), fit by scripts/train_bilinear.py; measured and not used (docs/answers.md)",
            "objective": args.objective, "difference": args.difference, "trained_on": names,
            "jaquad_questions": len(extra), "l2": l2,
            "weights": [float(v) for v in w], "bias": b}) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
