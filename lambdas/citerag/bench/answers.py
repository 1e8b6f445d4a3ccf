"""`citerag bench-answers`: does `citerag ask` answer right, cite the place that holds the fact, and say "not found"
when the documents do not answer? Over a folder of real documents (docs/) and question sets (questions-*.jsonl)
with answerable questions (a short exact fact, the file that states it) and unanswerable near misses.

Scoring, per question:
- answerable: right when some answer sentence contains a gold fact and is cited to the expected file, at a page
  (PDF) whose text holds the fact; abstaining or citing elsewhere is wrong;
- unanswerable: right when the answer abstains (no cited sentence);
- every displayed sentence must be found in the document and page it is cited to (masked personal data matches
  anything): a sentence that is not is a misattribution, counted over all questions;
- the excerpt under each source must be a sentence the answer cites to it: one that is not is a stray excerpt.
Questions with an odd number are the dev split (for tuning), even ones the test split (for reporting).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

from pydantic import BaseModel, Field, ValidationError, model_validator

from citerag.answerer import question_kinds
from citerag.answerer.ranking import Candidate
from citerag.bench.metrics import percentile, wilson_interval
from citerag.bench.retrieval import Dataset, build_index
from citerag.citations.answer import Answer
from citerag.citations.excerpts import QUOTE_JOINER
from citerag.citations.pii import MASK_LABEL
from citerag.documents.chunking import line_bounds
from citerag.documents.loaders import SUPPORTED_SUFFIXES, load_path
from citerag.documents.text import normalize
from citerag.errors import CiteragError
from citerag.search.passage import Passage, location

MAX_QUESTIONS = 5000


class Question(BaseModel):
    id: str = Field(pattern=r"^[a-z]{2}-\d{1,5}$", description="dev split when the number is odd, else test")
    lang: Literal["en", "ja"]
    question: str = Field(min_length=1, max_length=1000)
    answerable: bool = Field(strict=True)  # "yes" was taken for true
    answers: list[str] = Field(default_factory=list, max_length=10)
    file: str | None = None
    also: list[str] = Field(default_factory=list, max_length=20, description="other sources that state the fact")
    evidence: str | None = None
    near: str | None = None
    why: str | None = None

    @model_validator(mode="after")
    def _answerable_has_fact(self) -> Question:
        if self.answerable and (not self.answers or not self.file or not all(a.strip() for a in self.answers)):
            raise ValueError("an answerable question needs 'answers' (non-empty strings) and 'file'")
        return self

    @property
    def split(self) -> str:
        return "dev" if int(self.id.split("-")[1]) % 2 else "test"


class AnswerSet(BaseModel):
    """Documents to ingest (docs/), or a retrieval corpus to index whole with the squashed text of each of its
    sources (JaQuAD, bench/answers_jaquad.py), and the questions."""

    root: Path
    docs: list[Path]
    questions: list[Question]
    corpus: Dataset | None = None
    texts: dict[str, str] | None = None


def load(root: Path) -> AnswerSet:
    root = Path(root)
    docs_dir = root / "docs"
    if not root.exists():
        raise CiteragError(f"no such folder: {root} (bench-answers takes a folder with docs/ and questions-*.jsonl, "
                           "or a JaQuAD folder with corpus.jsonl, queries.jsonl and answers.jsonl)")
    if not docs_dir.is_dir():
        raise CiteragError(f"{root} has no docs/ folder: bench-answers needs docs/ and questions-*.jsonl")
    docs = sorted(p for p in docs_dir.iterdir() if p.is_file() and not p.name.startswith("."))
    names = {p.name for p in docs}
    questions: list[Question] = []
    files = sorted(root.glob("questions-*.jsonl"))
    if not files:
        raise CiteragError(f"{root} has no questions-*.jsonl")
    for f in files:
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                q = Question.model_validate_json(line)
            except ValidationError as exc:
                first = exc.errors()[0]
                raise CiteragError(f"{f.name} line {n}: {'.'.join(map(str, first['loc'])) or 'row'}: "
                                   f"{first['msg']}") from None
            if q.answerable and q.file not in names:
                raise CiteragError(f"{f.name} line {n}: file {q.file!r} is not in docs/")
            questions.append(q)
            if len(questions) > MAX_QUESTIONS:
                raise CiteragError(f"more than {MAX_QUESTIONS} questions")
    if not questions:
        raise CiteragError(f"{root}: the question files hold no questions")
    seen: set[str] = set()
    for q in questions:
        if q.id in seen:
            raise CiteragError(f"question id {q.id!r} is used twice across the question files")
        seen.add(q.id)
    return AnswerSet(root=root, docs=docs, questions=questions)


# --- checking what an answer says against the documents -------------------------------------------------------

def squash(text: str) -> str:
    """Comparable form: NFKC, lower case, no whitespace (PDF and Markdown line breaks fall anywhere)."""
    return re.sub(r"\s+", "", normalize(text))


class DocTexts:
    """The loaded text of every document, whole and per page, in comparable form: the answer's sentences come
    from what the loader produced, so that is what they are checked against."""

    def __init__(self, docs: Iterable[Path], whole: dict[str, str] | None = None) -> None:
        self.whole: dict[str, str] = dict(whole or {})
        self.pages: dict[tuple[str, int], str] = {}
        self.sections: dict[tuple[str, str], str] = {}
        self.lines: dict[str, list[str]] = {}
        for p in docs:
            doc = load_path(p)
            self.whole[p.name] = squash("\n".join(s.text for s in doc.sections))
            for s in doc.sections:
                if s.page is not None:
                    self.pages[(p.name, s.page)] = squash(s.text)
                elif s.section:
                    # Two sections may share a heading path ("Guide > Example" twice): the place is both.
                    key = (p.name, s.section)
                    self.sections[key] = self.sections.get(key, "") + squash(s.text)
            if SUPPORTED_SUFFIXES.get(p.suffix.lower()) == "text":  # its places are line ranges
                self.lines[p.name] = "\n".join(s.text for s in doc.sections).splitlines()

    def location(self, name: str, page: int | None) -> str:
        if page is not None:
            return self.pages.get((name, page), "")
        return self.whole.get(name, "")

    def place(self, name: str, page: int | None, section: str | None) -> str:
        """The text at a place to look: a PDF page, a Markdown or HTML section, a text file's lines, a document indexed
        whole; "" when the place is not one the loader gave (not the whole file, which would hold the fact wherever
        the place is)."""
        if page is not None:
            return self.pages.get((name, page), "")
        if not section:  # a document indexed whole (a JaQuAD paragraph): the place is all of it
            return self.whole.get(name, "")
        bounds = line_bounds(section) if name in self.lines else None
        if bounds:
            return squash("\n".join(self.lines[name][bounds[0] - 1 : bounds[1]]))
        return self.sections.get((name, section), "")


def holds(location: str, claim: str) -> bool:
    """Is the claim's text in the location? Masked values ([EMAIL]) stand for any short text."""
    pieces = [re.escape(squash(p)) for p in MASK_LABEL.split(claim)]
    if not any(pieces):
        return False
    return re.search(".{1,80}?".join(pieces), location, re.S) is not None


