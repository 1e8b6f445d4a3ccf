"""Rules as data: each rule a named entry of a JSON file here, with its pattern, what it means and the examples it
must (and must not) match, which tests/test_answerer_rules.py checks for every entry."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

HERE = Path(__file__).parent


@dataclass(frozen=True)
class Rule:
    id: str
    pattern: re.Pattern[str]
    why: str
    category: str
    matches: tuple[str, ...]
    not_matches: tuple[str, ...]


@cache
def load(name: str) -> tuple[Rule, ...]:
    data = json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))
    return tuple(Rule(id=r["id"], pattern=re.compile(r["pattern"], re.I if "i" in r.get("flags", "") else 0),
                      why=r.get("why", ""), category=r.get("category", ""),
                      matches=tuple(r["examples"]["match"]), not_matches=tuple(r["examples"]["no_match"]))
                 for r in data["rules"])


def first_match(name: str, text: str) -> Rule | None:
    return next((r for r in load(name) if r.pattern.search(text)), None)
