"""What scripts/train_answerability.py and scripts/train_ranker.py share: the pool's families, and one row per
question asked through `citerag ask`'s default path with a gate that always answers, cached per family.

A row holds the features the gate reads and whether the answer is right (fact + right citation; never, for a near
miss). With `capture`, a row also holds the question's text (the learned order reads it) and every candidate the
ranking weighed, in the hand ranking's order: its fields, the texts the model embedded for it (each statement under
its heading, and the statement's length), and whether citing it alone would make the answer right (never, for a
near miss).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

from citerag.answerer.ranking import Candidate, Order, _heading, _under
from citerag.bench import answers as ab
from citerag.bench import answers_jaquad
from citerag.bench.agent import load_answers, without_answer_documents
from citerag.bench.metrics import wilson_interval
from citerag.bench.retrieval import Dataset, doc_text, load_dataset
from citerag.citations.statements import split_statements
from citerag.components import Components
from citerag.search.passage import Passage
from citerag.search.query import Query
from citerag.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
TEST_FAMILIES = ("en-sqlite", "en-postgresql", "ja-jlreq", "ja-platex")  # datasets/pool/README.md
# The code a row depends on: how sentences are cut, ranked, ordered and picked, and how the offline model answers.
PICKING = ("answerer/extractive.py", "answerer/reach.py", "answerer/ranking.py", "answerer/question_kinds.py",
           "answerer/terms.py", "answerer/variants.py", "answerer/variants.json", "adapters/offline_claude.py",
           *(f"answerer/rules/{n}.json" for n in ("question_kinds", "sentences", "terms", "lexicons", "numbers",
                                                   "kinds")),
           "citations/statements.py", "documents/loaders.py", "search/pipeline.py")
LEARNED_ORDER = ("answerer/sentence_model.py", "answerer/sentence_model.json")
ROW_FIELDS = ("id", "lang", "answerable", "right", "features", "misattributed")
CANDIDATE_FIELDS = ("rank", "pos", "last", "text", "lexical", "similarity", "factor", "bonus", "score", "evidence")
# What a captured row holds beyond its fields (its candidates' statements and lengths, the question's text, which the
# learned order reads): a cache of an older layout is not read.
CAPTURED = "units-lengths-question-passages"


def key(family: Path, hand: bool = False) -> str:
    """The family's files and the code its rows depend on (the learned order's too, unless ranked by hand)."""
    h = hashlib.sha256()
    code = PICKING if hand else PICKING + LEARNED_ORDER
    for p in sorted(family.rglob("*")) + [ROOT / "lambdas" / "citerag" / f for f in code]:
        if p.is_file():
            h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()[:16]


def families_of(paths: list[Path]) -> list[Path]:
    """Each path is a pool folder (each subfolder a family) or a family folder (one with docs/)."""
    return sorted(f for p in paths for f in ([p] if (p / "docs").is_dir() else sorted(p.iterdir()))
                  if (f / "docs").is_dir())


class AlwaysAnswers:
    """Narrows to the asked kind as every gate does, then answers: the rows say what the gate would weigh."""

    def judge(self, lang, features):
        return True, None, None


def candidate(values: list) -> Candidate:
    return Candidate(**dict(zip(CANDIDATE_FIELDS, values[: len(CANDIDATE_FIELDS)], strict=True)))


def _labelled(q: ab.Question, usable: list[Passage], candidates: list[Candidate], texts: ab.DocTexts) -> list[list]:
    """Each candidate's fields, the texts the model read for it (its statements, each under its passage's heading, as
    `ranking._cosines` embeds them), and whether it holds a gold fact, from a passage of the expected file whose page
    (PDF) or document holds the fact: what `bench.answers.score` asks of a cited sentence."""
    gold = [ab.squash(a) for a in q.answers]
    spans = [split_statements(p.text, lines_wrap=p.page is None) for p in usable]
    out = []
    for c in candidates:
        p = usable[c.rank]
        name = ab.file_name(p.uri)
        text = ab.squash(c.text)
        right = name in (q.file, *q.also) and any(g in text and g in texts.location(name, p.page) for g in gold)
        units = [[_under(_heading(p), part), len(part)] for part in spans[c.rank][c.pos : c.last + 1]]
        out.append([getattr(c, f) for f in CANDIDATE_FIELDS] + [units, int(right)])
    return out


def cache_file(family: Path, cache: Path, *, ranking: str = "default", order_key: str = "",
               capture: bool = False) -> Path:
    suffix = "" if ranking == "default" and not order_key and not capture else \
        "-" + hashlib.sha256(f"{ranking}|{order_key}|{capture}{'|' + CAPTURED if capture else ''}".encode()
                             ).hexdigest()[:8]
    return cache / f"{family.name}-{key(family, hand=ranking == 'hand' and not order_key)}{suffix}.json"


def rows_of(family: Path, cache: Path, *, ranking: str = "default", order: Order | None = None,
            order_key: str = "", capture: bool = False) -> list[dict]:
    """The family's rows, asked with `ranking` ("default": the settings' default; "hand"; "learned"), or with
    `order` (identified in the cache by `order_key`) over the hand ranking. Cached in `cache`."""
    cached = cache_file(family, cache, ranking=ranking, order_key=order_key, capture=capture)
    if cached.exists():
        return json.loads(cached.read_text(encoding="utf-8"))
    return _asked(ab.load(family), family.name, cached, ranking=ranking, order=order, capture=capture)


def _asked(ds: ab.AnswerSet, name: str, cached: Path, *, ranking: str, order: Order | None,
           capture: bool) -> list[dict]:
    """Ask every question of `ds` (see `rows_of`) and write its rows to `cached`."""
    questions = [q for q in ds.questions if q.split in ("dev", "test")]
    texts = ab.DocTexts(ds.docs, ds.texts) if capture else None
    calls: list[tuple[Query, list[Passage], list[Candidate]]] = []
    captured: dict[int, tuple[Query, list[Passage], list[Candidate]]] = {}
    settings = {} if ranking == "default" else {"answer_ranking": "hand" if order is not None else ranking}
    with tempfile.TemporaryDirectory(prefix="citerag-train-") as tmp:
        comps = Components(Settings(index_path=Path(tmp) / "index.sqlite", answer_gate="off", **settings))
        comps.answering.gate = AlwaysAnswers()
        inner = order or comps.answering.order

        def recorded(query: Query, usable: list[Passage], candidates: list[Candidate]) -> list[Candidate]:
            calls.append((query, usable, candidates))
            return inner(query, usable, candidates) if inner is not None else candidates

        def progress(i: int, n: int) -> None:
            print(f"\r{name}: {i}/{n}", end="", file=sys.stderr)
            # The question's last weighing (a wrong answer is weighed again, on the same passages, to say why).
            mine = [c for c in calls if c[0].text == questions[i - 1].question] \
                or [c for c in calls if c[0].text != "warm up"]
            if mine:
                captured[i - 1] = mine[-1]
            calls.clear()

        if capture or order is not None:
            comps.answering.order = recorded
        res = ab.run(ds, comps, agent="local", splits=("dev", "test"), progress=progress)
    print(file=sys.stderr)
    rows = []
    for i, r in enumerate(res["rows"]):
        row = {k: r[k] for k in ROW_FIELDS} | {"family": name}
        q = questions[i]
        if capture and i in captured and texts is not None:
            _, usable, candidates = captured[i]
            row["candidates"] = _labelled(q, usable, candidates, texts)
            row["passage_scores"] = [p.score for p in usable]
            row["question"] = q.question
        rows.append(row)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    return rows


# `citerag bench-answers <jaquad> --questions 400` asks these (and `bench-agent jaquad` fewer): neither they, nor the
# questions before the last of them, nor any question on one of their paragraphs is learned from.
JAQUAD_BENCHED = 400


def jaquad_set(folder: Path, benched: int = JAQUAD_BENCHED) -> ab.AnswerSet:
    """JaQuAD questions the benches never ask, each answerable from an index of every paragraph none of the asked
    ones uses (the bench's own choice of paragraphs does not apply: every question here is answerable). A candidate
    holds the fact when it holds a gold answer and comes from the question's own paragraph."""
    asked = {q.id.split("-", 1)[1] for q in answers_jaquad.load(folder, benched).questions}
    answers = load_answers(folder)
    ids = list(answers)
    reach = max(ids.index(q) for q in asked) + 1
    used = {str(answers[q]["context_doc"]) for q in ids[:reach]}
    qrels = folder / "qrels_context_only.tsv"
    ds = without_answer_documents(load_dataset(folder, qrels if qrels.is_file() else None), answers,
                                  folder / "qrels.tsv")
    indexed = [d for d in ds.corpus if d["_id"] not in used]
    texts = {f"{ds.name}:{d['_id']}": ab.squash(doc_text(d)) for d in indexed}
    questions = []
    for qid in ids[reach:]:
        row, source = answers[qid], f"{ds.name}:{answers[qid]['context_doc']}"
        gold = [a for a in row["answers"] if a.strip()][:10]
        facts = [ab.squash(a) for a in gold]
        text = ds.queries.get(qid, "")
        if source not in texts or not text or not qid.isdigit() or len(qid) > 5 \
                or not any(f in texts[source] for f in facts):
            continue
        # Only its own paragraph: a short answer ("8号", "1976年") found in another is mostly another fact.
        questions.append(ab.Question(id=f"jq-{qid}", lang="ja", question=text[:1000], answerable=True, answers=gold,
                                     file=source))
    if not questions:
        raise SystemExit(f"{folder}: no JaQuAD question past the benched ones has its answer in its paragraph")
    return ab.AnswerSet(root=folder, docs=[], questions=questions,
                       corpus=Dataset(name=ds.name, corpus=indexed, queries={}, qrels={}), texts=texts)


def jaquad_rows(folder: Path, cache: Path) -> list[dict]:
    """The rows (hand order, captured) of `jaquad_set`'s questions, family "jaquad", cached in `cache`."""
    folder = Path(folder)
    if not answers_jaquad.is_jaquad(folder):
        raise SystemExit(f"{folder} is not a JaQuAD folder (answers.jsonl, corpus.jsonl, queries.jsonl)")
    tag = hashlib.sha256(f"jaquad|{JAQUAD_BENCHED}|{CAPTURED}".encode()).hexdigest()[:8]
    cached = cache / f"jaquad-{key(folder, hand=True)}-{tag}.json"
    if cached.exists():
        return json.loads(cached.read_text(encoding="utf-8"))
    return _asked(jaquad_set(folder), "jaquad", cached, ranking="hand", order=None, capture=True)


def pool_arguments(description: str, rows: str) -> argparse.ArgumentParser:
    """The arguments every training script over the pool takes; `rows` names its row cache under the temp dir."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("pool", type=Path, nargs="+", help="a pool folder (each subfolder a family) or family folders")
    ap.add_argument("--out", type=Path, help="where to write the model (default: print only)")
    ap.add_argument("--rows", type=Path, default=Path(tempfile.gettempdir()) / rows)
    ap.add_argument("--report", type=Path, help="write the held-out figures as JSON here")
    return ap


def ratio(k: int, n: int) -> dict:
    lo, hi = wilson_interval(k, n) if n else (0.0, 0.0)
    return {"right": k, "of": n, "share": round(k / n, 4) if n else None, "ci95": [round(lo, 3), round(hi, 3)]}
