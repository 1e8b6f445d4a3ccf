"""Where the access filter's input comes from on AgentCore: what the caller authenticated, as the session-attribute
map the search tool reads (`tenant`, `groups`), never a model-written tool argument.

Two sources, chosen by the deployment, never by the request:
- `jwt`: the claims of the bearer token the service already validated (a runtime with a customJWTAuthorizer forwards
  `Authorization` to the agent; a Gateway REQUEST interceptor receives it with passRequestHeaders). The token is
  decoded, not re-verified: verification is the service's job and the agent holds no JWKS.
- `payload`: a field the calling backend sets on an IAM-authenticated invocation (the backend is the trusted caller,
  exactly like sessionAttributes on Classic).
Whatever reaches here is bounded; ids are validated by `search_tool.access_filter`, which fails closed.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

MAX_TOKEN_CHARS = 16_384  # AgentCore forwards allowlisted headers up to 4 KB; a JWT is far smaller
MAX_GROUPS = 50


class AccessError(ValueError):
    """The authenticated data is unusable (not a JWT, not an object): the request is refused, not widened."""


def bearer_claims(authorization: str | None) -> dict[str, Any]:
    """The claims of `Bearer <JWT>`; AccessError when the header is missing or is not a JWT."""
    if not isinstance(authorization, str) or not authorization.strip():
        raise AccessError("the request carries no bearer token")
    if len(authorization) > MAX_TOKEN_CHARS:
        raise AccessError("the bearer token is too long")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or token.count(".") != 2:
        raise AccessError("the Authorization header is not a bearer JWT")
    body = token.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)), object_pairs_hook=unique_keys)
    except AccessError:
        raise
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):
        raise AccessError("the bearer token's claims are not readable") from None
    if not isinstance(claims, dict):
        raise AccessError("the bearer token's claims are not an object")
    return claims


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose every key is written once (json.loads' object_pairs_hook). Where identity is read, a key
    written twice means two readers may take two different values (Python's json keeps the last, other parsers the
    first): the request is refused, not read one way."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise AccessError(f"the key {key[:60]!r} is written twice; send each key once")
        out[key] = value
    return out


def single_header(headers: Any, name: str) -> str | None:
    """The one value of header `name` (any spelling: HTTP names are case-insensitive) in a header map or a list of
    (name, value) pairs; None when absent. Two spellings or copies with different values are refused: which one
    counts would depend on the reader (`authorization` for one, `Authorization` for another)."""
    items = headers.items() if isinstance(headers, dict) else headers if isinstance(headers, list | tuple) else []
    wanted = name.lower()
    values = []
    for item in items:
        if not isinstance(item, list | tuple) or len(item) != 2:
            continue
        key, value = item
        key = key.decode("latin-1") if isinstance(key, bytes) else key
        value = value.decode("latin-1") if isinstance(value, bytes) else value
        if isinstance(key, str) and key.lower() == wanted:
            values.append(value)
    if len(set(map(str, values))) > 1:
        raise AccessError(f"the request carries {len(values)} different {name} headers; send one")
    return values[0] if values else None


def from_claims(claims: dict[str, Any], tenant_claim: str, groups_claim: str) -> dict[str, str]:
    """{"tenant", "groups"} from JWT claims: groups may be a list (Cognito `cognito:groups`) or a space or comma
    separated string (OAuth `scope`-style)."""
    out: dict[str, str] = {}
    tenant = claims.get(tenant_claim)
    if tenant is not None:
        out["tenant"] = _string_id(tenant, f"the token's {tenant_claim!r} claim")
    groups = claims.get(groups_claim)
    if isinstance(groups, str):
        groups = groups.replace(",", " ").split()
    if groups is not None:
        out["groups"] = _group_list(groups, f"the token's {groups_claim!r} claim")
    return out


def from_payload(value: Any) -> dict[str, str]:
    """{"tenant", "groups"} from the backend-set payload field ({"tenant": "acme", "groups": ["eng"]})."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise AccessError("'access' must be an object such as {\"tenant\": \"acme\", \"groups\": [\"eng\"]}")
    out: dict[str, str] = {}
    if value.get("tenant") is not None:
        out["tenant"] = _string_id(value["tenant"], "'access.tenant'")
    groups = value.get("groups")
    if groups is not None:
        out["groups"] = groups if isinstance(groups, str) else _group_list(groups, "'access.groups'")
    return out


def _group_list(value: Any, what: str) -> str:
    if not isinstance(value, list):
        raise AccessError(f"{what} must be a list of string ids")
    return json.dumps(value[:MAX_GROUPS + 1])


def _string_id(value: Any, what: str) -> str:
    # A number or list where an id belongs is a caller's bug: refused, never turned into some other tenant's id.
    if not isinstance(value, str):
        raise AccessError(f"{what} must be a string id")
    return value


# The argument a Gateway REQUEST interceptor writes into every tools/call (overwriting whatever the model sent) and
# the Gateway target reads only when the deployment says an interceptor is configured. Never in the tool schema.
GATEWAY_ACCESS_FIELD = "_citerag_access"
