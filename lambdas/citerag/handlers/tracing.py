"""The handlers' tracer: Powertools' Tracer when tracing is on, otherwise a stand-in with the same decorators.

Powertools' Tracer imports the X-Ray SDK (and patches botocore) even when it is disabled, which costs a cold start
as much CPU as everything else a search handler imports. Tracing is off where Powertools itself turns it off
(POWERTOOLS_TRACE_DISABLED, or outside Lambda, or under SAM local / Chalice: aws_lambda_powertools.tracing.Tracer
._is_tracer_disabled), and there the SDK is now never imported."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

_TRUTHY = {"1", "y", "yes", "t", "true", "on"}  # Powertools' resolve_truthy_env_var_choice (strtobool)


def tracing_on() -> bool:
    if os.getenv("POWERTOOLS_TRACE_DISABLED", "false").strip().lower() in _TRUTHY:
        return False
    if not os.getenv("LAMBDA_TASK_ROOT"):
        return False
    return not (os.getenv("AWS_SAM_LOCAL") or os.getenv("AWS_CHALICE_CLI_MODE"))


class NoTracer:
    """Tracer's decorators as no-ops, for when tracing is off."""

    disabled = True

    def capture_lambda_handler(self, lambda_handler: Callable | None = None, **_: Any):
        return lambda_handler if lambda_handler is not None else (lambda fn: fn)

    def capture_method(self, method: Callable | None = None, **_: Any):
        return method if method is not None else (lambda fn: fn)

    def put_annotation(self, key: str, value: Any) -> None:
        return None

    def put_metadata(self, key: str, value: Any, namespace: str | None = None) -> None:
        return None


def tracer(service: str) -> Any:
    if not tracing_on():
        return NoTracer()
    from aws_lambda_powertools import Tracer

    return Tracer(service=service)
