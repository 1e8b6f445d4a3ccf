"""Train the answerability model (lambdas/citerag/answerer/answerability.json) on the development pool, and say
how it does on families it was not trained on.

    python scripts/train_answerability.py datasets/answers datasets/pool --ranking held-out \
        --out lambdas/citerag/answerer/answerability.json

Each subfolder of the pool is a family (documents of one project, with its questions-*.jsonl). Every question is
asked through `citerag ask`'s default path with a gate that always answers, so each row holds the features the
gate reads and whether the answer it would give is right (fact + right citation; never, for a near miss). Rows are
cached per family (`--rows DIR`), keyed by the family's files and the answerer's code, so a rerun only trains.
`--ranking held-out` asks each family with a sentence order fit on the other families alone
(scripts/train_ranker.py), so neither the order nor the gate has seen the family it is measured on.

Evaluation is family-held-out: for each family, the model and its thresholds are fit on the other families alone,
then applied to it. The committed model is fit on every family; its thresholds are chosen on the held-out
probabilities (so they are not chosen on the same predictions they were fit with). Deterministic: the same rows
give the same weights bit for bit (Newton's method, fixed order, no randomness).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import numpy as np
from pool_rows import TEST_FAMILIES, AlwaysAnswers, families_of, key, pool_arguments, rows_of
from train_ranker import L2 as RANKER_L2
from train_ranker import groups, model_key

from citerag.answerer.answerability import gate_from
from citerag.answerer.extractive import rules_gate
from citerag.answerer.sentence_model import model_from
from citerag.bench import answers as ab
from citerag.bench.metrics import wilson_interval
from citerag.components import Components
from citerag.settings import Settings

FEATURES = ("evidence", "score", "cosine", "lexical", "factor", "bonus", "margin", "unknown_latin", "unknown_kana",
            "asks_code", "about", "kind_found", "says_asked", "asks_number", "pair", "ja", "ja_evidence",
            "ja_cosine", "sentence_cover", "sentence_lacks", "passage_cover", "passage_lacks")
L2 = 1.0
# What the on-subject estimate reads: the gate's features, and how the question stands against the whole index, in
# terms that hold across indexes (answerer/reach.py): its best cosine over the index less the index's typical cosine
# (`best_vs_index`), and its cosine to where the index's passages point (`centroid_z`). `index_gap`, `index_rare` and
# `index_lacks` are recorded and not read; `--subject-features` measures any other set (docs/answers.md "Places to
# look").
SUBJECT_FEATURES = (*FEATURES, "best_vs_index", "centroid_z")


_key = key  # the name tests and older caches know


def rows_for(family: Path, families: list[Path], cache: Path, ranking: str) -> list[dict]:
    """The family's rows asked with `ranking`: "held-out" orders its candidates by a sentence model fit on the other
    families alone (scripts/train_ranker.py), so the gate's held-out figures see no order trained on the family."""
    if ranking != "held-out":
        return rows_of(family, cache, ranking=ranking)
    model = held_out_order(family, families, cache)
    return rows_of(family, cache, ranking="hand", order=model.order, order_key=model_key(model))


def held_out_order(family: Path, families: list[Path], cache: Path):
    others = [g for f in families if f != family for g in groups(rows_of(f, cache, ranking="hand", capture=True))]
    return model_from(others, l2=RANKER_L2)


# Families on one subject: a question of one may be answered by another's documents, so none is off-topic there.
SUBJECTS = {"en-sqlite": "databases", "en-postgresql": "databases", "ja-bxjscls": "tex", "ja-jlreq": "tex",
            "ja-luatexja": "tex", "ja-platex": "tex", "ja-textlint-presets": "textlint",
            "ja-textlint-technical-writing": "textlint"}
OFF_TOPIC_PER_FAMILY = 8


def off_topic_questions(family: Path, families: list[Path]) -> list[tuple[str, str]]:
    """(lang, question) asked of this family's documents from families on other subjects, in its languages: the
    first answerable question of each, in order, up to OFF_TOPIC_PER_FAMILY."""
    own = {q.lang for q in ab.load(family).questions}
    subject = SUBJECTS.get(family.name, family.name)
    out = []
    for other in families:
        if SUBJECTS.get(other.name, other.name) == subject:
            continue
        first = next((q for q in ab.load(other).questions if q.answerable and q.lang in own), None)
        if first is not None:
            out.append((first.lang, first.question))
    return out[:OFF_TOPIC_PER_FAMILY]


