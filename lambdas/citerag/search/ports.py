"""Ports of the retrieval core: what it needs from an embedder, an index and a reranker.

Adapters (citerag.adapters) implement them; the core never imports an adapter. The embedded SQLite index and
the Pinecone adapter both implement `VectorIndex`, and one conformance suite (tests/test_index_conformance.py)
holds both to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from citerag.search.sparse import CorpusStats, SparseVector


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors. Queries and passages may be embedded differently."""

    model_id: str
    dim: int

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class Record(BaseModel):
    """One vector record, Pinecone-shaped: dense values, sparse values and metadata."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    values: Any  # np.ndarray (float32); kept loose so numpy arrays pass without copies
    sparse: SparseVector = Field(default_factory=SparseVector)
    metadata: dict[str, Any]
    length: int = 0  # BM25 document length in tokens, kept so corpus statistics can be updated on delete


@dataclass(frozen=True)
class VectorProfile:
    """Where an index's vectors point: their mean, and how close its passages lie to the mean's direction (the mean
    and standard deviation of their cosines to it). An index on one subject gives every question a high cosine, so a
    question's best cosine says little until set against the index's own (docs/answers.md "Places to look")."""

    mean: np.ndarray
    spread_mean: float
    spread_std: float


class Match(BaseModel):
    id: str
    score: float
    metadata: dict[str, Any]


class DocumentInfo(BaseModel):
    doc_id: str
    source_uri: str
    title: str
    content_hash: str
    kind: str
    n_chunks: int
    ingested_at: str
    namespace: str = ""
    # SHA-256 of the file's bytes as ingested (content_hash also covers the access metadata): readers of the local
    # file check it is still this file before serving a byte of it. "" for documents indexed before it was kept.
    file_hash: str = ""


class VectorIndex(Protocol):
    def replace_document(
        self,
        info: DocumentInfo,
        records: Sequence[Record],
        parents: dict[str, str],
        namespace: str = "",
    ) -> None:
        """Atomically replace every record of info.doc_id with `records` (all or nothing)."""

    def delete_document(self, doc_id: str, namespace: str = "") -> int: ...

    def get_document(self, doc_id: str, namespace: str = "") -> DocumentInfo | None: ...

    def list_documents(self, namespace: str = "") -> list[DocumentInfo]: ...

    def query_dense(
        self, vector: np.ndarray, top_k: int, flt: dict | None = None, namespace: str = ""
    ) -> list[Match]: ...

    def query_sparse(
        self, vector: SparseVector, top_k: int, flt: dict | None = None, namespace: str = ""
    ) -> list[Match]: ...

    def get_parent(self, parent_id: str, namespace: str = "") -> str | None:
        """The full text of a chunk's parent (page or section), for parent expansion."""

    def corpus_stats(self, namespace: str = "") -> CorpusStats: ...

    def corpus_size(self, namespace: str = "") -> tuple[int, int]:
        """(documents, total tokens): what encoding a document needs, cheaper than the full statistics."""


class Reranker(Protocol):
    def rerank(self, query: str, texts: Sequence[str], top_n: int) -> list[tuple[int, float]]:
        """Return (index into texts, relevance score) best first."""
