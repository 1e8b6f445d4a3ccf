"""Deployment settings from CDK context (cdk.json, or -c key=value), with documented defaults."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from citerag.citations.families import DEFAULT_BASE_MODEL, bedrock_model, family_for
from infra import regions

DEFAULTS_DOC = """
agentModelId          the agent's model or inference profile  (from the region: jp./us./eu./global. + Sonnet 4.6)
agentModelRegions     destination regions of that profile    (derived from its prefix: jp. = Tokyo, Osaka)
agentModelArns        extra model/inference-profile ARNs the agent may call (comma-separated)
guardrailTier         STANDARD (Japanese, cross-region) | CLASSIC (English, French, Spanish; in-region)
                      (STANDARD where the region has a guardrail profile, else CLASSIC)
guardrailProfileId    cross-region guardrail profile (Standard tier)   (from the region: apac./us./eu.guardrail.v1:0)
guardrailProfileRegions  its destination regions (IAM)        (from the region, infra/regions.py)
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
functionTracing       sdk: X-Ray subsegments from the Powertools tracer | service: Lambda's own segments only,
                      the X-Ray SDK never imported (a faster cold start; docs/deploying.md)   sdk
titanTokensPerMinute  the account's Titan embeddings quota (Service Quotas: On-demand InvokeModel tokens per minute
                      for Amazon Titan Text Embeddings V2)   300000
