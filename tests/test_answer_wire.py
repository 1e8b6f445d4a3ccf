"""The Answer's wire form (the AgentCore runtime's final event, the MCP `ask` result, saved traces) read back from
anything a runtime or a client might send: the places to look when nothing answered."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from citerag.citations.answer import RELATED_MAX, Answer, where_to_look
from citerag.citations.answer_wire import from_wire, to_wire
from citerag.search.passage import Passage


def _passage(uri: str, page: int | None = None, section: str | None = None) -> Passage:
    return Passage(text="a sentence no one cited", uri=uri, title=uri.rsplit("/", 1)[-1], page=page,
                   section=section, source_id="S1-abcdef", excerpt="")


def test_places_to_look_survive_the_wire_without_the_passages_text():
    found = [_passage("file:///m.pdf", page=4), _passage("file:///m.pdf", page=4), _passage("file:///faq.md",
             section="FAQ > Filters"), _passage("file:///m.pdf", page=2), _passage("file:///n.txt")]
    answer = Answer(text="The documents do not answer this question.", answered=False, related=where_to_look(found))
    wire = to_wire(answer)
    # One entry per place, at most RELATED_MAX, best first; where it is, not what it says.
    assert wire["related"] == [
        {"uri": "file:///m.pdf", "title": "m.pdf", "page": 4, "section": None},
        {"uri": "file:///faq.md", "title": "faq.md", "page": None, "section": "FAQ > Filters"},
        {"uri": "file:///m.pdf", "title": "m.pdf", "page": 2, "section": None},
    ]
    back = from_wire(wire)
    assert not back.answered and [(p.uri, p.page, p.section) for p in back.related] == [
        ("file:///m.pdf", 4, None), ("file:///faq.md", None, "FAQ > Filters"), ("file:///m.pdf", 2, None)]
    assert all(p.text == "" and p.excerpt == "" for p in back.related)


def test_places_sent_with_an_answer_or_malformed_are_dropped():
    odd = [None, 5, "file:///x.pdf", {"uri": 3}, {"title": ""}, {"uri": "file:///a.pdf", "page": True, "section": 7},
           {"title": "b"}, {"uri": "file:///c.pdf"}]
    back = from_wire({"text": "x", "answered": False, "related": odd})
    # Only the first RELATED_MAX entries are read; of those, the ones that name a file or a title are kept.
    assert [(p.uri, p.title, p.page, p.section) for p in back.related] == []
    back = from_wire({"text": "x", "answered": False, "related": odd[5:]})
    assert [(p.uri, p.title, p.page, p.section) for p in back.related] == [
        ("file:///a.pdf", "", None, None), ("", "b", None, None), ("file:///c.pdf", "", None, None)]
    cited = {"text": "Yes.", "answered": True, "related": odd[5:],
             "citations": [{"span": {"start": 0, "end": 4}, "text": "Yes.",
                            "sources": [{"source_id": "S1-abcdef", "uri": "file:///a.pdf", "page": 1}]}]}
    assert from_wire(cited).answered and from_wire(cited).related == []
    # Marked unanswered yet citing: sources and places would be numbered alike, so no places.
    assert from_wire({**cited, "answered": False}).related == []


def test_citations_of_the_wrong_shape_are_dropped_not_raised():
    src = {"source_id": "S1-abcdef", "uri": "file:///a.pdf", "page": 1}
    for bad in ([{"span": [0, 4], "text": "Yes.", "sources": [src]}], [{"span": {"start": 0, "end": 4}, "sources": 5}],
                5, "citations", [{"span": {"start": 0, "end": 99}, "sources": [src]}]):
        answer = from_wire({"text": "Yes.", "answered": True, "citations": bad})
        assert not answer.answered and answer.citations == []


@given(st.dictionaries(st.sampled_from(["text", "answered", "citations", "related"]), st.deferred(lambda: _json),
                       max_size=4))
def test_any_wire_value_reads_back_without_raising(data):
    answer = from_wire(data)
    assert not (answer.related and answer.citations) and len(answer.related) <= RELATED_MAX


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                         st.sampled_from(["uri", "title", "page", "section", "x"]), inner, max_size=5),
                     max_leaves=20)


@given(st.lists(_json, max_size=8) | _json)
def test_any_related_value_reads_back_as_at_most_a_few_places(related):
    back = from_wire({"text": "not found", "answered": False, "related": related})
    assert len(back.related) <= RELATED_MAX
    assert all(isinstance(p.uri, str) and isinstance(p.title, str) and (p.uri or p.title) for p in back.related)
    assert all(p.page is None or type(p.page) is int for p in back.related)
