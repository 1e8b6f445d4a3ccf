"""Saved traces (`citerag ask --save-trace FILE`): InvokeAgent events as JSON, readable by `citerag trace`."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from citerag.errors import CiteragError
from citerag.jsonfiles import read_json

FORMAT = "citerag-trace/1"


def jsonable(value: Any) -> Any:
    """InvokeAgent events as JSON, the way the service's rest-json event payloads encode them: blobs base64,
    timestamps ISO 8601."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value


def save(path: Path, *, question: str, agent: str, events: list[dict[str, Any]]) -> None:
    data = {"format": FORMAT, "saved_at": datetime.now(UTC).isoformat(), "agent": agent, "question": question,
            "events": jsonable(events)}
    try:
        Path(path).write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    except OSError as exc:
        raise CiteragError(f"cannot write the trace to {path} ({exc.strerror or type(exc).__name__})") from None


def load(path: Path) -> dict[str, Any]:
    data = read_json(path, "trace file")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CiteragError(f"{path} is not a citerag trace file (expected format {FORMAT})")
    events = data.get("events", [])
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise CiteragError(f"{path} is not a readable citerag trace file: its events are not a list of objects")
    for ev in data.get("events", []):
        chunk = ev.get("chunk")
        if chunk is not None and not isinstance(chunk, dict):
            raise CiteragError(f"{path} is not a readable citerag trace file: a chunk event is not an object")
        if chunk and isinstance(chunk.get("bytes"), str):
            try:
                chunk["bytes"] = base64.b64decode(chunk["bytes"], validate=True)
            except ValueError:
                raise CiteragError(f"{path} is not a readable citerag trace file: a chunk's bytes are not "
                                   "base64") from None
    return data
