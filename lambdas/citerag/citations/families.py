"""Model families as data: which prompt set, placeholders, inference parameters and output format a model gets.

The agent's prompts, parser and local runtime differ by model generation, not by model: Claude 3 reads tools as
XML in the prompt and answers in tagged text; from Claude 3.5 on, the agent passes tools natively and the parser
receives the Messages-API response JSON; Claude Sonnet 4.5 / Haiku 4.5 / Opus 4.5 and later reject `temperature`
and `top_p` together; Claude 4.6 and later reject a conversation that ends with an assistant message (prefill).
Sources: AWS docs advanced-prompts-templates (the Claude 3 and "Claude 3.5 Sonnet" orchestration examples),
prompt-placeholders (the table), lambda-parser ("Anthropic Claude 3.5" tab); the temperature/top_p rejection:
Bedrock's ValidationException "`temperature` and `top_p` cannot both be specified for this model" (reported for
Sonnet 4.5, Haiku 4.5, Opus 4.5, Sonnet 4.6); prefill: Anthropic's migration guide for 4.6 ("Prefilling assistant
messages returns a 400 error"). The table stops at Claude 3.5 Sonnet; `tests/test_families.py` holds it to the
templates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

# Sonnet 4.6: the newest Claude model with an InvokeModel/Converse id (what Agents Classic and Strands' BedrockModel
# call), retirement not before 2027-02-17; Sonnet 4.5 has been Legacy since 2026-10-08. A deployment puts the
# profile of its region in front (infra/regions.py); the embedded runtime's default is the Japan profile.
DEFAULT_BASE_MODEL = "anthropic.claude-sonnet-4-6"
DEFAULT_MODEL_ID = f"jp.{DEFAULT_BASE_MODEL}"


@dataclass(frozen=True)
class ClaudeOnBedrock:
    """One Claude model as Bedrock serves it, and which of citerag's runtimes can use it.

    `profiles`: the cross-region profiles Anthropic's table lists for it. `classic`: a foundation model Agents Classic
    accepts (an ARN-versioned id reachable through InvokeModel/Converse). `api`: how citerag calls it: "converse"
    (Bedrock Converse, Strands' BedrockModel) or "messages" (only on Bedrock's Messages-API endpoint:
    adapters/messages_api.py). `sampling`: the model accepts `temperature` (Opus 4.7 answers 400 "`temperature` is
    deprecated for this model": Anthropic's migration guide, "Migrating to Claude Opus 4.7", sampling parameters
    removed)."""
    name: str
    bedrock_id: str
    profiles: frozenset[str]
    classic: bool
    api: Literal["converse", "messages"]
    legacy: bool = False
    sampling: bool = True


# Sources, read 2026-11 (docs/models-and-regions.md): Anthropic's "Models overview" (AWS Bedrock IDs: Opus 4.7
# `anthropic.claude-opus-4-7` on the Messages-API endpoint, Sonnet 4.6) and "Claude on Amazon Bedrock
# (legacy)" (the profile table: Opus 4.6 global/us/eu/jp/apac, Sonnet 4.6 and 4.5 global/us/eu/jp, Opus 4.5
# global/us/eu; "Claude Opus 4.7 ... does not have an ARN-versioned model ID"); AWS's agents-supported page ("Amazon
# Bedrock Agents supports all models supported by Amazon Bedrock", i.e. those with a Bedrock model id); AWS's
# inference-messages-api page (the Messages API on bedrock-runtime `/anthropic` and bedrock-mantle).
MODELS: tuple[ClaudeOnBedrock, ...] = (
    # Not in the legacy table (no ARN-versioned id): which profiles serve it is not in these sources.
    ClaudeOnBedrock("Claude Opus 4.7", "anthropic.claude-opus-4-7", frozenset(), classic=False, api="messages",
                    sampling=False),
    ClaudeOnBedrock("Claude Opus 4.6", "anthropic.claude-opus-4-6-v1", frozenset({"global", "us", "eu", "jp", "apac"}),
                    classic=True, api="converse"),
    ClaudeOnBedrock("Claude Sonnet 4.6", DEFAULT_BASE_MODEL, frozenset({"global", "us", "eu", "jp"}),
                    classic=True, api="converse"),
    ClaudeOnBedrock("Claude Opus 4.5", "anthropic.claude-opus-4-5-20251101-v1:0", frozenset({"global", "us", "eu"}),
                    classic=True, api="converse"),
    ClaudeOnBedrock("Claude Sonnet 4.5", "anthropic.claude-sonnet-4-5-20250929-v1:0",
                    frozenset({"global", "us", "eu", "jp"}), classic=True, api="converse", legacy=True),
)


def bedrock_model(model_id: str) -> ClaudeOnBedrock | None:
    """The table's row for a model id, inference-profile id or ARN; None for a model the table does not list."""
    base = base_model_id(model_id)
    return next((m for m in MODELS if m.bedrock_id == base), None)


