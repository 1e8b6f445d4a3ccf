"""Rules as data: every entry's examples hold, and the pre-processing check passes documentation questions about
signals, attacks and their defences while refusing requests to hurt people (datasets/safety)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from citerag.answerer import rules
from citerag.answerer.offline_claude import ExtractiveClaudeModel

ROOT = Path(__file__).resolve().parents[1]
RULE_FILES = sorted(p.stem for p in (ROOT / "lambdas" / "citerag" / "answerer" / "rules").glob("*.json"))
ENTRIES = [(name, rule) for name in RULE_FILES for rule in rules.load(name)]


@pytest.mark.parametrize(("name", "rule"), ENTRIES, ids=[f"{n}:{r.id}" for n, r in ENTRIES])
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
