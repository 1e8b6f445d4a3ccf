from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from citerag.documents.chunking import chunk_document, chunk_spans
from citerag.documents.model import LoadedDocument, Section
from citerag.documents.text import detect_language, split_sentences


def test_japanese_and_english_sentences_split_with_offsets():
    text = "電源を入れます。青く点灯しますか？はい！\nNext line. Version 3.5 is out. Done"
    spans = split_sentences(text)
    assert [s.text for s in spans] == [
        "電源を入れます。", "青く点灯しますか？", "はい！", "Next line.", "Version 3.5 is out.", "Done",
    ]
    assert all(text[s.start : s.end] == s.text for s in spans)


def test_japanese_set_with_full_width_commas_and_stops_splits_into_sentences():
    # TeX Live's Japanese guide, like much technical and academic Japanese, ends sentences with "．": a paragraph
    # was one sentence, and its first sentence could not be the answer on its own. "１．５" is a number.
    text = "TeX コミュニティは友好的です．しかしながら，サポートは非公式です．版は１．５です．\n1．はじめに"
    assert [s.text for s in split_sentences(text)] == [
        "TeX コミュニティは友好的です．", "しかしながら，サポートは非公式です．", "版は１．５です．", "1．はじめに"]


def test_a_man_pages_optional_argument_is_no_question():
    text = ".tables ?TABLE? List names of tables\n.explain ?on|off? Turn output mode on or off. What? Yes."
    assert [s.text for s in split_sentences(text)] == [
        ".tables ?TABLE? List names of tables", ".explain ?on|off? Turn output mode on or off.", "What?", "Yes."]


def test_language_detection():
    assert detect_language("フィルターを交換してください。") == "ja"
    assert detect_language("Replace the filter every 12 months.") == "en"
    assert detect_language("Kumo Pure 300 の保証期間は2年です。") == "ja"


def _doc(sections):
    return LoadedDocument(source_uri="file:///d.pdf", title="D", doc_id="d1", content_hash="h", kind="pdf",
                          sections=sections)


def test_chunks_carry_metadata_and_parent_is_the_page():
    doc = _doc([Section(text="一文目です。二文目です。", page=1), Section(text="Page two.", page=2)])
    chunks = chunk_document(doc, max_chars=100)
    assert [(c.page, c.parent_id) for c in chunks] == [(1, "d1#h#p1"), (2, "d1#h#p2")]
    c = chunks[0]
    assert (c.source_uri, c.title, c.doc_id, c.content_hash, c.lang) == ("file:///d.pdf", "D", "d1", "h", "ja")
    assert doc.sections[0].text[c.char_start : c.char_end] == c.text
    md = chunks[1].metadata()
    assert md["page"] == 2 and None not in md.values()


def test_size_budget_and_overlap():
    text = " ".join(f"Sentence number {i} is here." for i in range(40))
    spans = chunk_spans(text, max_chars=120, overlap_chars=40)
    assert all(e - s <= 120 for s, e in spans)
    # Consecutive chunks overlap (the next one starts before the previous one ends) and progress.
    for (s1, e1), (s2, _) in itertools.pairwise(spans):
        assert s1 < s2 < e1
    assert spans[-1][1] == len(text)


def test_long_sentence_without_punctuation_is_cut():
    text = "あ" * 1000
    spans = chunk_spans(text, max_chars=300, overlap_chars=0)
    assert all(e - s <= 300 for s, e in spans)
    assert "".join(text[s:e] for s, e in spans) == text


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("abc あい。.!？ \n")), max_size=800),
    st.integers(min_value=20, max_value=300),
    st.integers(min_value=0, max_value=100),
)
def test_chunks_respect_budget_and_cover_every_sentence(text, max_chars, overlap):
    spans = chunk_spans(text, max_chars=max_chars, overlap_chars=overlap)
    assert all(0 < e - s <= max_chars for s, e in spans)
    covered = set()
    for s, e in spans:
        covered.update(range(s, e))
    for sent in split_sentences(text):
        assert all(i in covered for i in range(sent.start, sent.end) if not text[i].isspace())
