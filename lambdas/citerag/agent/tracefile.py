"""Saved traces (`citerag ask --save-trace FILE`): InvokeAgent events as JSON, readable by `citerag trace`."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from citerag.errors import CiteragError
from citerag.jsonfiles import read_json
from citerag.testing.eventstream import jsonable

FORMAT = "citerag-trace/1"


def save(path: Path, *, question: str, agent: str, events: list[dict[str, Any]]) -> None:
    data = {"format": FORMAT, "saved_at": datetime.now(UTC).isoformat(), "agent": agent, "question": question,
            "events": jsonable(events)}
    Path(path).write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


def load(path: Path) -> dict[str, Any]:
    data = read_json(path, "trace file")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CiteragError(f"{path} is not a citerag trace file (expected format {FORMAT})")
    for ev in data.get("events", []):
        if "chunk" in ev and isinstance(ev["chunk"].get("bytes"), str):
            ev["chunk"]["bytes"] = base64.b64decode(ev["chunk"]["bytes"])
    return data
