"""The local Classic runtime: the InvokeAgent sequence in-process, with the same prompts, parser and action group.

pre-processing -> orchestration loop (bounded; action-group calls get what the search Lambda would answer to a
real-shaped event) -> post-processing. It yields InvokeAgent-shaped events ({"trace": ...}, {"chunk": ...})
so the same client code turns them into an Answer, whether they came from here or from the service.
`local_agent` builds it from the components: the action group and the parser as the Lambdas run them, without the
Lambdas' Powertools logging and metrics, which have no place on a terminal.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from citerag.citations import messages_format as mf
from citerag.citations import prompts as prompt_mod
from citerag.citations.chat import ChatModel
from citerag.citations.families import FAMILIES, ModelFamily
from citerag.citations.tool import (
    ACTION_GROUP,
    FUNCTION_DESCRIPTION,
    FUNCTION_NAME,
    INSTRUCTION,
    PARAMETERS,
    input_schema,
)

Handler = Callable[[dict[str, Any]], dict[str, Any]]

REJECTED = "Sorry, I cannot answer that request."


def local_agent(components, *, model: ChatModel | None = None, action_group: str = ACTION_GROUP,
                post_processing: bool = True) -> LocalAgentRuntime:
    """The local Classic runtime over the components' search tool, parser configuration and chat model."""
    from citerag.citations.parser import parse
    from citerag.runtimes.action_group import respond

    tool = components.search_tool()

    def run_search(event: dict[str, Any]) -> dict[str, Any]:
        return respond(tool, event)

    def run_parser(event: dict[str, Any]) -> dict[str, Any]:
        # Per call, as the parser Lambda does: a rotated source-id key is read on the next step.
        return parse(event, components.parser_config(action_group=action_group))

    return LocalAgentRuntime(model or components.chat_model, run_search, run_parser, prompts=components.prompts(),
                             action_group=action_group, post_processing=post_processing,
                             family=components.model_family)


