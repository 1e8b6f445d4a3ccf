"""Reading Claude's tagged output (the conventions of Bedrock's Claude 3 agent templates), tolerantly.

Stop sequences cut closing tags (`</function_calls>`, `</answer>`), models nest or repeat tags, and output
can be truncated anywhere: every reader here returns what it can find and never raises.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

MAX_SCAN = 1_000_000  # characters; longer output is cut before parsing

# Every reader below is a forward scan with str.find: linear in the input whatever it holds. The regular
# expressions they replace (`<tag>(.*?)</tag>` tried at every `<tag>`) were quadratic on output full of opening
# tags: 200 KB took 88-130 s, past the parser Lambda's timeout.


def inner(text: str, tag: str, *, allow_unclosed: bool = False) -> str | None:
    """Text between the first <tag> and its </tag> (or the end, if allowed and unclosed)."""
    open_, close = f"<{tag}>", f"</{tag}>"
    start = text.find(open_)
    if start < 0:
        return None
    start += len(open_)
    end = text.find(close, start)
    if end >= 0:
        return text[start:end]
    return text[start:] if allow_unclosed else None


def all_inner(text: str, tag: str, *, allow_unclosed_last: bool = False) -> list[str]:
    """Every <tag>...</tag> in order, without nesting (a second <tag> before </tag> is part of the text);
    with allow_unclosed_last, a final unclosed <tag> runs to the end."""
    open_, close = f"<{tag}>", f"</{tag}>"
    found, pos = [], 0
    while True:
        start = text.find(open_, pos)
        if start < 0:
            return found
        start += len(open_)
        end = text.find(close, start)
        if end < 0:
            if allow_unclosed_last:
                found.append(text[start:])
            return found
        found.append(text[start:end])
        pos = end + len(close)


def clean(text: str | None) -> str:
    return html.unescape(text or "").strip()


# A citation mark as answers and documents print them: "[2]", "[1, 3]", "[4-6]" after a space or Japanese text, and
# the source-id marks answers are written with ("[S1]", "[S1-abcdef]"). In the answer protocol a citation is a
# <source>; a mark in a part's text is the document's own (its footnote "[2]", copied with the sentence) or written
# by the model, and cites nothing here: shown, a reader took "[2]" for a citation with no source.
_NUMBER_MARK = re.compile(r"(?:(?<=[\u3040-\u30ff\u4e00-\u9fff\uff00-\uffef])|^|\s+)"
                          r"\[\d{1,3}(?:\s?[,\u2013-]\s?\d{1,3}){0,8}\](?=$|[\s.,;:!?)\u3001\u3002\uff09])")
_SOURCE_MARK = re.compile(r"\s*\[S\d{1,4}(?:-[A-Za-z0-9]{1,16})?\]")


def without_marks(text: str) -> str:
    """The text with its citation-shaped marks removed: only a <source> (or a citation span) cites."""
    if "[" not in text:
        return text
    return _SOURCE_MARK.sub("", _NUMBER_MARK.sub("", text)).strip()


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
    id: str = ""  # the tool_use block's id (native tools); the text format has none


def function_calls(text: str) -> list[Invoke] | None:
    """None when there is no <function_calls> block; otherwise its <invoke>s (possibly empty)."""
    block = inner(text, "function_calls", allow_unclosed=True)
    if block is None:
        return None
    calls = []
    for inv in all_inner(block, "invoke", allow_unclosed_last=True):
        name = clean(inner(inv, "tool_name", allow_unclosed=False))
        params_block = inner(inv, "parameters", allow_unclosed=True) or ""
        params = _elements(params_block)
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
            cut = raw.find("<sources>")
            body = raw if cut < 0 else raw[:cut]
        sources_block = inner(raw, "sources", allow_unclosed=True) or ""
        sources = [clean(s) for s in all_inner(sources_block, "source", allow_unclosed_last=True)]
        parts.append(AnswerPart(without_marks(clean(_strip_tags(body))), [s for s in sources if s]))
    if not parts:
        bare = without_marks(clean(_strip_tags(block)))
        if bare:
            parts.append(AnswerPart(bare, []))
    return parts


_OPEN_TAG = re.compile(r"<([A-Za-z_][\w\-]{0,63})>")


def _elements(block: str) -> dict[str, str]:
    """<name>value</name> pairs in order (the first of each name wins), in one forward scan."""
    out: dict[str, str] = {}
    never_closed: set[str] = set()  # no </name> after some point means none after any later point either
    pos = 0
    while (m := _OPEN_TAG.search(block, pos)) is not None:
        close = f"</{m.group(1)}>"
        end = -1 if m.group(1) in never_closed else block.find(close, m.end())
        if end < 0:
            never_closed.add(m.group(1))
            pos = m.end()  # an unclosed element: read on after its tag
            continue
        out.setdefault(m.group(1), clean(block[m.end():end]))
        pos = end + len(close)
    return out


def _strip_tags(text: str) -> str:
    return re.sub(r"</?[A-Za-z_][\w\-]*>", "", text)
