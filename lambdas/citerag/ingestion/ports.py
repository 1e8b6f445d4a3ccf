"""Ports of ingestion: where objects come from and where messages that can never be processed go."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import NamedTuple, Protocol


class ObjectGone(Exception):
    """The object was deleted before it could be read (treat like ObjectRemoved)."""


class ObjectTooLarge(Exception):
    """The object is larger than the ingestor takes: known before its bytes are read."""


class StoredObject(NamedTuple):
    data: bytes
    metadata: dict[str, str]  # user metadata (x-amz-meta-*)
    version: str | None  # what tells this upload from the next (S3: the ETag)


class ObjectSource(Protocol):
    def get(self, bucket: str, key: str, max_bytes: int | None = None) -> StoredObject:
        """The object as it is now. Raises ObjectGone when it no longer exists, and ObjectTooLarge, without
        reading it, when it holds more than max_bytes."""

    def version(self, bucket: str, key: str) -> str | None:
        """The version `get` would read now (None: the object is gone), without reading the object."""


class DeadLetterSink(Protocol):
    def send(self, body: str, message_id: str, reason: str) -> None:
        """Keep a message that retrying cannot fix, with the reason, for an operator to read."""


class LockBusy(Exception):
    """Another function holds the document and did not let go in time: retry the message later."""


class DocumentLocks(Protocol):
    def hold(self, key: str) -> AbstractContextManager[None]:
        """Hold `key` (a document's URI) against every other function until the block ends. Raises LockBusy
        after waiting a bounded time; a holder that died lets go when its lease runs out."""


class NoLocks:
    """One writer (the embedded path, `citerag invoke ingest`): nothing to exclude."""

    def hold(self, key: str) -> AbstractContextManager[None]:
        return nullcontext()
