"""The deployed Lambda entry point for a handler builder: components from CITERAG_* settings, built on the first
invocation (not at import, to keep cold starts short) and reused by every later invocation of the container."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def from_settings(build: Callable[[Any], Handler]) -> Handler:
    built: Handler | None = None

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        nonlocal built
        if built is None:
            from citerag.components import Components
            from citerag.settings import Settings

            built = build(Components(Settings()))
        return built(event, context)

    return handler
