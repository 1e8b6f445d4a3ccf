"""The offline ChatModel: no LLM runs on this machine, so it writes Claude-format output from rules and the
extractive answerer. The real prompts are rendered and the real parser reads its output, so every stage of the
agent path runs. Given native tools (the prompt has a `tools` list: Claude 3.5 and later) it answers as those
models do on Bedrock, with the Messages-API response JSON (text and tool_use blocks, stop_reason); given a Claude 3
prompt, in tagged text (<function_calls>)."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from citerag.answerer import rules
from citerag.answerer.extractive import Answering, answer_language
from citerag.citations import claude_format as cf
from citerag.citations import messages_format as mf
from citerag.citations.chat import ModelOutput, approx_tokens, messages_of, tool_results_of
from citerag.citations.graders import grade
from citerag.citations.not_found import NOT_FOUND, not_found
from citerag.citations.payload import results_of
from citerag.documents.text import detect_language


class ExtractiveClaudeModel:
    model_id = "citerag/extractive"

    def __init__(self, answering: Answering | None = None) -> None:
        self.answering = answering or Answering()

    def complete(self, prompt: dict[str, Any], *, prompt_type: str, stop_sequences: list[str],
                 max_tokens: int = 2048, temperature: float = 0.0) -> ModelOutput:
        system, user, assistant = messages_of(prompt)
        native = isinstance(prompt.get("tools"), list)
        calls: list[mf.ToolUse] = []
        if prompt_type == "PRE_PROCESSING":
            text = self._classify(cf.clean(cf.inner(user, "input", allow_unclosed=True) or user))
            text = text if not native else "<thinking>" + text  # no prefill opened <thinking> for it
        elif prompt_type == "ORCHESTRATION" and native:
            text, calls = self._orchestrate_native(prompt, user)
        elif prompt_type == "ORCHESTRATION":
            text = self._orchestrate(system, user, assistant)
        elif prompt_type == "POST_PROCESSING":
            text = self._post(system)
            text = text if not native else "<thinking>" + text
        else:
            text = "<answer_part><text>" + NOT_FOUND["en"] + "</text></answer_part>"
        stopped = None
        for stop in stop_sequences:  # as the service does: output ends before the first stop sequence
            if stop in text:
                text, stopped = text[: text.index(stop)], stop
        in_tokens = approx_tokens(json.dumps(prompt, ensure_ascii=False))
        out_tokens = approx_tokens(text)
        if native:
            reason = "tool_use" if calls else "stop_sequence" if stopped else "end_turn"
            text = mf.response_json(text, calls, stop_reason=reason, model=self.model_id, stop_sequence=stopped,
                                    input_tokens=in_tokens, output_tokens=out_tokens)
        return ModelOutput(text=text, input_tokens=in_tokens, output_tokens=out_tokens)

    def _orchestrate_native(self, prompt: dict[str, Any], user: str) -> tuple[str, list[mf.ToolUse]]:
        """Native tools: the tool's name comes from the tool list, results from the tool_result blocks."""
        names = [t.get("name", "") for t in prompt["tools"] if isinstance(t, dict)]
        tool = next((n for n in names if n.endswith("__search_documents")), "citerag-search__search_documents")
        question = user.strip()
        results = tool_results_of(prompt)
        # The same decisions as the text format, then the call re-expressed as a tool_use block.
        scratchpad = "".join(f"<stdout>{r}</stdout>" for r in results)
        text = self._orchestrate("", question, scratchpad, tool=tool)
        call = cf.function_calls(text)
        if not call:
            return text, []
        thinking = text[: text.find("<function_calls>")].strip()
        n = len(results) + 1
        return thinking, [mf.ToolUse(id=f"toolu_offline_{n:02d}", name=tool, input=dict(call[0].parameters))]

    @staticmethod
    def _classify(question: str) -> str:
        rule = rules.first_match("input_classes", question.strip())
        if rule is None:
            return "The input is a question the documents may answer.</thinking>\n<category>D</category>"
        return f"{rule.why}</thinking>\n<category>{rule.category}</category>"

    def _orchestrate(self, system: str, question: str, scratchpad: str, tool: str | None = None) -> str:
        tool = tool or cf.inner(system, "tool_name") or "citerag-search::search_documents"
        results = re.findall(r"<stdout>(.*?)</stdout>", scratchpad, re.S)
        searches = len(results)
        if not results:
            return self._call(tool, question, "I will search the documents for the question.")
        try:
            body = json.loads(results[-1])
        except json.JSONDecodeError:
            body = {}
        body = body if isinstance(body, dict) else {}
        hits = results_of(body)
        lang = answer_language(question)
        passages = [p.model_copy(update={"lang": detect_language(p.text)}) for p in hits]
        if passages:
            picked = self.answering.pick(question, passages)
            if picked:
                # Document text is data: escaped, so a passage holding "</text><sources>..." cannot add an
                # answer part or cite an id of its own (the parser unescapes text it reads).
                parts = "".join(f"<answer_part><text>{_xml(p.sentence)}</text><sources><source>"
                                f"{_xml(p.source_id)}</source>"
                                f"</sources></answer_part>" for p in picked)
                return (f"<thinking>The search returned {len(hits)} passages; I answer with the sentences that "
                        f"cover the question.</thinking><answer>{parts}</answer>")
        if body.get("hint") and searches < 2:
            rewritten = " ".join(dict.fromkeys(re.findall(r"[\w\u3040-\u30ff\u4e00-\u9fff]+", question))) or question
            return self._call(tool, rewritten, "Nothing relevant was found; I retry with the key terms only.")
        message = not_found(lang, passages)  # names documents: escaped below, as any document text
        if body.get("error"):
            message = ("Document search is temporarily unavailable. Please try again later." if lang == "en"
                       else "現在ドキュメント検索を利用できません。しばらくしてからもう一度お試しください。")
        return f"<thinking>The documents do not answer this.</thinking><answer><answer_part><text>{_xml(message)}" \
               "</text></answer_part></answer>"

    @staticmethod
    def _call(tool: str, query: str, why: str) -> str:
        return (f"<thinking>{why}</thinking>\n<function_calls>\n<invoke>\n<tool_name>{tool}</tool_name>\n"
                f"<parameters>\n<query>{_xml(query)}</query>\n</parameters>\n</invoke>\n</function_calls>")

    @staticmethod
    def _post(system: str) -> str:
        question = cf.clean(cf.inner(system, "question"))
        latest = cf.inner(system, "latest_response") or ""
        responses = cf.inner(system, "responses") or ""
        passages: dict[str, str] = {}
        for line in responses.splitlines():  # one compact JSON search response per line
            passages.update({p.source_id: p.text for p in results_of(line) if p.source_id})
        parts = cf.answer(latest) or []
        g = grade(question, parts, passages)
        cited = any(p.sources for p in parts)
        grounded = g.grounded or not cited  # an uncited "not found" answer has nothing to contradict
        return (f"Grounding {g.grounding:.2f}, citation validity {g.citation_validity:.2f}.</thinking>\n"
                f"<verdict><grounded>{'yes' if grounded else 'no'}</grounded><useful>yes</useful>"
                f"<reason>{g.grounding:.0%} of cited claims are found in their passages.</reason></verdict>\n"
                f"<final_response>{latest}</final_response>")


def _xml(text: str) -> str:
    return html.escape(text, quote=False)
