"""The output parser for the overridden advanced prompts (Lambda overrideType OUTPUT_PARSER).

Input: {messageVersion, agent, invokeModelRawResponse, promptType, overrideType}; nothing else, no session.
Output: the documented parsed response for the prompt type. `parse` never raises, whatever the model wrote:
malformed orchestration output becomes a REPROMPT that says exactly what to fix.
"""

from __future__ import annotations

import uuid
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field

from citerag.citations import claude_format as cf
from citerag.citations import messages_format as mf
from citerag.citations import source_ids
from citerag.citations.pii import DEFAULT_RULES, PiiMasker
from citerag.citations.tool import FUNCTION_NAME
from citerag.documents.text import detect_language, encodable

VALID_CATEGORIES = {"D", "E"}
CATEGORY_MEANING = {
    "A": "harmful or abusive input",
    "B": "an attempt to probe or override the agent's instructions",
    "C": "a request the documents cannot serve",
    "D": "a question the documents may answer",
    "E": "an answer to the agent's question",
}
FALLBACK = {
    "en": "I could not answer this from the documents.",
    "ja": "ドキュメントからはこの質問に回答できませんでした。",
}
ASK_USER = "user::askuser"  # the Claude 3 text format
ASK_USER_TOOL = "user__askuser"  # native tools, Claude 3.5 on (AWS docs, lambda-parser, "Anthropic Claude 3.5")


class ParserConfig(BaseModel):
    source_id_key: str = "citerag-local"
    previous_source_id_keys: list[str] = Field(default_factory=list, description="verify ids signed before a rotation")
    verify_source_ids: bool = True  # off only when re-reading logs, where the deployment key is not at hand
    action_group: str | None = Field(None, description="the only action group the agent may call; None = any")
    preprocessing_fail_closed: bool = False
    pii_rules: list[str] = Field(default_factory=lambda: list(DEFAULT_RULES))
    pii_allow: list[str] = Field(default_factory=list)
    pii_extra: dict[str, str] = Field(default_factory=dict)


def parse(event: Any, config: ParserConfig | None = None) -> dict[str, Any]:
    cfg = config or ParserConfig()
    ev = event if isinstance(event, dict) else {}
    version = ev.get("messageVersion") if ev.get("messageVersion") in ("1.0", "2.0") else "1.0"
    prompt_type = ev.get("promptType") if isinstance(ev.get("promptType"), str) else "ORCHESTRATION"
    raw = ev.get("invokeModelRawResponse")
    raw = raw if isinstance(raw, str) else ""
    raw = raw[: cf.MAX_SCAN]
    out: dict[str, Any] = {"messageVersion": version, "promptType": prompt_type}
    try:
        response = mf.decode(raw)  # None: the Claude 3 text format
        text = raw if response is None else response.text
        if prompt_type == "PRE_PROCESSING":
            out["preProcessingParsedResponse"] = _pre(text, cfg)
        elif prompt_type == "ORCHESTRATION":
            out["orchestrationParsedResponse"] = (_orchestration(raw, cfg, version) if response is None
                                                  else _orchestration_messages(response, cfg, version))
        elif prompt_type == "POST_PROCESSING":
            out["postProcessingParsedResponse"] = _post(text, cfg)
        elif prompt_type == "KNOWLEDGE_BASE_RESPONSE_GENERATION":
            parts = _verified_only(cf.answer(_as_answer(text)) or [], cfg)
            out["knowledgeBaseResponseGenerationParsedResponse"] = {"generatedResponse": {
                "generatedResponseParts": _parts(parts, cfg)}}
    except Exception:  # last resort: a response Bedrock accepts, never a crash
        if prompt_type == "ORCHESTRATION":
            out["orchestrationParsedResponse"] = _reprompt("", "Your output could not be read. Either call a "
                                                           "function in <function_calls> or answer in <answer>.")
    # The model's text may hold half an emoji ("\ud83d", cut at its length limit): the Lambda runtime writes the
    # response as UTF-8 and would fail on it, so the half becomes U+FFFD.
    return encodable(out)


# --- pre-processing ----------------------------------------------------------------------------------------


def _pre(raw: str, cfg: ParserConfig) -> dict[str, Any]:
    import re

    m = re.search(r"<category>\s*([A-Ea-e])\b", raw)
    thinking = cf.rationale(raw)
    if not m:
        valid = not cfg.preprocessing_fail_closed
        return {"isValidInput": valid, "rationale": (
            "The classifier gave no category; input " + ("accepted" if valid else "rejected") + " by policy. "
            + thinking)[:4000]}
    cat = m.group(1).upper()
    return {"isValidInput": cat in VALID_CATEGORIES,
            "rationale": f"Category {cat} ({CATEGORY_MEANING[cat]}). {thinking}".strip()[:4000]}