@dataclass(frozen=True)
class ModelFamily:
    name: str  # also the template folder under citations/templates/
    native_tools: bool  # tools passed as tool definitions; raw output is Messages-API JSON
    assistant_prefill: bool  # the model accepts a conversation ending with an assistant message
    placeholders: dict[str, frozenset[str]]  # per prompt type: the only placeholders its templates may use
    description: str


_CLAUDE3 = {
    "PRE_PROCESSING": frozenset({"$tools$", "$question$"}),
    "ORCHESTRATION": frozenset({"$instruction$", "$tools$", "$question$", "$agent_scratchpad$",
                                "$prompt_session_attributes$", "$ask_user_missing_information$",
                                "$knowledge_base_guideline$", "$memory_content$"}),
    "KNOWLEDGE_BASE_RESPONSE_GENERATION": frozenset({"$search_results$", "$query$"}),
    "POST_PROCESSING": frozenset({"$question$", "$latest_response$", "$responses$"}),
}
# From 3.5 on: no $tools$ (tools go natively), no ask-user or memory placeholders (listed for Claude 3 only);
# knowledge-base generation gets $query$ and $search_results$, never $question$.
_MESSAGES = {
    "PRE_PROCESSING": frozenset({"$question$"}),
    "ORCHESTRATION": frozenset({"$instruction$", "$question$", "$agent_scratchpad$", "$prompt_session_attributes$"}),
    "KNOWLEDGE_BASE_RESPONSE_GENERATION": frozenset({"$search_results$", "$query$"}),
    "POST_PROCESSING": frozenset({"$question$", "$latest_response$", "$responses$"}),
}

FAMILIES = {
    "claude3": ModelFamily("claude3", False, True, _CLAUDE3,
                           "Claude 3 (Haiku, Sonnet, Opus): tools as XML in the prompt, tagged text output"),
    "claude45": ModelFamily("claude45", True, True, _MESSAGES,
                            "Claude 3.5 to 4.5 (Haiku 4.5, Sonnet 4.5, Opus 4.5): native tools, Messages JSON "
                            "output, temperature without top_p"),
    "claude46": ModelFamily("claude46", True, False, _MESSAGES,
                            "Claude 4.6 and later (Sonnet 4.6, Opus 4.6): as 4.5, and every prompt ends with a "
                            "user message (no assistant prefill)"),
}

# (pattern on the model id without its profile prefix, family); first match wins.
_RULES = [
    (re.compile(r"anthropic\.claude-3-(haiku|sonnet|opus)"), "claude3"),
    (re.compile(r"anthropic\.claude-(3-5|3-7)-"), "claude45"),
    (re.compile(r"anthropic\.claude-(sonnet|opus|haiku)-4(-[0-5])?(-\d{8})?(-v\d+)?(:\d+)?$"), "claude45"),
    (re.compile(r"anthropic\.claude-(sonnet|opus|haiku|fable)-\d"), "claude46"),
]
PROFILE_PREFIXES = ("global.", "us.", "eu.", "jp.", "apac.", "au.", "ca.", "us-gov.")


def base_model_id(model_id: str) -> str:
    """The foundation-model id behind an id or ARN: profile prefix and ARN path removed."""
    mid = model_id.rsplit("/", 1)[-1]
    for prefix in PROFILE_PREFIXES:
        if mid.startswith(prefix):
            return mid[len(prefix):]
    return mid


def family_for(model_id: str) -> ModelFamily:
    base = base_model_id(model_id)
    for pattern, name in _RULES:
        if pattern.search(base):
            return FAMILIES[name]
    raise ValueError(
        f"no prompt set for the model {model_id!r}; supported: Claude 3, Claude 3.5-4.5 and Claude 4.6 and later "
        f"(for example {DEFAULT_MODEL_ID}). Another model needs its own templates and parser rules.")
