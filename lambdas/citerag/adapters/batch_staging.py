"""Where the bulk path keeps its state: documents waiting for a batch job, and the jobs in flight.

In the statistics table (partition `pk`, sort `sk`, strings):
- `batch#staged` / `<uri>`: a document read and chunked by an ingest function whose passages wait for a job
  ({bucket, key, passages, part, staged_at}); its JSONL records are the S3 object `part` (a DynamoDB item holds at
  most 400 KB, a document's passages more);
- `batch#job` / `<job id>`: a submitted job ({arn, submitted_at}); the documents it serves are the S3 object
  `<prefix>/jobs/<job id>/documents.json`.
Staging a document again (a newer upload) overwrites both: the completion step reads the object as it is then, so
whichever staging a job took, the index ends at what the bucket holds.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from citerag.adapters.aws import describe_error
from citerag.adapters.bedrock_batch import records
from citerag.errors import DependencyError
from citerag.ingestion.bulk import StagedDocument, SubmittedJob

STAGED = "batch#staged"
JOBS = "batch#job"


class DynamoBatchStaging:
    def __init__(self, db: Any, table: str, s3: Any, bucket: str, prefix: str, dimensions: int, *,
                 now: Callable[[], float] = time.time) -> None:
        self.db = db
        self.table = table
        self.s3 = s3
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.dimensions = dimensions
        self._now = now

    def now(self) -> float:
        """The clock `staged_at` is written with (ages are measured with it too)."""
        return self._now()

    # --- documents --------------------------------------------------------------------------------------------

    def stage(self, uri: str, bucket: str, key: str, texts: Sequence[str]) -> None:
        lines = [line for _, line in records(texts, self.dimensions)]
        digest = hashlib.blake2b(uri.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
        part = f"{self.prefix}/staged/{digest}.jsonl"
        try:
            self.s3.put_object(Bucket=self.bucket, Key=part, Body=("\n".join(lines) + "\n").encode("utf-8"),
                               ContentType="application/jsonl")
            self.db.put_item(TableName=self.table, Item={
                "pk": {"S": STAGED}, "sk": {"S": uri}, "bucket": {"S": bucket}, "key": {"S": key},
                "passages": {"N": str(len(lines))}, "part": {"S": part}, "staged_at": {"N": f"{self._now():.3f}"}})
        except Exception as exc:
            raise DependencyError(f"cannot stage the document for a batch job: {describe_error(exc)}") from None

    def staged(self) -> list[StagedDocument]:
        return [StagedDocument(uri=i["sk"]["S"], bucket=i["bucket"]["S"], key=i["key"]["S"],
                               passages=int(i["passages"]["N"]), part=i["part"]["S"],
                               staged_at=float(i["staged_at"]["N"]))
                for i in self._query(STAGED)]

    def lines(self, doc: StagedDocument) -> list[str]:
        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=doc.part)["Body"].read().decode("utf-8")
        except Exception as exc:
            raise DependencyError(f"cannot read a staged document's records: {describe_error(exc)}") from None
        return [line for line in body.splitlines() if line.strip()]

    def unstage(self, docs: Sequence[StagedDocument]) -> None:
        keys = [{"pk": {"S": STAGED}, "sk": {"S": d.uri}} for d in docs]
        self._delete(keys)

    # --- jobs -------------------------------------------------------------------------------------------------

    def add_job(self, job_id: str, arn: str, docs: Sequence[StagedDocument]) -> None:
        listing = [{"uri": d.uri, "bucket": d.bucket, "key": d.key} for d in docs]
        try:
            self.s3.put_object(Bucket=self.bucket, Key=self._documents_key(job_id),
                               Body=json.dumps(listing).encode("utf-8"), ContentType="application/json")
            self.db.put_item(TableName=self.table, Item={
                "pk": {"S": JOBS}, "sk": {"S": job_id}, "arn": {"S": arn},
                "submitted_at": {"N": f"{self._now():.3f}"}})
        except Exception as exc:
            raise DependencyError(f"cannot record the batch job: {describe_error(exc)}") from None

    def jobs(self) -> list[SubmittedJob]:
        return [SubmittedJob(job_id=i["sk"]["S"], arn=i["arn"]["S"], submitted_at=float(i["submitted_at"]["N"]))
                for i in self._query(JOBS)]

    def job_documents(self, job_id: str) -> list[StagedDocument]:
        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=self._documents_key(job_id))["Body"].read()
        except Exception as exc:
            raise DependencyError(f"cannot read a batch job's documents: {describe_error(exc)}") from None
        return [StagedDocument(uri=d["uri"], bucket=d["bucket"], key=d["key"]) for d in json.loads(body)]

    def finish_job(self, job_id: str) -> None:
        self._delete([{"pk": {"S": JOBS}, "sk": {"S": job_id}}])

    # --- DynamoDB ---------------------------------------------------------------------------------------------

    def _documents_key(self, job_id: str) -> str:
        return f"{self.prefix}/jobs/{job_id}/documents.json"

    def _query(self, pk: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": self.table, "KeyConditionExpression": "pk = :pk",
                                  "ExpressionAttributeValues": {":pk": {"S": pk}}, "ConsistentRead": True}
        try:
            while True:
                page = self.db.query(**kwargs)
                items.extend(page.get("Items", []))
                if not page.get("LastEvaluatedKey"):
                    return items
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        except Exception as exc:
            raise DependencyError(f"cannot read the bulk-load state: {describe_error(exc)}") from None

    def _delete(self, keys: list[dict[str, Any]]) -> None:
        try:
            for start in range(0, len(keys), 25):  # BatchWriteItem takes at most 25 requests
                requests = [{"DeleteRequest": {"Key": k}} for k in keys[start:start + 25]]
                for _ in range(8):
                    left = self.db.batch_write_item(RequestItems={self.table: requests}).get("UnprocessedItems", {})
                    requests = left.get(self.table, [])
                    if not requests:
                        break
                    time.sleep(0.2)
                if requests:
                    raise DependencyError("DynamoDB left deletes unprocessed")
        except DependencyError:
            raise
        except Exception as exc:
            raise DependencyError(f"cannot update the bulk-load state: {describe_error(exc)}") from None