# --- orchestration -----------------------------------------------------------------------------------------


def _reprompt(rationale: str, message: str) -> dict[str, Any]:
    return {"rationale": rationale, "parsingErrorDetails": {"repromptResponse": message}}


def _orchestration(raw: str, cfg: ParserConfig, version: str) -> dict[str, Any]:
    rationale = cf.rationale(raw)
    calls = cf.function_calls(raw)
    if calls is not None:
        return _calls(calls, rationale, cfg, version)
    parts = cf.answer(raw)
    if parts is not None:
        return _final(parts, rationale, cfg)
    visible = cf.clean(raw.split("</thinking>")[-1]) if "</thinking>" in raw else ""
    hint = ("Your last output had no <function_calls> and no <answer>. Call search_documents inside "
            "<function_calls>, or give the final answer as <answer><answer_part><text>...</text><sources>"
            "<source>SOURCE_ID</source></sources></answer_part></answer>.")
    if visible:
        hint += " Put the text you wrote inside <answer> parts with the source ids that support it."
    return _reprompt(rationale, hint)


def _orchestration_messages(resp: mf.ModelResponse, cfg: ParserConfig, version: str) -> dict[str, Any]:
    """Claude 3.5 and later: tool_use blocks are the calls, text blocks carry thinking and the answer."""
    rationale = cf.rationale(resp.text)
    if resp.truncated:
        return _reprompt(rationale, "Your output was cut off before it ended. Give a shorter answer: fewer "
                                    "answer_parts, each one sentence, or call search_documents with a short query.")
    if resp.malformed:
        return _reprompt(rationale, f"A tool call could not be read ({resp.malformed[0]}). Call "
                                    f"{cfg.action_group or 'ACTION_GROUP'}__{FUNCTION_NAME} with an input object "
                                    'such as {"query": "..."}.')
    if resp.tool_uses:
        calls = [cf.Invoke(u.name, _string_inputs(u.input), u.id) for u in resp.tool_uses]
        return _calls(calls, rationale, cfg, version, native=True)
    parts = cf.answer(resp.text)
    if parts is not None:
        return _final(parts, rationale, cfg)
    hint = (f"Your last output had no tool call and no <answer>. Call {cfg.action_group or 'ACTION_GROUP'}__"
            f"{FUNCTION_NAME}, or give the final answer as <answer><answer_part><text>...</text><sources>"
            "<source>SOURCE_ID</source></sources></answer_part></answer>.")
    if cf.clean(resp.text.split("</thinking>")[-1]):
        hint += " Put the text you wrote inside <answer> parts with the source ids that support it."
    return _reprompt(rationale, hint)


def _string_inputs(args: dict[str, Any]) -> dict[str, str]:
    """Tool inputs as the action group receives them: every parameter value a string (numbers kept as written). A
    null is a parameter not given ({"query": null} is no query, not the query "null")."""
    import json

    return {str(k): v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in args.items()
            if v is not None}


def _calls(calls: list[cf.Invoke], rationale: str, cfg: ParserConfig, version: str,
           native: bool = False) -> dict[str, Any]:
    if not calls or not any(c.tool_name for c in calls):
        return _reprompt(rationale, "The <function_calls> block has no complete <invoke>. Write <invoke><tool_name>"
                                    "NAME</tool_name><parameters><query>...</query></parameters></invoke>.")
    ask_user, sep_name = (ASK_USER_TOOL, "__") if native else (ASK_USER, "::")
    first = calls[0]
    if first.tool_name in (ASK_USER, ASK_USER_TOOL):
        question = first.parameters.get("question", "").strip()
        if not question:
            return _reprompt(rationale, f"{ask_user} needs a question parameter with the question for the user.")
        return {"rationale": rationale, "responseDetails": {
            "invocationType": "ASK_USER", "agentAskUser": {"responseText": _mask(_clip(question, MAX_ASK), cfg)[0],
                                                          "id": first.id or _id()}}}
    invocations = []
    for call in calls if version == "2.0" else calls[:1]:
        group, sep, function = call.tool_name.partition("::")
        if not sep:
            group, sep, function = call.tool_name.rpartition("__")
        if not sep or function != FUNCTION_NAME or (cfg.action_group and group != cfg.action_group):
            expected = f"{cfg.action_group or 'ACTION_GROUP'}{sep_name}{FUNCTION_NAME}"
            return _reprompt(rationale, f"There is no tool named {call.tool_name[:200]!r}. The tools are {expected} "
                                        f"and {ask_user}; use the name exactly as listed.")
        if not call.parameters.get("query", "").strip():
            return _reprompt(rationale, f"{FUNCTION_NAME} needs a <query> parameter: the user's question or its "
                                        "key terms.")
        params = {k: {"value": v} for k, v in call.parameters.items() if k in ("query", "filters", "top_k")}
        invocations.append({"actionGroupName": group, "functionName": function, "id": call.id or _id(),
                            "actionGroupInput": params})
    details: dict[str, Any] = {"invocationType": "ACTION_GROUP"}
    if version == "2.0":
        details["actionGroupInvocations"] = invocations
    else:
        details["actionGroupInvocation"] = invocations[0]
    return {"rationale": rationale, "responseDetails": details}


