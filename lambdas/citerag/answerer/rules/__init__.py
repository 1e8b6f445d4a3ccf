"""The answerer's rules as data (`citerag.rules`), each a named entry of a JSON file here with its pattern, why it
exists and its examples (docs/answers.md "Rules as data"); word lists, tuned numbers and the question kinds'
registry beside them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from citerag import rules as _rules
from citerag.rules import Rule

__all__ = ["Rule", "compiled", "files", "first_match", "lexicon", "load", "number", "registry"]

HERE = Path(__file__).parent


def files() -> list[str]:
    return _rules.files(HERE)


def load(name: str) -> tuple[Rule, ...]:
    return _rules.load(HERE, name)


def compiled(file: str, rule_id: str, **parts: str) -> re.Pattern[str]:
    """The named rule's pattern, its template parts filled (the caller escapes a part that is text)."""
    return _rules.compiled(HERE, file, rule_id, **parts)


def first_match(name: str, text: str) -> Rule | None:
    return _rules.first_match(HERE, name, text)


def lexicon(name: str) -> Any:
    return _rules.data(HERE, "lexicons")[name]["value"]


def registry(name: str) -> list[dict[str, Any]]:
    """The entries of a registry file (rules/kinds.json: the question kinds)."""
    return _rules.data(HERE, name)["kinds"]


def number(name: str) -> Any:
    """A tuned number of rules/numbers.json (which says where it was measured)."""
    return _rules.data(HERE, "numbers")["numbers"][name]["value"]