def extra_off_topic(path: Path) -> list[tuple[str, str]]:
    """(lang, question) of a JSONL file of questions on subjects no family covers (datasets/off_topic)."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            item = json.loads(line)
            if item.get("lang") not in ("en", "ja") or not str(item.get("question", "")).strip():
                raise SystemExit(f"{path}:{n}: each line needs lang (en or ja) and a question")
            out.append((item["lang"], item["question"]))
    return out


def off_topic_rows(family: Path, families: list[Path], cache: Path, ranking: str = "default",
                   extra: list[tuple[str, str]] | None = None) -> list[dict]:
    """Questions on another subject asked of this family: never answerable, and no place of these documents is
    one to look at. Rows as `rows_of`, with the number of places the answer listed under the gate it had.
    `extra`: these questions (in the family's languages) instead of the pool's own off-topic ones."""
    if extra is None:
        asked, name = off_topic_questions(family, families), "off-topic"
    else:
        own = {q.lang for q in ab.load(family).questions}
        asked, name = [(lang, q) for lang, q in extra if lang in own], "extra-off-topic"
    model = held_out_order(family, families, cache) if ranking == "held-out" else None
    tag = "" if ranking == "default" else ranking + (model_key(model) if model is not None else "")
    h = hashlib.sha256(json.dumps(asked, ensure_ascii=False).encode() + _key(family).encode()
                       + tag.encode()).hexdigest()[:16]
    cached = cache / f"{family.name}-{name}-{h}.json"
    if cached.exists():
        return json.loads(cached.read_text(encoding="utf-8"))
    ds = ab.load(family)
    rows = []
    with tempfile.TemporaryDirectory(prefix="citerag-train-") as tmp:
        settings = {} if ranking == "default" else {"answer_ranking": "hand"}
        comps = Components(Settings(index_path=Path(tmp) / "index.sqlite", answer_gate="off", **settings))
        comps.answering.gate = AlwaysAnswers()
        if model is not None:
            comps.answering.order = model.order
        comps.ingestor().ingest_paths(ds.docs, sync=True)
        ask = ab.ASKERS["local"](comps)
        for i, (lang, question) in enumerate(asked):
            answer = ask(question)
            d = answer.decision
            rows.append({"id": f"{name}-{i}", "lang": lang, "answerable": False, "right": not answer.citations,
                         "features": d.features if d else {}, "misattributed": [], "family": family.name,
                         "off_topic": True, "question": question})
    cache.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    return rows


def _matrix(rows: list[dict], features: tuple[str, ...] = FEATURES) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[float(r["features"].get(f, 0.0)) for f in features] for r in rows], dtype=np.float64)
    y = np.array([1.0 if r["answerable"] and r["right"] else 0.0 for r in rows])
    return x, y


def outcome(rows: list[dict], p: np.ndarray, threshold: float) -> dict:
    """Facts with the right citation among answerable questions, refusal recall and precision, at a threshold.
    A question the answerer could not weigh (no features: nothing relevant was found) is refused."""
    answerable = [r for r in rows if r["answerable"]]
    near = [r for r in rows if not r["answerable"]]
    refused = [i for i, _ in enumerate(rows) if p[i] < threshold]
    facts = sum(1 for i, r in enumerate(rows) if r["answerable"] and r["right"] and p[i] >= threshold)
    held = sum(1 for i in refused if not rows[i]["answerable"])
    return {"answerable": len(answerable), "facts_right": facts, "near_misses": len(near), "refused_near": held,
            "refused": len(refused)}


def rates(o: dict) -> dict:
    fi = wilson_interval(o["facts_right"], o["answerable"]) if o["answerable"] else (0, 0)
    ri = wilson_interval(o["refused_near"], o["near_misses"]) if o["near_misses"] else (0, 0)
    return {**o, "facts": o["facts_right"] / o["answerable"] if o["answerable"] else None,
            "facts_ci95": [round(v, 3) for v in fi],
            "refusal_recall": o["refused_near"] / o["near_misses"] if o["near_misses"] else None,
            "refusal_recall_ci95": [round(v, 3) for v in ri],
            "refusal_precision": o["refused_near"] / o["refused"] if o["refused"] else None}


def choose(rows: list[dict], p: np.ndarray) -> float:
    """The threshold that maximises facts + refusal recall (ties: the lower threshold, which answers more). No floor
    on refusal precision: on this pool no threshold reaches 80% precision with useful recall (docs/answers.md)."""
    best, best_t = -1.0, 0.5
    for t in np.round(np.arange(0.05, 0.951, 0.01), 2):
        r = rates(outcome(rows, p, t))
        value = (r["facts"] or 0) + (r["refusal_recall"] or 0)
        if value > best + 1e-12:
            best, best_t = value, float(t)
    return best_t


def _probabilities(gate, rows: list[dict]) -> np.ndarray:
    return np.array([gate.probability(r["features"]) if r["features"] else 0.0 for r in rows])


PLACES_KEPT_PERCENTILE = 10
SUBJECT_L2 = 1.0


def _subject_matrix(rows: list[dict], features: tuple[str, ...] = FEATURES) -> tuple[np.ndarray, np.ndarray]:
    x, _ = _matrix(rows, features)
    return x, np.array([0.0 if r.get("off_topic") else 1.0 for r in rows])


def on_subject_held_out(rows: list[dict], off: list[dict], families: list[str],
                        features: tuple[str, ...] = SUBJECT_FEATURES, by_question: bool = False,
                        scored: list[dict] | None = None) -> np.ndarray:
    """Per row of `rows + off` (or of `scored`, rows never trained on), P(the documents are on the question's
    subject) from a model fit on the other families alone (0 for a row the answerer could not weigh: it lists no
    places). `by_question`: the family's off-topic questions are also left out of its fold's training, whichever
    documents they were asked of."""
    both = rows + off
    scored = both if scored is None else scored
    p = np.zeros(len(scored))
    for name in families:
        asked = {r["question"] for r in off if r["family"] == name and "question" in r} if by_question else set()
        train = [r for r in both if r["family"] != name and r["features"]
                 and not (r.get("off_topic") and r.get("question") in asked)]
        model = gate_from(features, *_subject_matrix(train, features), thresholds={}, l2=SUBJECT_L2)
        for i, r in enumerate(scored):
            if r["family"] == name and r["features"]:
                p[i] = model.probability(r["features"])
    return p


def floor_of(probabilities: np.ndarray, percentile: float = PLACES_KEPT_PERCENTILE) -> float:
    """The floor that keeps (100 - percentile)% of these, rounded down to a hundredth."""
    if not len(probabilities):
        return 0.0
    return float(np.floor(100 * np.percentile(probabilities, percentile)) / 100)


def floors_of(rows: list[dict], p: np.ndarray, refused: np.ndarray,
              percentile: float = PLACES_KEPT_PERCENTILE) -> dict[str, float]:
    """Per language, the floor that keeps the places of (100 - percentile)% of the refusals among `rows`, scored `p`
    (`rows` first, in order)."""
    langs = np.array([r["lang"] for r in rows])
    return {lang: floor_of(p[: len(rows)][refused & (langs == lang)], percentile) for lang in sorted(set(langs))}


def places_figures(rows: list[dict], off: list[dict], p: np.ndarray, floors: dict[str, float], rules) -> dict:
    """Per language: how many refusals list places, with a row's score `p` (`rows + off` in order) at `floors`."""
    def lists(i: int, r: dict) -> bool:
        return bool(r["features"]) and p[i] >= floors[r["lang"]] and not rules.judge(r["lang"], r["features"])[0]

    out = {}
    for lang in sorted(floors):
        mine = [(i, r) for i, r in enumerate(rows) if r["lang"] == lang]
        theirs = [(len(rows) + i, r) for i, r in enumerate(off) if r["lang"] == lang]
        out[lang] = {"floor": floors[lang], "off_topic": len(theirs),
                     "off_topic_answered_by_rules": sum(bool(r["features"]) and rules.judge(lang, r["features"])[0]
                                                        for _, r in theirs),
                     "off_topic_listing_places": int(sum(lists(i, r) for i, r in theirs)),
                     "refused_on_subject": sum(bool(r["features"]) and not rules.judge(lang, r["features"])[0]
                                               for _, r in mine),
                     "refused_on_subject_keeping_places": int(sum(lists(i, r) for i, r in mine))}
    return out


def held_out(rows: list[dict], families: list[str], features: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the probability and the decision of a model fit on the other families alone (its thresholds chosen
    there too): what the gate does on documents it never saw."""
    p = np.zeros(len(rows))
    decided = np.zeros(len(rows), dtype=bool)
    langs = sorted({r["lang"] for r in rows})
    for name in families:
        train = [r for r in rows if r["family"] != name and r["features"] and not r.get("off_topic")]
        gate = gate_from(features, *_matrix(train, features), thresholds={}, l2=L2)
        p_train = _probabilities(gate, train)
        thresholds = {lang: choose([r for r in train if r["lang"] == lang],
                                   p_train[[i for i, r in enumerate(train) if r["lang"] == lang]]) for lang in langs}
        for i, r in enumerate(rows):
            if r["family"] == name:
                p[i] = gate.probability(r["features"]) if r["features"] else 0.0
                decided[i] = p[i] >= thresholds.get(r["lang"], 0.5)
    return p, decided


def figures(rows: list[dict], decided: np.ndarray) -> dict:
    out = {}
    for lang in sorted({r["lang"] for r in rows}):
        idx = [i for i, r in enumerate(rows) if r["lang"] == lang]
        sel = [rows[i] for i in idx]
        out[lang] = rates(outcome(sel, np.where(decided[idx], 1.0, 0.0), 0.5))
        out[lang]["ungated_facts"] = sum(bool(r["answerable"] and r["right"]) for r in sel)
    return out


def main() -> None:
    ap = pool_arguments(__doc__.split("\n\n")[0], "citerag-answerability-rows")
    ap.add_argument("--ablate", action="append", default=[], metavar="FEATURE",
                    help="also report the held-out figures without this feature (repeatable; 'each' for all)")
    ap.add_argument("--ranking", choices=("default", "hand", "held-out"), default="default",
                    help="the sentence order the questions are asked with: the settings' default, the hand "
                         "ranking, or per family a learned order fit on the other families (scripts/train_ranker.py)")
    ap.add_argument("--extra-off-topic", type=Path, default=None, metavar="JSONL",
                    help="also ask these off-topic questions of every family and report them apart (never trained on)")
    ap.add_argument("--subject-features", default=",".join(SUBJECT_FEATURES),
                    help="the features the on-subject estimate reads, comma-separated (to ablate one)")
    ap.add_argument("--keep-places", type=float, default=100 - PLACES_KEPT_PERCENTILE, metavar="PERCENT",
                    help="the on-subject floor keeps the places of this share of on-subject refusals (default 90)")
    ap.add_argument("--ablate-subject", action="append", default=[], metavar="FEATURE",
                    help="also report the places figures with the on-subject estimate read without this feature "
                         "(repeatable; 'each' for all)")
    args = ap.parse_args()
    subject_features = tuple(f for f in args.subject_features.split(",") if f)
    if not 0 < args.keep_places <= 100:
        raise SystemExit("--keep-places is a percentage above 0, at most 100")
    percentile = 100 - args.keep_places
    families = families_of(args.pool)
    names = [f.name for f in families]
    rows = [r for f in families for r in rows_for(f, families, args.rows, args.ranking)]
    off = [r for f in families for r in off_topic_rows(f, families, args.rows, args.ranking)]
    p, decided = held_out(rows + off, names, FEATURES)
    pool_p, pool_decided = p[: len(rows)], decided[: len(rows)]
    report: dict = {"families": names, "questions": len(rows), "held_out": figures(rows, pool_decided)}
    test = [i for i, r in enumerate(rows) if r["family"] in TEST_FAMILIES]
    report["held_out_test_families"] = figures([rows[i] for i in test], pool_decided[test])
    # The hand-set rules on the same rows, for comparison (they read the same features).
    rules = rules_gate()
    by_rules = np.array([bool(r["features"]) and rules.judge(r["lang"], r["features"])[0] for r in rows])
    report["rules"] = figures(rows, by_rules)
    report["rules_test_families"] = figures([rows[i] for i in test], by_rules[test])
    # Places to look: listed for a refusal only when the documents are on the question's subject, by a second model
    # (on-subject: every question of the pool asked of its own family; off-topic: the questions of other subjects
    # asked of it). Its floor keeps the places of 90% of the pool's questions the rules (the default gate) refuse.
    on_p = on_subject_held_out(rows, off, names, features=subject_features)
    refused = np.array([bool(r["features"]) and not by_rules[i] for i, r in enumerate(rows)])
    floors = floors_of(rows, on_p, refused, percentile)
    report["places"] = places_figures(rows, off, on_p, floors, rules)
    if args.extra_off_topic:
        extra = extra_off_topic(args.extra_off_topic)
        more = [r for f in families for r in off_topic_rows(f, families, args.rows, args.ranking, extra=extra)]
        extra_p = on_subject_held_out(rows, off, names, subject_features, scored=more)
        report["places_extra_off_topic"] = places_figures([], more, extra_p, floors, rules)
    dropped = list(subject_features) if "each" in args.ablate_subject else args.ablate_subject
    report["subject_ablation"] = {}
    for feature in dropped:
        kept = tuple(f for f in subject_features if f != feature)
        a_p = on_subject_held_out(rows, off, names, features=kept)
        a_floors = floors_of(rows, a_p, refused, percentile)
        report["subject_ablation"][feature] = {
            lang: {k: v[k] for k in ("off_topic_listing_places", "refused_on_subject_keeping_places")}
            for lang, v in places_figures(rows, off, a_p, a_floors, rules).items()}
    q_p = on_subject_held_out(rows, off, names, features=subject_features, by_question=True)
    q_floors = floors_of(rows, q_p, refused, percentile)
    report["places_by_question"] = places_figures(rows, off, q_p, q_floors, rules)
    report["places_test_families"] = {}
    for name in (n for n in names if n in TEST_FAMILIES):
        mine, theirs = [r for r in rows if r["family"] == name], [r for r in off if r["family"] == name]
        scores = np.concatenate([on_p[: len(rows)][[r["family"] == name for r in rows]],
                                 on_p[len(rows):][[r["family"] == name for r in off]]])
        langs = {r["lang"] for r in mine + theirs}
        report["places_test_families"][name] = places_figures(mine, theirs, scores, {
            lang: v for lang, v in floors.items() if lang in langs}, rules)
    # As it was: a floor on the answerability estimate, set the same way.
    ans_floors = floors_of(rows, pool_p, refused, percentile)
    report["places_by_answerability"] = places_figures(rows, off, p, ans_floors, rules)
    ablate = list(FEATURES) if "each" in args.ablate else args.ablate
    report["ablation"] = {}
    for feature in ablate:
        kept = tuple(f for f in FEATURES if f != feature)
        _, d = held_out(rows, names, kept)
        report["ablation"][feature] = {lang: {k: v[k] for k in ("facts", "refusal_recall", "refusal_precision")}
                                       for lang, v in figures(rows, d).items()}
    # The committed model: fit on every family; thresholds chosen on the held-out probabilities.
    gate = gate_from(FEATURES, *_matrix([r for r in rows if r["features"]]), thresholds={}, l2=L2)
    langs = sorted({r["lang"] for r in rows})
    thresholds = {lang: choose([r for r in rows if r["lang"] == lang],
                               pool_p[[i for i, r in enumerate(rows) if r["lang"] == lang]]) for lang in langs}
    report["thresholds"] = thresholds
    subject = gate_from(subject_features, *_subject_matrix([r for r in rows + off if r["features"]],
                                                            subject_features), thresholds=floors,
                        l2=SUBJECT_L2)
    report["curve"] = {lang: [{"threshold": float(t), **{k: v for k, v in rates(outcome(
        [r for r in rows if r["lang"] == lang], pool_p[[i for i, r in enumerate(rows) if r["lang"] == lang]],
        t)).items() if k in ("facts", "refusal_recall", "refusal_precision")}}
        for t in np.round(np.arange(0.1, 0.91, 0.05), 2)] for lang in langs}
    shown = ("held_out", "held_out_test_families", "rules", "places", "places_by_question", "places_extra_off_topic",
             "places_by_answerability", "places_test_families", "ablation", "subject_ablation")
    print(json.dumps({k: report.get(k) for k in shown},
                     indent=1, ensure_ascii=False))
    print("thresholds:", thresholds)
    if args.report:
        args.report.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.out:
        data = {"about": "P(the best sentence holds the fact): logistic regression, trained by "
                         "scripts/train_answerability.py; figures in docs/answers.md",
                "trained_on": names, "questions": len(rows), "l2": L2, "ranking": args.ranking,
                "features": list(gate.names), "mean": list(gate.mean), "scale": list(gate.scale),
                "weights": list(gate.weights), "bias": gate.bias, "thresholds": thresholds,
                "on_subject": {"about": "P(the documents are on the question's subject): a refusal lists places to "
                                        "look from its threshold up",
                               "l2": SUBJECT_L2, "off_topic_questions": len(off), "features": list(subject.names),
                               "mean": list(subject.mean), "scale": list(subject.scale),
                               "weights": list(subject.weights), "bias": subject.bias, "thresholds": floors}}
        args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