ingestConcurrency     ingest functions at once (the queue's maximum concurrency, 2-1000)
                      (derived from titanTokensPerMinute: docs/aws-ingest.md)

runtimes                what to deploy: classic, agentcore or both (comma-separated)   classic
agentcoreModelId        the AgentCore agent's model (inference profile)   (as agentModelId)
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
    region: str | None = None  # the stack's region when synthesis knows it (CDK_DEFAULT_REGION)
    agent_model_id: str = ""  # empty: from the region (infra/regions.py)
    agent_model_regions: list[str] = Field(default_factory=list)  # empty: derived from the profile prefix
    agent_model_arns: list[str] = Field(default_factory=list)
    guardrail_tier: Literal["STANDARD", "CLASSIC"] | None = None  # None: STANDARD where the region has a profile
    guardrail_profile_id: str | None = None  # None: the region's guardrail profile
    guardrail_profile_regions: list[str] = Field(default_factory=list)  # empty: the region's
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
    function_tracing: Literal["sdk", "service"] = "sdk"
    titan_tokens_per_minute: int = Field(300_000, ge=1000)
    titan_requests_per_minute: int | None = Field(None, ge=1)  # the model's request quota, when the account has one
    ingest_concurrency: int | None = Field(None, ge=2, le=1000)  # the SQS event source's range (ScalingConfig)
    # The bulk path (docs/aws-ingest.md, "Batch inference"): 0 is off; otherwise the passages staged before a Bedrock
    # batch inference job starts, and the records a job holds at most and at least (the model's batch quotas).
    batch_min_passages: int = Field(0, ge=0, le=10_000_000)
    batch_max_records: int = Field(20_000, ge=100, le=1_000_000)
    batch_min_records: int = Field(100, ge=1, le=1_000_000)

    # AgentCore: what to deploy and the AgentCore agent's own settings.
    runtimes: list[Literal["classic", "agentcore"]] = Field(default_factory=lambda: ["classic"], min_length=1)
    agentcore_model_id: str = ""  # empty: as the Classic agent's default
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
    def _region_defaults(self) -> DeployConfig:
        """Fill what the region decides (infra/regions.py) and refuse what the region does not offer, by name."""
        regions.check_runtimes(self.region, list(self.runtimes))
        if self.agentcore_jwt_discovery_url and not (self.agentcore_jwt_audience or self.agentcore_jwt_clients):
            # AgentCore's CUSTOM_JWT authorizer needs one of them (aws-cdk-lib CustomJwtConfigurationRequired).
            raise ValueError("agentcoreJwtDiscoveryUrl needs agentcoreJwtAudience or agentcoreJwtClients: the "
                             "authorizer must know whose tokens to accept")
        d = regions.defaults_for(self.region)
        self.agent_model_id = self.agent_model_id or d.model_id(DEFAULT_BASE_MODEL)
        self.agentcore_model_id = self.agentcore_model_id or d.model_id(DEFAULT_BASE_MODEL)
        family_for(self.agent_model_id)  # a model with no prompt set fails at synth, by name
        self._runtime_can_call("classic", self.agent_model_id)
        self._runtime_can_call("agentcore", self.agentcore_model_id)
        if self.guardrail_tier is None:
            self.guardrail_tier = "STANDARD" if (self.guardrail_profile_id or d.guardrail_profile) else "CLASSIC"
        if self.guardrail_tier == "CLASSIC":
            self.guardrail_profile_id = ""  # the Classic tier runs in the region, with no profile
            self.guardrail_profile_regions = []
            return self
        if self.guardrail_profile_id is None:
            if not d.guardrail_profile:
                raise ValueError(f"the Standard guardrail tier needs a guardrail profile, and {d.region} has none "
                                 "in infra/regions.py: set guardrailProfileId (and guardrailProfileRegions), or "
                                 "guardrailTier=CLASSIC")
            self.guardrail_profile_id = d.guardrail_profile
        if not self.guardrail_profile_regions:
            prefix = self.guardrail_profile_id.split(".", 1)[0]
            if prefix != (d.guardrail_profile or "").split(".", 1)[0]:
                raise ValueError(f"the destination regions of the guardrail profile {self.guardrail_profile_id!r} "
                                 f"from {d.region} are not in infra/regions.py: set guardrailProfileRegions")
            self.guardrail_profile_regions = list(d.guardrail_regions)
        return self

    def _runtime_can_call(self, runtime: str, model_id: str) -> None:
        """A model the runtime cannot call fails at synth with its name (citations/families.py MODELS)."""
        row = bedrock_model(model_id)
        if runtime not in self.runtimes or row is None:
            return
        if runtime == "classic" and not row.classic:
            raise ValueError(f"{row.name} ({model_id}) has no InvokeModel/Converse model id, so Bedrock Agents "
                             "Classic cannot use it (docs/models-and-regions.md); choose agentModelId from there")
        if runtime == "agentcore" and row.agentcore != "converse":
            raise ValueError(f"{row.name} ({model_id}) is served on Bedrock's Messages-API endpoint, which the "
                             "AgentCore agent does not call yet (docs/models-and-regions.md); choose "
                             "agentcoreModelId from there")

    @classmethod
    def from_context(cls, get: Any, region: str | None = None) -> DeployConfig:
        """`get(key)` reads CDK context; values may come as strings from -c. `region`: the stack's, if known."""
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
            "guardrail_profile_regions": split(ctx("guardrailProfileRegions")),
            "embedding_model_id": ctx("embeddingModelId"), "embedding_dimensions": ctx("embeddingDimensions"),
            "pinecone_dense_host": ctx("pineconeDenseHost"), "pinecone_sparse_host": ctx("pineconeSparseHost"),
            "pinecone_secret_name": ctx("pineconeSecretName") or None,
            "rerank_model_arn": ctx("rerankModelArn") or None,
            "response_budget_bytes": ctx("responseBudgetBytes"), "denied_topics": split(ctx("deniedTopics"), ";"),
            "log_retention_days": ctx("logRetentionDays"),
            "acl_required": str(ctx("aclRequired")).lower() == "true" if ctx("aclRequired") is not None else None,
            "function_tracing": ctx("functionTracing"),
            "titan_tokens_per_minute": ctx("titanTokensPerMinute"), "ingest_concurrency": ctx("ingestConcurrency"),
            "titan_requests_per_minute": ctx("titanRequestsPerMinute"),
            "batch_min_passages": ctx("batchMinPassages"), "batch_max_records": ctx("batchMaxRecords"),
            "batch_min_records": ctx("batchMinRecords"),
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
        return cls(region=region, **{k: v for k, v in data.items() if v is not None})
