"""Token-level matching on the bundled model's token states, screened as a gate feature and as a re-ordering of the
held-out learned order's first five candidates (docs/answers.md, "Token-level matching").

    python scripts/token_match_screen.py datasets/answers datasets/pool --rows /tmp/citerag-answerability-rows \
        --head [--head-diagonal | --head-lang ja --head-l2 0.03] --test-families --report /tmp/token-match.json

Reads the row caches of `train_answerability.py --ranking held-out` (built if missing, slowly) and caches the
token states per family (`--states DIR`; encoding them is the first run's slow part). Raw MaxSim: for each content
token of the question, the best cosine over the chosen sentence's tokens (under its heading) or its passage's,
summarised per question. `--head` also trains the learned head (scripts/token_head.py) family-held-out (the
development families dealt into `--folds` folds, each scored by a head fit on the others; the test families by one
fit on every development family) and measures it the same way. Every figure is on the development families;
`--test-families` adds the four test families in aggregate, measured once with what was chosen on the others.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np
from pool_rows import TEST_FAMILIES, families_of, pool_arguments
from threadpoolctl import threadpool_limits
from token_head import HeadConfig, scores, train, trainable
from token_states import Question, questions
from train_answerability import FEATURES, figures, held_out, rows_for

GATE_SETS = {"none": (),
             "sentence: mean, min, lower quartile, worst token's rarity": ("s_mean", "s_min", "s_q25", "s_worst"),
             "passage: mean, min, lower quartile": ("p_mean", "p_min", "p_q25"),
             "sentence lower quartile alone": ("s_q25",)}
UNIVARIATE = ("s_q25", "s_mean", "s_min", "p_q25", "cosine", "score", "sentence_cover")
GRID = (0, 0.5, 1, 2, 4, 8, 16, 32)  # weights of the lower quartile tried in the order
FIVE = 5


def maxsim(q: np.ndarray, qw: np.ndarray, s: np.ndarray) -> dict[str, float]:
    best = (q @ s.T).max(1)
    return {"mean": float(best.mean()), "min": float(best.min()), "q25": float(np.quantile(best, 0.25)),
            "worst": float(qw[int(np.argmin(best))])}


def auc(p, y) -> float:
    p, y = np.asarray(p, float), np.asarray(y)
    pos, neg = p[y == 1], p[y == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    return float(((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum())
                 / (len(pos) * len(neg)))


def sign_test(gained: int, lost: int) -> float:
    n = gained + lost
    if not n:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(gained, lost) + 1)) / 2**n)


def gate_figures(rows: list[dict], names: list[str], extra: tuple[str, ...], test: bool) -> dict:
    p, decided = held_out(rows, names, FEATURES + extra)
    y = np.array([int(r["answerable"] and r["right"]) for r in rows])
    out = {}
    for part in ("development", "test") if test else ("development",):
        for lang in ("en", "ja"):
            ii = [i for i, r in enumerate(rows) if r["lang"] == lang and (r["family"] in TEST_FAMILIES) == (
                part == "test")]
            f = figures([rows[i] for i in ii], decided[ii])[lang]
            out[f"{part} {lang}"] = {"facts": f"{f['facts_right']}/{f['answerable']}",
                                     "near misses refused": f"{f['refused_near']}/{f['near_misses']}",
                                     "precision": f"{f['refused_near']}/{f['refused']}",
                                     "auc": round(auc(p[ii], y[ii]), 3)}
    return out


def first_holds(q: Question, extra: dict[int, float], weight: float) -> int:
    """Whether the first of the five, re-ordered by learned score + weight * (extra - the five's best), holds."""
    five = q.top[:FIVE]
    x = np.array([extra[i] for i in five])
    z = np.array([q.learned[i] for i in five]) + weight * (x - x.max())
    return q.holds[five[int(np.argmax(z))]]


def order_figures(qs: list[Question], extra: dict[str, dict[int, float]], weight_of, test: bool) -> dict:
    """First candidate holding the fact, before and after re-ordering, per language; `weight_of(family, lang)`."""
    out = {}
    for lang in ("en", "ja"):
        for part in ("development", "test") if test else ("development",):
            mine = [q for q in qs
                    if q.lang == lang and q.answerable and (q.family in TEST_FAMILIES) == (part == "test")]
            before = [q.holds[q.top[0]] for q in mine]
            after = [first_holds(q, extra[q.key], weight_of(q.family, lang)) for q in mine]
            gained = sum(a > b for a, b in zip(after, before, strict=True))
            lost = sum(a < b for a, b in zip(after, before, strict=True))
            out[f"{part} {lang}"] = {"before": f"{sum(before)}/{len(mine)}", "after": f"{sum(after)}/{len(mine)}",
                                     "gained": gained, "lost": lost, "sign test p": round(sign_test(gained, lost), 3)}
    return out


def chosen_weight(qs: list[Question], extra: dict[str, dict[int, float]], lang: str, families: set[str]) -> float:
    """The grid's weight that puts a fact-holding candidate first most often on these families (the smallest on a
    tie)."""
    mine = [q for q in qs if q.lang == lang and q.answerable and q.family in families]
    return max(GRID, key=lambda w: (sum(first_holds(q, extra[q.key], w) for q in mine), -w))


def head_scores(qs: list[Question], dev: list[str], folds: int, config: HeadConfig, langs: set[str],
                log) -> dict[str, dict[int, float]]:
    """Each question's head scores from a head fit on the development families outside its fold (the sorted
    development families dealt into `folds` folds; the test families: fit on every development family)."""
    out: dict[str, dict[int, float]] = {}
    for held in [dev[i::folds] for i in range(folds)] + [list(TEST_FAMILIES)]:
        mine = [q for q in qs if q.family in held]
        if not mine:
            continue
        fit = [q for q in qs if q.family in dev and q.family not in held and q.lang in langs and trainable(q)]
        if not fit:
            raise SystemExit(f"--head: no development question to fit a head on without {', '.join(held)}")
        head = train(fit, config, log=lambda s, held=held: log(f"  without {', '.join(held)}: {s}"))
        log(f"head fit without {', '.join(held)}: {len(fit)} questions, alpha {head.alpha:.2f}, g {head.g:.2f}")
        for q, s in zip(mine, scores(head, mine), strict=True):
            # as an order: the head's share of the listwise score, on the learned score's scale
            out[q.key] = {i: head.alpha / head.g * v for i, v in s.items()}
    return out


def main() -> None:
    ap = pool_arguments(__doc__.split("\n\n")[0], "citerag-answerability-rows")
    ap.add_argument("--states", type=Path, default=Path(tempfile.gettempdir()) / "citerag-token-states",
                    help="where the token states are cached per family")
    ap.add_argument("--head", action="store_true", help="also train and measure the learned head (minutes of CPU)")
    ap.add_argument("--folds", type=int, default=5, choices=range(2, 14), metavar="2..13",
                    help="folds of development families the head is measured over (13: one family out)")
    ap.add_argument("--head-l2", type=float, default=HeadConfig.l2, help="the head's ridge on W - W0 and u")
    ap.add_argument("--head-diagonal", action="store_true", help="one weight per principal direction, not a "
                    f"projection to {HeadConfig.dim}")
    ap.add_argument("--head-lang", choices=("en", "ja"), help="fit the head on this language's questions only")
    ap.add_argument("--test-families", action="store_true", help="also report the test families, in aggregate")
    args = ap.parse_args()
    if not (0 <= args.head_l2 <= 100):
        raise SystemExit("--head-l2: between 0 and 100")
    if args.out:
        raise SystemExit("--out: this screen writes no model (scripts/token_head.py trains the head)")
    missing = [str(p) for p in args.pool if not p.is_dir()]
    if missing:
        raise SystemExit("not a folder: " + ", ".join(missing))
    families = families_of(args.pool)
    if not families:
        raise SystemExit("no family folder (one with docs/) under " + ", ".join(map(str, args.pool)))
    names = [f.name for f in families]
    dev = [n for n in names if n not in TEST_FAMILIES]
    log = lambda s: print(s, flush=True)  # noqa: E731
    with threadpool_limits(1):  # deterministic sums, and a shared machine
        # The test families' rows are in the gate's fits, as in train_answerability.py: their states are read too.
        qs = questions(families, args.rows, args.states, set(names), log=log)
        by_key = {q.key: q for q in qs}
        rows = [r for f in families for r in rows_for(f, families, args.rows, "held-out")]
        for r in rows:
            q = by_key.get(f"{r['family']}/{r['id']}")
            if r["features"]:
                if q is None:
                    raise SystemExit(f"{r['family']}/{r['id']}: no token states; remove --states's files and rerun")
                s = maxsim(q.q, q.qw, q.cands[q.chosen])
                p = maxsim(q.q, q.qw, q.passage)
                r["features"] = {**r["features"], **{f"s_{k}": v for k, v in s.items()},
                                 **{f"p_{k}": v for k, v in p.items() if k != "worst"}}
        report: dict = {"questions": len(qs), "univariate_auc": {}}
        for lang in ("en", "ja"):
            mine = [r for r in rows if r["lang"] == lang and r["features"] and r["family"] not in TEST_FAMILIES]
            right = [int(r["answerable"] and r["right"]) for r in mine]
            # the hard pair: a chosen sentence that holds the fact, against a near miss's
            hard = [r for r in mine if not r["answerable"] or by_key[f"{r['family']}/{r['id']}"].holds[
                by_key[f"{r['family']}/{r['id']}"].chosen]]
            report["univariate_auc"][lang] = {k: {
                "right vs not": round(auc([r["features"][k] for r in mine], right), 3),
                "holds vs near miss": round(auc([r["features"][k] for r in hard], [int(r["answerable"]) for r in hard]),
                                            3)} for k in UNIVARIATE}
        report["gate"] = {name: gate_figures(rows, names, extra, args.test_families)
                          for name, extra in GATE_SETS.items()}
        q25 = {q.key: {i: maxsim(q.q, q.qw, s)["q25"] for i, s in q.cands.items()} for q in qs}
        weights = {(f, lang): chosen_weight(qs, q25, lang, set(dev) - {f}) for f in dev for lang in ("en", "ja")}
        for lang in ("en", "ja"):
            weights.update({(f, lang): chosen_weight(qs, q25, lang, set(dev)) for f in TEST_FAMILIES})
        report["order_lower_quartile"] = order_figures(qs, q25, lambda f, lang: weights[(f, lang)], args.test_families)
        if args.head:
            config = HeadConfig(l2=args.head_l2, diagonal=args.head_diagonal)
            langs = {args.head_lang} if args.head_lang else {"en", "ja"}
            hs = head_scores(qs, dev, args.folds, config, langs, log)
            report["head"] = {**config.__dict__, "fit_on": sorted(langs)}
            report["order_head"] = order_figures(qs, hs, lambda f, lang: 1.0, args.test_families)
            for r in rows:
                if r["features"]:
                    q = by_key[f"{r['family']}/{r['id']}"]
                    r["features"]["head"] = hs[q.key][q.chosen]
            report["gate_head"] = {"none": report["gate"]["none"],
                                   "head score of the chosen sentence": gate_figures(rows, names, ("head",),
                                                                                     args.test_families)}
    print(json.dumps(report, indent=1, ensure_ascii=False))
    if args.report:
        args.report.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
