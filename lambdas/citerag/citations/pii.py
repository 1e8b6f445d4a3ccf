"""Output guard: masks personal data in answers. Rules are configurable (enable by name, add your own regex,
allow-list known public values such as a company's support number)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _my_number(digits: str) -> bool:
    """Japanese individual number (My Number): 12 digits, the last a check digit."""
    if len(digits) != 12:
        return False
    body = [int(c) for c in digits[:11]]
    s = sum(d * (n + 1 if n <= 6 else n - 5) for n, d in zip(range(1, 12), reversed(body), strict=True))
    check = 0 if s % 11 <= 1 else 11 - s % 11
    return check == int(digits[11])


def _phone(digits: str) -> bool:
    """A phone number's digit count: Japanese domestic numbers have 10 or 11 (and never start 00, the
    international prefix); international ones 8 to 15 (E.164). Filing and registry numbers of the same shape
    ("Commission File Number 001-36743", "CIK 0000320193") are public facts, not personal data."""
    if digits.startswith("0"):
        return len(digits) in (10, 11) and not digits.startswith("00")
    return 8 <= len(digits) <= 15


# Mailboxes of a role or a list, not of a person (RFC 2142's names and the usual list conventions): a manual's bug
# address ("bug-libtasn1@gnu.org") or mailing list ("debian-mentors@lists.debian.org") is the answer a user asked
# for, and was masked as [EMAIL].
_ROLE_MAILBOX = re.compile(
    r"(?:info|marketing|sales|support|abuse|noc|security|postmaster|hostmaster|usenet|news|webmaster|www|uucp|ftp"
    r"|help|helpdesk|contact|office|press|jobs|careers|billing|feedback|privacy|legal"
    r"|no-?reply|bugs?|submit|listmaster|maintainers?)"
    r"|bugs?-.+|.+-(?:request|owner|announce|devel|bugs?|discuss|mentors|maintainers|l10n(?:-[a-z]+)?|i18n)", re.I)
_LIST_DOMAIN = re.compile(r"(?:lists?|bugs|groups)\.", re.I)
# A free mailbox is a person's, whatever its name says ("alice-dev@gmail.com", "taro-bugs@docomo.ne.jp").
_FREE_MAIL = re.compile(
    r"(?:.+\.)?(?:gmail|googlemail|yahoo|ymail|hotmail|outlook|live|msn|icloud|me|mac|aol|proton|protonmail|pm"
    r"|gmx|mail|yandex|qq|163|126|naver|docomo|ezweb|softbank|au|nifty|biglobe|ocn|so-net|excite|zoho)"
    r"\.(?:[a-z]{2,3}|co\.[a-z]{2}|ne\.jp|or\.jp)", re.I)


def _public_mailbox(address: str) -> bool:
    local, _, domain = address.rpartition("@")
    if _FREE_MAIL.fullmatch(domain):
        return False
    return _ROLE_MAILBOX.fullmatch(local) is not None or _LIST_DOMAIN.match(domain) is not None


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    label: str
    check: object = None  # optional callable(str digits) -> bool: is it of this kind at all
    public: object = None  # optional callable(str value) -> bool: of this kind, but no one's personal data


_NUM_SEP = r"[ \-‐－]?"
RULES: dict[str, Rule] = {
    # Bounded repeats keep every rule linear in the text length (model output can be very long).
    "email": Rule("email", re.compile(r"[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){0,8}"
                                      r"\.[A-Za-z]{2,24}"), "[EMAIL]", public=_public_mailbox),
    "card": Rule("card", re.compile(r"\b(?:\d[ \-]?){12,18}\d\b"), "[CARD]", _luhn),
    "my_number": Rule("my_number", re.compile(r"\b\d{4}[ \-]?\d{4}[ \-]?\d{4}\b"), "[MY_NUMBER]", _my_number),
    # Japanese numbers: 0X-XXXX-XXXX, 0XX-XXX-XXXX, mobiles 0X0-XXXX-XXXX, toll-free 0120-XXX-XXX, +81 forms;
    # and international +<country> numbers.
    "phone": Rule("phone", re.compile(
        r"(?<![\d\-])(?:\+81[ \-]?\d{1,4}|0\d{1,4})" + _NUM_SEP + r"\d{1,4}" + _NUM_SEP + r"\d{3,4}(?![\d\-])"
        r"|(?<![\d\-])\+\d{1,3}[ \-]?\(?\d{1,4}\)?(?:[ \-]?\d{2,4}){2,3}(?![\d\-])"), "[PHONE]", _phone),
}
DEFAULT_RULES = ("email", "card", "my_number", "phone")
# What `mask` puts in place of a value ([EMAIL], [MY_NUMBER]): where a masked text is compared with its source.
MASK_LABEL = re.compile(r"\[[A-Z][A-Z0-9_]{1,30}\]")


class PiiMasker:
    def __init__(self, rules: Iterable[str] = DEFAULT_RULES, extra: dict[str, str] | None = None,
                 allow: Iterable[str] = ()) -> None:
        unknown = [r for r in rules if r not in RULES]
        if unknown:
            raise ValueError(f"unknown PII rules {unknown}; known: {sorted(RULES)}")
        self.rules = [RULES[r] for r in rules]
        for label, pattern in (extra or {}).items():
            self.rules.append(Rule(label, re.compile(pattern), f"[{label.upper()}]"))
        self.allow = {a.strip() for a in allow if a.strip()}

    def mask(self, text: str) -> tuple[str, list[str]]:
        """(masked text, names of the rules that fired)."""
        fired: list[str] = []
        for rule in self.rules:
            def repl(m: re.Match[str], rule: Rule = rule) -> str:
                value = m.group(0)
                if value in self.allow:
                    return value
                if rule.check is not None and not rule.check(re.sub(r"\D", "", value)):  # type: ignore[operator]
                    return value
                if rule.public is not None and rule.public(value):  # type: ignore[operator]
                    return value
                fired.append(rule.name)
                return rule.label
            text = rule.pattern.sub(repl, text)
        return text, fired