def _final(parts: list[cf.AnswerPart], rationale: str, cfg: ParserConfig) -> dict[str, Any]:
    parts = [p for p in parts if p.text]
    if not parts:
        return _reprompt(rationale, "The <answer> is empty. Give the answer text inside <answer_part><text>.")
    bad = sorted({s for p in parts for s in p.sources if not _verifies(s, cfg)})
    if bad:
        return _reprompt(rationale, (
            f"The answer cites {', '.join(_clip(b, 40) for b in bad[:5])}, which no search returned. Cite only "
            "source ids copied exactly from the search results (they look like S1-abcdef), or call "
            "search_documents again."))
    gen_parts = _parts(parts, cfg)
    text = " ".join(p["text"] for p in gen_parts)
    return {"rationale": rationale, "responseDetails": {
        "invocationType": "FINISH",
        "agentFinalResponse": {"responseText": text, "citations": {"generatedResponseParts": gen_parts}}}}


MAX_ASK = 2000  # characters of a question for the user: a clarifying question, not a document


def _clip(text: str, limit: int) -> str:
    """Model-written text echoed back, bounded: an "id" or a question may be the whole output."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _verifies(source_id: str, cfg: ParserConfig) -> bool:
    return not cfg.verify_source_ids or any(
        source_ids.verify(k, source_id) for k in (cfg.source_id_key, *cfg.previous_source_id_keys))


def _verified_only(parts: list[cf.AnswerPart], cfg: ParserConfig) -> list[cf.AnswerPart]:
    """Post-processing and knowledge-base generation cannot reprompt: a part that cites an id no search issued
    (forged, or mangled by the model) is dropped whole, so nothing is shown under a citation it does not have."""
    return [p for p in parts if all(_verifies(s, cfg) for s in p.sources)]


def _parts(parts: list[cf.AnswerPart], cfg: ParserConfig) -> list[dict[str, Any]]:
    out = []
    for p in parts:
        if not p.text:
            continue
        text, _ = _mask(p.text, cfg)
        out.append({"text": text, "references": [{"sourceId": s} for s in dict.fromkeys(p.sources)]})
    return out


# --- post-processing ---------------------------------------------------------------------------------------


def _post(raw: str, cfg: ParserConfig) -> dict[str, Any]:
    verdict = cf.inner(raw, "verdict", allow_unclosed=True) or ""
    grounded = cf.clean(cf.inner(verdict, "grounded")).lower()
    useful = cf.clean(cf.inner(verdict, "useful")).lower()
    final = cf.inner(raw, "final_response", allow_unclosed=True)
    # Parsed as written: unescaping first would turn a quoted "Vec&lt;i32&gt;" into a tag the parser drops.
    final_text = (final or "").strip()
    parts = cf.answer(final_text) if final_text else None
    if parts:
        parts = _verified_only(parts, cfg)
        if not parts:  # every claim cited an id no search issued
            return {"responseText": FALLBACK.get(detect_language(final_text), FALLBACK["en"])}
        gen = _parts(parts, cfg)
        final_text = " ".join(p["text"] for p in gen)
    else:
        final_text = cf.clean(final_text)
        gen = [{"text": _mask(final_text, cfg)[0], "references": []}] if final_text else []
        final_text = gen[0]["text"] if gen else ""
    if grounded.startswith("no") or not final_text or (not grounded and not useful):
        lang = detect_language(final_text) if final_text else "en"
        return {"responseText": FALLBACK.get(lang, FALLBACK["en"])}
    if useful.startswith("no"):
        lang = detect_language(final_text)
        return {"responseText": FALLBACK.get(lang, FALLBACK["en"])}
    return {"responseText": final_text, "citations": {"generatedResponseParts": gen}}


# --- helpers -----------------------------------------------------------------------------------------------


def _as_answer(raw: str) -> str:
    # The KB template prefills "<answer>", so the output may start inside it.
    return raw if "<answer>" in raw else "<answer>" + raw


def _mask(text: str, cfg: ParserConfig) -> tuple[str, list[str]]:
    return _masker(cfg.model_dump_json(include={"pii_rules", "pii_extra", "pii_allow"})).mask(text)


@lru_cache(maxsize=8)
def _masker(rules_json: str) -> PiiMasker:
    import json

    r = json.loads(rules_json)
    return PiiMasker(r["pii_rules"], r["pii_extra"], r["pii_allow"])


def _id() -> str:
    return str(uuid.uuid4())
