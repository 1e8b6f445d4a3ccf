"""Where ingested objects come from (S3, or a local folder standing in for a bucket for `citerag invoke`), and
the SQS dead-letter queue that keeps messages retrying cannot fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from citerag.adapters.aws import error_code
from citerag.errors import DependencyError
from citerag.ingestion.ports import ObjectGone, ObjectTooLarge, StoredObject


class S3ObjectSource:
    def __init__(self, client: Any) -> None:
        self.s3 = client

    def get(self, bucket: str, key: str, max_bytes: int | None = None) -> StoredObject:
        try:
            obj = self.s3.get_object(Bucket=bucket, Key=key)
            body = obj["Body"]
            # GetObject's ContentLength comes with the headers: a multi-GB upload is refused before its body is
            # read into a function with 2 GB of memory (botocore service model s3, GetObjectOutput).
            size = obj.get("ContentLength")
            if max_bytes is not None and isinstance(size, int) and size > max_bytes:
                body.close()
                raise ObjectTooLarge(_too_large(size, max_bytes))
            data = body.read() if max_bytes is None else body.read(max_bytes + 1)
            if max_bytes is not None and len(data) > max_bytes:
                body.close()
                raise ObjectTooLarge(_too_large(None, max_bytes))
            return StoredObject(data, dict(obj.get("Metadata") or {}), obj.get("ETag"))
        except ObjectTooLarge:
            raise
        except Exception as exc:
            raise _read_error(exc, bucket, key) from None

    def version(self, bucket: str, key: str) -> str | None:
        try:
            return self.s3.head_object(Bucket=bucket, Key=key).get("ETag")
        except Exception as exc:
            err = _read_error(exc, bucket, key)
            if isinstance(err, ObjectGone):
                return None
            raise err from None


def _read_error(exc: Exception, bucket: str, key: str) -> Exception:
    code = error_code(exc)
    if code in ("NoSuchKey", "404", "NotFound"):  # HeadObject has no body, so no NoSuchKey: a bare 404
        return ObjectGone(key)
    return DependencyError(f"cannot read s3://{bucket}/{key}: {code}")


def _too_large(size: int | None, limit: int) -> str:
    held = f"{size:,} bytes" if size is not None else f"more than {limit:,} bytes"
    return f"object is too large ({held}; the limit is {limit:,})"


class LocalObjectSource:
    """Maps s3://BUCKET/KEY to ROOT/KEY, so S3 events can be replayed against local files."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()

    def get(self, bucket: str, key: str, max_bytes: int | None = None) -> tuple[bytes, dict[str, str]]:
        path = (self.root / key).resolve()
        if self.root not in path.parents and path != self.root:
            raise ObjectGone(key)  # a key that escapes the folder names nothing in it
        if not path.is_file():
            raise ObjectGone(key)
        size = path.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise ObjectTooLarge(_too_large(size, max_bytes))
        version = self.version(bucket, key)
        return StoredObject(path.read_bytes(), {}, version)

    def version(self, bucket: str, key: str) -> str | None:
        path = (self.root / key).resolve()
        if (self.root not in path.parents and path != self.root) or not path.is_file():
            return None
        st = path.stat()
        return f"{st.st_mtime_ns}-{st.st_size}"


class SqsDeadLetters:
    def __init__(self, client: Any, queue_url: str) -> None:
        self.sqs = client
        self.queue_url = queue_url

    def send(self, body: str, message_id: str, reason: str) -> None:
        self.sqs.send_message(
            QueueUrl=self.queue_url, MessageBody=body,
            MessageAttributes={"reason": {"DataType": "String", "StringValue": reason[:4000]},
                               "source_message_id": {"DataType": "String", "StringValue": message_id}},
        )


class NoDeadLetters:
    """No queue configured (local runs): the handler's log line is the only record."""

    def send(self, body: str, message_id: str, reason: str) -> None:
        return None
