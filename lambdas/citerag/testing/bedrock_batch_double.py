"""A local HTTP double of Bedrock batch inference (control plane `bedrock`, REST-JSON) for the real boto3 client
(endpoint_url pointing here): CreateModelInvocationJob and GetModelInvocationJob. moto does not implement them.

Every request body and response is checked against botocore's own service model of `bedrock` (required members,
types, enums, lengths, patterns, ranges), so the double cannot drift from the wire format the client speaks.
`run(job_arn)` plays the service's part: reads the job's JSONL input from S3, embeds each record with the `embed`
function given, and writes `<output>/<job id>/<input name>.out` lines `{"recordId", "modelInput", "modelOutput"}`
(or `error`) in shuffled order, and `manifest.json.out` (Bedrock user guide, batch-inference-results).
"""

from __future__ import annotations

import json
import random
import re
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

import botocore.session

_MODEL = botocore.session.get_session().get_service_model("bedrock")


class ShapeError(AssertionError):
    pass


def check(shape_name: str, value: Any, path: str = "") -> None:
    """`value` as botocore's bedrock model defines the shape (raises ShapeError naming what is wrong)."""
    _check(_MODEL.shape_for(shape_name), value, path or shape_name)


def _check(shape, value: Any, path: str) -> None:
    kind = shape.type_name
    meta = shape.metadata
    if kind == "structure":
        if not isinstance(value, dict):
            raise ShapeError(f"{path}: not an object")
        for name in shape.required_members:
            if name not in value:
                raise ShapeError(f"{path}: {name} is required")
        for name, member in value.items():
            if name not in shape.members:
                raise ShapeError(f"{path}: unknown member {name}")
            _check(shape.members[name], member, f"{path}.{name}")
    elif kind == "list":
        if not isinstance(value, list):
            raise ShapeError(f"{path}: not a list")
        for i, item in enumerate(value):
            _check(shape.member, item, f"{path}[{i}]")
    elif kind == "string":
        if not isinstance(value, str):
            raise ShapeError(f"{path}: not a string")
        if "enum" in meta and value not in meta["enum"]:
            raise ShapeError(f"{path}: {value!r} not in {meta['enum']}")
        if not meta.get("min", 0) <= len(value) <= meta.get("max", 1 << 30):
            raise ShapeError(f"{path}: length {len(value)} out of bounds")
        if "pattern" in meta and not re.fullmatch(meta["pattern"], value):
            raise ShapeError(f"{path}: {value!r} does not match {meta['pattern']}")
    elif kind in ("integer", "long"):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ShapeError(f"{path}: not an integer")
        if not meta.get("min", -(1 << 62)) <= value <= meta.get("max", 1 << 62):
            raise ShapeError(f"{path}: {value} out of bounds")
    elif kind == "timestamp" and not isinstance(value, str | int | float):
        raise ShapeError(f"{path}: not a timestamp")


