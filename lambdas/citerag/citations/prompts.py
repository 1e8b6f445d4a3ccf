"""The overridden advanced-prompt templates (citations/templates/<family>/): loading, and rendering the way
Bedrock fills placeholders. The templates ship inside the package, so the CDK stack, the parser Lambda and the
local runtimes all read the same files."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from citerag.citations.families import DEFAULT_MODEL_ID, family_for
from citerag.errors import CiteragError

TEMPLATES = Path(__file__).resolve().parent / "templates"
DEFAULT_FAMILY = family_for(DEFAULT_MODEL_ID).name
_PLACEHOLDER = re.compile(r"\$[a-z_]+\$")

PROMPT_TYPES = ("PRE_PROCESSING", "ORCHESTRATION", "KNOWLEDGE_BASE_RESPONSE_GENERATION", "POST_PROCESSING")
MAX_TEMPLATE_CHARS = 100_000
MAX_STOP_SEQUENCES = 4


def prompts_dir(family: str = DEFAULT_FAMILY) -> Path:
    return TEMPLATES / family


@lru_cache(maxsize=8)
def load(folder: str | None = None) -> dict[str, dict[str, Any]]:
    """{promptType: {template: str, stopSequences, temperature, maximumLength, placeholders}}"""
    root = Path(folder) if folder else prompts_dir()
    if not (root / "config.json").is_file():
        raise CiteragError(f"{root} holds no prompt templates (config.json is missing)")
    config = json.loads((root / "config.json").read_text(encoding="utf-8"))
    out = {}
    for ptype, cfg in config.items():
        out[ptype] = {**cfg, "template": (root / cfg["file"]).read_text(encoding="utf-8")}
    return out


def render(template: str, values: dict[str, str]) -> dict[str, Any]:
    """Substitute $placeholders$ inside the JSON template's strings (values JSON-escaped) and parse it.

    One pass over the template: a value is never searched for placeholders again, so a document or question
    containing `$responses$` or `$instruction$` stays text (substituting one name after another let a search
    result rewrite the prompt). Placeholders without a value are left as they are."""
    escaped = {name: json.dumps(value, ensure_ascii=False)[1:-1] for name, value in values.items()}
    return json.loads(_PLACEHOLDER.sub(lambda m: escaped.get(m.group(0), m.group(0)), template))


def tools_xml(action_group: str, function: str, description: str, parameters: dict[str, dict[str, Any]]) -> str:
    """How the agent presents a function-details action group to Claude 3 models."""
    params = "".join(
        f"<parameter><name>{name}</name><type>{p['type']}</type><description>{p['description']}</description>"
        f"<is_required>{str(p.get('required', False)).lower()}</is_required></parameter>"
        for name, p in parameters.items()
    )
    return (f"<tool_description><tool_name>{action_group}::{function}</tool_name><description>{description}"
            f"</description><parameters>{params}</parameters></tool_description>"
            "<tool_description><tool_name>user::askuser</tool_name><description>Ask the user a question when "
            "required information is missing.</description><parameters><parameter><name>question</name><type>string"
            "</type><description>The question to ask</description><is_required>true</is_required></parameter>"
            "</parameters></tool_description>")
