"""Helpers for handler tests: real-shaped events and botocore-model contract checks."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import botocore.session
from botocore.validate import ParamValidator

EVENTS = Path(__file__).resolve().parents[1] / "events"

_MODEL = botocore.session.get_session().get_service_model("bedrock-agent-runtime")
DEPLOYED_RUNTIME = "AWS_Lambda_python3.13"  # infra/common.py RUNTIME


def runtime_bytes(resp: Any, execution_env: str = DEPLOYED_RUNTIME) -> int:
    """Bytes of a handler's return value as the Lambda runtime writes it: awslambdaric's own marshaller, which reads
    the execution environment when it is made."""
    from awslambdaric.lambda_runtime_marshaller import to_json

    before = os.environ.get("AWS_EXECUTION_ENV")
    os.environ["AWS_EXECUTION_ENV"] = execution_env
    try:
        return len(to_json(resp).encode("utf-8"))
    finally:
        if before is None:
            del os.environ["AWS_EXECUTION_ENV"]
        else:
            os.environ["AWS_EXECUTION_ENV"] = before


def event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text(encoding="utf-8"))


def search_event(params: list[dict[str, Any]] | None = None, session: dict[str, str] | None = None,
                 function: str = "search_documents") -> dict[str, Any]:
    ev = copy.deepcopy(event("search-basic.json"))
    if params is not None:
        ev["parameters"] = params
    if session is not None:
        ev["sessionAttributes"] = session
    ev["function"] = function
    return ev


def q(value: str) -> dict[str, str]:
    return {"name": "query", "type": "string", "value": value}


def assert_action_group_response(resp: dict[str, Any], budget: int | None = None) -> dict[str, Any]:
    """The documented Lambda response, checked against botocore's FunctionResult shape (the same structure the
    agent runtime uses for function results), plus the 25 KB budget on the serialized response.
    Returns the decoded body."""
    assert resp["messageVersion"] == "1.0"
    assert set(resp) <= {"messageVersion", "response", "sessionAttributes", "promptSessionAttributes",
                         "knowledgeBasesConfiguration"}
    r = resp["response"]
    assert set(r) == {"actionGroup", "function", "functionResponse"}
    fr = r["functionResponse"]
    assert set(fr) <= {"responseBody", "responseState"}
    assert set(fr["responseBody"]) == {"TEXT"}
    result = {"actionGroup": r["actionGroup"], "function": r["function"], "responseBody": fr["responseBody"]}
    if "responseState" in fr:
        result["responseState"] = fr["responseState"]
    report = ParamValidator().validate(result, _MODEL.shape_for("FunctionResult"))
    assert not report.has_errors(), report.generate_report()
    for key in ("sessionAttributes", "promptSessionAttributes"):
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in resp.get(key, {}).items())
    if budget is not None:
        assert runtime_bytes(resp, os.environ.get("AWS_EXECUTION_ENV", DEPLOYED_RUNTIME)) <= budget
    return json.loads(fr["responseBody"]["TEXT"]["body"])
