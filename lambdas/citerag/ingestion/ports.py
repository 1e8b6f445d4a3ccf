"""Ports of ingestion: where objects come from and where messages that can never be processed go."""

from __future__ import annotations

from typing import Protocol


class ObjectGone(Exception):
    """The object was deleted before it could be read (treat like ObjectRemoved)."""


class ObjectSource(Protocol):
    def get(self, bucket: str, key: str) -> tuple[bytes, dict[str, str]]:
        """Object bytes and user metadata (x-amz-meta-*). Raises ObjectGone when it no longer exists."""


class DeadLetterSink(Protocol):
    def send(self, body: str, message_id: str, reason: str) -> None:
        """Keep a message that retrying cannot fix, with the reason, for an operator to read."""
