"""JaQuAD as an answer benchmark for `citerag bench-answers`: real Japanese questions with gold answers, and near
misses made from them.

Every JaQuAD paragraph is indexed whole, except half of them (chosen by a hash of the paragraph id, so the
choice is the same on every run): the questions about a held-out paragraph are near misses, since the rest of
its article usually stays in the index (same topic, fact absent). A held-out question whose answer's words another
indexed paragraph holds is left out: it may or may not be answered there. An answerable question may be answered
from any indexed paragraph that holds its answer.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from citerag.bench.agent import load_answers, without_answer_documents
from citerag.bench.answers import AnswerSet, Question, squash
from citerag.bench.retrieval import Dataset, doc_text, load_dataset
from citerag.errors import CiteragError

HELD_OUT_SHARE = 2  # one paragraph in two


def is_jaquad(root: Path) -> bool:
    return (Path(root) / "answers.jsonl").is_file() and (Path(root) / "corpus.jsonl").is_file()


def held_out(doc_id: str) -> bool:
    return int.from_bytes(hashlib.blake2b(doc_id.encode(), digest_size=4).digest(), "little") % HELD_OUT_SHARE == 0


def load(root: Path, n: int) -> AnswerSet:
    """The first `n` JaQuAD questions (answers.jsonl order) whose gold answer is in their paragraph."""
    root = Path(root)
    qrels = root / "qrels_context_only.tsv"
    ds = load_dataset(root, qrels if qrels.is_file() else None)
    answers = load_answers(root)
    ds = without_answer_documents(ds, answers, root / "qrels.tsv")
    squashed = {d["_id"]: squash(doc_text(d)) for d in ds.corpus}
    indexed = [d for d in ds.corpus if not held_out(d["_id"])]
    name = ds.name
    texts = {f"{name}:{d['_id']}": squashed[d["_id"]] for d in indexed}
    questions: list[Question] = []
    for qid, row in answers.items():
        if len(questions) >= n:
            break
        ctx = str(row["context_doc"])
        gold = [a for a in row["answers"] if a.strip()][:10]
        facts = [squash(a) for a in gold]
        text = ds.queries.get(qid, "")
        if ctx not in squashed or not gold or not text or not qid.isdigit() or len(qid) > 5:
            continue
        if not any(f in squashed[ctx] for f in facts):
            continue  # a gold answer not in its own paragraph cannot be checked against a citation
        where = [k for k, t in texts.items() if any(f in t for f in facts)]
        source = f"{name}:{ctx}"
        if held_out(ctx):
            if where:
                continue  # another paragraph has the answer's words: neither surely answerable nor a near miss
            questions.append(Question(id=f"jq-{qid}", lang="ja", question=text[:1000], answerable=False,
                                      near=source, why="its paragraph is held out of the index"))
        else:
            first = source if source in where else where[0]
            questions.append(Question(id=f"jq-{qid}", lang="ja", question=text[:1000], answerable=True,
                                      answers=gold, file=first, also=[w for w in where if w != first][:20]))
    if not questions:
        raise CiteragError(f"{root}: no JaQuAD question has its gold answer in its paragraph")
    return AnswerSet(root=root, docs=[], questions=questions,
                     corpus=Dataset(name=name, corpus=indexed, queries={}, qrels={}), texts=texts)
