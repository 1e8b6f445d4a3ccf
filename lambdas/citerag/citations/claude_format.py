"""Reading Claude's tagged output (the conventions of Bedrock's Claude 3 agent templates), tolerantly.

Stop sequences cut closing tags (`</function_calls>`, `</answer>`), models nest or repeat tags, and output
can be truncated anywhere: every reader here returns what it can find and never raises.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

MAX_SCAN = 200_000  # characters; longer output is cut before parsing (regexes stay linear anyway)


def inner(text: str, tag: str, *, allow_unclosed: bool = False) -> str | None:
    """Text between the first <tag> and its </tag> (or the end, if allowed and unclosed)."""
    m = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.S)
    if m:
        return m.group(1)
    if allow_unclosed:
        m = re.search(rf"<{tag}>(.*)\Z", text, re.S)
        if m:
            return m.group(1)
    return None


def all_inner(text: str, tag: str, *, allow_unclosed_last: bool = False) -> list[str]:
    found = re.findall(rf"<{tag}>(.*?)</{tag}>", text, re.S)
    if allow_unclosed_last:
        last_close = text.rfind(f"</{tag}>")
        tail = text[last_close + len(tag) + 3:] if last_close >= 0 else text
        m = re.search(rf"<{tag}>(.*)\Z", tail, re.S)
        if m:
            found.append(m.group(1))
    return found


def clean(text: str | None) -> str:
    return html.unescape(text or "").strip()


def rationale(text: str) -> str:
    t = inner(text, "thinking", allow_unclosed=False)
    if t is None:
        # Templates may open <thinking> in the assistant prefill, so the output starts inside it.
        end = text.find("</thinking>")
        t = text[:end] if end >= 0 else ""
    return clean(t)[:4000]


@dataclass
class Invoke:
    tool_name: str
    parameters: dict[str, str] = field(default_factory=dict)


def function_calls(text: str) -> list[Invoke] | None:
    """None when there is no <function_calls> block; otherwise its <invoke>s (possibly empty)."""
    block = inner(text, "function_calls", allow_unclosed=True)
    if block is None:
        return None
    calls = []
    for inv in all_inner(block, "invoke", allow_unclosed_last=True):
        name = clean(inner(inv, "tool_name", allow_unclosed=False))
        params_block = inner(inv, "parameters", allow_unclosed=True) or ""
        params = {m.group(1): clean(m.group(2))
                  for m in re.finditer(r"<([A-Za-z_][\w\-]*)>(.*?)</\1>", params_block, re.S)}
        calls.append(Invoke(name, params))
    return calls


@dataclass
class AnswerPart:
    text: str
    sources: list[str]


def answer(text: str) -> list[AnswerPart] | None:
    """None when there is no <answer>; otherwise its parts. A bare <answer>text</answer> is one uncited part."""
    block = inner(text, "answer", allow_unclosed=True)
    if block is None:
        return None
    parts = []
    for raw in all_inner(block, "answer_part", allow_unclosed_last=True):
        body = inner(raw, "text", allow_unclosed=True)
        if body is None:
            body = re.sub(r"<sources>.*", "", raw, flags=re.S)
        sources_block = inner(raw, "sources", allow_unclosed=True) or ""
        sources = [clean(s) for s in all_inner(sources_block, "source", allow_unclosed_last=True)]
        parts.append(AnswerPart(clean(_strip_tags(body)), [s for s in sources if s]))
    if not parts:
        bare = clean(_strip_tags(block))
        if bare:
            parts.append(AnswerPart(bare, []))
    return parts


def _strip_tags(text: str) -> str:
    return re.sub(r"</?[A-Za-z_][\w\-]*>", "", text)
