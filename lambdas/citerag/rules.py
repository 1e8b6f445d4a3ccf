"""Rules as data: each text pattern a named entry of a JSON file in a folder of such files, with its flags, why it
exists and the examples it must and must not match (docs/answers.md "Rules as data"). The answerer's rules and the
sentence cutter's each keep a folder; this reads any of them."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

_FLAGS = {"i": re.I, "m": re.M, "a": re.A, "s": re.S}
_PART = re.compile(r"⟨(@?)([\w]+)⟩")


@dataclass(frozen=True)
class Rule:
    folder: Path
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
        return compiled(self.folder, self.file, self.id, **dict(self.fill))


@cache
def data(folder: Path, name: str) -> dict[str, Any]:
    """The JSON file `name` of the folder, read once."""
    return json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))


def files(folder: Path) -> list[str]:
    """The folder's files of rules (not its word lists, numbers or registries)."""
    return sorted(p.stem for p in folder.glob("*.json") if "rules" in data(folder, p.stem))


@cache
def load(folder: Path, name: str) -> tuple[Rule, ...]:
    return tuple(Rule(folder=folder, file=name, id=r["id"], source=r["pattern"],
                      flags=sum(_FLAGS[f] for f in r.get("flags", "")), why=r.get("why", ""),
                      category=r.get("category", ""), fill=tuple(sorted(r.get("fill", {}).items())),
                      matches=tuple(r["examples"]["match"]), not_matches=tuple(r["examples"]["no_match"]))
                 for r in data(folder, name)["rules"])


@cache
def _by_id(folder: Path, name: str) -> dict[str, Rule]:
    return {r.id: r for r in load(folder, name)}


def _expanded(folder: Path, name: str, rule_id: str, parts: tuple[tuple[str, str], ...]) -> str:
    """`⟨@id⟩`: another rule of the same file, itself expanded; `⟨part⟩`: the part the caller gave."""
    given = dict(parts)
    return _PART.sub(lambda m: _expanded(folder, name, m.group(2), parts) if m.group(1) else given[m.group(2)],
                     _by_id(folder, name)[rule_id].source)


@cache
def _compiled(folder: Path, name: str, rule_id: str, parts: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    return re.compile(_expanded(folder, name, rule_id, parts), _by_id(folder, name)[rule_id].flags)


def compiled(folder: Path, file: str, rule_id: str, **parts: str) -> re.Pattern[str]:
    """The named rule's pattern, its template parts filled (the caller escapes a part that is text)."""
    return _compiled(folder, file, rule_id, tuple(sorted(parts.items())))


def first_match(folder: Path, name: str, text: str) -> Rule | None:
    """The first rule of the file, in its order, whose pattern is found in the text."""
    return next((r for r in load(folder, name) if r.pattern.search(text)), None)
