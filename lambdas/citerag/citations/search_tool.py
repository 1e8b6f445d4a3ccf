"""The `search_documents` action-group function: parameters in, a budgeted JSON body out.

All decisions live here (the Lambda handler only adapts the event): parameter validation with REPROMPT
hints, the mandatory access filter from sessionAttributes, the relevance threshold and its bounded retry
counter, degraded modes, and packing so the *whole Lambda response* stays within the byte budget.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from citerag.citations import source_ids
from citerag.citations.payload import body_text_cost, build_payload, dumps_body, message_payload, response_bytes
from citerag.citations.session import string_map
from citerag.documents.text import one_line
from citerag.errors import DependencyError, FilterSyntaxError, QueryError
from citerag.search import filters as flt_mod
from citerag.search import packing
from citerag.search.passage import Passage
from citerag.search.pipeline import SearchPipeline
from citerag.search.query import Query, analyze

Envelope = Callable[["ToolResult", str], dict[str, Any]]

RETRY_ATTRIBUTE = "citerag_search_retries"
TURN_ATTRIBUTE = "citerag_search_turn"  # which question the retry count is of

ResponseState = Literal["REPROMPT", "FAILURE"] | None


# A tenant or group id as an application sets it: short, printable, no filter syntax.
_ACCESS_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}")
_NOT_AN_ID = {"null", "none", "undefined", "nil"}  # what a caller's bug writes instead of leaving it out
MAX_GROUPS = 50
MAX_FILTER_CHARS = 4000
# The access filter takes two levels ($and of $or); a model's filter may use the rest.
MODEL_FILTER_DEPTH = flt_mod.MAX_DEPTH - 2


class SearchToolConfig(BaseModel):
    budget_bytes: int = Field(25_000, ge=2_000)
    default_top_k: int = 5
    max_top_k: int = 20
    max_retries: int = Field(3, ge=0)
    acl_required: bool = False
    # Documents without a tenant (or without groups) are public: visible to every session. Off: only sessions
    # that carry a valid tenant see anything, and only their tenant's documents.
    public_without_tenant: bool = True
    tenant_attribute: str = "tenant"
    groups_attribute: str = "groups"
    namespace: str = ""
    source_id_key: str = "citerag-local"


class ToolResult(BaseModel):
    model_config = {"arbitrary_types_allowed": True}

    payload: dict[str, Any]
    state: ResponseState = None
    session_attributes: dict[str, str] = Field(default_factory=dict)
    kept: list[Passage] = Field(default_factory=list)
    query: Query | None = None
    outcome: str = "ok"  # ok | reprompt | not_found | unavailable | invalid | denied


class SearchTool:
    def __init__(self, pipeline: SearchPipeline, config: SearchToolConfig | None = None,
                 signing_key: Callable[[], str] | None = None) -> None:
        self.pipeline = pipeline
        self.config = config or SearchToolConfig()
        # Read per call, so a rotated deployment key is used as soon as it is published.
        self._signing_key = signing_key or (lambda: self.config.source_id_key)

    # --- entry point ----------------------------------------------------------------------------------------

    def run(self, parameters: Any, session_attributes: Any, envelope: Envelope,
            turn: str | None = None) -> tuple[ToolResult, str]:
        """Return (result, body). `envelope(result, body)` builds the complete response the caller will send, so
        the byte budget is checked against exactly what leaves the function. `turn` is the user's input of this
        turn when the session attributes outlive it (Classic's sessionAttributes persist across the session): the
        retry count then starts again with each question, not where a turn that ended mid-retry left it."""
        session = string_map(session_attributes)
        if turn is not None:
            mark = hashlib.sha256(turn.encode("utf-8", "replace")).hexdigest()[:12]
            if session.get(TURN_ATTRIBUTE) != mark:
                session = {**session, RETRY_ATTRIBUTE: "0", TURN_ATTRIBUTE: mark}
        result = self._decide(parameters, session)
        if result.outcome == "ok":
            return result, self._pack(result, envelope)
        return result, dumps_body(result.payload)

    def _decide(self, parameters: Any, session: dict[str, str]) -> ToolResult:
        cfg = self.config
        params, problems = parse_parameters(parameters, cfg)
        retries = _int(session.get(RETRY_ATTRIBUTE), 0)
        if "query" in problems:
            return self._reprompt(session, retries, problems["query"], outcome="invalid")
        if "filters" in problems:
            return self._reprompt(session, retries, problems["filters"], outcome="invalid")
        try:
            acl = access_filter(session, cfg)
        except PermissionError as exc:
            return ToolResult(payload=message_payload(error=str(exc)), session_attributes=session, outcome="denied")
        flt = flt_mod.combine(acl, params["filters"])
        notes = [problems["top_k"]] if "top_k" in problems else []
        try:
            outcome = self.pipeline.search(params["query"], top_k=params["top_k"], flt=flt, namespace=cfg.namespace)
        except DependencyError as exc:
            return ToolResult(
                payload=message_payload(error=f"{exc}. Tell the user that document search is temporarily "
                                              "unavailable and to try again later."),
                session_attributes=session, outcome="unavailable",
            )
        if "dense" in outcome.degraded:
            notes.append("Semantic search is unavailable right now; these results come from keyword search only.")
        relevant = outcome.relevant_hits
        if not relevant:
            if retries < cfg.max_retries:
                hint = (f"Nothing in the documents is relevant to the query {params['query'].text!r}. Rewrite the "
                        "query and call search_documents again: use other keywords or synonyms, write it in the "
                        "language of the documents (Japanese or English), or use fewer, more specific terms. "
                        f"Attempt {retries + 1} of {cfg.max_retries}.")
                return self._reprompt(session, retries, hint, outcome="reprompt")
            return ToolResult(
                payload=message_payload(message=(
                    f"After {retries + 1} searches nothing relevant was found. Tell the user the documents do not "
                    "answer this question; do not answer from memory.")),
                session_attributes={**session, RETRY_ATTRIBUTE: "0"}, outcome="not_found",
            )
        items = source_ids.assign(relevant, self._signing_key(), params["query"].text)
        return ToolResult(payload=build_payload(items, notes), kept=items, query=params["query"],
                          session_attributes={**session, RETRY_ATTRIBUTE: "0"}, outcome="ok")

    def _reprompt(self, session: dict[str, str], retries: int, hint: str, outcome: str) -> ToolResult:
        return ToolResult(payload=message_payload(hint=hint), state="REPROMPT",
                          session_attributes={**session, RETRY_ATTRIBUTE: str(retries + 1)}, outcome=outcome)

    def _pack(self, result: ToolResult, envelope: Envelope) -> str:
        notes = result.payload.get("notes")

        def build(items: list[Passage]) -> dict[str, Any]:
            return {"body": dumps_body(build_payload(items, notes))}

        def size(built: dict[str, Any]) -> int:
            return response_bytes(envelope(result, built["body"]))  # what the Lambda runtime sends

        built, kept = packing.pack(result.kept, build, self.config.budget_bytes, result.query,
                                   size=size, text_cost=body_text_cost)
        result.kept = kept
        result.payload = build_payload(kept, notes)
        return built["body"]


def parse_parameters(parameters: Any, cfg: SearchToolConfig) -> tuple[dict[str, Any], dict[str, str]]:
    """Validate the model-written parameters. Returns (values, problems by parameter name)."""
    values: dict[str, Any] = {"query": None, "filters": None, "top_k": cfg.default_top_k}
    problems: dict[str, str] = {}
    raw: dict[str, Any] = {}
    if isinstance(parameters, list):
        for p in parameters:
            if isinstance(p, dict) and isinstance(p.get("name"), str):
                raw[p["name"]] = p.get("value")
    elif isinstance(parameters, dict):
        raw = dict(parameters)

    query = raw.get("query")
    try:
        # Control characters from model output become spaces before the one query validation.
        values["query"] = analyze(one_line(query) if isinstance(query, str) else query)
    except QueryError as exc:
        if isinstance(query, str) and one_line(query):
            problems["query"] = (f"{str(exc)[:1].upper()}{str(exc)[1:]}. Call search_documents again with only "
                                 "the key terms of the question.")
        elif query is not None and not isinstance(query, str):
            problems["query"] = ("The parameter 'query' must be text, not a number or a list. Call search_documents "
                                 "again with query set to the user's question or its key terms.")
        else:
            problems["query"] = ("The parameter 'query' is missing or empty. Call search_documents again with "
                                 "query set to the user's question or its key terms.")

    flt = raw.get("filters")
    if flt not in (None, "", "null", "{}"):
        try:
            if isinstance(flt, str) and len(flt) > MAX_FILTER_CHARS:
                raise FilterSyntaxError(f"it is {len(flt):,} characters long; the limit is {MAX_FILTER_CHARS:,}")
            obj = json.loads(flt) if isinstance(flt, str) else flt
            values["filters"] = flt_mod.validate(obj, max_depth=MODEL_FILTER_DEPTH) or None
        except (json.JSONDecodeError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            problems["filters"] = (f"The parameter 'filters' is not valid JSON ({reason}). Pass a JSON object such "
                                   'as {"lang": "ja"}, or leave filters out.')
        except FilterSyntaxError as exc:
            problems["filters"] = f"The parameter 'filters' is not a valid filter: {exc}. Fix it or leave it out."

    top_k = raw.get("top_k")
    if top_k not in (None, ""):
        k = _int(top_k, None)
        if k is None or not 1 <= k <= cfg.max_top_k:
            problems["top_k"] = f"top_k must be a whole number from 1 to {cfg.max_top_k}; {cfg.default_top_k} was used."
        else:
            values["top_k"] = k
    return values, problems


def access_filter(session: dict[str, str], cfg: SearchToolConfig) -> dict[str, Any] | None:
    """The mandatory filter from what the caller authenticated (Classic: sessionAttributes the calling application
    sets; AgentCore: JWT claims or the calling backend), never from model-written arguments. It fails closed: a
    document that carries a tenant or groups is visible only to a session with a valid matching one; documents
    without them are public only when `public_without_tenant`. Raises PermissionError when nothing may be seen."""
    tenant = _access_id(session.get(cfg.tenant_attribute), cfg.tenant_attribute)
    groups = _groups(session.get(cfg.groups_attribute), cfg.groups_attribute)
    if not tenant and (cfg.acl_required or not cfg.public_without_tenant):
        raise PermissionError(
            f"This session carries no '{cfg.tenant_attribute}' session attribute, so no documents may be searched. "
            "Tell the user their access could not be determined.")
    public_tenant = {cfg.tenant_attribute: {"$exists": False}}
    if not tenant:
        tenant_part = public_tenant
    elif cfg.public_without_tenant:
        tenant_part = {"$or": [{cfg.tenant_attribute: {"$eq": tenant}}, public_tenant]}
    else:
        tenant_part = {cfg.tenant_attribute: {"$eq": tenant}}
    public_groups = {cfg.groups_attribute: {"$exists": False}}
    groups_part = {"$or": [{cfg.groups_attribute: {"$in": groups}}, public_groups]} if groups else public_groups
    return flt_mod.combine(tenant_part, groups_part)


def may_see(session: dict[str, str], cfg: SearchToolConfig) -> Callable[[dict[str, Any]], bool]:
    """Whether this session may see a document, by its metadata: what `access_filter` lets search return (a
    session that may see nothing sees no document)."""
    try:
        visible = access_filter(session, cfg)
    except PermissionError:
        return lambda _metadata: False
    return lambda metadata: flt_mod.matches(visible, metadata)


def _access_id(value: Any, name: str) -> str:
    text = value.strip() if isinstance(value, str) else ""
    if not text or text.lower() in _NOT_AN_ID:
        return ""
    if not _ACCESS_ID.fullmatch(text):
        raise PermissionError(f"This session's '{name}' attribute is not a valid id, so no documents may be searched. "
                              "Tell the user their access could not be determined.")
    return text


def _groups(value: Any, name: str) -> list[str]:
    raw = value.strip() if isinstance(value, str) else ""
    if not raw:
        return []
    try:
        parsed = json.loads(raw) if raw.startswith("[") else raw.split(",")
    except (json.JSONDecodeError, RecursionError):
        parsed = None
    if not isinstance(parsed, list) or len(parsed) > MAX_GROUPS:
        raise PermissionError(f"This session's '{name}' attribute is not a list of group ids, so no documents may "
                              "be searched. Tell the user their access could not be determined.")
    groups = [_access_id(g, name) for g in parsed if isinstance(g, str)]
    return [g for g in dict.fromkeys(groups) if g]


def _int(value: Any, default):
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    try:
        f = float(str(value).strip())
    except (TypeError, ValueError):
        return default
    return int(f) if f.is_integer() else default


