"""The agent's definition as every runtime presents it: the instruction and the one `search_documents` tool,
shared by the action-group handler, the CDK schema, the local runtimes (a test fails if they drift).
Kept free of heavy imports for cold starts."""

from __future__ import annotations

from typing import Any

INSTRUCTION = (
    "You are citerag, an assistant that answers questions about the user's documents (product manuals, FAQs, "
    "policies) in Japanese or English, and cites the source of every claim."
)
ACTION_GROUP = "citerag-search"

FUNCTION_NAME = "search_documents"
FUNCTION_DESCRIPTION = (
    "Search the user's documents (Japanese and English) and return the most relevant passages, each with a "
    "source_id (such as S1-x4mjd7), its file URI, title and page. Call it before answering any question about the "
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


def input_schema() -> dict[str, Any]:
    """The parameters as JSON Schema, within the subset every consumer accepts: AgentCore Gateway's inline
    `SchemaDefinition` has only type, properties, required, items and description (botocore
    bedrock-agentcore-control 2023-06-05), so bounds (top_k 1..20, filter size) are checked by the search tool,
    never by the schema. Used by the Strands tool, the Gateway target and the MCP server."""
    return {
        "type": "object",
        "properties": {name: {"type": p["type"], "description": p["description"]} for name, p in PARAMETERS.items()},
        "required": [name for name, p in PARAMETERS.items() if p.get("required")],
    }