def file_name(uri: str) -> str:
    """The file a file:// URI names, decoded ("%E8%BF%94%E9%87%91.md" is 返金.md)."""
    return unquote(uri.rstrip("/").rsplit("/", 1)[-1])


def _where(source) -> str:
    """"mpl-2.0.pdf p.3", "vectors.md": the file and page a source is cited to, as the report prints it."""
    return file_name(source.uri) + (f" p.{source.page}" if source.page else "")


def score(q: Question, answer: Answer, texts: DocTexts) -> dict[str, Any]:
    misattributed = [
        {"sentence": c.text[:200], "cited": _where(s)}
        for c in answer.citations for s in c.sources
        if not holds(texts.location(file_name(s.uri), s.page), c.text)]
    # The excerpt under a source must be a sentence the answer cites to it, not the passage's first lines.
    # A source cited for two sentences quotes both (QUOTE_JOINER between them): each must be one of them.
    stray = [
        {"excerpt": s.excerpt[:200], "cited": _where(s)}
        for s in answer.sources
        if not s.excerpt.strip() or not all(
            any(squash(piece) in squash(c.text) for c in answer.citations
                if any(x.source_id == s.source_id for x in c.sources))
            for piece in s.excerpt.split(QUOTE_JOINER))]
    gold = [squash(a) for a in q.answers]
    right = q.answerable and any(
        g in squash(c.text) and file_name(s.uri) in (q.file, *q.also)
        and g in texts.location(file_name(s.uri), s.page)
        for c in answer.citations for s in c.sources for g in gold)
    cited = sorted({_where(s) for s in answer.sources})
    # A refused answerable question still leads to its fact when a place to look (a page, a section) holds it.
    pointed = q.answerable and not answer.citations and any(
        file_name(p.uri) in (q.file, *q.also) and any(g in texts.place(file_name(p.uri), p.page, p.section)
                                                        for g in gold)
        for p in answer.related)
    return {"id": q.id, "lang": q.lang, "split": q.split, "answerable": q.answerable,
            "abstained": not answer.citations, "right": right if q.answerable else not answer.citations,
            "pointed": pointed, "misattributed": misattributed, "stray_excerpts": stray,
            "answer": answer.text[:500], "cited": cited,
            "related": [f"{file_name(p.uri)}, {location(p.page, p.section)}" for p in answer.related]}


