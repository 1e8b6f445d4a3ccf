"""Lambda: the `search_documents` action group (Bedrock Agents Classic, function-details schema).

Thin: Powertools' logging, tracing and metrics around citerag.runtimes.action_group, which checks and reads the
event, lets SearchTool (citerag.citations) decide and builds every response, results and errors alike. Heavy
modules (numpy, boto3, pinecone) load with the components, on the first invocation, not at import, to keep cold
starts short; so do the response builder and the payload code (Powertools' event_handler package, pydantic with
the passage model, the search core), which only an invocation uses.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics

from citerag.handlers.entry import Handler, from_settings
from citerag.handlers.tracing import tracer as make_tracer
from citerag.runtimes.action_group import reply

logger = Logger(service="citerag-search")
tracer = make_tracer("citerag-search")  # the X-Ray SDK only when tracing is on
metrics = Metrics(namespace="citerag", service="citerag-search")


def _count(name: str) -> None:
    # Only inside Lambda: run in-process (citerag invoke, tests) metrics would pile up and print EMF lines.
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        from aws_lambda_powertools.metrics import MetricUnit

        metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


def build(components) -> Handler:
    """The handler over these components' search tool (one tool and thread pool per container)."""
    tool = components.search_tool()

    @logger.inject_lambda_context(correlation_id_path="sessionId", clear_state=True)
    @tracer.capture_lambda_handler(capture_response=False)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        response, result = reply(tool, event, log=logger)
        if result is not None:
            _count(f"Search_{result.outcome}")
            logger.info("search_documents", extra={"outcome": result.outcome, "results": len(result.kept),
                                                   "response_state": result.state})
        return response

    return handler


# The Lambda entry point (the function's Handler setting).
handler = from_settings(build)
