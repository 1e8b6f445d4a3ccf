"""Wiring of the local agent runtime: the real search handler and parser, and the model the settings pick."""

from __future__ import annotations

import os
from typing import Any

from citerag.agent.models import BedrockConverseModel, ChatModel, ExtractiveClaudeModel
from citerag.agent.parser import ParserConfig, parse
from citerag.agent.runtime import LocalAgentRuntime


def choose_model(model_id: str | None) -> ChatModel:
    """Bedrock Converse when a model id and AWS credentials are configured; otherwise the embedded model."""
    if model_id and (os.environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("AWS_PROFILE")):
        from citerag import aws

        return BedrockConverseModel(aws.client("bedrock-runtime", read_timeout=60), model_id)
    return ExtractiveClaudeModel()


def quiet_lambda_output() -> None:
    """In-process handlers: no CloudWatch metric lines or INFO logs on the terminal (warnings still show)."""
    import logging
    import warnings

    warnings.filterwarnings("ignore", message="No application metrics to publish")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from citerag.handlers import ingest, search  # noqa: F401 - their Loggers exist now, so the levels stick

    for name in ("citerag-search", "citerag-ingest", "citerag-parser"):
        logging.getLogger(name).setLevel(logging.WARNING)


def build_runtime(components, *, model: ChatModel | None = None, action_group: str = "citerag-search",
                  post_processing: bool = True) -> LocalAgentRuntime:
    quiet_lambda_output()
    from citerag.handlers import search as search_handler
    from citerag.handlers.local import LocalContext

    search_handler._components = components
    settings = components.settings
    cfg = ParserConfig(source_id_key=settings.source_id_key, action_group=action_group)

    def search(event: dict[str, Any]) -> dict[str, Any]:
        return search_handler.handler(event, LocalContext(function_name="citerag-search"))

    def parser(event: dict[str, Any]) -> dict[str, Any]:
        return parse(event, cfg)

    return LocalAgentRuntime(model or choose_model(settings.chat_model_id), search, parser,
                             action_group=action_group, post_processing=post_processing)
