"""boto3 clients with adaptive retries and per-call timeouts, and the Pinecone API key from Secrets Manager.

boto3 is imported here, lazily, and nowhere in the core: the embedded path never loads it.
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


def pinecone_api_key(secret_name: str, max_age_s: int = 300) -> str:
    """The Pinecone API key: a plain string secret, or JSON {"apiKey": ...}. Cached for max_age_s.

    Errors name the secret, never its value."""
    import json

    from aws_lambda_powertools.utilities import parameters

    try:
        raw = parameters.get_secret(secret_name, max_age=max_age_s)
    except Exception as exc:  # GetParameterError wraps ClientError; keep the reason, not the payload
        reason = type(exc).__name__
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
