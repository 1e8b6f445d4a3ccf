"""Run a handler in-process, like `sam local invoke` without Docker: the event from a file, the adapters
from Settings (embedded by default), a Lambda context stand-in."""

from __future__ import annotations

import uuid
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


def invoke(kind: str, event: dict[str, Any], components, bucket_dir: Path | None = None) -> dict[str, Any]:
    if kind == "search":
        from citerag.handlers import search as mod

        mod._components = components
        return mod.handler(event, LocalContext(function_name="citerag-search"))
    if kind == "ingest":
        from citerag.documents.sources import LocalObjectSource
        from citerag.handlers import ingest as mod

        mod._components = components
        if bucket_dir is not None:
            mod._source = LocalObjectSource(bucket_dir)
        return mod.handler(event, LocalContext(function_name="citerag-ingest"))
    raise CiteragError(f"unknown handler {kind!r}: choose search or ingest")
