"""Titan Text Embeddings V2 through Bedrock batch inference (CreateModelInvocationJob): the bulk path.

AWS lists Titan Text Embeddings V2 among the models batch inference supports, us-east-1 and ap-northeast-1 among its
Regions (Bedrock user guide, "Supported Regions and models for batch inference", batch-inference-supported). The
contract, each part from its page:
- input: JSONL files under an S3 prefix, one `{"recordId": ..., "modelInput": <the InvokeModel body>}` a line
  (batch-inference-data); a job must hold at least the quota *Minimum number of records per batch inference job*
  and at most *Records per batch inference job* (per model, Service Quotas);
- output: for each input file a `<name>.jsonl.out` under the output prefix, a line per record with `modelOutput`
  (the InvokeModel response body) or `error`, in no guaranteed order (batch-inference-results,
  batch-inference-data), and a `manifest.json.out` of counts;
- the job: `bedrock` (control plane) CreateModelInvocationJob / GetModelInvocationJob, shapes and the status enum
  from botocore's service model (botocore/data/bedrock/2023-04-20/service-2.json).

A record id is a digest of the model input, so one text appears once in a job whatever number of documents hold
it, and a vector is found again from the text alone (the completion step re-reads and re-chunks the document).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from citerag.adapters.aws import describe_error, error_code
from citerag.adapters.titan import MAX_INPUT_CHARS
from citerag.errors import DependencyError

# GetModelInvocationJob's status enum (botocore service model, ModelInvocationJobStatus): these end a job.
FINISHED = frozenset({"Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired"})
# Output exists only for these (batch-inference-results: "After a batch inference job is Completed"; a partly
# completed job writes the records that succeeded).
WITH_OUTPUT = frozenset({"Completed", "PartiallyCompleted"})
# CreateModelInvocationJob errors that mean "not now": too many jobs in flight (ServiceQuotaExceededException, the
# quota on submitted and in-progress jobs), throttled, or a service fault (botocore service model, errors).
NOT_NOW = frozenset({"ServiceQuotaExceededException", "ThrottlingException", "InternalServerException"})
MAX_OUTPUT_LINE = 1 << 20  # a 1,024-float vector is ~20 KB of JSON; a longer line is not a Titan record


class BatchUnavailable(DependencyError):
    """Bedrock would not take a job now (quota of jobs in flight, throttling): the passages wait for the next try."""


def model_input(text: str, dimensions: int) -> dict[str, Any]:
    """The InvokeModel body the on-demand embedder sends (adapters.titan), so both paths embed the same input."""
    return {"inputText": text[:MAX_INPUT_CHARS], "dimensions": dimensions, "normalize": True}


_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def record_id(text: str, dimensions: int) -> str:
    """A digest of what is embedded, as 11 alphanumeric characters: batch-inference-data asks for an "alphanumeric
    string" (earlier versions of the page: an "11 character alphanumeric string", which this also is). 62^11 is
    about 2^65: two of a job's 20,000 passages share an id with odds under 1 in 10^10."""
    body = json.dumps(model_input(text, dimensions), sort_keys=True, ensure_ascii=False)
    n = int.from_bytes(hashlib.sha256(body.encode("utf-8", "surrogatepass")).digest()[:9], "big")
    out = []
    for _ in range(11):
        n, r = divmod(n, 62)
        out.append(_BASE62[r])
    return "".join(out)


def records(texts: Iterable[str], dimensions: int) -> Iterator[tuple[str, str]]:
    """(record id, JSONL line) for each distinct text."""
    seen: set[str] = set()
    for text in texts:
        rid = record_id(text, dimensions)
        if rid in seen:
            continue
        seen.add(rid)
        line = json.dumps({"recordId": rid, "modelInput": model_input(text, dimensions)}, ensure_ascii=False)
        yield rid, line


