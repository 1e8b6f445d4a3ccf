"""What a question asks for ("how many": a number; "which option": an option; "what is it called": a name) and
what a sentence that answers it holds. The patterns are the named entries of rules/question_kinds.json; the kinds
themselves, with their cases, are rules/kinds.json, and any of them can be switched off to measure what it is
worth (`bench-answers --ablate KIND`)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache

from citerag.answerer import rules
from citerag.citations.statements import LEADING_ENUMERATOR
from citerag.documents.text import detect_language, normalize
from citerag.search.query import Query
from citerag.search.sparse import term_id, tokenize

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
        _OFF.clear()
        _OFF.update(before)


def rx(rule_id: str, **parts: str) -> re.Pattern[str]:
    return rules.compiled("question_kinds", rule_id, **parts)


def asked(rule_id: str, kind: str, text: str) -> re.Match[str] | None:
    """The question's match of a kind's trigger, None when it does not ask that (or the kind is off)."""
    return rx(rule_id).search(text) if on(kind) else None


def asks_for_number(query: Query) -> bool:
    return bool(asked("wants_number", "number", query.text) or asked("wants_money", "money", query.text))


def _holds_number(text: str) -> bool:
    return bool(rx("number").search(LEADING_ENUMERATOR.sub("", text)))  # "3. Grant of…": a label, not a number


@cache
def _counted(counter: str) -> re.Pattern[str]:
    return rx("counted", units=rules.lexicon("counters")[counter])


def _counted_en(unit: str) -> re.Pattern[str]:
    return rx("counted_bytes_en") if unit == "byte" else rx("counted_en", unit=unit)


def _units_in(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda text: bool(pattern.search(rx("not_counts").sub(" ", normalize(text))))


def number_evidence(query: Query) -> Callable[[str], bool]:
    """What tells a sentence answers a question that asks for a number (a year; a time, for "how long" and
    "when"; money, for a price; the counted unit, for "何人"; a unit of the quantity, for "how far"; a limit, for
    "the maximum number"). The question's own words with digits ("ASN1_MAX_NAME_SIZE") are not the number."""
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
    if asked("wants_money", "money", text):
        return lambda t: bool(rx("money").search(t))
    if asked("wants_year", "year", text):
        return lambda t: bool(rx("year").search(normalize(t)))  # "２０１２年", "2012.05.01"; not "v. 2.0"
    if count := asked("wants_count", "count", text):
        counted = _units_in(_counted(count.group(1)))
        # A counter is Japanese grammar: an English sentence states the number without it ("in 1913" for 何年).
        return lambda t: counted(t) if detect_language(t) == "ja" else _holds_number(t)
    if unit := asked("wants_units_en", "count", text):
        counted_en = _units_in(_counted_en(unit.group(1).lower()))
        return lambda t: counted_en(t) if detect_language(t) == "en" else _holds_number(t)
    if on("quantity") and (measured := next((rx(f"{q}_units") for q in rules.lexicon("quantities")
                                             if rx(f"asks_{q}").search(text)), None)):
        return _units_in(measured)
    if asked("wants_time", "time", text):
        return lambda t: _holds_number(t) or bool(rx("time").search(t))
    return _holds_number


def wants_code(query: Query) -> bool:
    return bool(asked("wants_code", "code", query.text))


def wants_option(query: Query) -> bool:
    return bool(asked("wants_option", "option", query.text))


def wants_type(query: Query) -> bool:
    return bool(asked("wants_type", "type", query.text))


def wants_name(query: Query) -> bool:
    return bool(asked("wants_name", "name", query.text))


def wants_called(query: Query) -> bool:
    return bool(asked("wants_called", "called", query.text))


def wants_person(query: Query) -> bool:
    return bool(asked("wants_person", "person", query.text))


def names(text: str) -> bool:
    return bool(rx("names").search(text))


def names_type(text: str) -> bool:
    return bool(rx("type").search(text))


def names_option(text: str) -> bool:
    return bool(rx("option").search(text))


@cache
def option_words() -> frozenset[int]:
    return frozenset(term_id(t) for t in tokenize(" ".join(rules.lexicon("option_words"))))


def kind_evidence(query: Query) -> Callable[[str], bool] | None:
    """What tells a sentence names one of the kind a "which X" question asks for (a name the question does not
    hold, written against the kind's word); None for other questions."""
    which = asked("wants_kind", "which", query.text)
    if not which:
        return None
    if which.group(1):
        tail = rx("kind_tail").search(which.group(1))
        kind = tail.group(0) if tail else ""
        if len(kind) < 2:  # a one-character kind (どの国) is in too many words
            return None
        rule = "kind_named_ja" if "\u4e00" <= kind[0] <= "\u9fff" else "kind_named_ja_katakana"
        named = rx(rule, kind=re.escape(kind))
    else:
        named = rx("kind_named_en", kind=re.escape(which.group(2)))
    asked_text = normalize(query.text)
    return lambda text: any(normalize(m.group(1)) not in asked_text for m in named.finditer(text))


def expansion_evidence(query: Query) -> Callable[[str], bool] | None:
    """What tells a sentence spells out the abbreviation the question asks about; None for other questions."""
    which = asked("asks_abbreviation", "abbreviation", unicodedata.normalize("NFKC", query.text))  # "ＤＦＳＧ"
    if not which:
        return None
    spelt = rx("spelt_out", abbreviation=re.escape(next(group for group in which.groups() if group)))
    return lambda text: bool(spelt.search(unicodedata.normalize("NFKC", text)))


def reason_evidence(query: Query) -> Callable[[str], bool] | None:
    """What tells a sentence gives a reason, for a question that asks why; None for other questions."""
    if not asked("wants_reason", "reason", query.text):
        return None
    return lambda text: bool(rx("reason").search(text))


def _variants(normalized: str) -> dict[str, set[str]]:
    named: dict[str, set[str]] = {}
    for name, number in rx("variant").findall(normalized):
        if name.lower() not in rules.lexicon("period_names"):
            named.setdefault(name.lower(), set()).add(number)
    return named


def _answered_yes_or_no(query: Query) -> bool:
    if query.lang == "ja":
        return not rx("asks_what_ja").search(rx("not_asking_ja").sub("", query.text))
    return bool(rx("yes_no").search(query.text))


def sibling_evidence(query: Query) -> Callable[[str], bool] | None:
    """For a question that names a name with a number ("UTF-16"), whether a sentence names only its siblings
    ("UTF-32"); None for other questions, for those answered yes or no and for those about another version."""
    numbered = _variants(normalize(query.text)) if on("sibling") else {}
    if not numbered or _answered_yes_or_no(query) or rx("other_version").search(query.text):
        return None
    held = [rx("sibling_held", name=re.escape(name),
               numbers="|".join(re.escape(rx("leading_zeros").sub("", n)) for n in numbers))
            for name, numbers in numbered.items()]

    def names_a_sibling(text: str) -> bool:
        text = normalize(text)
        named = _variants(text)
        return any(name in named and not pattern.search(text)
                   for name, pattern in zip(numbered, held, strict=True))

    return names_a_sibling
