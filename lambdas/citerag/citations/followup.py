"""Follow-ups: a question with no subject of its own ("How do I clean it?", "それはどうやって掃除しますか？") is
rewritten from the conversation before it is searched and answered, and the rewritten question is shown.

Offline, a rule: a question is a follow-up when it points back (a pronoun or demonstrative: it, that, one, それ,
その) or names no topic of its own (it opens with "And" or "What about"; in Japanese no noun carries は or が).
Its subject is the topic of the last question that had one (the words left when question words are taken out;
in Japanese the noun marked with は, が or を), carried forward through a chain of follow-ups. English puts the
subject beside the pronoun ("How do I clean it (error E2)?"); Japanese puts it in the demonstrative's place
("エラーE2はどうやって掃除しますか？"), or before the question ("チャイルドロックについて、解除するには…").

With a model configured, the model rewrites through the chat-model port, from the last turns' questions and
answers; when its reply is not one usable question, the rule's rewrite is used.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from citerag.citations.chat import ChatModel

MAX_TURNS = 3  # turns the model reads: enough for "it" to find its referent, little enough to stay cheap
MAX_ANSWER_CHARS = 600  # of each earlier answer shown to the model
MAX_QUESTION_CHARS = 2000  # the search's own limit (citerag.search.query.MAX_QUERY_CHARS)
MAX_SUBJECT_WORDS = 6


class Turn(BaseModel):
    question: str  # as it was asked (rewritten when it was rewritten)
    subject: str = ""  # its topic, for the next follow-up ("" when it had none the rule could find)
    answer: str = ""


# --- English -------------------------------------------------------------------------------------------------------

_EN_POINTERS = re.compile(r"\b(it|its|it's|this|that|these|those|they|them|their|one|ones)\b", re.I)
_EN_OPENERS = re.compile(r"^\s*(and|also|what about|how about|what of|same for|then)\b", re.I)
# Words that frame a question rather than name what it is about.
_EN_FRAME = frozenset("""
a an the and or but of to in on at for from with by about into as is are was were be been being am do does did
done doing have has had can could should would will shall may might must i me my mine you your yours we our us
he she it its they them their this that these those there here what which who whom whose when where why how
often long much many far soon please tell show explain mean means meant kind sort type way ways any some
also then again still just really so very if not no yes ok okay than too one ones else other
""".split())
_EN_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-./:]*")


def _en_subject(question: str) -> str:
    words = [w.rstrip(".:/-") for w in _EN_WORD.findall(question)]
    return " ".join([w for w in words if w and w.lower() not in _EN_FRAME][:MAX_SUBJECT_WORDS])


def _en_follow_up(question: str) -> bool:
    return bool(_EN_POINTERS.search(question) or _EN_OPENERS.search(question))


def _en_rewrite(question: str, subject: str) -> str:
    q = question.strip()
    m = _EN_POINTERS.search(q)
    if m and not _EN_OPENERS.search(q):
        return f"{q[:m.end()]} ({subject}){q[m.end():]}"
    body, mark = (q[:-1], q[-1]) if q.endswith(("?", ".", "!")) else (q, "?")
    return f"{body} ({subject}){mark}"


# --- Japanese ------------------------------------------------------------------------------------------------------

_JA = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff66-\uff9f]")
_JA_POINTERS = re.compile(r"(それ|これ|あれ|その|この|あの|そこ|ここ|そちら|こちら)")
_NOUN_END = r"[\u30a0-\u30ff\u3400-\u9fffA-Za-z0-9０-９Ａ-Ｚａ-ｚ\-ー]"
_JA_TOPIC = re.compile(rf"(?<={_NOUN_END})\s*(とは|は|が)")
_JA_MARKED = re.compile(rf"(?<={_NOUN_END})\s*(とは|は|が|を)")
_JA_ASKING = re.compile(r"(何|なに|どう|どの|どこ|どれ|いつ|なぜ|いくら|誰|どんな)")
_JA_OPENERS = re.compile(r"^(では|じゃあ|それでは|あと|また)[、,]?")


def _ja_subject(question: str) -> str:
    q = _JA_OPENERS.sub("", question.strip())
    m = _JA_MARKED.search(q)
    head = q[:m.start()] if m else q[:m2.start()] if (m2 := _JA_ASKING.search(q)) else q.rstrip("？?。")
    asking = _JA_ASKING.search(head)  # an interrogative is never the topic ("前に何を確認…")
    head = _JA_POINTERS.sub("", head[:asking.start()] if asking else head).strip(" 、,")
    return head[:60]


def _ja_follow_up(question: str) -> bool:
    return bool(_JA_POINTERS.search(question) or _JA_OPENERS.search(question) or not _JA_TOPIC.search(question))


def _ja_rewrite(question: str, subject: str) -> str:
    q = _JA_OPENERS.sub("", question.strip())
    m = _JA_POINTERS.search(q)
    if m:
        filler = subject + "の" if m.group(1) in ("その", "この", "あの") else subject
        return q[:m.start()] + filler + q[m.end():]
    return f"{subject}について、{q}"


# --- the rule and the model ----------------------------------------------------------------------------------------

def is_japanese(text: str) -> bool:
    return bool(_JA.search(text))


def subject_of(question: str) -> str:
    """The topic of a question that has one of its own ("" when the rule finds none)."""
    return _ja_subject(question) if is_japanese(question) else _en_subject(question)


def is_follow_up(question: str) -> bool:
    """Does the question lean on the conversation (points back, or names no topic of its own)?"""
    return _ja_follow_up(question) if is_japanese(question) else _en_follow_up(question)


def last_subject(turns: Sequence[Turn]) -> str:
    return next((t.subject for t in reversed(turns) if t.subject), "")


def rewrite(question: str, turns: Sequence[Turn]) -> Turn:
    """The offline rule: the question as it will be asked, and its subject for the next turn."""
    q = " ".join(question.split())
    subject = last_subject(turns)
    if len(q) > MAX_QUESTION_CHARS:  # the search says how long it is and the limit
        return Turn(question=q, subject=subject)
    if not turns or not subject or not is_follow_up(q):
        return Turn(question=q, subject=subject_of(q) or subject)
    asked = _ja_rewrite(q, subject) if is_japanese(q) else _en_rewrite(q, subject)
    if len(asked) > MAX_QUESTION_CHARS or subject.lower() in q.lower():
        return Turn(question=q, subject=subject)  # already names it, or would be too long to search
    return Turn(question=asked, subject=subject)


REWRITE_SYSTEM = (
    "You rewrite the last question of a conversation about the user's documents so that it can be understood "
    "without the conversation: replace pronouns and fill in what the question leaves out (its subject) from the "
    "earlier turns. Keep the question's language, meaning and wording otherwise. If it already stands on its own, "
    "return it unchanged. Reply with the rewritten question only, on one line."
)


def rewrite_prompt(question: str, turns: Sequence[Turn]) -> dict[str, Any]:
    """A Messages-API prompt (what the chat-model port takes) with the last turns and the question."""
    lines = []
    for t in list(turns)[-MAX_TURNS:]:
        lines.append(f"User: {t.question}")
        if t.answer:
            lines.append(f"Assistant: {' '.join(t.answer.split())[:MAX_ANSWER_CHARS]}")
    body = ("<conversation>\n" + "\n".join(lines) + "\n</conversation>\n<question>" + question + "</question>\n"
            "Rewrite the question.")
    return {"system": REWRITE_SYSTEM, "messages": [{"role": "user", "content": [{"type": "text", "text": body}]}]}


def rewrite_with_model(model: ChatModel, question: str, turns: Sequence[Turn]) -> Turn:
    """The configured model's rewrite; the rule's when the model's reply is not one usable question."""
    ruled = rewrite(question, turns)
    if not turns:
        return ruled
    out = model.complete(rewrite_prompt(" ".join(question.split()), turns), prompt_type="QUERY_REWRITE",
                         stop_sequences=[], max_tokens=300, temperature=0.0)
    lines = [line.strip() for line in out.text.strip().splitlines() if line.strip()]
    text = re.sub(r"^(rewritten question|question)\s*:\s*", "", lines[0], flags=re.I).strip("\"'「」 ") \
        if len(lines) == 1 else ""
    if not text or len(text) > MAX_QUESTION_CHARS or text.startswith(("<", "{")):
        return ruled
    return Turn(question=text, subject=subject_of(text) or ruled.subject)
