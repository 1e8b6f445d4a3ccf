"""S3 event notifications (delivered through SQS) -> index or remove documents: the ingest Lambda's use case.

A message that can never be processed (not an S3 notification, a corrupt or unsupported file) goes to the
dead-letter sink at once with its reason, since retrying cannot fix it; a dependency failure (S3, Titan,
Pinecone) raises TransientFailure so the queue redelivers it, and after its retries, dead-letters it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from citerag.ingestion.files import IngestResult
from citerag.ingestion.ingestor import Ingestor
from citerag.ingestion.ports import DeadLetterSink, ObjectGone, ObjectSource
from citerag.ingestion.s3_events import PoisonMessage, parse_notification


class TransientFailure(RuntimeError):
    """Retrying later may succeed: let the queue redeliver the message."""


class NotificationOutcome(BaseModel):
    results: list[IngestResult]
    dead_letter: str | None = None  # why the message went to the dead-letter sink, if it did


class NotificationIngest:
    def __init__(self, ingestor: Ingestor, objects: ObjectSource, dead_letters: DeadLetterSink) -> None:
        self.ingestor = ingestor
        self.objects = objects
        self.dead_letters = dead_letters

    def handle(self, body: str, message_id: str,
               on_result: Callable[[IngestResult], None] | None = None) -> NotificationOutcome:
        try:
            events = parse_notification(body)
        except PoisonMessage as exc:
            self.dead_letters.send(body, message_id, str(exc))
            return NotificationOutcome(results=[], dead_letter=str(exc))
        results: list[IngestResult] = []
        dead: list[str] = []
        for ev in events:
            if ev.action == "removed":
                r = self.ingestor.remove(ev.uri)
            else:
                try:
                    data, meta = self.objects.get(ev.bucket, ev.key)
                except ObjectGone:
                    # Created, then deleted before we got to it: the end state is "no document".
                    r = self.ingestor.remove(ev.uri)
                else:
                    r = self.ingestor.ingest_bytes(data, ev.uri, posixpath.basename(ev.key),
                                                   metadata=acl_metadata(meta))
            if on_result:
                on_result(r)
            if r.status == "failed":
                if r.transient:
                    raise TransientFailure(f"transient failure for {ev.uri}: {r.reason}")
                reason = f"{ev.uri}: {r.reason}"
                self.dead_letters.send(body, message_id, reason)
                dead.append(reason)
            results.append(r)
        return NotificationOutcome(results=results, dead_letter="; ".join(dead) or None)


def acl_metadata(meta: dict[str, str]) -> dict[str, Any]:
    """Object user metadata x-amz-meta-tenant / x-amz-meta-groups become access metadata on every chunk."""
    out: dict[str, Any] = {}
    if meta.get("tenant"):
        out["tenant"] = meta["tenant"]
    if meta.get("groups"):
        out["groups"] = [g.strip() for g in meta["groups"].split(",") if g.strip()]
    return out
