"""Train the learned sentence order (lambdas/citerag/answerer/sentence_model.json) on the development pool, and
say what it does to the answers of families it was not trained on.

    python scripts/train_ranker.py datasets/answers datasets/pool --out lambdas/citerag/answerer/sentence_model.json

Every question is asked through `citerag ask`'s default path ranked by hand, with a gate that always answers;
each answerable question's row keeps the candidates the ranking weighed, labelled by whether citing one would
make the answer right (rows cached per family: `--rows DIR`). The model is a listwise logistic regression over
`sentence_model.FEATURES`.

Evaluation is family-held-out: for each family, a model fit on the other families alone orders its candidates,
and its questions are asked again through the same path with that order. The report gives, per language, the
ungated ceiling (fact + right citation with no gate) ranked by hand and by the learned order, with 95% Wilson
intervals, the sentences cited where they are not (misattributed), and the same on the test families apart. The
committed model is fit on every family. Deterministic: the same rows give the same weights bit for bit.

With `--extra-jaquad DIR` (a JaQuAD folder as `citerag bench-answers` reads it), every fit (each family's held-out
model and the committed one) also learns from JaQuAD questions the benches never ask (pool_rows.jaquad_set), each
counting `--jaquad-weight` against a pool question; they are never scored. JaQuAD is read where it lies, never
copied; its rows are cached in `--rows`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from pool_rows import TEST_FAMILIES, candidate, families_of, jaquad_rows, pool_arguments, ratio, rows_of

from citerag.answerer.sentence_model import SentenceModel, features, model_from

L2 = 1.0
JAQUAD_WEIGHT = 1.0


def groups(rows: list[dict]) -> list[tuple[np.ndarray, np.ndarray]]:
    """(features, labels) of each answerable question's candidates, in the hand ranking's order."""
    out = []
    for r in rows:
        cands = r.get("candidates")
        if cands:
            out.append((features(r["lang"], [candidate(c) for c in cands], r["question"], r.get("passage_scores")),
                        np.array([float(c[-1]) for c in cands])))
    return out


def model_key(model: SentenceModel) -> str:
    return hashlib.sha256(json.dumps([model.mean, model.scale, model.weights]).encode()).hexdigest()[:16]


def top_holds(rows: list[dict], model: SentenceModel | None) -> int:
    """Questions whose first candidate (hand order, or the model's) holds the fact: the order's own figure, before
    the answerer's pairing and runner-up rules."""
    n = 0
    for r in rows:
        cands = r.get("candidates")
        if not cands:
            continue
        first = 0 if model is None else int(np.argmax(model.scores(r["lang"], [candidate(c) for c in cands],
                                                                   r["question"], r.get("passage_scores"))))
        n += cands[first][-1]
    return n


def figures(rows: list[dict], learned: list[dict], held: dict[str, SentenceModel]) -> dict:
    out = {}
    for lang in sorted({r["lang"] for r in rows}):
        hand = [r for r in rows if r["lang"] == lang and r["answerable"]]
        mine = [r for r in learned if r["lang"] == lang and r["answerable"]]
        out[lang] = {
            "ungated_hand": ratio(sum(bool(r["right"]) for r in hand), len(hand)),
            "ungated_learned": ratio(sum(bool(r["right"]) for r in mine), len(mine)),
            "reachable": ratio(sum(any(c[-1] for c in r.get("candidates") or []) for r in hand), len(hand)),
            "first_holds_hand": ratio(top_holds(hand, None), len(hand)),
            "first_holds_learned": ratio(sum(top_holds([r], held[r["family"]]) for r in hand), len(hand)),
            "misattributed_hand": sum(len(r["misattributed"]) for r in rows if r["lang"] == lang),
            "misattributed_learned": sum(len(r["misattributed"]) for r in learned if r["lang"] == lang),
        }
    return out


def main() -> None:
    ap = pool_arguments(__doc__.split("\n\n")[0], "citerag-ranker-rows")
    ap.add_argument("--offline", action="store_true",
                    help="only the first candidate's figures on the cached rows; do not ask again with the order")
    ap.add_argument("--extra-jaquad", type=Path, metavar="DIR",
                    help="also fit on JaQuAD questions the benches never ask (a JaQuAD folder as bench-answers reads "
                         "it), in every fit, never scored")
    ap.add_argument("--jaquad-weight", type=float, default=JAQUAD_WEIGHT,
                    help=f"how much each JaQuAD question counts against a pool question (default {JAQUAD_WEIGHT})")
    args = ap.parse_args()
    if not 0 < args.jaquad_weight <= 10:
        ap.error("--jaquad-weight must be in (0, 10]")
    families = families_of(args.pool)
    names = [f.name for f in families]
    hand = {f.name: rows_of(f, args.rows, ranking="hand", capture=True) for f in families}
    extra = groups(jaquad_rows(args.extra_jaquad, args.rows)) if args.extra_jaquad else []

    def fitted(used: list[str]) -> SentenceModel:
        """The order fit on the families `used`, and on the JaQuAD questions (each counting `--jaquad-weight`)."""
        mine = [g for name in used for g in groups(hand[name])]
        if not extra:
            return model_from(mine, l2=L2)
        return model_from(mine + extra, l2=L2, weights=[1.0] * len(mine) + [args.jaquad_weight] * len(extra))

    held = {name: fitted([other for other in names if other != name]) for name in names}
    rows = [r for name in names for r in hand[name]]
    if args.offline:
        learned = rows
    else:
        learned = [r for f in families for r in rows_of(f, args.rows, ranking="hand", order=held[f.name].order,
                                                        order_key=model_key(held[f.name]))]
    dev = [r for r in rows if r["family"] not in TEST_FAMILIES]
    report: dict = {"families": names, "questions": len(rows),
                    "held_out": figures(rows, learned, held),
                    "held_out_development_families": figures(dev, [r for r in learned
                                                                   if r["family"] not in TEST_FAMILIES], held),
                    "held_out_test_families": figures([r for r in rows if r["family"] in TEST_FAMILIES],
                                                      [r for r in learned if r["family"] in TEST_FAMILIES], held)}
    model = fitted(names)
    report["jaquad_questions"] = len(extra)
    report["jaquad_weight"] = args.jaquad_weight if extra else None
    report["weights"] = dict(zip(model.names, (round(w, 4) for w in model.weights), strict=True))
    print(json.dumps(report, indent=1, ensure_ascii=False))
    if args.report:
        args.report.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.out:
        data = {"about": "The order the answerer weighs sentences in: a listwise logistic regression over "
                         "sentence_model.FEATURES, trained by scripts/train_ranker.py; figures in docs/answers.md",
                "trained_on": names + (["jaquad"] if extra else []), "l2": L2,
                **({"jaquad_questions": len(extra), "jaquad_weight": args.jaquad_weight} if extra else {}),
                "questions": sum(1 for r in rows if r["answerable"] and r.get("candidates")),
                "features": list(model.names), "mean": list(model.mean), "scale": list(model.scale),
                "weights": list(model.weights)}
        args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
