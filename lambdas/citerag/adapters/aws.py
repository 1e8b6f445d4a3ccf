"""boto3 clients with adaptive retries and per-call timeouts, the one reader of AWS error codes, and the
Pinecone API key from Secrets Manager.

boto3 is imported here and in other adapters, lazily, never in the cores: the embedded path never loads it.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from citerag.errors import DependencyError


@lru_cache(maxsize=16)
def client(service: str, connect_timeout: float = 2.0, read_timeout: float = 10.0, max_attempts: int = 4) -> Any:
    import boto3
    from botocore.config import Config

    cfg = Config(
        retries={"mode": "adaptive", "max_attempts": max_attempts},
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        user_agent_extra="citerag",
    )
    return boto3.session.Session().client(service, config=cfg, region_name=os.environ.get("AWS_REGION"))


def error_code(exc: BaseException) -> str:
    """The AWS error code of a botocore ClientError / EventStreamError (e.g. "ThrottlingException"), or the
    exception's type name. In-stream errors arrive lower-camel-cased (dependencyFailedException): normalised."""
    err = getattr(exc, "response", None)
    code = err.get("Error", {}).get("Code") if isinstance(err, dict) else None
    if not code:
        return type(exc).__name__
    return str(code)[:1].upper() + str(code)[1:]


def error_message(exc: BaseException) -> str:
    err = getattr(exc, "response", None)
    return str(err.get("Error", {}).get("Message", "")) if isinstance(err, dict) else ""


def describe_error(exc: BaseException) -> str:
    """"Code: message" for logs and user messages (AWS error messages carry no secrets)."""
    message = error_message(exc)
    return f"{error_code(exc)}: {message}" if message else error_code(exc)


def pinecone_api_key(secret_name: str, max_age_s: int = 300) -> str:
    """The Pinecone API key: a plain string secret, or JSON {"apiKey": ...}. Cached for max_age_s.

    Errors name the secret, never its value."""
    import json

    from aws_lambda_powertools.utilities import parameters

    try:
        raw = parameters.get_secret(secret_name, max_age=max_age_s)
    except Exception as exc:  # GetParameterError wraps ClientError; keep the reason, not the payload
        reason = error_code(exc.__cause__ or exc)
        raise DependencyError(f"cannot read the Pinecone API key secret {secret_name!r}: {reason}") from None
    value = raw.decode() if isinstance(raw, bytes) else str(raw)
    value = value.strip()
    if value.startswith("{"):
        try:
            data = json.loads(value)
        except json.JSONDecodeError:
            raise DependencyError(f"secret {secret_name!r} is neither a plain API key nor valid JSON") from None
        value = str(data.get("apiKey") or data.get("api_key") or "").strip()
    if not value:
        raise DependencyError(f"secret {secret_name!r} is empty; set it to your Pinecone API key")
    return value
