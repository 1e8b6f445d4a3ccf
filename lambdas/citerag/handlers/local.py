"""Run the Lambda handlers in-process, like `sam local invoke` without Docker: the event from a file, the
adapters from the components (embedded by default), a Lambda context stand-in, and the handlers' Powertools output
kept off the terminal's stdout. The local Classic agent is a runtime (citerag.runtimes.local): it answers through
what the handlers run, not through the handlers."""

from __future__ import annotations

import logging
import os
import sys
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from citerag.errors import CiteragError
from citerag.jsonfiles import read_json


@dataclass
class LocalContext:
    function_name: str = "citerag-local"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:citerag-local"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/citerag-local"
    log_stream_name: str = "local"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


def read_event(path: Path) -> dict[str, Any]:
    data = read_json(path, "event file")
    if not isinstance(data, dict):
        raise CiteragError(f"{path} does not hold a JSON object")
    return data


def quiet_lambda_output() -> None:
    """In-process handlers: no CloudWatch metric lines or INFO logs on the terminal (warnings still show)."""
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from citerag.handlers import ingest, parser, search  # noqa: F401 - their Loggers exist now, so the levels stick

    for name in ("citerag-search", "citerag-ingest", "citerag-parser"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.WARNING)
        # Warnings go to stderr: stdout is the response (`invoke --json` printed log lines before its JSON).
        for handler in logger.handlers:
            stream = getattr(handler, "stream", None)
            if isinstance(handler, logging.StreamHandler) and (
                    stream in (sys.stdout, sys.__stdout__) or getattr(stream, "name", "") == "<stdout>"):
                handler.setStream(sys.stderr)


def invoke(kind: str, event: dict[str, Any], components) -> dict[str, Any]:
    if kind == "search":
        from citerag.handlers import search

        return search.build(components)(event, LocalContext(function_name="citerag-search"))
    if kind == "ingest":
        from citerag.handlers import ingest

        return ingest.build(components)(event, LocalContext(function_name="citerag-ingest"))
    raise CiteragError(f"unknown handler {kind!r}: choose search or ingest")

