from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from citerag.errors import DependencyError, FilterSyntaxError, QueryError
from citerag.search.fusion import convex, rrf
from citerag.search.pipeline import LINE_SLACK, _on_boundaries
from citerag.search.ports import Match

from conftest import SAMPLES


@pytest.fixture
def indexed(fast):
    fast.ingestor().ingest_paths([SAMPLES])
    return fast


def test_hybrid_search_is_deterministic_and_carries_source_metadata(indexed):
    p = indexed.pipeline()
    a = p.search("replace the HEPA filter every 12 months", top_k=5)
    b = p.search("replace the HEPA filter every 12 months", top_k=5)
    assert [h.model_dump() for h in a.hits] == [h.model_dump() for h in b.hits]
    top = a.hits[0]
    assert top.uri.startswith("file://") and top.title and top.doc_id
    assert "12" in top.text


def test_filters_restrict_results(indexed):
    hits = indexed.pipeline().search("filter", top_k=20, flt={"lang": "ja"}).hits
    assert hits and all(h.lang == "ja" for h in hits)
    hits = indexed.pipeline().search("error", top_k=20, flt={"page": {"$gte": 5}}).hits
    assert hits and all(h.page == 5 for h in hits)


def test_parent_expansion_returns_whole_pages_once(indexed):
    hits = indexed.pipeline(expand_parents=True).search("error E1 fan motor", top_k=5).hits
    parents = [h.parent_id for h in hits]
    assert len(parents) == len(set(parents))
    page5 = next(h for h in hits if h.page == 5)
    assert "Error E1" in page5.text and "Warranty" in page5.text


def test_bad_queries_and_filters(indexed):
    p = indexed.pipeline()
    for q in ("", "   ", "\x00"):
        with pytest.raises(QueryError, match="empty"):
            p.search(q)
    with pytest.raises(QueryError, match="limit is 2,000"):
        p.search("x" * 60_000)
    with pytest.raises(FilterSyntaxError):
        p.search("filter", flt={"page": {"$near": 1}})


def test_dense_failure_degrades_to_sparse_only(indexed, monkeypatch):
    p = indexed.pipeline()

    def down(_text):
        raise TimeoutError("embedding service timed out")

    monkeypatch.setattr(p.embedder, "embed_query", down)
    out = p.search("HEPA filter", top_k=3)
    assert out.degraded == ["dense"] and out.hits
    monkeypatch.setattr(p.index, "query_sparse", lambda *a, **k: (_ for _ in ()).throw(OSError("disk")))
    with pytest.raises(DependencyError, match="search unavailable"):
        p.search("HEPA filter")


def test_fusion_methods():
    d = [Match(id="a", score=0.9, metadata={}), Match(id="b", score=0.8, metadata={})]
    s = [Match(id="b", score=12.0, metadata={}), Match(id="c", score=3.0, metadata={})]
    assert [i for i, _ in rrf([d, s])] == ["b", "a", "c"]
    fused = dict(convex(d, s, alpha=0.5))
    assert fused == {"a": 0.5, "b": 0.5, "c": 0.0}
    assert next(i for i, _ in convex(d, s, alpha=0.9)) == "a"


@given(st.lists(st.text(alphabet="ab \nあ。", min_size=0, max_size=40), min_size=1, max_size=40), st.data())
def test_a_widened_window_starts_and_ends_between_words(pieces, data):
    parent = "".join(pieces)
    start = data.draw(st.integers(0, len(parent)))
    end = data.draw(st.integers(start, len(parent)))
    begin = data.draw(st.integers(0, start))
    stop = data.draw(st.integers(end, len(parent)))
    b, s = _on_boundaries(parent, begin, stop, start, end)
    assert b <= start and s >= end  # the chunk the search found is always sent
    # At a line break, a space or a sentence end; or between two Japanese characters, where nothing else is near.
    assert b in (0, start) or parent[b - 1] in " \n。" or parent[b - 1] == parent[b] == "あ"
    assert s in (len(parent), end) or parent[s] in " \n" or parent[s - 1] == "。" or parent[s - 1] == parent[s] == "あ"
    assert begin - LINE_SLACK <= b and s <= stop + LINE_SLACK


def test_a_japanese_window_with_no_line_break_near_keeps_its_width():
    parent = "あ" * 1000 + "チャンク" + "い" * 1000
    assert _on_boundaries(parent, 700, 1304, 1000, 1004) == (700, 1304)
    parent = "あ" * 600 + "。" + "あ" * 399 + "チャンク" + "い。" + "い" * 998
    assert _on_boundaries(parent, 700, 1304, 1000, 1004) == (700, 1006)


def test_a_text_files_widened_window_opens_at_the_start_of_a_line(fast, tmp_path):
    # The window around a chunk of a long file used to open mid-word ("nt\nSuppress normal output…"): the option the
    # question asks for ("-c, --count") was cut off the passage, and the answerer read what was left as a fragment.
    options = [f"-{chr(97 + i % 26)}{i}, --option-number-{i}\nDoes thing number {i} to each input file.\n"
               for i in range(60)]
    options[30] = "-c, --count\nSuppress normal output; instead print a count of matching lines.\n"
    text = "\n".join(options)
    (tmp_path / "man-grep.txt").write_text(text, encoding="utf-8")
    fast.ingestor().ingest_paths([tmp_path])
    hits = fast.pipeline(expand_parents=True, max_parent_chars=600).search("count of matching lines", top_k=3).hits
    hit = next(h for h in hits if "count of matching lines" in h.text)
    assert len(hit.text) < 1000 and "-c, --count\nSuppress normal output" in hit.text
    # Where the matched chunk lies in the window: a response cut to fit keeps it (tests/test_packing.py).
    assert hit.focus is not None and "count of matching lines" in hit.text[hit.focus[0] : hit.focus[1]]
    lines = set(text.split("\n"))
    assert all(line in lines for h in hits for line in h.text.split("\n"))  # whole lines only


def test_a_long_files_far_apart_matches_come_as_windows_that_do_not_overlap(fast, tmp_path):
    # One passage per file left out ".tables", 40 lines below the window around the best match of a man page.
    rows = [f".command{i} ARG Does thing number {i} to each input file." for i in range(120)]
    rows[10] = ".dump ?TABLE? Dump the tables of the database in an SQL text format."
    rows[100] = ".tables ?TABLE? List names of tables in the database."
    text = "\n".join(rows) + "\n"
    (tmp_path / "man-sqlite3.txt").write_text(text, encoding="utf-8")
    fast.ingestor().ingest_paths([tmp_path])
    hits = fast.pipeline(expand_parents=True, max_parent_chars=600).search("list tables database", top_k=5).hits
    found = {row for h in hits for row in (rows[10], rows[100]) if row in h.text}
    assert found == {rows[10], rows[100]}
    assert all(len(h.text) <= 600 + 2 * LINE_SLACK for h in hits)
    lines = [line for h in hits for line in h.text.splitlines()]
    assert len(lines) == len(set(lines))  # no line sent twice
    # Each window is cited with its own lines.
    for h in hits:
        first, last = (int(n) for n in h.section.removeprefix("lines ").split("-"))
        assert h.text.strip().splitlines() == text.splitlines()[first - 1 : last]


def test_a_parent_that_fits_is_sent_once_however_many_of_its_chunks_match(indexed):
    hits = indexed.pipeline(expand_parents=True).search("filter", top_k=10).hits
    assert len({h.parent_id for h in hits}) == len(hits)