class LocalAgentRuntime:
    def __init__(
        self,
        model: ChatModel,
        search_handler: Handler,
        parser_handler: Handler,
        *,
        prompts: dict[str, dict[str, Any]] | None = None,
        action_group: str = ACTION_GROUP,
        instruction: str = INSTRUCTION,
        max_iterations: int = 6,
        agent: dict[str, str] | None = None,
        post_processing: bool = True,
        family: ModelFamily | None = None,
    ) -> None:
        self.model = model
        self.search_handler = search_handler
        self.parser_handler = parser_handler
        self.action_group = action_group
        self.instruction = instruction
        self.max_iterations = max_iterations
        self.agent = agent or {"name": "citerag", "id": "LOCALAGENT", "alias": "LOCALALIAS", "version": "DRAFT"}
        self.prompts = prompts or prompt_mod.load()
        self.post_processing = post_processing
        self.family = family or FAMILIES[prompt_mod.DEFAULT_FAMILY]
        self.tools = prompt_mod.tools_xml(action_group, FUNCTION_NAME, FUNCTION_DESCRIPTION, PARAMETERS)
        # Claude 3.5 on: the agent passes tools natively, named <actionGroup>__<function> and user__askuser
        # (AWS docs, lambda-parser, "Anthropic Claude 3.5").
        self.native_tools = [
            {"name": f"{action_group}__{FUNCTION_NAME}", "description": FUNCTION_DESCRIPTION,
             "input_schema": input_schema()},
            {"name": "user__askuser", "description": "Ask the user a question when required information is missing.",
             "input_schema": {"type": "object", "properties": {"question": {"type": "string"}},
                              "required": ["question"]}},
        ]

    # --- the sequence -------------------------------------------------------------------------------------

    def invoke(self, input_text: str, *, session_id: str | None = None,
               session_attributes: dict[str, str] | None = None) -> Iterator[dict[str, Any]]:
        session_id = session_id or uuid.uuid4().hex
        session = dict(session_attributes or {})
        ctx = _Turn(self, session_id)

        pre = ctx.model_step("PRE_PROCESSING", {"$tools$": self.tools, "$question$": input_text})
        parsed = pre.parsed.get("preProcessingParsedResponse", {})
        # Each trace is a tagged union in the service model: one member per event.
        yield ctx.trace({"preProcessingTrace": {"modelInvocationInput": pre.input_trace}})
        yield ctx.trace({"preProcessingTrace": {"modelInvocationOutput": {**pre.output_trace, "parsedResponse": {
            "isValid": bool(parsed.get("isValidInput")), "rationale": parsed.get("rationale", "")}}}})
        if not parsed.get("isValidInput", False):
            yield ctx.chunk(REJECTED, [])
            return

        scratchpad = ""
        conversation: list[dict[str, Any]] = []  # native tools: tool_use and tool_result turns of this turn
        responses: list[str] = []
        final_text: str | None = None
        final_parts: list[dict[str, Any]] = []
        final_raw = ""
        for _ in range(self.max_iterations):
            step = ctx.model_step("ORCHESTRATION", {
                "$instruction$": self.instruction, "$tools$": self.tools, "$question$": input_text,
                "$agent_scratchpad$": scratchpad, "$prompt_session_attributes$": "",
                "$ask_user_missing_information$": "", "$knowledge_base_guideline$": "", "$memory_content$": ""},
                conversation=conversation)
            native = mf.decode(step.raw) if self.family.native_tools else None
            yield ctx.trace({"orchestrationTrace": {"modelInvocationInput": step.input_trace}})
            yield ctx.trace({"orchestrationTrace": {"modelInvocationOutput": step.output_trace}})
            body = step.parsed.get("orchestrationParsedResponse", {})
            if body.get("rationale"):
                yield ctx.trace({"orchestrationTrace": {"rationale": {"traceId": step.trace_id,
                                                                      "text": body["rationale"]}}})
            if "parsingErrorDetails" in body:
                hint = body["parsingErrorDetails"]["repromptResponse"]
                yield ctx.trace({"orchestrationTrace": {"observation": {
                    "traceId": step.trace_id, "type": "REPROMPT",
                    "repromptResponse": {"text": hint, "source": "PARSER"}}}})
                if native is not None:
                    conversation += _reprompt_turns(native, hint)
                else:
                    scratchpad += step.raw + f"\n<error>{hint}</error>\n"
                continue
            details = body.get("responseDetails", {})
            kind = details.get("invocationType")
            if kind == "ACTION_GROUP":
                invocations = details.get("actionGroupInvocations") or [details["actionGroupInvocation"]]
                results_xml = ""
                tool_results: list[dict[str, Any]] = []
                for inv in invocations:
                    event = self._action_event(inv, input_text, session_id, session)
                    yield ctx.trace({"orchestrationTrace": {"invocationInput": {
                        "traceId": step.trace_id, "invocationType": "ACTION_GROUP",
                        "actionGroupInvocationInput": {
                            "actionGroupName": inv["actionGroupName"], "function": inv["functionName"],
                            "parameters": event["parameters"], "executionType": "LAMBDA",
                            "invocationId": inv.get("id", "")}}}})
                    t0 = time.perf_counter()
                    resp = self.search_handler(event)
                    ms = int((time.perf_counter() - t0) * 1000)
                    fr = resp["response"]["functionResponse"]
                    text = fr["responseBody"]["TEXT"]["body"]
                    session.update(resp.get("sessionAttributes") or {})
                    responses.append(text)
                    yield ctx.trace({"orchestrationTrace": {"observation": {
                        "traceId": step.trace_id, "type": "ACTION_GROUP",
                        "actionGroupInvocationOutput": {"text": text, "metadata": {"totalTimeMs": ms}}}}})
                    results_xml += (f"<result><tool_name>{inv['actionGroupName']}::{inv['functionName']}"
                                    f"</tool_name><stdout>{text}</stdout></result>")
                    tool_results.append({"type": "tool_result", "tool_use_id": inv.get("id", ""), "content": text})
                if native is not None:
                    # Calls the parser did not pass on (message version 1.0 runs one) still get a result.
                    answered = {r["tool_use_id"] for r in tool_results}
                    tool_results += [{"type": "tool_result", "tool_use_id": u.id, "is_error": True,
                                      "content": "Not run: call one tool at a time."}
                                     for u in native.tool_uses if u.id not in answered]
                    conversation += [{"role": "assistant", "content": _blocks(native)},
                                     {"role": "user", "content": tool_results}]
                    continue
                closed = step.raw if "</function_calls>" in step.raw else step.raw + "</function_calls>"
                scratchpad += closed + f"\n<function_results>{results_xml}</function_results>\n"
                continue
            if kind == "ASK_USER":
                final_text = details["agentAskUser"]["responseText"]
                yield ctx.trace({"orchestrationTrace": {"observation": {
                    "traceId": step.trace_id, "type": "ASK_USER", "finalResponse": {"text": final_text}}}})
                break
            if kind == "FINISH":
                final = details["agentFinalResponse"]
                final_text = final["responseText"]
                final_parts = final.get("citations", {}).get("generatedResponseParts", [])
                final_raw = native.text if native is not None else step.raw
                yield ctx.trace({"orchestrationTrace": {"observation": {
                    "traceId": step.trace_id, "type": "FINISH", "finalResponse": {"text": final_text}}}})
                break
        if final_text is None:
            yield ctx.trace({"failureTrace": {"traceId": ctx.new_trace_id(), "failureCode": 500,
                                              "failureReason": f"no answer after {self.max_iterations} steps"}})
            yield ctx.chunk("I could not complete this request.", [])
            return

        if self.post_processing and final_parts:
            latest = final_raw[final_raw.find("<answer>"):] if "<answer>" in final_raw else final_text
            post = ctx.model_step("POST_PROCESSING", {"$question$": input_text, "$latest_response$": latest,
                                                     "$responses$": "\n".join(responses)})
            pp = post.parsed.get("postProcessingParsedResponse", {})
            yield ctx.trace({"postProcessingTrace": {"modelInvocationInput": post.input_trace}})
            yield ctx.trace({"postProcessingTrace": {"modelInvocationOutput": {
                **post.output_trace, "parsedResponse": {"text": pp.get("responseText", "")}}}})
            if pp.get("responseText") and pp.get("responseText") != final_text:
                final_text = pp["responseText"]
                final_parts = pp.get("citations", {}).get("generatedResponseParts", [])
        yield ctx.chunk(final_text, final_parts)

    def _action_event(self, inv: dict[str, Any], input_text: str, session_id: str,
                      session: dict[str, str]) -> dict[str, Any]:
        params = [{"name": name, "type": PARAMETERS.get(name, {}).get("type", "string"), "value": v["value"]}
                  for name, v in inv.get("actionGroupInput", {}).items()]
        return {"messageVersion": "1.0", "agent": self.agent, "inputText": input_text, "sessionId": session_id,
                "actionGroup": inv["actionGroupName"], "function": inv["functionName"], "parameters": params,
                "sessionAttributes": dict(session), "promptSessionAttributes": {}}


