"""Deployment settings from CDK context (cdk.json, or -c key=value), with documented defaults."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

DEFAULTS_DOC = """
agentModelId          Claude model the agent uses            anthropic.claude-3-5-sonnet-20240620-v1:0
agentModelArns        extra model/inference-profile ARNs the agent may call (comma-separated)
embeddingModelId      Titan embeddings                       amazon.titan-embed-text-v2:0
embeddingDimensions   256 | 512 | 1024                       1024
pineconeDenseHost     dense index host (cosine)              (required for deploy; placeholder for synth)
pineconeSparseHost    sparse index host (dotproduct)         (required for deploy; placeholder for synth)
pineconeSecretName    existing secret with the API key       (empty: the stack creates one to fill in)
rerankModelArn        Bedrock rerank model ARN               (empty: no rerank)
responseBudgetBytes   action-group response budget           25000
deniedTopics          guardrail denied topics, ';'-separated  Investment advice;Medical diagnosis
logRetentionDays      CloudWatch Logs retention              30
aclRequired           refuse searches without a tenant       false
"""


class DeployConfig(BaseModel):
    agent_model_id: str = "anthropic.claude-3-5-sonnet-20240620-v1:0"
    agent_model_arns: list[str] = Field(default_factory=list)
    embedding_model_id: str = "amazon.titan-embed-text-v2:0"
    embedding_dimensions: int = Field(1024)
    pinecone_dense_host: str = "https://citerag-dense-REPLACE.svc.pinecone.io"
    pinecone_sparse_host: str = "https://citerag-sparse-REPLACE.svc.pinecone.io"
    pinecone_secret_name: str | None = None
    rerank_model_arn: str | None = None
    response_budget_bytes: int = 25_000
    denied_topics: list[str] = Field(default_factory=lambda: ["Investment advice", "Medical diagnosis"])
    log_retention_days: int = 30
    acl_required: bool = False

    @classmethod
    def from_context(cls, get: Any) -> DeployConfig:
        """`get(key)` reads CDK context; values may come as strings from -c."""
        def ctx(key: str):
            return get(key)

        def split(value, sep=","):
            if value is None:
                return None
            return [v.strip() for v in (value if isinstance(value, list) else str(value).split(sep)) if v.strip()]

        data: dict[str, Any] = {
            "agent_model_id": ctx("agentModelId"), "agent_model_arns": split(ctx("agentModelArns")),
            "embedding_model_id": ctx("embeddingModelId"), "embedding_dimensions": ctx("embeddingDimensions"),
            "pinecone_dense_host": ctx("pineconeDenseHost"), "pinecone_sparse_host": ctx("pineconeSparseHost"),
            "pinecone_secret_name": ctx("pineconeSecretName") or None,
            "rerank_model_arn": ctx("rerankModelArn") or None,
            "response_budget_bytes": ctx("responseBudgetBytes"), "denied_topics": split(ctx("deniedTopics"), ";"),
            "log_retention_days": ctx("logRetentionDays"),
            "acl_required": str(ctx("aclRequired")).lower() == "true" if ctx("aclRequired") is not None else None,
        }
        return cls(**{k: v for k, v in data.items() if v is not None})
