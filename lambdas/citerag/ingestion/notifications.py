"""S3 event notifications (delivered through SQS) -> index or remove documents: the ingest Lambda's use case.

Failures are classified by type: a dependency failure (S3, Titan, Pinecone) raises so the queue redelivers the
message (and, after its retries, dead-letters it); anything else (not an S3 notification, a corrupt or unsupported
file, an unexpected error) goes to the dead-letter sink at once with its reason, since retrying cannot fix it.
Each event reconciles the index with the object as it is now, so late and out-of-order events are harmless.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pydantic import BaseModel

from citerag.errors import DependencyError
from citerag.ingestion.files import IngestResult
from citerag.ingestion.ingestor import Ingestor
from citerag.ingestion.ports import (
    DeadLetterSink,
    DocumentLocks,
    LockBusy,
    NoLocks,
    ObjectGone,
    ObjectSource,
    ObjectTooLarge,
)
from citerag.ingestion.s3_events import ObjectEvent, PoisonMessage, parse_notification

MAX_REREADS = 3  # each a newer upload that landed while the one before was indexed


class TransientFailure(RuntimeError):
    """Retrying later may succeed: let the queue redeliver the message."""


class PassageStager(Protocol):
    """Keeps a document's passages for a batch job (the bulk path, ingestion.bulk)."""

    def stage(self, uri: str, bucket: str, key: str, texts: Sequence[str]) -> None: ...


class NotificationOutcome(BaseModel):
    results: list[IngestResult]
    dead_letter: str | None = None  # why the message went to the dead-letter sink, if it did


class NotificationIngest:
    def __init__(self, ingestor: Ingestor, objects: ObjectSource, dead_letters: DeadLetterSink,
                 locks: DocumentLocks | None = None, stager: PassageStager | None = None) -> None:
        self.ingestor = ingestor
        self.objects = objects
        self.dead_letters = dead_letters
        self.locks = locks or NoLocks()
        self.stager = stager  # set: documents are staged for a batch job instead of embedded now

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
            try:
                r = self._apply(ev)
            except (TransientFailure, DependencyError):
                raise
            except Exception as exc:  # classified by type: anything but a dependency failure cannot heal by retrying
                r = IngestResult(source=ev.uri, status="failed", reason=f"unexpected {type(exc).__name__}")
            if on_result:
                on_result(r)
            if r.status == "failed":
                if r.transient:
                    # Redelivered whole: its permanent failures are dead-lettered on the delivery that ends, so
                    # the queue holds one copy of the message, not one per delivery.
                    raise TransientFailure(f"transient failure for {ev.uri}: {r.reason}")
                dead.append(f"{ev.uri}: {r.reason}")
            results.append(r)
        reasons = _joined(dead)
        if dead:  # one copy of the message, with its records' reasons
            self.dead_letters.send(body, message_id, reasons)
        return NotificationOutcome(results=results, dead_letter=reasons or None)

    def reconcile(self, ev: ObjectEvent) -> IngestResult:
        """Make the index match one object as it is now (what each notification does): the bulk path's last step."""
        return self._apply(ev)

    def _apply(self, ev: ObjectEvent) -> IngestResult:
        """Make the index match the object as it is now, whatever the event says: notifications arrive late and
        out of order (a stale ObjectRemoved after a newer ObjectCreated must not delete a live document), so
        both kinds read the current object and index it, or remove the document when it is gone. Then the object
        must still be the one read: two invocations handling two uploads of one key at once, the one that read
        the older version could write last, and no later event would correct it; a changed object is read
        again (by the invocation that wrote last, so the index ends at what the bucket holds).
        With many functions, one document is written by one at a time (`locks`): Pinecone has no conditional
        writes, so two writers of one document could otherwise leave one's vectors under the other's manifest."""
        try:
            with self.locks.hold(ev.uri):
                result, seen = self._reconcile(ev)
                for _ in range(MAX_REREADS):
                    if result.status == "failed" or self.objects.version(ev.bucket, ev.key) == seen:
                        break
                    result, seen = self._reconcile(ev)
        except LockBusy as exc:
            raise TransientFailure(f"{ev.uri} is being written by another function: {exc}") from None
        return result

    def _reconcile(self, ev: ObjectEvent) -> tuple[IngestResult, str | None]:
        name = posixpath.basename(ev.key)
        try:  # a text object whose size alone is over the text budget is refused before its body is read
            obj = self.objects.get(ev.bucket, ev.key, max_bytes=self.ingestor.max_bytes_for(name))
        except ObjectGone:
            return self.ingestor.remove(ev.uri), None
        except ObjectTooLarge as exc:
            return IngestResult(source=ev.uri, status="failed", reason=self.ingestor.over_budget(name, exc)), None
        if not obj.data:
            return self._empty(ev), obj.version
        if self.stager is not None:
            got = self.ingestor.passages_to_embed(obj.data, ev.uri, name, metadata=acl_metadata(obj.metadata))
            if isinstance(got, IngestResult):  # unchanged, or cannot be indexed: as on demand
                return got, obj.version
            self.stager.stage(ev.uri, ev.bucket, ev.key, got)
            return IngestResult(source=ev.uri, status="staged", chunks=len(got)), obj.version
        return self.ingestor.ingest_bytes(obj.data, ev.uri, name, metadata=acl_metadata(obj.metadata)), obj.version

    def _empty(self, ev: ObjectEvent) -> IngestResult:
        # An empty object holds no document: whatever was indexed under its key is gone; nothing to dead-letter.
        removed = self.ingestor.remove(ev.uri)
        return removed.model_copy(update={"status": "removed" if removed.chunks else "skipped",
                                          "reason": "empty object: nothing to index"})


MAX_REASON_CHARS = 4000  # of a dead-letter reason: the message attribute an operator reads


def _joined(reasons: list[str]) -> str:
    """The reasons, as many as fit whole, then how many more there are."""
    out: list[str] = []
    for n, reason in enumerate(reasons):
        rest = len(reasons) - n - 1
        tail = f"; and {rest} more" if rest else ""
        if len("; ".join([*out, reason])) + len(tail) > MAX_REASON_CHARS:
            return "; ".join(out) + f"{'; ' if out else ''}and {len(reasons) - n} more"
        out.append(reason)
    return "; ".join(out)


def acl_metadata(meta: dict[str, str]) -> dict[str, Any]:
    """Object user metadata x-amz-meta-tenant / x-amz-meta-groups become access metadata on every chunk."""
    out: dict[str, Any] = {}
    if meta.get("tenant"):
        out["tenant"] = meta["tenant"]
    if meta.get("groups"):
        out["groups"] = [g.strip() for g in meta["groups"].split(",") if g.strip()]
    return out