class BedrockBatchJobs:
    """Jobs under `s3://bucket/prefix/jobs/<job>/`: `input/records.jsonl` in, `output/` out."""

    def __init__(self, bedrock: Any, s3: Any, bucket: str, prefix: str, role_arn: str, *,
                 model_id: str = "amazon.titan-embed-text-v2:0", dimensions: int = 1024,
                 timeout_hours: int = 24) -> None:
        self.bedrock = bedrock
        self.s3 = s3
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.role_arn = role_arn
        self.model_id = model_id
        self.dimensions = dimensions
        self.timeout_hours = max(24, min(168, timeout_hours))  # the service model's bounds

    def job_prefix(self, job_id: str) -> str:
        return f"{self.prefix}/jobs/{job_id}"

    def submit(self, job_id: str, lines: list[str]) -> str:
        """Write the input file and start the job; returns its ARN. `job_id` doubles as the idempotency token, so
        a retried submit after a lost response gets the same job, not a second one."""
        base = self.job_prefix(job_id)
        self.s3.put_object(Bucket=self.bucket, Key=f"{base}/input/records.jsonl",
                           Body=("\n".join(lines) + "\n").encode("utf-8"), ContentType="application/jsonl")
        try:
            resp = self.bedrock.create_model_invocation_job(
                jobName=f"citerag-{job_id}", roleArn=self.role_arn, modelId=self.model_id, clientRequestToken=job_id,
                inputDataConfig={"s3InputDataConfig": {"s3Uri": f"s3://{self.bucket}/{base}/input/",
                                                       "s3InputFormat": "JSONL"}},
                outputDataConfig={"s3OutputDataConfig": {"s3Uri": f"s3://{self.bucket}/{base}/output/"}},
                timeoutDurationInHours=self.timeout_hours)
        except Exception as exc:
            if error_code(exc) in NOT_NOW:
                raise BatchUnavailable(f"Bedrock took no batch job now: {describe_error(exc)}") from None
            raise DependencyError(f"cannot start the batch job: {describe_error(exc)}") from None
        return str(resp["jobArn"])

    def status(self, job_arn: str) -> tuple[str, str]:
        """(status, message) of a job."""
        try:
            resp = self.bedrock.get_model_invocation_job(jobIdentifier=job_arn)
        except Exception as exc:
            raise DependencyError(f"cannot read the batch job: {describe_error(exc)}") from None
        return str(resp.get("status", "")), str(resp.get("message") or "")

    def vectors(self, job_id: str) -> dict[str, np.ndarray]:
        """Every embedding the job wrote, by record id. Records with an `error`, or no vector of the configured
        size, are left out: their passages are embedded on demand when the document is written."""
        out: dict[str, np.ndarray] = {}
        base = f"{self.job_prefix(job_id)}/output/"
        try:
            pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=base)
            keys = [o["Key"] for page in pages for o in page.get("Contents", []) if o["Key"].endswith(".jsonl.out")]
            for key in keys:
                body = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"]
                for raw in body.iter_lines():
                    got = self._parse(raw)
                    if got:
                        out[got[0]] = got[1]
        except DependencyError:
            raise
        except Exception as exc:
            raise DependencyError(f"cannot read the batch job's output: {describe_error(exc)}") from None
        return out

    def _parse(self, raw: bytes) -> tuple[str, np.ndarray] | None:
        if not raw.strip() or len(raw) > MAX_OUTPUT_LINE:
            return None
        try:
            line = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(line, dict) or not isinstance(line.get("recordId"), str):
            return None
        output = line.get("modelOutput")
        vec = output.get("embedding") if isinstance(output, dict) else None
        if not isinstance(vec, list) or len(vec) != self.dimensions:
            return None
        try:
            arr = np.asarray(vec, dtype=np.float32)
        except (TypeError, ValueError):
            return None
        return (line["recordId"], arr) if np.isfinite(arr).all() else None


class PrecomputedEmbedder:
    """Passages whose vectors a batch job computed are served from them; the rest (a record the job failed, or a
    document changed since it was staged) go to the on-demand embedder. Queries always go on demand."""

    def __init__(self, vectors: dict[str, np.ndarray], fallback: Any, dimensions: int) -> None:
        self.vectors = vectors
        self.fallback = fallback
        self.dim = dimensions
        self.model_id = getattr(fallback, "model_id", f"amazon.titan-embed-text-v2:0/{dimensions}")
        self.hits = 0
        self.misses = 0

    def embed_query(self, text: str) -> np.ndarray:
        return self.fallback.embed_query(text)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing = []
        for i, text in enumerate(texts):
            vec = self.vectors.get(record_id(text, self.dim))
            if vec is None:
                missing.append(i)
            else:
                out[i] = vec
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            got = np.asarray(self.fallback.embed_passages([texts[i] for i in missing]), dtype=np.float32)
            out[missing] = got
        return out
