"""Rules as data: each rule a named entry of a JSON file here with its pattern, why it exists and its examples
(docs/answers.md "Rules as data"); word lists, tuned numbers and the question kinds' registry beside them."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
_FLAGS = {"i": re.I, "m": re.M, "a": re.A}
_PART = re.compile(r"⟨(@?)([\w]+)⟩")


@dataclass(frozen=True)
class Rule:
    file: str
    id: str
    source: str  # the pattern as written, parts unfilled
    flags: int
    why: str
    category: str
    fill: tuple[tuple[str, str], ...]  # the parts its examples are checked with
    matches: tuple[str, ...]
    not_matches: tuple[str, ...]

    @property
    def pattern(self) -> re.Pattern[str]:
        return compiled(self.file, self.id, **dict(self.fill))


@cache
def _data(name: str) -> dict[str, Any]:
    return json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))


def files() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.json") if "rules" in _data(p.stem))


@cache
def load(name: str) -> tuple[Rule, ...]:
    return tuple(Rule(file=name, id=r["id"], source=r["pattern"], flags=sum(_FLAGS[f] for f in r.get("flags", "")),
                      why=r.get("why", ""), category=r.get("category", ""),
                      fill=tuple(sorted(r.get("fill", {}).items())),
                      matches=tuple(r["examples"]["match"]), not_matches=tuple(r["examples"]["no_match"]))
                 for r in _data(name)["rules"])


@cache
def _by_id(name: str) -> dict[str, Rule]:
    return {r.id: r for r in load(name)}


def _expanded(name: str, rule_id: str, parts: tuple[tuple[str, str], ...]) -> str:
    given = dict(parts)
    return _PART.sub(lambda m: _expanded(name, m.group(2), parts) if m.group(1) else given[m.group(2)],
                     _by_id(name)[rule_id].source)


@cache
def _compiled(name: str, rule_id: str, parts: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    return re.compile(_expanded(name, rule_id, parts), _by_id(name)[rule_id].flags)


def compiled(file: str, rule_id: str, **parts: str) -> re.Pattern[str]:
    """The named rule's pattern, its template parts filled (the caller escapes a part that is text)."""
    return _compiled(file, rule_id, tuple(sorted(parts.items())))


def lexicon(name: str) -> Any:
    return _data("lexicons")[name]["value"]


def first_match(name: str, text: str) -> Rule | None:
    return next((r for r in load(name) if r.pattern.search(text)), None)


def registry(name: str) -> list[dict[str, Any]]:
    """The entries of a registry file (rules/kinds.json: the question kinds)."""
    return _data(name)["kinds"]


def number(name: str) -> Any:
    """A tuned number of rules/numbers.json (which says where it was measured)."""
    return _data("numbers")["numbers"][name]["value"]
