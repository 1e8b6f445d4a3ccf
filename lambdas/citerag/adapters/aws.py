"""boto3 clients with adaptive retries and per-call timeouts, the one reader of AWS error codes (messages for
people and models carry no ARNs or account ids), and secrets from Secrets Manager (never logged).

boto3 is imported here and in other adapters, lazily, never in the cores: the embedded path never loads it.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from typing import Any

from citerag.adapters import log_safety
from citerag.errors import DependencyError

# ARNs name accounts and roles; a 12-digit number in an AWS message is an account id.
_ARN = re.compile(r"arn:aws[a-z-]*:[^\s\"',;]*")
_ACCOUNT = re.compile(r"(?<!\d)\d{12}(?!\d)")


@lru_cache(maxsize=16)
def client(service: str, connect_timeout: float = 2.0, read_timeout: float = 10.0, max_attempts: int = 4,
           region: str | None = None) -> Any:
    import boto3
    from botocore.config import Config

    log_safety.install()
    cfg = Config(
        retries={"mode": "adaptive", "max_attempts": max_attempts},
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        user_agent_extra="citerag",
    )
    from botocore.exceptions import NoRegionError

    try:
        return boto3.session.Session().client(service, config=cfg,
                                              region_name=region or os.environ.get("AWS_REGION"))
    except NoRegionError:
        raise DependencyError(f"{service}: no AWS region; set AWS_REGION (for example ap-northeast-1) or a region "
                              "in your AWS profile") from None


def has_credentials() -> bool:
    """Whether boto3 would find AWS credentials: in the environment, in a profile of the shared files (keys, SSO,
    assume-role, a credential_process), or from a container's role. Without asking the EC2 instance metadata
    service ("iam-role": off AWS, a connect timeout on every start) or running a profile's credential_process
    (it may prompt, and the client runs it again for the call): a profile that names one counts. On an instance
    whose role should be used, CITERAG_CHAT_MODEL_PROVIDER=bedrock (CITERAG_AGENTCORE_MODEL=bedrock for the
    AgentCore agent) says so. The chain and its provider names are botocore's
    (`botocore.credentials.create_credential_resolver`)."""
    import botocore.session

    try:
        session = botocore.session.get_session()
        resolver = session.get_component("credential_provider")
        for provider in ("iam-role", "custom-process"):
            resolver.remove(provider)
        return resolver.load_credentials() is not None or "credential_process" in session.get_scoped_config()
    except Exception:  # configured (a named profile) but not loadable now: the call says why
        return True


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
    """"Code: message" for people and models: AWS messages carry no secrets, but AccessDenied names the account
    and role, so ARNs and account ids are withheld."""
    message = redact_aws(error_message(exc))
    return f"{error_code(exc)}: {message}" if message else error_code(exc)


def redact_aws(text: str) -> str:
    return _ACCOUNT.sub("<account>", _ARN.sub("<arn>", text))


def secret_value(secret_name: str, what: str, fields: tuple[str, ...] = (), max_age_s: int = 300) -> str | dict:
    """A Secrets Manager secret through Powertools (cached for max_age_s): the plain string, or, when the secret is
    JSON, the dict. Every string in it is registered so no log line can carry it. Errors name the secret and the
    AWS error code, never a value."""
    from aws_lambda_powertools.utilities import parameters

    log_safety.install()
    try:
        raw = parameters.get_secret(secret_name, max_age=max_age_s)
    except Exception as exc:  # GetParameterError wraps ClientError; keep the reason, not the payload
        reason = error_code(exc.__cause__ or exc)
        raise DependencyError(f"cannot read the {what} secret {secret_name!r}: {reason}") from None
    value = (raw.decode() if isinstance(raw, bytes) else str(raw)).strip()
    if value.startswith("{"):
        try:
            data = json.loads(value)
        except json.JSONDecodeError:
            raise DependencyError(f"secret {secret_name!r} is neither a plain value nor valid JSON") from None
        if not isinstance(data, dict):
            raise DependencyError(f"secret {secret_name!r} is JSON but not an object")
        for v in data.values():
            if isinstance(v, str):
                log_safety.register_secret(v)
        return data
    log_safety.register_secret(value)
    return value


def pinecone_api_key(secret_name: str, max_age_s: int = 300) -> str:
    """The Pinecone API key: a plain string secret, or JSON {"apiKey": ...}."""
    data = secret_value(secret_name, "Pinecone API key", max_age_s=max_age_s)
    value = str(data.get("apiKey") or data.get("api_key") or "").strip() if isinstance(data, dict) else data
    if not value:
        raise DependencyError(f"secret {secret_name!r} is empty; set it to your Pinecone API key")
    return value


def source_id_keys(secret_name: str, max_age_s: int = 300) -> list[str]:
    """The source-id signing keys: JSON {"current": ..., "previous": ...} (previous verifies ids signed before a
    rotation) or a plain string. The stack generates the secret at deploy time."""
    data = secret_value(secret_name, "source-id key", max_age_s=max_age_s)
    keys = [str(data.get("current") or ""), str(data.get("previous") or "")] if isinstance(data, dict) else [data]
    keys = [k for k in keys if len(k) >= 16]
    if not keys:
        raise DependencyError(f"secret {secret_name!r} holds no source-id key of at least 16 characters")
    return keys
