"""Ingestion: files -> documents -> chunks -> dense + sparse vectors -> one atomic replace per document.

Unchanged files (same content hash) are skipped before parsing, so re-ingesting embeds nothing.
A failure in one document never touches the index and never stops the rest of a batch.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from citerag.documents.chunking import chunk_document, parent_id_for
from citerag.documents.loaders import kind_for, load_bytes
from citerag.documents.model import LoadedDocument, content_hash_of, doc_id_for
from citerag.errors import CiteragError, DependencyError, DiskFullError, DocumentError
from citerag.ingestion.files import IngestResult, expand_paths, read_regular_file, uri_to_path
from citerag.search.ports import DocumentInfo, Embedder, Record, VectorIndex
from citerag.search.sparse import CorpusStats, encode_document, term_counts


class Ingestor:
    def __init__(
        self,
        embedder: Embedder,
        index: VectorIndex,
        *,
        namespace: str = "",
        chunk_chars: int = 600,
        overlap_chars: int = 120,
        max_file_bytes: int = 200 * 1024 * 1024,
        max_pages: int = 5000,
        max_chunks: int = 20_000,
        extra_metadata: dict[str, Any] | None = None,
    ) -> None:
        self.embedder = embedder
        self.index = index
        self.namespace = namespace
        self.chunk_chars = chunk_chars
        self.overlap_chars = overlap_chars
        self.max_file_bytes = max_file_bytes
        self.max_pages = max_pages
        self.max_chunks = max_chunks
        self.extra_metadata = extra_metadata or {}

    # --- one document -------------------------------------------------------------------------------------

    def ingest_bytes(
        self, data: bytes, source_uri: str, name: str, *, force: bool = False, metadata: dict[str, Any] | None = None
    ) -> IngestResult:
        try:
            kind_for(name)
            if len(data) > self.max_file_bytes:
                raise DocumentError(f"file is too large ({len(data):,} bytes; the limit is {self.max_file_bytes:,})")
            doc_id = doc_id_for(source_uri)
            access = {**self.extra_metadata, **(metadata or {})}
            version = version_of(data, access)
            existing = self.index.get_document(doc_id, self.namespace)
            if existing and existing.content_hash == version and not force:
                return IngestResult(source=source_uri, status="unchanged", chunks=existing.n_chunks)
            doc = load_bytes(data, source_uri, name, max_pages=self.max_pages)
            n = self._index_document(doc.model_copy(update={"content_hash": version}), access)
        except DiskFullError:
            raise
        except CiteragError as exc:
            return IngestResult(source=source_uri, status="failed", reason=str(exc),
                                transient=isinstance(exc, DependencyError))
        return IngestResult(source=source_uri, status="replaced" if existing else "added", chunks=n)

    def ingest_path(self, path: Path) -> IngestResult:
        uri = path.resolve().as_uri() if path.exists() else path.absolute().as_uri()
        try:
            kind_for(path.name)
            if not path.exists():
                raise DocumentError("no such file")
            if path.is_dir():
                raise DocumentError("is a directory, not a file")
            data = read_regular_file(path, self.max_file_bytes)
        except PermissionError:
            return IngestResult(source=uri, status="failed", reason="cannot read: permission denied")
        except OSError as exc:
            return IngestResult(source=uri, status="failed", reason=f"cannot read: {exc.strerror or exc}")
        except CiteragError as exc:
            return IngestResult(source=uri, status="failed", reason=str(exc))
        return self.ingest_bytes(data, uri, path.name)

    def remove(self, source_uri: str) -> IngestResult:
        n = self.index.delete_document(doc_id_for(source_uri), self.namespace)
        return IngestResult(source=source_uri, status="removed", chunks=n)

    def _index_document(self, doc: LoadedDocument, metadata: dict[str, Any]) -> int:
        chunks = chunk_document(doc, max_chars=self.chunk_chars, overlap_chars=self.overlap_chars)
        if not chunks:
            raise DocumentError("no text found in the file")
        if len(chunks) > self.max_chunks:
            raise DocumentError(f"the document makes {len(chunks):,} passages; the limit is {self.max_chunks:,} "
                                "(CITERAG_MAX_CHUNKS_PER_DOCUMENT): split it into smaller files")
        texts = [passage_text(c.title, c.text) for c in chunks]
        vectors = self.embedder.embed_passages(texts)
        counts = [term_counts(t) for t in texts]
        n_docs, total_len = self.index.corpus_size(self.namespace)
        if not n_docs:
            # First document of a namespace: its own chunks set the average length.
            n_docs, total_len = len(counts), sum(sum(c.values()) for c in counts)
        stats = CorpusStats(n_docs=n_docs, total_len=total_len)  # document vectors only need the average length
        records = []
        for c, v, cnt in zip(chunks, vectors, counts, strict=True):
            md = {**metadata, **c.metadata(), "ingested_at": _now()}
            records.append(
                Record(id=c.id, values=v, sparse=encode_document(cnt, stats), metadata=md, length=sum(cnt.values()))
            )
        parents = {parent_id_for(doc, i): section.text for i, section in enumerate(doc.sections)}
        info = DocumentInfo(
            doc_id=doc.doc_id, source_uri=doc.source_uri, title=doc.title, content_hash=doc.content_hash,
            kind=doc.kind, n_chunks=len(records), ingested_at=_now(), namespace=self.namespace,
        )
        self.index.replace_document(info, records, parents, self.namespace)
        return len(records)

    # --- many paths ---------------------------------------------------------------------------------------

    def ingest_paths(
        self,
        paths: Iterable[Path],
        *,
        sync: bool = False,
        on_start: Callable[[int], None] | None = None,
        on_file: Callable[[IngestResult], None] | None = None,
    ) -> list[IngestResult]:
        roots = [Path(p) for p in paths]
        files, results = expand_paths(roots)
        if on_start:
            on_start(len(files))
        for n, f in enumerate(files):
            try:
                r = self.ingest_path(f)
            except DiskFullError as exc:
                # Every later file would fail the same way: stop, and say which were not attempted.
                results.append(IngestResult(source=f.absolute().as_uri(), status="failed", reason=str(exc)))
                results.extend(IngestResult(source=g.absolute().as_uri(), status="skipped",
                                            reason="not attempted: the disk is full") for g in files[n + 1:])
                return results
            results.append(r)
            if on_file:
                on_file(r)
        if sync:
            results.extend(self._sync(roots))
        return results

    def _sync(self, roots: list[Path]) -> list[IngestResult]:
        """Remove documents whose files under the given roots no longer exist."""
        removed = []
        resolved = [r.resolve() for r in roots]
        for info in self.index.list_documents(self.namespace):
            path = uri_to_path(info.source_uri)
            if path is None or path.exists():
                continue
            if any(path == r or r in path.parents for r in resolved):
                removed.append(self.remove(info.source_uri))
        return removed


def version_of(data: bytes, access: dict[str, Any]) -> str:
    """What decides "unchanged": the content and the access metadata (re-ingesting a file with another tenant must
    replace it, or the old tenant would keep seeing it)."""
    if not access:
        return content_hash_of(data)
    canonical = json.dumps(access, sort_keys=True, ensure_ascii=False, default=str)
    return content_hash_of(content_hash_of(data).encode() + b"\0" + canonical.encode("utf-8"))


def passage_text(title: str, text: str) -> str:
    """What gets embedded and BM25-encoded: the title gives a chunk its topic."""
    return f"{title}\n{text}" if title else text


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