# --- where a wrong answer's fact was ------------------------------------------------------------------------------

FACT_STAGES = ("not_retrieved", "not_one_sentence", "ranked_lower", "refused", "not_shown")


def fact_at(q: Question, passages: list[Passage], candidates: Callable[[str, list[Passage]], list[Candidate]], *,
            abstained: bool) -> dict[str, Any]:
    """Where the fact of a wrongly answered question was, among what the answerer read: in none of the passages
    search gave it (not_retrieved); in a passage, but in no sentence it weighs (not_one_sentence: the fact spans
    sentences, or its passage is past those read); in a sentence ranked below the one chosen (ranked_lower, with
    both sentences' lexical share and cosine); in the best-ranked sentence, refused (by the threshold or a rule of
    the question's kind) or answered with other sentences (not_shown)."""
    gold = [squash(a) for a in q.answers]
    if not any(g in squash(p.text) for p in passages for g in gold):
        return {"stage": "not_retrieved", "passages": len(passages)}
    ranked = candidates(q.question, passages)
    at = next((i for i, c in enumerate(ranked) if any(g in squash(c.text) for g in gold)), None)
    if at is None:
        return {"stage": "not_one_sentence", "sentences": len(ranked)}
    stage = "ranked_lower" if at else "refused" if abstained else "not_shown"
    fact, best = ranked[at], ranked[0]
    return {"stage": stage, "rank": at + 1, "of": len(ranked),
            "lexical": round(fact.lexical, 3), "cosine": round(fact.similarity, 3) if fact.similarity else None,
            "best_lexical": round(best.lexical, 3),
            "best_cosine": round(best.similarity, 3) if best.similarity else None,
            "evidence": round(fact.evidence, 3)}


# --- running ---------------------------------------------------------------------------------------------------

Ask = Callable[[str], Answer]


def _asker(agent: str) -> Callable[[Any], Ask]:
    """`citerag ask`'s paths: the local Classic agent (its prompts, parser and search action group), or search alone."""
    def make(comps) -> Ask:
        from citerag.answerers import open_answerer

        return open_answerer(comps, agent).ask

    return make


ASKERS: dict[str, Callable[[Any], Ask]] = {"local": _asker("local"), "none": _asker("none")}


def run(ds: AnswerSet, comps, *, agent: str = "local", splits: tuple[str, ...] = ("dev", "test"),
        progress: Callable[[int, int], None] | None = None, ablate: tuple[str, ...] = ()) -> dict[str, Any]:
    """Ingest docs/ into the (empty) index `comps` points at, ask every question of the splits, score. With
    `ablate`, each question is asked again with each of those question kinds switched off (rules/kinds.json)."""
    t = time.perf_counter()
    if ds.corpus is not None:
        build_index(ds.corpus, comps.embedder, comps.index)
    else:
        results = comps.ingestor().ingest_paths(ds.docs, sync=True)
        failed = [r for r in results if r.status == "failed"]
        if failed:
            raise CiteragError(f"could not ingest {len(failed)} documents: {failed[0].source}: {failed[0].reason}")
    ingest_s = time.perf_counter() - t
    texts = DocTexts(ds.docs, ds.texts)
    ask = ASKERS[agent](comps)
    ask("warm up")
    questions = [q for q in ds.questions if q.split in splits]
    read: list[list[Passage]] = []  # the passages of each sentence pick (none with a model that writes its answer)
    comps.answering.observer = lambda _question, passages: read.append(passages)
    rows = []
    for i, q in enumerate(questions, start=1):
        read.clear()
        t = time.perf_counter()
        answer = ask(q.question)
        ms = (time.perf_counter() - t) * 1000
        d = answer.decision
        row = {**score(q, answer, texts), "ms": round(ms, 1), "family": ds.root.name,
               "reason": d.reason if d else None, "probability": d.probability if d else None,
               "features": d.features if d else {}}
        if q.answerable and not row["right"] and read:
            row["fact_at"] = fact_at(q, read[-1], comps.answering.candidates, abstained=row["abstained"])
        for kind in ablate:
            with question_kinds.switched_off(kind):
                row.setdefault("without", {})[kind] = score(q, ask(q.question), texts)["right"]
        rows.append(row)
        if progress:
            progress(i, len(questions))
    documents = len(ds.corpus.corpus) if ds.corpus is not None else len(ds.docs)
    out = {"agent": agent, "documents": documents, "ingest_s": round(ingest_s, 1), "summary": summarize(rows),
           "rows": rows}
    return out | ({"ablation": ablation(rows, ablate)} if ablate else {})


