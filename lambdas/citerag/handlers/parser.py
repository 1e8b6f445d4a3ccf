"""Lambda: output parser for the overridden advanced prompts (all prompt types, message versions 1.0 and 2.0)."""

from __future__ import annotations

import json
import os
from typing import Any

from aws_lambda_powertools import Logger

from citerag.agent.parser import ParserConfig, parse

logger = Logger(service="citerag-parser")


def _config() -> ParserConfig:
    return ParserConfig(
        source_id_key=os.environ.get("CITERAG_SOURCE_ID_KEY", "citerag-local"),
        action_group=os.environ.get("CITERAG_ACTION_GROUP") or None,
        preprocessing_fail_closed=os.environ.get("CITERAG_PREPROCESSING_FAIL_CLOSED", "false").lower() == "true",
        pii_allow=[v for v in os.environ.get("CITERAG_PII_ALLOW", "").split(",") if v.strip()],
        pii_extra=json.loads(os.environ.get("CITERAG_PII_EXTRA", "{}") or "{}"),
    )


CONFIG = _config()


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = parse(event, CONFIG)
    body = next((v for k, v in result.items() if k.endswith("ParsedResponse")), {})
    logger.info("parsed", extra={"prompt_type": result.get("promptType"),
                                 "reprompt": "parsingErrorDetails" in body,
                                 "invocation": (body.get("responseDetails") or {}).get("invocationType")})
    return result
