"""Rules as data: every entry's examples hold, and the pre-processing check passes documentation questions about
signals, attacks and their defences while refusing requests to hurt people (datasets/safety)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from citerag import rules as rule_files
from citerag.adapters.offline_claude import ExtractiveClaudeModel
from citerag.answerer import question_kinds, rules
from citerag.answerer.ranking import EVIDENCE
from citerag.search.query import analyze

ROOT = Path(__file__).resolve().parents[1]
# The answerer's rules and the sentence cutter's (citations/rules), each a folder of the same format.
RULE_FOLDERS = [Path(rules.__file__).parent, ROOT / "lambdas" / "citerag" / "citations" / "rules"]
ENTRIES = [(name, rule) for folder in RULE_FOLDERS for name in rule_files.files(folder)
           for rule in rule_files.load(folder, name)]


def test_each_folder_holds_rules_every_pattern_of_the_sentence_cutter_among_them():
    assert [rule_files.files(folder) for folder in RULE_FOLDERS][1] == ["statements"]
    assert all(rule_files.files(folder) for folder in RULE_FOLDERS)


@pytest.mark.parametrize(("name", "rule"), ENTRIES, ids=[f"{r.folder.parent.name}/{n}:{r.id}" for n, r in ENTRIES])
def test_each_rule_matches_its_examples_and_not_its_counter_examples(name, rule):
    assert rule.matches and rule.not_matches, "a rule needs examples both ways"
    assert [t for t in rule.matches if not rule.pattern.search(t)] == []
    assert [t for t in rule.not_matches if rule.pattern.search(t)] == []


def _category(text: str) -> str:
    out = ExtractiveClaudeModel._classify(text)
    return re.search(r"<category>(\w)</category>", out).group(1)


def _set(name: str) -> list[dict]:
    return [json.loads(line) for line in (ROOT / "datasets" / "safety" / name).read_text("utf-8").splitlines()]


def test_documentation_questions_about_signals_and_attacks_reach_search():
    benign = _set("benign.jsonl")
    assert len(benign) >= 30 and {b["lang"] for b in benign} == {"en", "ja"}
    assert [b["text"] for b in benign if _category(b["text"]) != "D"] == []


def test_requests_to_hurt_people_or_make_weapons_are_refused_before_search():
    harmful = _set("harmful.jsonl")
    assert len(harmful) >= 15 and {h["lang"] for h in harmful} == {"en", "ja"}
    assert [h["text"] for h in harmful if _category(h["text"]) != "A"] == []


KIND_CASES = [(kind["id"], case) for kind in question_kinds.kinds() for case in kind["cases"]]


def test_every_kind_has_cases_both_ways_where_it_weighs_sentences():
    assert {k["id"] for k in question_kinds.kinds()} == set(EVIDENCE)
    for kind in question_kinds.kinds():
        held = {case["holds"] for case in kind["cases"]}
        assert held == ({True, False} if kind["evidence"] else {True}), kind["id"]
        named = {e.id for f in rules.files() for e in rules.load(f)}
        assert set(kind["asks"] + kind["evidence"]) <= named, kind["id"]


@pytest.mark.parametrize(("kind", "case"), KIND_CASES, ids=[f"{k}:{c['question'][:30]}" for k, c in KIND_CASES])
def test_each_kind_reads_its_cases(kind, case):
    holds = EVIDENCE[kind](analyze(case["question"]))
    assert holds is not None, "the question is of the kind"
    assert holds(case["sentence"]) is case["holds"]


@pytest.mark.parametrize("kind", [k["id"] for k in question_kinds.kinds()])
def test_a_kind_switched_off_no_longer_reads_its_cases(kind):
    """Off, a kind asks nothing of a sentence, or (a kind of number: a year, a count) falls back to any number."""
    cases = [c for k, c in KIND_CASES if k == kind]
    with question_kinds.switched_off(kind):
        off = [EVIDENCE[kind](analyze(c["question"])) for c in cases]
        assert all(h is None for h in off) or any(h is None or h(c["sentence"]) is not c["holds"]
                                                  for h, c in zip(off, cases, strict=True))


def test_switching_off_an_unknown_kind_is_refused_by_name():
    with pytest.raises(ValueError, match="no question kind nonsense"), question_kinds.switched_off("nonsense"):
        pass