class BedrockBatchDouble:
    def __init__(self, s3: Any, embed: Callable[[str, int], list[float]], *, account: str = "123456789012",
                 region: str = "ap-northeast-1", seed: int = 0) -> None:
        self.s3 = s3
        self.embed = embed
        self.account = account
        self.region = region
        self.jobs: dict[str, dict[str, Any]] = {}  # job id -> GetModelInvocationJob response
        self.by_token: dict[str, str] = {}
        self.failing_records: set[str] = set()  # record ids the "model" refuses (an error line)
        self.refuse_with: str | None = None  # an error code CreateModelInvocationJob answers with
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> BedrockBatchDouble:
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- the API ----------------------------------------------------------------------------------------------

    def _create(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        check("CreateModelInvocationJobRequest", body)
        if self.refuse_with:
            return 400, {"message": "refused by the test", "__type": self.refuse_with}
        token = body.get("clientRequestToken")
        if token and token in self.by_token:  # idempotent: the same job again
            return 200, {"jobArn": self.jobs[self.by_token[token]]["jobArn"]}
        job_id = uuid.uuid4().hex[:12]
        arn = f"arn:aws:bedrock:{self.region}:{self.account}:model-invocation-job/{job_id}"
        now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        job = {"jobArn": arn, "jobName": body["jobName"], "modelId": body["modelId"], "roleArn": body["roleArn"],
               "status": "Submitted", "submitTime": now, "lastModifiedTime": now,
               "inputDataConfig": body["inputDataConfig"], "outputDataConfig": body["outputDataConfig"],
               "timeoutDurationInHours": body.get("timeoutDurationInHours", 24)}
        if token:
            job["clientRequestToken"] = token
            self.by_token[token] = job_id
        self.jobs[job_id] = job
        out = {"jobArn": arn}
        check("CreateModelInvocationJobResponse", out)
        return 200, out

    def _get(self, ident: str) -> tuple[int, dict[str, Any]]:
        check("GetModelInvocationJobRequest", {"jobIdentifier": ident})
        job = self.jobs.get(ident.rsplit("/", 1)[-1])
        if job is None:
            return 404, {"message": "no such job", "__type": "ResourceNotFoundException"}
        check("GetModelInvocationJobResponse", job)
        return 200, job

    # --- the service's work -----------------------------------------------------------------------------------

    def run(self, job_arn: str, status: str = "Completed") -> None:
        """Process a job: embed its records into the output prefix and end it with `status`."""
        job = self.jobs[job_arn.rsplit("/", 1)[-1]]
        bucket, prefix = _split(job["inputDataConfig"]["s3InputDataConfig"]["s3Uri"])
        out_bucket, out_prefix = _split(job["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"])
        job_id = job["jobArn"].rsplit("/", 1)[-1]
        total = ok = tokens = 0
        if status in ("Completed", "PartiallyCompleted"):
            listing = self.s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
            for obj in listing:
                if not obj["Key"].endswith(".jsonl"):
                    continue
                lines = self.s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read().decode().splitlines()
                out = []
                for raw in filter(str.strip, lines):
                    rec = json.loads(raw)
                    total += 1
                    body = rec["modelInput"]
                    if rec["recordId"] in self.failing_records:
                        out.append({**rec, "error": {"errorCode": 400, "errorMessage": "bad request"}})
                        continue
                    n = max(1, len(body["inputText"]) // 5)
                    tokens += n
                    ok += 1
                    out.append({**rec, "modelOutput": {"embedding": self.embed(body["inputText"], body["dimensions"]),
                                                       "inputTextTokenCount": n}})
                self._rng.shuffle(out)  # the output's order is not the input's
                name = obj["Key"].rsplit("/", 1)[-1]
                self.s3.put_object(Bucket=out_bucket, Key=f"{out_prefix.rstrip('/')}/{job_id}/{name}.out",
                                   Body="\n".join(json.dumps(o) for o in out).encode())
            manifest = {"totalRecordCount": total, "processedRecordCount": total, "successRecordCount": ok,
                        "errorRecordCount": total - ok, "inputTokenCount": tokens, "outputTokenCount": 0}
            self.s3.put_object(Bucket=out_bucket, Key=f"{out_prefix.rstrip('/')}/{job_id}/manifest.json.out",
                               Body=json.dumps(manifest).encode())
            job.update(totalRecordCount=total, processedRecordCount=total, successRecordCount=ok,
                       errorRecordCount=total - ok)
        job["status"] = status
        job["endTime"] = datetime.now(UTC).isoformat().replace("+00:00", "Z")

    # --- HTTP -------------------------------------------------------------------------------------------------

    def _handler(self):
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_):  # quiet
                pass

            def _answer(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if status >= 400:
                    self.send_header("x-amzn-ErrorType", payload["__type"])
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with double._lock:
                    double.requests.append(("POST", self.path, body))
                    if self.path != "/model-invocation-job":
                        return self._answer(404, {"message": "unknown", "__type": "UnknownOperationException"})
                    self._answer(*double._create(body))

            def do_GET(self):
                with double._lock:
                    double.requests.append(("GET", self.path, {}))
                    if not self.path.startswith("/model-invocation-job/"):
                        return self._answer(404, {"message": "unknown", "__type": "UnknownOperationException"})
                    self._answer(*double._get(unquote(self.path.split("/model-invocation-job/", 1)[1])))

        return Handler


def _split(uri: str) -> tuple[str, str]:
    rest = uri.removeprefix("s3://")
    bucket, _, prefix = rest.partition("/")
    return bucket, prefix
