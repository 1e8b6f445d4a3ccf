"""Where ingested objects come from: S3, or a local folder standing in for a bucket (`citerag invoke`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from citerag.errors import DependencyError


class ObjectGone(Exception):
    """The object was deleted before it could be read (treat like ObjectRemoved)."""


class ObjectSource(Protocol):
    def get(self, bucket: str, key: str) -> tuple[bytes, dict[str, str]]:
        """Object bytes and user metadata (x-amz-meta-*)."""


class S3ObjectSource:
    def __init__(self, client: Any) -> None:
        self.s3 = client

    def get(self, bucket: str, key: str) -> tuple[bytes, dict[str, str]]:
        try:
            obj = self.s3.get_object(Bucket=bucket, Key=key)
            return obj["Body"].read(), dict(obj.get("Metadata") or {})
        except self.s3.exceptions.NoSuchKey:
            raise ObjectGone(key) from None
        except Exception as exc:
            code = getattr(exc, "response", {}).get("Error", {}).get("Code", type(exc).__name__)
            if code in ("NoSuchKey", "404"):
                raise ObjectGone(key) from None
            raise DependencyError(f"cannot read s3://{bucket}/{key}: {code}") from None


class LocalObjectSource:
    """Maps s3://BUCKET/KEY to ROOT/KEY, so S3 events can be replayed against local files."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()

    def get(self, bucket: str, key: str) -> tuple[bytes, dict[str, str]]:
        path = (self.root / key).resolve()
        if self.root not in path.parents and path != self.root:
            raise ObjectGone(key)  # a key that escapes the folder names nothing in it
        if not path.is_file():
            raise ObjectGone(key)
        return path.read_bytes(), {}
