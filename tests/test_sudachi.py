"""The Japanese lexical option: Sudachi words in the BM25 stream, recorded in the index so ingest and search agree."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from citerag.cli import app
from citerag.components import Components
from citerag.search.sparse import DEFAULT_TOKENS, CorpusStats, encode_document, encode_query, term_id
from citerag.settings import Settings

from conftest import SAMPLES

pytest.importorskip("sudachipy")

FAST = {"CITERAG_EMBEDDER": "hashing"}


@pytest.fixture(scope="module")
def sudachi():
    from citerag.adapters.sudachi_tokens import SudachiTokens

    return SudachiTokens()


def _scores(tokens, docs: list[str], query: str) -> list[float]:
    counts = [tokens.counts(d) for d in docs]
    stats = CorpusStats()
    for c in counts:
        stats.add(c)
    q = dict(zip(encode_query(query, stats, tokens).indices, encode_query(query, stats, tokens).values, strict=True))
    return [sum(q.get(t, 0.0) * w for t, w in zip(v.indices, v.values, strict=True))
            for v in (encode_document(c, stats) for c in counts)]


def test_sudachi_adds_normalised_japanese_content_words_only(sudachi):
    assert sudachi.extra("附属のケーブルを接続しました。") == ["ja:付属", "ja:ケーブル", "ja:接続"]
    assert sudachi.extra("The HEPA filter is replaced every year.") == []
    text = "フィルターを交換します。Replace the filter."
    assert sudachi.counts(text) - DEFAULT_TOKENS.counts(text) == {term_id("ja:フィルター"): 1, term_id("ja:交換"): 1}


def test_a_word_spelled_another_way_now_matches(sudachi):
    docs = ["シミュレーションを実行する。", "ハレーションとシュークリーム、ミレーの絵。"]
    default = _scores(DEFAULT_TOKENS, docs, "シュミレーション")
    with_words = _scores(sudachi, docs, "シュミレーション")
    assert with_words[0] > default[0] * 1.5  # the shared normalised word シミュレーション
    assert with_words[1] <= default[1]  # the look-alike shares bigrams only


def test_english_search_is_unchanged_by_the_japanese_option(sudachi):
    docs = ["Replace the HEPA filter every twelve months.", "The warranty lasts two years."]
    assert _scores(sudachi, docs, "how often to replace the filter") == _scores(
        DEFAULT_TOKENS, docs, "how often to replace the filter")


def test_ingest_and_search_with_sudachi_and_an_index_refuses_the_other_tokenizer(tmp_path):
    index = str(tmp_path / "ja.sqlite")
    env = {**FAST, "CITERAG_SPARSE_TOKENIZER": "sudachi"}
    r = CliRunner().invoke(app, ["ingest", str(SAMPLES / "faq-ja.md"), "--index", index, "--json"], env=env)
    assert json.loads(r.stdout)["summary"]["added"] == 1
    r = CliRunner().invoke(app, ["search", "フィルターの交換", "--mode", "bm25", "--index", index, "--json"], env=env)
    assert r.exit_code == 0 and json.loads(r.stdout)
    default = {**FAST, "CITERAG_SPARSE_TOKENIZER": "default"}
    r = CliRunner().invoke(app, ["search", "フィルターの交換", "--index", index, "--json"], env=default)
    assert r.exit_code == 1
    message = json.loads(r.stdout)["error"]
    assert "'sudachi-core-c' BM25 tokenizer" in message and "'default'" in message
    assert "Traceback" not in r.output
    # "auto" (the default setting) searches an index with the stream it was built with.
    r = CliRunner().invoke(app, ["search", "フィルターの交換", "--index", index, "--json"], env=FAST)
    assert r.exit_code == 0 and json.loads(r.stdout)

    plain = str(tmp_path / "plain.sqlite")
    CliRunner().invoke(app, ["ingest", str(SAMPLES / "faq-en.md"), "--index", plain], env=default)
    r = CliRunner().invoke(app, ["ingest", str(SAMPLES / "faq-ja.md"), "--index", plain, "--json"], env=env)
    assert r.exit_code == 1 and "'default' BM25 tokenizer" in json.loads(r.stdout)["error"]
    r = CliRunner().invoke(app, ["ingest", str(SAMPLES / "faq-ja.md"), "--index", plain, "--json"], env=FAST)
    assert r.exit_code == 0 and json.loads(r.stdout)["summary"]["added"] == 1


def test_auto_uses_sudachi_for_a_new_embedded_index_when_the_extra_is_installed(tmp_path):
    comps = Components(Settings(data_dir=tmp_path, embedder="hashing"))
    assert comps.bm25_tokens.name == "sudachi-core-c"
    comps.ingestor().ingest_path(SAMPLES / "faq-ja.md")
    assert comps.index.recorded_sparse_tokens() == "sudachi-core-c"
    assert Components(Settings(data_dir=tmp_path, embedder="hashing", index_backend="pinecone")).bm25_tokens_name \
        == "default"


def test_an_index_from_before_the_tokenizer_was_recorded_counts_as_default(tmp_path, fast_settings):
    comps = Components(fast_settings)
    comps.ingestor().ingest_path(SAMPLES / "faq-en.md")
    comps.index._conn.execute("DELETE FROM meta WHERE key='sparse_tokens'")
    comps.index.check_sparse_tokens("default")  # an old index keeps working as it was built
    with pytest.raises(Exception, match="was built with the 'default' BM25 tokenizer"):
        comps.index.check_sparse_tokens("sudachi-core-c")


def test_the_lambda_path_neither_needs_nor_loads_sudachi():
    code = ("import sys, citerag.handlers.search as h; from citerag.components import Components; "
            "from citerag.settings import Settings; "
            "c = Components(Settings(embedder='titan', index_backend='pinecone')); "
            "assert c.bm25_tokens.name == 'default'; assert 'sudachipy' not in sys.modules, 'sudachipy was imported'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with pytest.raises(Exception, match="embedded index only"):
        _ = Components(Settings(index_backend="pinecone", sparse_tokenizer="sudachi")).bm25_tokens_name