def _with_native_tools(prompt: dict[str, Any], tools: list[dict[str, Any]],
                       conversation: list[dict[str, Any]]) -> dict[str, Any]:
    """The request a native-tools model gets: the template's messages, this turn's tool calls and results after
    them, and the tool definitions. An empty scratchpad message is dropped (the Messages API refuses empty
    text), and no request ends with an assistant message once there is a conversation."""
    messages = [m for m in prompt.get("messages", []) if _has_text(m)]
    if conversation and messages and messages[-1].get("role") == "assistant":
        messages.pop()
    return {**prompt, "messages": messages + conversation, "tools": tools}


def _has_text(message: dict[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        return bool(content.strip())
    return any(b.get("type") != "text" or str(b.get("text", "")).strip() for b in content or [])


def _blocks(resp: mf.ModelResponse) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": resp.text}] if resp.text.strip() else []
    return blocks + [{"type": "tool_use", "id": u.id, "name": u.name, "input": u.input} for u in resp.tool_uses]


def _reprompt_turns(resp: mf.ModelResponse, hint: str) -> list[dict[str, Any]]:
    """The parser's REPROMPT as the next turn: tool calls it refused get an error result carrying the hint."""
    if resp.tool_uses:
        return [{"role": "assistant", "content": _blocks(resp)},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "is_error": True,
                                              "content": hint} for u in resp.tool_uses]}]
    said = [{"role": "assistant", "content": _blocks(resp)}] if resp.text.strip() else []
    return [*said, {"role": "user", "content": [{"type": "text", "text": f"<error>{hint}</error>"}]}]


