"""What a question asks for ("how many": a number; "what is it called": a name) and what a sentence that answers it
holds: patterns in rules/question_kinds.json, the kinds in rules/kinds.json (docs/answers.md "Rules as data")."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache, partial

from citerag.answerer import rules
from citerag.citations.statements import LEADING_ENUMERATOR
from citerag.documents.text import detect_language, normalize
from citerag.search.query import Query

# Process-wide, not per context: the answerer may run in a search worker's thread. Only a bench switches kinds off.
_OFF: set[str] = set()


def kinds() -> list[dict]:
    return rules.registry("kinds")


def on(kind: str) -> bool:
    """Whether the kind's rule applies (all do, except while a bench measures one switched off)."""
    return kind not in _OFF


@contextmanager
def switched_off(*names: str) -> Iterator[None]:
    unknown = set(names) - {k["id"] for k in kinds()}
    if unknown:
        raise ValueError(f"no question kind {', '.join(sorted(unknown))}")
    before = set(_OFF)
    _OFF.update(names)
    try:
        yield
    finally:
        _OFF.intersection_update(before)  # the kinds off before, and no other


rx = partial(rules.compiled, "question_kinds")


def asked(rule_id: str, kind: str, text: str) -> re.Match[str] | None:
    """The question's match of a kind's trigger, None when it does not ask that (or the kind is off)."""
    return rx(rule_id).search(text) if on(kind) else None


def _asks(kind: str) -> Callable[[Query], bool]:
    return lambda query: bool(asked(f"wants_{kind}", kind, query.text))


asks_for_number = _asks("number")
wants_type = _asks("type")
wants_name = _asks("name")
wants_called = _asks("called")
wants_person = _asks("person")


def _holds_number(text: str) -> bool:
    return bool(rx("number").search(LEADING_ENUMERATOR.sub("", text)))  # "3. Grant of…": a label, not a number


@cache
def _counted(counter: str) -> re.Pattern[str]:
    return rx("counted", units=rules.lexicon("counters")[counter])


def _units_in(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda text: bool(pattern.search(rx("not_counts").sub(" ", normalize(text))))


def number_evidence(query: Query) -> Callable[[str], bool]:
    """What tells a sentence answers a question that asks for a number (a year, a time, the counted unit of "何人",
    a limit). The question's own words with digits ("ASN1_MAX_NAME_SIZE") are not the number."""
    kind = _number_kind(query)
    named = sorted(set(rx("with_digits").findall(query.text)), key=len, reverse=True)

    def holds(text: str) -> bool:
        for word in named:
            text = rx("named_word", word=re.escape(word)).sub(" ", text)
        return kind(text)

    if asked("wants_limit", "limit", query.text):
        return lambda text: holds(text) and bool(rx("limit").search(text))
    return holds


def _number_kind(query: Query) -> Callable[[str], bool]:
    text = query.text
    if asked("wants_year", "year", text):
        return lambda t: bool(rx("year").search(normalize(t)))  # "２０１２年", "2012.05.01"; not "v. 2.0"
    if count := asked("wants_count", "count", text):
        counted = _units_in(_counted(count.group(1)))
        # A counter is Japanese grammar: an English sentence states the number without it ("in 1913" for 何年).
        return lambda t: counted(t) if detect_language(t) == "ja" else _holds_number(t)
    if unit := asked("wants_units_en", "count", text):
        en = unit.group(1).lower()
        counted_en = _units_in(rx("counted_bytes_en") if en == "byte" else rx("counted_en", unit=en))
        return lambda t: counted_en(t) if detect_language(t) == "en" else _holds_number(t)
    if asked("wants_time", "time", text):
        return lambda t: _holds_number(t) or bool(rx("time").search(t))
    return _holds_number


def names(text: str) -> bool:
    return bool(rx("names").search(text))


def names_type(text: str) -> bool:
    return bool(rx("type").search(text))


def kind_evidence(query: Query) -> Callable[[str], bool] | None:
    """What tells a sentence names one of the kind a "which X" question asks for (a name the question does not
    hold, written against the kind's word); None for other questions."""
    which = asked("wants_kind", "which", query.text)
    if not which:
        return None
    if which.group(1):
        kind = tail.group(0) if (tail := rx("kind_tail").search(which.group(1))) else ""
        if len(kind) < 2:  # a one-character kind (どの国) is in too many words
            return None
        rule = "kind_named_ja" if rx("kind_kanji").match(kind) else "kind_named_ja_katakana"
        named = rx(rule, kind=re.escape(kind))
    else:
        named = rx("kind_named_en", kind=re.escape(which.group(2)))
    asked_text = normalize(query.text)
    return lambda text: any(normalize(m.group(1)) not in asked_text for m in named.finditer(text))


def reason_evidence(query: Query) -> Callable[[str], bool] | None:
    """What tells a sentence gives a reason, for a question that asks why; None for other questions."""
    return (lambda text: bool(rx("reason").search(text))) if asked("wants_reason", "reason", query.text) else None
