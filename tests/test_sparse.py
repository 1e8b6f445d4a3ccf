from __future__ import annotations

import math
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from citerag.search.sparse import (
    MAX_NNZ,
    BM25Params,
    CorpusStats,
    encode_document,
    encode_query,
    term_counts,
    term_id,
    tokenize,
)


def test_tokens_are_cjk_bigrams_single_kanji_and_stemmed_latin_words():
    assert tokenize("空気清浄機") == ["空気", "気清", "清浄", "浄機", "空", "気", "清", "浄", "機"]
    assert tokenize("ボタン") == ["ボタ", "タン"]  # kana only in bigrams
    assert tokenize("Filters are REPLACED") == ["filter", "replac"]
    # NFKC folds full-width letters and digits, half-width katakana.
    assert tokenize("ＨＥＰＡ３００") == tokenize("hepa300")
    assert tokenize("ｶﾀｶﾅ") == tokenize("カタカナ")


def test_term_ids_are_stable_uint32():
    tid = term_id("空気")
    assert 0 <= tid < 2**32
    assert tid == term_id("空気")


def test_dot_product_equals_bm25_score():
    docs = ["the filter lasts twelve months", "replace the filter", "sleep mode is quiet and quiet"]
    counts = [term_counts(d) for d in docs]
    stats = CorpusStats()
    for c in counts:
        stats.add(c)
    p = BM25Params()
    q = encode_query("quiet filter", stats)
    for c in counts:
        d = encode_document(c, stats, p)
        dot = sum(qv * d.values[d.indices.index(qi)] for qi, qv in zip(q.indices, q.values, strict=True)
                  if qi in d.indices)
        dl = sum(c.values())
        ref = 0.0
        for tok in ("quiet", "filter"):
            t = term_id(tokenize(tok)[0])
            tf = c.get(t, 0)
            if tf:
                idf = math.log(1 + (stats.n_docs - stats.df[t] + 0.5) / (stats.df[t] + 0.5))
                ref += idf * tf * (p.k1 + 1) / (tf + p.k1 * (1 - p.b + p.b * dl / stats.avgdl))
        assert math.isclose(dot, ref, rel_tol=1e-6)


def test_stats_remove_undoes_add():
    stats = CorpusStats()
    a, b = term_counts("alpha beta"), term_counts("beta gamma")
    stats.add(a)
    stats.add(b)
    stats.remove(list(b), sum(b.values()))
    assert stats.n_docs == 1 and stats.df == {t: 1 for t in a}


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=3000))
def test_sparse_vectors_fit_pinecone_limits(words):
    counts = Counter(term_id(w) for w in words)
    vec = encode_document(counts, CorpusStats())
    assert len(vec.indices) <= MAX_NNZ
    assert len(vec.indices) == len(set(vec.indices)) == len(vec.values)
    assert all(0 <= i < 2**32 for i in vec.indices)
    assert all(v > 0 for v in vec.values)