class _Step:
    def __init__(self, trace_id: str, raw: str, parsed: dict[str, Any], input_trace: dict[str, Any],
                 output_trace: dict[str, Any]) -> None:
        self.trace_id, self.raw, self.parsed = trace_id, raw, parsed
        self.input_trace, self.output_trace = input_trace, output_trace


class _Turn:
    def __init__(self, rt: LocalAgentRuntime, session_id: str) -> None:
        self.rt = rt
        self.session_id = session_id
        self._n = 0
        self._turn = uuid.uuid4().hex[:8]

    def new_trace_id(self) -> str:
        self._n += 1
        return f"{self._turn}-{self._n}"

    def model_step(self, prompt_type: str, values: dict[str, str],
                   conversation: list[dict[str, Any]] | None = None) -> _Step:
        cfg = self.rt.prompts[prompt_type]
        prompt = prompt_mod.render(cfg["template"], values)
        if self.rt.family.native_tools and prompt_type == "ORCHESTRATION":
            prompt = _with_native_tools(prompt, self.rt.native_tools, conversation or [])
        trace_id = self.new_trace_id()
        start = datetime.now(UTC)
        t0 = time.perf_counter()
        out = self.rt.model.complete(prompt, prompt_type=prompt_type, stop_sequences=cfg["stopSequences"],
                                     max_tokens=cfg["maximumLength"], temperature=cfg["temperature"])
        ms = int((time.perf_counter() - t0) * 1000)
        parsed = self.rt.parser_handler({
            "messageVersion": "1.0", "agent": self.rt.agent, "invokeModelRawResponse": out.text,
            "promptType": prompt_type, "overrideType": "OUTPUT_PARSER"})
        input_trace = {"traceId": trace_id, "text": json.dumps(prompt, ensure_ascii=False), "type": prompt_type,
                       "foundationModel": self.rt.model.model_id, "parserMode": "OVERRIDDEN",
                       "promptCreationMode": "OVERRIDDEN",
                       "inferenceConfiguration": {"maximumLength": cfg["maximumLength"],
                                                  "stopSequences": cfg["stopSequences"],
                                                  "temperature": cfg["temperature"]}}
        output_trace = {"traceId": trace_id, "rawResponse": {"content": out.text},
                        "metadata": {"startTime": start, "endTime": datetime.now(UTC), "totalTimeMs": ms,
                                     "usage": {"inputTokens": out.input_tokens, "outputTokens": out.output_tokens}}}
        return _Step(trace_id, out.text, parsed, input_trace, output_trace)

    def trace(self, trace: dict[str, Any]) -> dict[str, Any]:
        return {"trace": {"agentId": self.rt.agent["id"], "agentAliasId": self.rt.agent["alias"],
                          "agentVersion": self.rt.agent["version"], "sessionId": self.session_id,
                          "eventTime": datetime.now(UTC), "trace": trace}}

    def chunk(self, text: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
        citations = []
        cursor = 0
        for p in parts:
            start = text.find(p["text"], cursor)
            if start < 0:
                continue
            end = start + len(p["text"])
            cursor = end
            # Action groups produce no retrievedReferences (only knowledge bases do), exactly as in the service.
            citations.append({"generatedResponsePart": {"textResponsePart": {
                "text": p["text"], "span": {"start": start, "end": end - 1}}}, "retrievedReferences": []})
        chunk: dict[str, Any] = {"bytes": text.encode("utf-8")}
        if citations:
            chunk["attribution"] = {"citations": citations}
        return {"chunk": chunk}
