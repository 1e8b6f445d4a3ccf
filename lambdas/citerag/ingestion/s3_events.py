"""S3 event notifications as delivered through SQS: parsing and validation (no AWS calls here)."""

from __future__ import annotations

import json
from typing import Literal
from urllib.parse import unquote_plus

from pydantic import BaseModel, Field, ValidationError


class PoisonMessage(ValueError):
    """A message that can never be processed; it goes to the DLQ with this reason."""


MAX_RECORDS = 100


class ObjectEvent(BaseModel):
    action: Literal["created", "removed"]
    bucket: str = Field(min_length=3, max_length=63)
    key: str = Field(min_length=1, max_length=1024)
    size: int | None = Field(None, ge=0)
    sequencer: str | None = Field(None, max_length=64)

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


def parse_notification(body: str) -> list[ObjectEvent]:
    """One SQS message body -> object events. S3's TestEvent yields nothing; anything unreadable is poison."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, TypeError):
        raise PoisonMessage("message body is not JSON") from None
    if not isinstance(data, dict):
        raise PoisonMessage("message body is not a JSON object")
    if data.get("Event") == "s3:TestEvent":
        return []
    records = data.get("Records")
    if not isinstance(records, list):
        raise PoisonMessage("message is not an S3 event notification (no Records list)")
    if len(records) > MAX_RECORDS:
        raise PoisonMessage(f"message has {len(records)} records; S3 sends at most {MAX_RECORDS}")
    events = []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict) or rec.get("eventSource") != "aws:s3":
            raise PoisonMessage(f"record {i} is not an S3 event")
        name = rec.get("eventName")
        if not isinstance(name, str):
            raise PoisonMessage(f"record {i}: eventName must be a string")
        if name.startswith("ObjectCreated:"):
            action = "created"
        elif name.startswith("ObjectRemoved:") or name.startswith("LifecycleExpiration:"):
            action = "removed"
        else:
            continue  # restores, replication, tagging...: nothing to index
        s3 = rec.get("s3")
        obj = s3.get("object") if isinstance(s3, dict) else None
        if not isinstance(obj, dict):
            raise PoisonMessage(f"record {i} has no object key")
        bucket = s3.get("bucket")  # type: ignore[union-attr]
        if not isinstance(bucket, dict):
            raise PoisonMessage(f"record {i}: s3.bucket must be an object")
        raw_key = obj.get("key")
        if not isinstance(raw_key, str) or not raw_key:
            raise PoisonMessage(f"record {i} has no object key")
        try:
            key = unquote_plus(raw_key, errors="strict")
        except UnicodeDecodeError:
            raise PoisonMessage(f"record {i} has an object key that is not valid URL-encoded UTF-8") from None
        if key.endswith("/"):
            continue  # a "folder" placeholder the console creates: no document
        try:
            # Strict: a number written as a string, or a key that is not text, is a malformed message, not a
            # transient failure to retry.
            events.append(ObjectEvent.model_validate(
                {"action": action, "bucket": bucket.get("name"), "key": key, "size": obj.get("size"),
                 "sequencer": obj.get("sequencer")}, strict=True))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise PoisonMessage(f"record {i}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    return events
