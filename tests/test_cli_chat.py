"""`citerag chat` and `ask --open` as a user drives them: one session for several questions, citations after each
answer, and the cited page opened at `#page=N` (the opener is replaced, so nothing is launched)."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from citerag.cli import app, opener

from conftest import SAMPLES

runner = CliRunner()


@pytest.fixture
def opened(monkeypatch):
    seen: list[str] = []
    monkeypatch.setattr(opener, "open_uri", seen.append)
    return seen


def run(*args, input=None):
    r = runner.invoke(app, list(args), input=input, env={"COLUMNS": "200"})
    assert "Traceback" not in r.output
    return r


def test_chat_answers_follow_ups_in_one_session_and_opens_the_cited_page(opened):
    r = run("chat", input="What does error E2 mean?\n/open 1\nHow long is the warranty?\n/open 9\n/quit\n")
    assert r.exit_code == 0, r.output
    assert r.stdout.count("Sources") == 2  # citations after each answer
    assert "sensor" in r.stdout and "page 5" in r.stdout
    manual = (SAMPLES / "kumo-pure-300-manual-en.pdf").resolve().as_uri()
    assert opened == [f"{manual}#page=5"]
    assert "no source [9]: the answer has only source [1]" in r.output  # a message, and the session goes on


def test_chat_json_lines_time_each_answer(opened):
    r = run("chat", "--json", input="What does error E2 mean?\nWhat is the capital of France?\n/open 1\n")
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert lines[0]["answered"] is True and lines[0]["citations"][0]["page"] == 5 and lines[0]["seconds"] > 0
    assert lines[1]["answered"] is False
    assert lines[2] == {"error": "the answer has no sources to open"}
    assert opened == []


def test_ask_open_opens_the_cited_pdf_at_its_page(opened):
    r = run("ask", "What does error E2 mean?", "--open", "1")
    assert r.exit_code == 0, r.output
    assert opened == [(SAMPLES / "kumo-pure-300-manual-en.pdf").resolve().as_uri() + "#page=5"]


def test_open_opens_a_place_to_look_when_nothing_answers(opened):
    # A near miss lists where search found passages; --open N and /open N open place N as printed.
    r = run("ask", "Does the Kumo Pure 300 work with Alexa?", "--open", "1")
    assert r.exit_code == 0 and "Where to look" in r.stdout, r.output
    faq = (SAMPLES / "faq-en.md").resolve().as_uri()
    assert opened == [faq]
    r = run("chat", input="Does the Kumo Pure 300 work with Alexa?\n/open 1\n/open 9\n/quit\n")
    assert r.exit_code == 0 and opened == [faq, faq]
    assert "no place [9]: choose 1 to" in r.output


def test_page_uri_only_adds_a_page_to_pdfs():
    assert opener.page_uri("file:///d/a.pdf", 3) == "file:///d/a.pdf#page=3"
    assert opener.page_uri("file:///d/a.md", 3) == "file:///d/a.md"
    assert opener.page_uri("file:///d/a.pdf", None) == "file:///d/a.pdf"


def test_numbering_has_no_gaps_when_the_answer_carries_source_ids():
    r = run("ask", "How long is the warranty? What does error E2 mean?", "--agent", "none")
    assert r.exit_code == 0
    text = r.stdout
    assert "[S" not in text
    n = sum(1 for line in text.splitlines() if line.lstrip().startswith("["))
    assert all(f"[{i}]" in text for i in range(1, n + 1))


@pytest.mark.parametrize(("count", "says"), [(1, "the answer has only source [1]"), (3, "choose 1 to 3")])
def test_a_source_number_the_answer_lacks_says_which_numbers_it_has(count, says):
    from citerag.cli.opener import open_source
    from citerag.errors import CiteragError
    from citerag.search.passage import Passage

    with pytest.raises(CiteragError, match=re.escape(f"no source [9]: {says}")):
        open_source([Passage(text="t", uri="file:///x.pdf")] * count, 9)


def test_a_follow_up_is_asked_with_the_subject_of_the_question_before(opened):
    r = run("chat", input="What does error E2 mean?\nHow do I clean it?\n/quit\n")
    assert r.exit_code == 0, r.output
    assert "(asked as: How do I clean it (error E2)?)" in r.output
    assert "dry cotton swab" in r.stdout and r.stdout.count("page 5") >= 2


def test_a_japanese_follow_up_puts_the_subject_in_place_of_the_demonstrative(opened):
    r = run("chat", input="エラーE2はどういう意味ですか？\nそれはどうやって掃除しますか？\n")
    assert r.exit_code == 0, r.output
    assert "(asked as: エラーE2はどうやって掃除しますか？)" in r.output and "綿棒" in r.stdout


def test_chat_json_says_what_a_follow_up_was_asked_as_and_no_rewrite_asks_it_as_typed(opened):
    turns = "What does error E2 mean?\nHow do I clean it?\nHow long is the warranty?\n"
    lines = [json.loads(x) for x in run("chat", "--json", input=turns).stdout.splitlines()]
    assert "asked_as" not in lines[0] and "asked_as" not in lines[2]  # questions with their own subject
    assert lines[1]["asked_as"] == "How do I clean it (error E2)?" and "cotton swab" in lines[1]["answer"]
    plain = [json.loads(x) for x in run("chat", "--json", "--no-rewrite", input=turns).stdout.splitlines()]
    assert not any("asked_as" in line for line in plain)


def test_ctrl_c_during_a_chat_answer_says_interrupted_not_what_an_ingest_keeps(monkeypatch):
    # Every command said ingest's line on Ctrl-C: a chat stopped mid-answer ended with "interrupted; the index keeps
    # every document that finished", as if it had been writing the index.
    from citerag import answerers

    def pressed_ctrl_c(self, question, *, flt=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(answerers._LocalAgent, "ask", pressed_ctrl_c)
    r = run("chat", input="What does error E2 mean?\n")
    assert r.exit_code == 130
    assert "Error: interrupted" in r.output and "the index keeps" not in r.output
