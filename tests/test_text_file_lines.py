"""A text file is cited by the lines of the cited sentence, on every path: the passage search sends (whole file,
widened chunk, or cut to fit the response budget) names the lines it holds, and the source under an answer names
the lines of the sentences cited to it, masked values included."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from citerag.answerer.extractive import Picked
from citerag.citations.answer import compose
from citerag.citations.excerpts import as_source
from citerag.cli import app
from citerag.documents.chunking import chunk_document
from citerag.documents.loaders import load_path
from citerag.search.packing import pack
from citerag.search.passage import Passage
from citerag.traces.join import answer_from_events

runner = CliRunner()
NOTES = "Intro.\nbob@example.com\nanswers calls at night. Write to\ncarol@example.org\nThe end."


def passage(text: str = NOTES, section: str = "lines 3-7", uri: str = "file:///d/notes.txt") -> Passage:
    return Passage(source_id="S1", text=text, section=section, uri=uri, title="notes")


@pytest.mark.parametrize(("shown", "lines"), [
    ("Intro.", "line 3"),
    ("[EMAIL] answers calls at night.", "lines 4-5"),  # the masked value opens the sentence, a line above
    ("Write to [EMAIL]", "lines 5-6"),  # and closes it, a line below
    ("answers calls\u3000at night.", "line 5"),  # whitespace the answer shows differently
])
def test_the_source_names_the_lines_of_the_sentence_shown(shown, lines):
    assert as_source(passage(), shown).section == lines
    assert as_source(passage(NOTES.replace("\n", "\r\n")), shown).section == lines


def test_a_sentence_the_passage_does_not_hold_keeps_the_passages_lines():
    src = as_source(passage(), "A paraphrase of the notes.")
    assert src.section == "lines 3-7" and src.excerpt.startswith("Intro.")


def test_a_sentence_in_the_other_language_is_shown_over_the_statement_it_translates():
    # A Japanese answer from an English file: the excerpt is the English sentence that states it, on its line, not
    # the passage's first 300 characters, so a reader checks the claim against what the document says.
    manual = "Error codes.\nError E1 means the filter is full.\nError E2 means the air quality sensor is dirty.\n"
    answer = "エラーE2は、センサーが汚れていることを意味します。"
    src = as_source(passage(manual, "lines 1-3", "file:///d/manual.txt"), answer)
    assert src.excerpt == "Error E2 means the air quality sensor is dirty." and src.section == "line 3"
    # Personal data the answer masked stays masked in the statement shown.
    notes = "Intro.\nError E2: call bob@example.com at night.\n"
    src = as_source(passage(notes, "lines 1-2"), "エラーE2のときは[EMAIL]に電話してください。",
                    mask=lambda t: t.replace("bob@example.com", "[EMAIL]"))
    assert src.excerpt == "Error E2: call [EMAIL] at night."
    # Nothing it names is in the passage (a paraphrase): the passage's start, as before.
    assert as_source(passage(manual, "lines 1-3"), "センサーを掃除してください。").excerpt.startswith("Error codes.")


def test_a_markdown_heading_that_reads_like_a_line_range_is_a_heading():
    src = as_source(passage(section="line 5", uri="file:///d/notes.md"), "The end.")
    assert src.section == "line 5"


def test_two_sentences_cited_to_one_source_give_it_the_lines_of_both():
    p = passage()
    answer = compose([Picked("S1", "Intro.", 1.0), Picked("S1", "The end.", 1.0)], {"S1": p})
    # The list of sources names the source once, with the lines and the sentences of both; each citation opens at
    # its own sentence.
    assert answer.sources[0].section == "lines 3-7" and answer.sources[0].excerpt == "Intro. … The end."
    assert [(s.section, s.excerpt) for c in answer.citations for s in c.sources] == [
        ("line 3", "Intro."), ("line 7", "The end.")]
    first = as_source(p, "Intro.")
    again = as_source(p, "Write to [EMAIL]", earlier=first)
    assert first.section == "lines 3-6" and (again.section, again.excerpt) == ("lines 5-6", "Write to [EMAIL]")
    # Read back from the wire (the AgentCore runtime's answer), the list still spans both.
    from citerag.citations.answer_wire import from_wire, to_wire

    back = from_wire(to_wire(answer))
    assert [s.section for s in back.sources] == ["lines 3-7"]
    assert [c.sources[0].section for c in back.citations] == ["line 3", "line 7"]


def test_the_classic_path_names_the_lines_of_the_cited_sentence():
    # InvokeAgent's trace: the search result the model read, then the parsed answer that cites it.
    result = {"source_id": "S1-aaaaaa", "text": NOTES, "uri": "file:///d/notes.txt", "title": "notes",
              "section": "lines 3-7", "score": 1.0}
    raw = ("<answer><answer_part><text>Write to [EMAIL]</text><sources><source>S1-aaaaaa</source></sources>"
           "</answer_part><answer_part><text>The end.</text><sources><source>S1-aaaaaa</source></sources>"
           "</answer_part></answer>")
    events = [
        {"trace": {"trace": {"orchestrationTrace": {"observation": {"actionGroupInvocationOutput": {
            "text": json.dumps({"results": [result]})}}}}}},
        {"trace": {"trace": {"orchestrationTrace": {"modelInvocationOutput": {"rawResponse": {"content": raw}}}}}},
        {"chunk": {"bytes": b"Write to [EMAIL] The end."}},
    ]
    answer = answer_from_events(events)
    assert len(answer.citations) == 2 and [s.section for s in answer.sources] == ["lines 5-7"]
    # Each citation quotes and opens at its own sentence, not the first one cited from the same passage.
    assert [(c.sources[0].excerpt, c.sources[0].section) for c in answer.citations] == [
        ("Write to [EMAIL]", "lines 5-6"), ("The end.", "line 7")]


def _rooms(tmp_path, rooms: int, target: int):
    lines = [f"Room {i} is painted in shade {i} and has {i % 5 + 1} windows." for i in range(1, rooms + 1)]
    lines[target - 1] = "The night guard answers on extension 4411."
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "rooms.txt").write_text("\n\n" + "\n".join(lines) + "\n", encoding="utf-8")  # two blank lines first
    return folder, lines, target + 2


def test_leading_blank_lines_count(tmp_path):
    folder, _, line = _rooms(tmp_path, 10, 4)
    chunks = chunk_document(load_path(folder / "rooms.txt"), max_chars=60, overlap_chars=0)
    assert next(c.section for c in chunks if "night guard" in c.text) == f"line {line}"


def test_a_passage_cut_to_fit_the_response_names_the_lines_it_still_holds():
    text = "\n".join(f"Sentence number {i} talks about topic {i}." for i in range(1, 61))
    p = passage(text, section="lines 11-70")
    _, kept = pack([p], lambda ps: {"results": [x.wire() for x in ps]}, 700, "topic 40")
    cut = kept[0]
    assert cut.text != text and "topic 40." in cut.text
    first, last = (int(x) for x in cut.section.removeprefix("lines ").split("-"))
    lines = text.split("\n")
    body = cut.text.strip("… ")
    assert body.startswith(lines[first - 11]) and body.endswith(lines[last - 11])
    assert as_source(cut, "Sentence number 40 talks about topic 40.").section == "line 50"


@pytest.mark.parametrize(("rooms", "budget"), [
    (20, None),  # the whole file is sent (under 3,000 characters)
    (150, None),  # a window of it
    (150, "2000"),  # a window cut to fit the response budget
])
def test_a_text_file_is_cited_by_the_line_of_the_cited_sentence(tmp_path, monkeypatch, rooms, budget):
    from citerag.cli.common import components

    if budget:
        monkeypatch.setenv("CITERAG_RESPONSE_BUDGET_BYTES", budget)
    folder, lines, line = _rooms(tmp_path, rooms, rooms * 2 // 3)
    index = tmp_path / "rooms.sqlite"
    assert runner.invoke(app, ["ingest", str(folder), "--index", str(index)]).exit_code == 0
    r = runner.invoke(app, ["ask", "Which extension reaches the night guard?", "--index", str(index), "--json"])
    data = json.loads(r.stdout)
    assert data["answered"] and data["citations"][0]["section"] == f"line {line}"  # not every line it was read in

    # What the search tool sends is the lines its section names.
    _, body = components(index).search_tool().run({"query": "night guard extension"}, {}, lambda r, b: b)
    hit = json.loads(body)["results"][0]
    first, _, last = hit["section"].removeprefix("lines ").removeprefix("line ").partition("-")
    file_lines = ["", "", *lines]
    assert " ".join(hit["text"].strip("… ").split()) in " ".join(file_lines[int(first) - 1 : int(last or first)])
    assert int(first) <= line <= int(last or first)


def test_lines_of_a_text_file_in_s3_whose_key_holds_a_hash_or_question_mark():
    for key in ("notes#2.txt", "faq?.txt"):
        assert as_source(passage(uri=f"s3://docs/{key}"), "The end.").section == "line 7"


def test_a_source_cited_for_a_paraphrase_too_names_all_its_lines_whatever_the_order():
    p = passage()
    for order in (["Intro.", "A paraphrase of the notes."], ["A paraphrase of the notes.", "Intro."]):
        src = as_source(p, order[0])
        as_source(p, order[1], earlier=src)
        assert src.section == "lines 3-7"


def test_a_masked_value_opening_the_sentence_is_looked_for_in_its_paragraph_only():
    p = passage("Meeting notes.\n\ncalled back later.", section="lines 1-3")
    assert as_source(p, "[NAME] called back later.").section == "line 3"


def test_a_sentence_truncated_to_fit_names_only_the_lines_it_keeps():
    text = "Short one.\n" + "A very long sentence " * 40 + "ends here.\nLast line."
    p = passage(text, section="lines 1-3")
    _, kept = pack([p], lambda ps: {"results": [x.wire() for x in ps]}, 300, "very long sentence")
    assert kept[0].section == "line 2" and kept[0].text.endswith("…")


def test_numbered_lines_count_as_the_loader_does_and_show_text_as_text(tmp_path):
    # No browser needed: the page a text-file citation opens, against the lines the loader cites.
    from citerag.cli.serve import _number, numbered_lines

    data = "\ufeff\n\nIntro line.\r\nSecond <b>line</b>.\rThird line.\n".encode()
    (tmp_path / "t.txt").write_bytes(data)
    cited = {c.text: c.section for c in chunk_document(load_path(tmp_path / "t.txt"), max_chars=20, overlap_chars=0)}
    page = numbered_lines(data, 4, 4)
    assert cited["Second <b>line</b>."] == "line 4"
    assert "<span id='L4' class='cited'><i>4</i>Second &lt;b&gt;line&lt;/b&gt;.</span>" in page
    assert "<span id='L3'><i>3</i>Intro line.</span>" in page and "<span id='L5'><i>5</i>Third line.</span>" in page
    assert [_number(v) for v in ("12", "\u00b2", "9" * 5000, "-3", "")] == [12, 0, 0, 0, 0]


def test_a_shift_jis_file_opens_at_its_cited_line_in_its_own_encoding(tmp_path):
    from citerag.cli.serve import numbered_lines

    data = "一行目です。\n交換時期は1年です。\n三行目です。\n".encode("cp932")
    (tmp_path / "t.txt").write_bytes(data)
    cited = {c.text: c.section for c in chunk_document(load_path(tmp_path / "t.txt"), max_chars=12, overlap_chars=0)}
    assert cited["交換時期は1年です。"] == "line 2"
    assert "<span id='L2' class='cited'><i>2</i>交換時期は1年です。</span>" in numbered_lines(data, 2, 2)


def test_a_quote_is_cut_between_sentences_never_inside_one():
    from citerag.citations.excerpts import EXCERPT_CHARS, cut

    long_first = "The function returns the DER encoding of the value for an ASN.1 structure " + "x" * 300 + "."
    assert cut(long_first) == long_first  # shown whole, not "…for an ASN."
    two = "First sentence ends here. " * 20
    kept = cut(two)
    assert len(kept) <= EXCERPT_CHARS and kept.endswith("here.")


def test_a_source_cited_for_two_sentences_quotes_both():
    from citerag.citations.answer import compose
    from citerag.citations.excerpts import QUOTE_JOINER

    passage = Passage(text="Error E5 means the fan motor is blocked. Clean the fan. Then restart the unit.",
                      uri="file:///m.txt", title="m", source_id="S1")
    answer = compose([Picked("S1", "Error E5 means the fan motor is blocked.", 1.0),
                      Picked("S1", "Then restart the unit.", 0.9)], {"S1": passage})
    assert answer.sources[0].excerpt.split(QUOTE_JOINER) == ["Error E5 means the fan motor is blocked.",
                                                             "Then restart the unit."]


def test_a_citation_of_two_long_sentences_quotes_both_under_its_source():
    from citerag.citations.answer import compose

    first = ("Each application that wishes to contribute to the MIME database will install a single XML file, named "
             "after the application, into one of the three packages directories (depending on where the user "
             "requested the application be installed).")
    second = ("After installing, uninstalling or modifying this file, the application MUST run the "
              "update-mime-database command, which is provided by the shared database.")
    passage = Passage(text=f"2.1. Adding. {first} {second} Further text.", uri="file:///spec.txt", title="spec",
                      source_id="S1")
    answer = compose([Picked("S1", f"{first} {second}", 1.0)], {"S1": passage})
    assert len(first) + len(second) > 300
    assert "update-mime-database" in answer.sources[0].excerpt
    assert answer.sources[0].excerpt == f"{first} {second}"
