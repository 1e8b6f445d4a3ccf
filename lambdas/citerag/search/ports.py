"""Ports of the search core: what the pipeline needs from an index, a parent store, and a reranker.

The embedded SQLite index and the Pinecone adapter both implement `VectorIndex`; tests written against
one hold for the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from citerag.search.sparse import CorpusStats, SparseVector


class Record(BaseModel):
    """One vector record, Pinecone-shaped: dense values, sparse values and metadata."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    values: Any  # np.ndarray (float32); kept loose so numpy arrays pass without copies
    sparse: SparseVector = Field(default_factory=SparseVector)
    metadata: dict[str, Any]
    length: int = 0  # BM25 document length in tokens, kept so corpus statistics can be updated on delete


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

    def get_parent(self, parent_id: str, namespace: str = "") -> str | None: ...

    def corpus_stats(self, namespace: str = "") -> CorpusStats: ...

    def corpus_size(self, namespace: str = "") -> tuple[int, int]:
        """(documents, total tokens): what encoding a document needs, cheaper than the full statistics."""


class Reranker(Protocol):
    def rerank(self, query: str, texts: Sequence[str], top_n: int) -> list[tuple[int, float]]:
        """Return (index into texts, relevance score) best first."""
