"""Ports of ingestion: where objects come from and where messages that can never be processed go."""

from __future__ import annotations

from typing import Protocol


class ObjectGone(Exception):
    """The object was deleted before it could be read (treat like ObjectRemoved)."""


class ObjectTooLarge(Exception):
    """The object is larger than the ingestor takes: known before its bytes are read."""


class ObjectSource(Protocol):
    def get(self, bucket: str, key: str, max_bytes: int | None = None) -> tuple[bytes, dict[str, str]]:
        """Object bytes and user metadata (x-amz-meta-*). Raises ObjectGone when it no longer exists, and
        ObjectTooLarge, without reading it, when it holds more than max_bytes."""


class DeadLetterSink(Protocol):
    def send(self, body: str, message_id: str, reason: str) -> None:
        """Keep a message that retrying cannot fix, with the reason, for an operator to read."""
