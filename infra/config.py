"""Deployment settings from CDK context (cdk.json, or -c key=value), with documented defaults."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from citerag.citations.families import DEFAULT_MODEL_ID, family_for

DEFAULTS_DOC = """
agentModelId          the agent's model or inference profile  jp.anthropic.claude-sonnet-4-6
agentModelRegions     destination regions of that profile    (derived from its prefix: jp. = Tokyo, Osaka)
agentModelArns        extra model/inference-profile ARNs the agent may call (comma-separated)
guardrailTier         STANDARD (Japanese, cross-region) | CLASSIC (English, French, Spanish; in-region)  STANDARD
guardrailProfileId    cross-region guardrail profile (Standard tier)   apac.guardrail.v1:0
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
titanTokensPerMinute  the account's Titan embeddings quota (Service Quotas: On-demand InvokeModel tokens per minute
                      for Amazon Titan Text Embeddings V2)   300000
ingestConcurrency     ingest functions at once (the queue's maximum concurrency, 2-1000)
                      (derived from titanTokensPerMinute: docs/aws-ingest.md)

runtimes                what to deploy: classic, agentcore or both (comma-separated)   classic
agentcoreModelId        the AgentCore agent's model (inference profile)   jp.anthropic.claude-sonnet-4-6
agentcoreModelRegions   destination regions of that profile (IAM)   (derived from its prefix, as agentModelRegions)
agentcoreJwtDiscoveryUrl  OIDC discovery URL: JWT inbound auth for runtime and gateway   (empty: IAM)
agentcoreJwtAudience    allowed audiences (comma-separated)    (none)
agentcoreJwtClients     allowed client ids (comma-separated)   (none)
agentcoreTenantClaim    JWT claim holding the tenant            custom:tenant
agentcoreGroupsClaim    JWT claim holding the groups            cognito:groups
agentcoreMemoryDays     short-term memory event expiry, 3-365  30
agentcoreCitations      protocol | native                      protocol
agentcoreTransactionSearch  also enable X-Ray Transaction Search (account-wide) false
"""


class DeployConfig(BaseModel):
    agent_model_id: str = DEFAULT_MODEL_ID
    agent_model_regions: list[str] = Field(default_factory=list)  # empty: derived from the profile prefix
    agent_model_arns: list[str] = Field(default_factory=list)
    guardrail_tier: Literal["STANDARD", "CLASSIC"] = "STANDARD"
    # The APAC guardrail profile (there is no jp. one); destinations from Tokyo per AWS's regional list.
    guardrail_profile_id: str = "apac.guardrail.v1:0"
    guardrail_profile_regions: list[str] = Field(default_factory=lambda: [
        "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1", "ap-southeast-1", "ap-southeast-2"])
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
    titan_tokens_per_minute: int = Field(300_000, ge=1000)
    ingest_concurrency: int | None = Field(None, ge=2, le=1000)  # the SQS event source's range (ScalingConfig)

    # AgentCore (issue 10): what to deploy and the AgentCore agent's own settings.
    runtimes: list[Literal["classic", "agentcore"]] = Field(default_factory=lambda: ["classic"], min_length=1)
    agentcore_model_id: str = DEFAULT_MODEL_ID
    agentcore_model_regions: list[str] = Field(default_factory=list)  # empty: derived from the profile prefix
    agentcore_jwt_discovery_url: str | None = None
    agentcore_jwt_audience: list[str] = Field(default_factory=list)
    agentcore_jwt_clients: list[str] = Field(default_factory=list)
    agentcore_tenant_claim: str = "custom:tenant"
    agentcore_groups_claim: str = "cognito:groups"
    agentcore_memory_days: int = Field(30, ge=3, le=365)  # the CFN schema's EventExpiryDuration range
    agentcore_citations: Literal["protocol", "native"] = "protocol"
    agentcore_transaction_search: bool = False

    @model_validator(mode="after")
    def _known_model_and_tier(self) -> DeployConfig:
        family_for(self.agent_model_id)  # a model with no prompt set fails at synth, by name
        if self.guardrail_tier == "CLASSIC":
            self.guardrail_profile_id = ""  # the Classic tier runs in the region, with no profile
        return self

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
            "agent_model_regions": split(ctx("agentModelRegions")), "guardrail_tier": ctx("guardrailTier"),
            "guardrail_profile_id": ctx("guardrailProfileId"),
            "embedding_model_id": ctx("embeddingModelId"), "embedding_dimensions": ctx("embeddingDimensions"),
            "pinecone_dense_host": ctx("pineconeDenseHost"), "pinecone_sparse_host": ctx("pineconeSparseHost"),
            "pinecone_secret_name": ctx("pineconeSecretName") or None,
            "rerank_model_arn": ctx("rerankModelArn") or None,
            "response_budget_bytes": ctx("responseBudgetBytes"), "denied_topics": split(ctx("deniedTopics"), ";"),
            "log_retention_days": ctx("logRetentionDays"),
            "acl_required": str(ctx("aclRequired")).lower() == "true" if ctx("aclRequired") is not None else None,
            "titan_tokens_per_minute": ctx("titanTokensPerMinute"), "ingest_concurrency": ctx("ingestConcurrency"),
            "runtimes": split(ctx("runtimes")),
            "agentcore_model_id": ctx("agentcoreModelId"),
            "agentcore_model_regions": split(ctx("agentcoreModelRegions")),
            "agentcore_jwt_discovery_url": ctx("agentcoreJwtDiscoveryUrl") or None,
            "agentcore_jwt_audience": split(ctx("agentcoreJwtAudience")),
            "agentcore_jwt_clients": split(ctx("agentcoreJwtClients")),
            "agentcore_tenant_claim": ctx("agentcoreTenantClaim"),
            "agentcore_groups_claim": ctx("agentcoreGroupsClaim"),
            "agentcore_memory_days": ctx("agentcoreMemoryDays"),
            "agentcore_citations": ctx("agentcoreCitations"),
            "agentcore_transaction_search": str(ctx("agentcoreTransactionSearch")).lower() == "true"
            if ctx("agentcoreTransactionSearch") is not None else None,
        }
        return cls(**{k: v for k, v in data.items() if v is not None})
