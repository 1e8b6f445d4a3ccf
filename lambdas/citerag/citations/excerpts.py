"""The excerpt under a cited source: the sentence the answer shows, checked against the passage it is cited to."""

from __future__ import annotations

import re

from citerag.citations.pii import MASK_LABEL

EXCERPT_CHARS = 300
_MASKED_VALUE = r"[^\n]{1,80}?"  # a masked value (an address, a number) is short and on one line


def _pattern(shown: str) -> re.Pattern[str]:
    """The shown sentence with any whitespace allowed between its characters: the answer joins a Japanese pair
    with none where the passage keeps a line break ("…ください。\\n交換用…"), a text file breaks lines inside a
    sentence, and each mask label ([EMAIL]) stands for the value it replaced."""
    parts = []
    for i, piece in enumerate(MASK_LABEL.split(shown)):
        if i:
            parts.append(_MASKED_VALUE)
        parts.append(r"\s*".join(re.escape(ch) for ch in piece if not ch.isspace()))
    return re.compile(r"\s*".join(p for p in parts if p))


def excerpt(shown: str, passage: str, limit: int = EXCERPT_CHARS) -> str:
    """The cited sentence as the answer shows it (masked values stay masked) when the passage holds it; the passage
    start only when it does not (a model's paraphrase)."""
    if passage.find(shown) >= 0 or (shown.strip() and _pattern(shown).search(passage)):
        return " ".join(shown.split())[:limit]
    return " ".join(passage.split())[:limit]
