from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from citerag.citations.payload import build_payload
from citerag.citations.source_ids import assign
from citerag.search.packing import cut_to_bytes, drop_tail, json_size, pack
from citerag.search.passage import Passage
from citerag.search.sparse import tokenize


def _items(texts):
    return assign([Passage(text=t, uri=f"file:///{i}.pdf", title=f"T{i}", page=i + 1, score=1.0)
                   for i, t in enumerate(texts)])


def test_everything_fits_unchanged():
    items = _items(["short one.", "short two."])
    payload, kept = pack(items, build_payload, 25_000, "short")
    assert kept == items and payload["results"] == [p.wire() for p in items]


def test_long_passages_are_cut_around_the_best_sentence_not_dropped():
    filler = "Unrelated filler sentence about other topics. " * 60
    texts = [filler + "The HEPA filter lasts twelve months. " + filler for _ in range(6)]
    items = _items(texts)
    budget = 6000
    payload, kept = pack(items, build_payload, budget, "how long does the HEPA filter last")
    assert json_size(payload) <= budget
    assert len(kept) == 6  # all results survive, shortened
    for r in kept:
        assert "HEPA filter lasts twelve months" in r.text
    _, seed = drop_tail(items, build_payload, budget)
    assert len(seed) < len(kept)


def test_source_ids_and_metadata_survive_packing():
    items = _items(["x" * 5000, "y" * 5000, "z" * 5000])
    _, kept = pack(items, build_payload, 4000, "x")
    assert [r.source_id for r in kept] == ["S1", "S2", "S3"][: len(kept)]
    assert all(r.uri.startswith("file:///") and r.page for r in kept)


def test_cut_keeps_whole_characters_and_marks_elisions():
    text = "前の文です。" * 20 + "フィルターは12か月ごとに交換します。" + "後の文です。" * 20
    out = cut_to_bytes(text, {"フィ", "交換"}, 200)
    assert len(json.dumps(out, ensure_ascii=False).encode()) - 2 <= 200
    assert "フィルターは12か月ごとに交換します。" in out
    assert out.startswith("… ") and out.endswith(" …")


def test_a_cut_keeps_the_line_before_the_best_sentence_when_nothing_favours_either_side():
    # A man page as the search tool sends it: the option's line over its description. Cut with the text after the
    # description always taken first, "-h, --human-readable" was lost and with it the answer.
    rows = [f"--option-{i}\nオプション{i}の説明です" for i in range(40)]
    text = "\n\n".join([*rows[:20], "-h, --human-readable\n人間が読みやすい形式でサイズを表示する", *rows[20:]])
    out = cut_to_bytes(text, {"人間", "サイ"}, 400)
    assert "-h, --human-readable\n人間が読みやすい形式でサイズを表示する" in out
    kept_before, kept_after = out.split("人間が読みやすい")
    assert abs(kept_before.count("説明です") - kept_after.count("説明です")) <= 1  # centred on the best sentence


texts_st = st.lists(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=3000),
    min_size=0, max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(texts_st, st.integers(min_value=400, max_value=30_000), st.text(max_size=40))
def test_packing_never_exceeds_the_budget_and_stays_valid_utf8_json(texts, budget, query):
    payload, kept = pack(_items(texts), build_payload, budget, query)
    raw = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert len(raw) <= budget
    assert json.loads(raw.decode("utf-8")) == payload  # strict decode: no split character
    # Results keep their rank order and their ids (best first); nothing is reordered or renamed.
    ranks = [int(r.source_id[1:]) for r in kept]
    assert ranks == sorted(ranks)
    originals = {r.source_id: r for r in _items(texts)}
    assert all(r.model_dump(exclude={"text"}) == originals[r.source_id].model_dump(exclude={"text"}) for r in kept)


@settings(max_examples=100, deadline=None)
@given(texts_st, st.integers(min_value=2000, max_value=30_000))
def test_packer_keeps_at_least_as_many_results_as_dropping_the_tail(texts, budget):
    items = _items(texts)
    _, mine = pack(items, build_payload, budget, "query")
    _, seed = drop_tail(items, build_payload, budget)
    assert len(mine) >= len(seed)


def test_results_with_empty_text_are_kept_not_counted_against_the_budget():
    items = _items([""] * 13 + ["x" * 3000] * 5)
    _, mine = pack(items, build_payload, 4000, "x")
    _, seed = drop_tail(items, build_payload, 4000)
    assert len(mine) >= len(seed) and [r.source_id for r in mine[:13]] == [f"S{i}" for i in range(1, 14)]


def test_a_cut_window_keeps_the_chunk_search_matched():
    # grep's man page as a window of its parent: the "--exclude-dir" rows share more words with the question than
    # the "-r, --recursive" row search matched, and a cut grown from them left the answer out.
    dense = [f"--exclude-{i}=GLOB\nディレクトリを再帰検索しているときに出会うファイル{i}をスキップします。"
             for i in range(12)]
    filler = [f"--option-{i}\nオプション{i}の説明です。" for i in range(30)]
    row = "-r, --recursive\n各ディレクトリの下にあるすべてのファイルを再帰的に読み込みます。"
    text = "\n".join([*dense, *filler, row, *filler[:5]]) + "\n"
    start = text.index(row)
    window = Passage(text=text, uri="file:///man/grep.txt", title="grep", section=f"lines 1-{text.count(chr(10))}",
                     focus=(start, start + len(row)), score=1.0)
    question = "grepでディレクトリを再帰的に検索するオプションは？"
    assert row not in cut_to_bytes(text, set(tokenize(question)), 1500)  # grown from the densest rows, as before
    _, kept = pack(assign([window]), build_payload, 2500, question)
    assert row in kept[0].text
    focus = kept[0].focus
    assert focus is not None and kept[0].text[focus[0] : focus[1]] == row  # where the row is in the cut text
    first, last = (int(n) for n in kept[0].section.removeprefix("lines ").split("-"))
    assert text.splitlines()[first - 1 : last] == kept[0].text.removeprefix("… ").removesuffix(" …").splitlines()
    # Cut again (a response still over its budget is trimmed once more): the focus moved with the text.
    _, again = pack(kept, build_payload, 1500, question)
    assert row in again[0].text and again[0].text[slice(*again[0].focus)] == row
