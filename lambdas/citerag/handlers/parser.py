"""Lambda: output parser for the overridden advanced prompts (all prompt types, message versions 1.0 and 2.0).

Thin: the parsing rules live in citerag.citations.parser; the configuration comes from the components."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from citerag.citations.parser import parse
from citerag.handlers.entry import Handler, from_settings

logger = Logger(service="citerag-parser")



def build(components, **config_overrides) -> Handler:
    @logger.inject_lambda_context(clear_state=True)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        # Per invocation: the source-id keys come from a cached secret, so a rotation reaches this container.
        result = parse(event, components.parser_config(**config_overrides))
        body = next((v for k, v in result.items() if k.endswith("ParsedResponse")), {})
        logger.info("parsed", extra={"prompt_type": result.get("promptType"),
                                     "reprompt": "parsingErrorDetails" in body,
                                     "invocation": (body.get("responseDetails") or {}).get("invocationType")})
        return result

    return handler


# The Lambda entry point (the function's Handler setting).
handler = from_settings(build)
