"""The search_documents function as the agent sees it: one definition shared by the Lambda handler and the
CDK action-group schema (a test fails if they drift). Kept free of heavy imports for cold starts."""

from __future__ import annotations

from typing import Any

FUNCTION_NAME = "search_documents"
FUNCTION_DESCRIPTION = (
    "Search the user's documents (Japanese and English) and return the most relevant passages, each with a "
    "source_id (S1, S2, ...), its file URI, title and page. Call it before answering any question about the "
    "documents, and cite the source_id of every passage you use. If it reports that nothing relevant was found, "
    "rewrite the query with other keywords and call it again."
)
PARAMETERS: dict[str, dict[str, Any]] = {
    "query": {
        "type": "string", "required": True,
        "description": "What to look for: the user's question or its key terms, in the language of the documents.",
    },
    "filters": {
        "type": "string", "required": False,
        "description": 'Optional Pinecone metadata filter as JSON, e.g. {"lang": "ja"} or {"page": {"$gte": 3}}. '
                       "Operators: $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or.",
    },
    "top_k": {
        "type": "integer", "required": False,
        "description": "How many passages to return, 1 to 20 (default 5).",
    },
}


def string_map(value: Any) -> dict[str, str]:
    """Session attributes as the contract requires them: a str -> str map (None dropped, others JSON-encoded)."""
    import json

    if not isinstance(value, dict):
        return {}
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items() if v is not None}
