"""The offline model of the AgentCore agent: a Strands `Model` that plays Claude for the agent's own prompts, the way
`extractive_model` plays it for the Classic templates. No LLM runs on this machine, so:

- the input classification is answered by the Classic offline model (one classifier);
- orchestration speaks Converse stream events: a `search_documents` toolUse with the question, then an answer built
  only from sentences of the passages the tool returned (`citations.extractive.pick_sentences`), written in the
  citation protocol, or, in native-citations mode, as text blocks carrying Converse `citation` deltas whose
  `searchResultLocation` points at the searchResult block each sentence came from.

Everything downstream (the tool, the id checks, grading, masking, events) is the real agent.
"""

from __future__ import annotations

import html
import json
import re
import uuid
from collections.abc import AsyncGenerator, AsyncIterable
from typing import Any

from strands.models.model import Model

from citerag.adapters.offline_claude import ExtractiveClaudeModel
from citerag.answerer.extractive import Answering, answer_language
from citerag.citations.chat import approx_tokens
from citerag.citations.not_found import not_found
from citerag.citations.payload import results_of
from citerag.citations.tool import FUNCTION_NAME
from citerag.citations.verified import REPROMPT_MARKERS
from citerag.documents.text import detect_language
from citerag.search.passage import Passage

_WORDS = re.compile(r"[\w\u3040-\u30ff\u4e00-\u9fff]+")


class OfflineAgentModel(Model):
    """`native=True` answers with Converse citations instead of the protocol (for the native-citations mode)."""

    def __init__(self, *, native: bool = False, answering: Answering | None = None) -> None:
        self.answering = answering or Answering()
        self.config: dict[str, Any] = {"model_id": "citerag/extractive-agent"}
        self.native = native
        self.calls = 0

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    async def structured_output(self, output_model, prompt, system_prompt=None, **kwargs) -> AsyncGenerator[Any, None]:
        raise NotImplementedError("the agent asks for no structured output")
        yield  # pragma: no cover

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs) -> AsyncIterable[dict[str, Any]]:
        self.calls += 1
        prompt_size = approx_tokens(json.dumps(messages, ensure_ascii=False, default=str) + (system_prompt or ""))
        if not tool_specs:  # the input classification: the one call without tools
            user = _text(messages[-1]) if messages else ""
            out = ExtractiveClaudeModel(self.answering).complete({"system": system_prompt or "", "messages": [
                {"role": "user", "content": user}]}, prompt_type="PRE_PROCESSING", stop_sequences=[])
            for ev in _text_turn([(out.text, [])], prompt_size):
                yield ev
            return
        question, results, searches = _this_turn(messages)
        if not results:
            for ev in _tool_turn(question, prompt_size):
                yield ev
            return
        body, passages = results[-1]
        lang = answer_language(question)
        read = [p.model_copy(update={"lang": detect_language(p.text)}) for p in passages]
        if passages:
            picked = self.answering.pick(question, read)
            if picked:
                index = {p.source_id: i for i, p in enumerate(passages)}
                blocks = [(p.sentence, [_citation(passages[index[p.source_id]], index[p.source_id], p.sentence)])
                          for p in picked]
                if not self.native:
                    # Document text is data: escaped, as the parser unescapes what it reads ("Vec<i32>" is no tag).
                    parts = "".join(f"<answer_part><text>{html.escape(text, quote=False)}</text><sources><source>"
                                    f"{html.escape(c[0]['source'], quote=False)}</source></sources></answer_part>"
                                    for text, c in blocks)
                    blocks = [(f"<answer>{parts}</answer>", [])]
                for ev in _text_turn(blocks, prompt_size):
                    yield ev
                return
        if body.get("hint") and searches < 2:
            rewritten = " ".join(dict.fromkeys(_WORDS.findall(question))) or question
            for ev in _tool_turn(rewritten, prompt_size):
                yield ev
            return
        if body.get("error"):
            message = ("Document search is temporarily unavailable. Please try again later." if lang == "en"
                       else "現在ドキュメント検索を利用できません。しばらくしてからもう一度お試しください。")
        else:
            message = not_found(lang, read)
        text = message if self.native else \
            f"<answer><answer_part><text>{html.escape(message, quote=False)}</text></answer_part></answer>"
        for ev in _text_turn([(text, [])], prompt_size):
            yield ev


def _text(message: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in message.get("content", []) if isinstance(c, dict))


def _this_turn(messages: list[dict[str, Any]]) -> tuple[str, list[tuple[dict[str, Any], list[Passage]]], int]:
    """(question, [(search body, passages)] oldest first, number of searches) of the current turn: everything after
    the last user text that is not one of the agent's reprompts."""
    results: list[tuple[dict[str, Any], list[Passage]]] = []
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        tool_results = [c["toolResult"] for c in message.get("content", []) if "toolResult" in c]
        if tool_results:
            for tr in reversed(tool_results):
                results.insert(0, _read_result(tr))
            continue
        text = _text(message)
        if text.startswith(REPROMPT_MARKERS):
            continue
        return text, results, len(results)
    return "", results, len(results)


def _read_result(tool_result: dict[str, Any]) -> tuple[dict[str, Any], list[Passage]]:
    body: dict[str, Any] = {}
    passages: list[Passage] = []
    for block in tool_result.get("content", []):
        if "json" in block and isinstance(block["json"], dict):
            body = block["json"]
            passages.extend(results_of(body))
        elif "text" in block:
            try:
                data = json.loads(block["text"])
            except (json.JSONDecodeError, TypeError):
                continue
            if isinstance(data, dict):
                body = data
                passages.extend(results_of(data))
        elif "searchResult" in block:
            sr = block["searchResult"]
            passages.append(Passage(source_id=sr.get("source"), title=sr.get("title", ""),
                                    text=" ".join(c.get("text", "") for c in sr.get("content", []))))
    return body, passages


def _citation(p: Passage, index: int, sentence: str) -> dict[str, Any]:
    return {"title": p.title, "source": p.source_id, "sourceContent": [{"text": sentence}],
            "location": {"searchResultLocation": {"searchResultIndex": index, "start": 0, "end": 0}}}


def _tool_turn(query: str, prompt_tokens: int) -> list[dict[str, Any]]:
    args = json.dumps({"query": query}, ensure_ascii=False)
    return [{"messageStart": {"role": "assistant"}},
            {"contentBlockStart": {"start": {"toolUse": {"toolUseId": f"tooluse_{uuid.uuid4().hex[:12]}",
                                                         "name": FUNCTION_NAME}}}},
            {"contentBlockDelta": {"delta": {"toolUse": {"input": args}}}},
            {"contentBlockStop": {}},
            {"messageStop": {"stopReason": "tool_use"}},
            _usage(prompt_tokens, approx_tokens(args))]


def _text_turn(blocks: list[tuple[str, list[dict[str, Any]]]], prompt_tokens: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    for text, citations in blocks:
        events.append({"contentBlockDelta": {"delta": {"text": text}}})
        events.extend({"contentBlockDelta": {"delta": {"citation": c}}} for c in citations)
        events.append({"contentBlockStop": {}})
    events.append({"messageStop": {"stopReason": "end_turn"}})
    events.append(_usage(prompt_tokens, sum(approx_tokens(t) for t, _ in blocks)))
    return events


def _usage(inp: int, out: int) -> dict[str, Any]:
    return {"metadata": {"usage": {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out},
                         "metrics": {"latencyMs": 0}}}