def ablation(rows: list[dict[str, Any]], kinds: tuple[str, ...]) -> dict[str, dict[str, dict[str, int]]]:
    """Per kind and language, what switching the kind off changes: facts with the right citation and near misses
    refused (each against the run with every kind on), and how many questions changed outcome."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for kind in kinds:
        for lang in sorted({r["lang"] for r in rows}):
            mine = [r for r in rows if r["lang"] == lang and kind in r.get("without", {})]
            facts = sum(r["without"][kind] for r in mine if r["answerable"]) - sum(r["right"] for r in mine
                                                                                 if r["answerable"])
            refusals = sum(r["without"][kind] for r in mine if not r["answerable"]) - sum(
                r["right"] for r in mine if not r["answerable"])
            out.setdefault(kind, {})[lang] = {"facts": facts, "refusals": refusals,
                                              "changed": sum(r["without"][kind] != r["right"] for r in mine)}
    return out


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per split and language, and per split over both languages."""
    out: dict[str, dict[str, Any]] = {}
    for split in sorted({r["split"] for r in rows}):
        for lang in ("en", "ja", "all"):
            sel = [r for r in rows if r["split"] == split and (lang == "all" or r["lang"] == lang)]
            if sel:
                out[f"{split}/{lang}"] = _metrics(sel)
    return out


def _metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ans = [r for r in rows if r["answerable"]]
    un = [r for r in rows if not r["answerable"]]
    abstained = [r for r in rows if r["abstained"]]
    lat = [r["ms"] for r in rows]
    right, held = sum(r["right"] for r in ans), sum(r["abstained"] for r in un)
    return {
        "answerable": len(ans),
        "fact_with_right_citation": right / len(ans) if ans else None,
        "fact_with_right_citation_ci95": _rounded(wilson_interval(right, len(ans))) if ans else None,
        "unanswerable": len(un),
        "abstention_recall": held / len(un) if un else None,
        "abstention_recall_ci95": _rounded(wilson_interval(held, len(un))) if un else None,
        "abstention_precision": (sum(not r["answerable"] for r in abstained) / len(abstained)) if abstained
        else None,
        # Answerable questions refused, and of those the ones whose places to look hold the fact.
        "refused_answerable": sum(r["abstained"] for r in ans),
        "refused_with_fact_at_a_place": sum(r.get("pointed", False) for r in ans),
        "misattributed_sentences": sum(len(r["misattributed"]) for r in rows),
        # Of the answerable questions answered wrong, where their facts were (`fact_at`).
        "wrong_fact_at": {stage: n for stage in FACT_STAGES
                          if (n := sum(r.get("fact_at", {}).get("stage") == stage for r in ans))},
        "stray_excerpts": sum(len(r.get("stray_excerpts", ())) for r in rows),
        # Why each refusal was made, as its Decision names it.
        "refused_by_reason": {reason: n for reason in sorted({str(r.get("reason")) for r in abstained})
                              if (n := sum(str(r.get("reason")) == reason for r in abstained))},
        "p50_ms": round(percentile(lat, 50), 1), "p95_ms": round(percentile(lat, 95), 1),
    }


def _rounded(interval: tuple[float, float]) -> list[float]:
    return [round(x, 4) for x in interval]


def failures(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if not r["right"] or r["misattributed"] or r.get("stray_excerpts")]


def dump(res: dict[str, Any]) -> str:
    return json.dumps(res, ensure_ascii=False)
