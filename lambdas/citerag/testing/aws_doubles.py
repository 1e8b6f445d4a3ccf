"""Fast in-process doubles of the S3 and DynamoDB calls ingest makes, behind the real boto3 clients (answered on
botocore's before-send hook, in each service's wire format), for runs too large for moto: moto's DynamoDB copies
the whole table on every TransactWriteItems, so a 10,000-document load would take hours. The tests hold these
doubles to moto's behaviour on the same calls (tests/test_aws_doubles.py).

Covered: SQS CreateQueue, GetQueueAttributes, SendMessage(Batch), ReceiveMessage, DeleteMessageBatch,
ChangeMessageVisibility, with visibility timeouts on a clock the caller gives (virtual time) and the redrive to a
dead-letter queue after maxReceiveCount receives (JSON 1.0: botocore's sqs service model; docs SQS
sqs-dead-letter-queues); S3 GetObject, HeadObject, PutObject (If-Match / If-None-Match), DeleteObject,
DeleteObjects, CreateBucket (REST-XML: docs AmazonS3 API reference); DynamoDB CreateTable, GetItem, PutItem and
DeleteItem (the document lease's conditions), Query (key conditions `pk = :pk`, optionally `AND begins_with(sk,
:p)`), TransactWriteItems (Put and Delete; conditions `attribute_not_exists(pk)` and `seq = :seq`), BatchWriteItem
(deletes) (JSON 1.0: botocore's dynamodb service model). Anything else is refused loudly, so a new call cannot
silently pass.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit
from xml.etree import ElementTree

from botocore.awsrequest import AWSResponse


class _Raw(io.BytesIO):
    def stream(self, **_):
        data = self.read()
        while data:
            yield data
            data = self.read()


def response(url: str, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> AWSResponse:
    """A response botocore parses as the service's own: status, headers and a body it can stream."""
    return AWSResponse(url, status, {"Content-Length": str(len(body)), **(headers or {})}, _Raw(body))


_response = response
_JSON = {"Content-Type": "application/x-amz-json-1.0"}


def _json_target(double, request, missing: tuple[type[Exception], str, str]) -> AWSResponse:
    """A JSON-protocol call (X-Amz-Target: Service.Operation) answered by the double's `_Operation` method; the
    error `missing` names ((exception, code, message)) is the service's answer for an unknown resource."""
    op = request.headers["X-Amz-Target"]
    op = (op.decode() if isinstance(op, bytes) else op).split(".", 1)[1]
    body = json.loads(_body(request) or b"{}")
    exception, code, message = missing
    with double._lock:
        try:
            out = getattr(double, f"_{op}")(body)
        except exception as exc:
            payload = {"__type": code, "message": getattr(exc, "message", message), **getattr(exc, "extra", {})}
            if isinstance(exc, _Error):
                payload["__type"] = f"com.amazonaws.dynamodb.v20120810#{exc.code}"
            return _response(request.url, 400, json.dumps(payload).encode(), _JSON)
        except AttributeError:
            raise NotImplementedError(f"{type(double).__name__}: {op}") from None
    return _response(request.url, 200, json.dumps(out).encode(), _JSON)


def _body(request) -> bytes:
    body = request.body
    if body is None:
        return b""
    if isinstance(body, bytes | bytearray):
        return bytes(body)
    if isinstance(body, str):
        return body.encode()
    data = body.read()
    if hasattr(body, "seek"):
        body.seek(0)
    return data


class S3Double:
    """Buckets of objects {key: (body, etag, metadata)}. Register with `attach(client)`."""

    def __init__(self) -> None:
        self.buckets: dict[str, dict[str, tuple[bytes, str, dict[str, str]]]] = {}
        self._lock = threading.Lock()

    def attach(self, client) -> None:
        client.meta.events.register_first("before-send.s3", self)

    def __call__(self, request, **_) -> AWSResponse:
        url = urlsplit(request.url)
        host_bucket = url.netloc.split(".s3.")[0] if ".s3." in url.netloc else None
        path = unquote(url.path)
        if host_bucket:
            bucket, key = host_bucket, path.lstrip("/")
        else:
            bucket, _, key = path.lstrip("/").partition("/")
        method, query = request.method, url.query
        with self._lock:
            if method == "PUT" and not key:
                self.buckets.setdefault(bucket, {})
                return _response(request.url, 200, headers={"Location": f"/{bucket}"})
            objects = self.buckets.get(bucket)
            if objects is None:
                return self._error(request.url, 404, "NoSuchBucket", "The specified bucket does not exist")
            if method == "POST" and query.startswith("delete"):
                root = ElementTree.fromstring(_body(request))
                for el in root.iter():
                    if el.tag.endswith("Key") and el.text:
                        objects.pop(el.text, None)
                return _response(request.url, 200, b'<?xml version="1.0" encoding="UTF-8"?><DeleteResult '
                                 b'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></DeleteResult>')
            if method == "PUT":
                return self._put(request, objects, key)
            if method in ("GET", "HEAD"):
                got = objects.get(key)
                if got is None:
                    if method == "HEAD":
                        return _response(request.url, 404)
                    return self._error(request.url, 404, "NoSuchKey", "The specified key does not exist.")
                data, etag, meta = got
                headers = {"ETag": etag, "Content-Type": "application/octet-stream",
                           **{f"x-amz-meta-{k}": v for k, v in meta.items()}}
                if method == "HEAD":
                    return AWSResponse(request.url, 200, {**headers, "Content-Length": str(len(data))}, _Raw(b""))
                return _response(request.url, 200, data, headers)
            if method == "DELETE":
                objects.pop(key, None)
                return _response(request.url, 204)
        raise NotImplementedError(f"S3Double: {method} {request.url}")

    def _put(self, request, objects, key: str) -> AWSResponse:
        headers = {k.lower(): v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()}
        current = objects.get(key)
        if_match, if_none = headers.get("if-match"), headers.get("if-none-match")
        if if_match is not None and (current is None or current[1].strip('"') != if_match.strip('"')):
            if current is None:
                return self._error(request.url, 404, "NoSuchKey", "The specified key does not exist.")
            return self._error(request.url, 412, "PreconditionFailed",
                               "At least one of the pre-conditions you specified did not hold")
        if if_none == "*" and current is not None:
            return self._error(request.url, 412, "PreconditionFailed",
                               "At least one of the pre-conditions you specified did not hold")
        data = _body(request)
        if "aws-chunked" in headers.get("content-encoding", "") or headers.get(
                "x-amz-content-sha256", "").startswith("STREAMING-"):
            data = _dechunk(data)
        etag = f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"'
        meta = {k.removeprefix("x-amz-meta-"): str(v) for k, v in headers.items() if k.startswith("x-amz-meta-")}
        objects[key] = (data, etag, meta)
        return _response(request.url, 200, headers={"ETag": etag})

    @staticmethod
    def _error(url: str, status: int, code: str, message: str) -> AWSResponse:
        body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message>'
                "</Error>").encode()
        return _response(url, status, body, {"Content-Type": "application/xml"})


def _dechunk(data: bytes) -> bytes:
    """An aws-chunked body (botocore sends PutObject so when it adds a trailing checksum): `<hex size>[;ext]\r\n
    <data>\r\n` until a zero-size chunk, then trailers (docs AmazonS3 sigv4-streaming)."""
    out, pos = bytearray(), 0
    while True:
        end = data.index(b"\r\n", pos)
        size = int(data[pos:end].split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += data[end + 2 : end + 2 + size]
        pos = end + 2 + size + 2


class DynamoDBDouble:
    """Tables of items {(pk, sk): item} with the key names the statistics table uses."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def attach(self, client) -> None:
        client.meta.events.register_first("before-send.dynamodb", self)

    def __call__(self, request, **_) -> AWSResponse:
        return _json_target(self, request, (_Error, "", ""))

    def _table(self, name: str) -> dict[tuple[str, str], dict[str, Any]]:
        if name not in self.tables:
            raise _Error("ResourceNotFoundException", "Requested resource not found")
        return self.tables[name]

    def _CreateTable(self, body):
        self.tables.setdefault(body["TableName"], {})
        return {"TableDescription": {"TableName": body["TableName"], "TableStatus": "ACTIVE"}}

    def _GetItem(self, body):
        item = self._table(body["TableName"]).get((body["Key"]["pk"]["S"], body["Key"]["sk"]["S"]))
        return {"Item": item} if item is not None else {}

    def _PutItem(self, body):
        table = self._table(body["TableName"])
        key = (body["Item"]["pk"]["S"], body["Item"]["sk"]["S"])
        if not _holds(body.get("ConditionExpression"), table.get(key), body.get("ExpressionAttributeValues", {})):
            raise _Error("ConditionalCheckFailedException", "The conditional request failed")
        table[key] = body["Item"]
        return {}

    def _DeleteItem(self, body):
        table = self._table(body["TableName"])
        key = (body["Key"]["pk"]["S"], body["Key"]["sk"]["S"])
        if not _holds(body.get("ConditionExpression"), table.get(key), body.get("ExpressionAttributeValues", {})):
            raise _Error("ConditionalCheckFailedException", "The conditional request failed")
        table.pop(key, None)
        return {}

    def _Query(self, body):
        table = self._table(body["TableName"])
        expr, values = body["KeyConditionExpression"], body.get("ExpressionAttributeValues", {})
        if expr == "pk = :pk":
            prefix = ""
        elif expr == "pk = :pk AND begins_with(sk, :p)":
            prefix = values[":p"]["S"]
        else:
            raise NotImplementedError(f"DynamoDBDouble: key condition {expr!r}")
        pk = values[":pk"]["S"]
        keys = sorted(k for k in table if k[0] == pk and k[1].startswith(prefix))
        start = body.get("ExclusiveStartKey")
        if start:
            keys = [k for k in keys if k[1] > start["sk"]["S"]]
        limit = body.get("Limit")
        page = keys[:limit] if limit else keys
        out: dict[str, Any] = {"Items": [table[k] for k in page], "Count": len(page)}
        if limit and len(keys) > limit:
            out["LastEvaluatedKey"] = {"pk": {"S": pk}, "sk": {"S": page[-1][1]}}
        return out

    def _TransactWriteItems(self, body):
        ops = body["TransactItems"]
        reasons, failed = [], False
        for op in ops:
            kind, spec = next(iter(op.items()))
            table = self._table(spec["TableName"])
            key = spec["Item"] if kind == "Put" else spec["Key"]
            ok = _holds(spec.get("ConditionExpression"), table.get((key["pk"]["S"], key["sk"]["S"])),
                        spec.get("ExpressionAttributeValues", {}))
            reasons.append({"Code": "None"} if ok else {"Code": "ConditionalCheckFailed",
                                                       "Message": "The conditional request failed"})
            failed |= not ok
        if failed:
            raise _Error("TransactionCanceledException", "Transaction cancelled, please refer cancellation reasons "
                         f"for specific reasons [{', '.join(r['Code'] for r in reasons)}]",
                         {"CancellationReasons": reasons})
        for op in ops:
            kind, spec = next(iter(op.items()))
            table = self.tables[spec["TableName"]]
            if kind == "Put":
                table[(spec["Item"]["pk"]["S"], spec["Item"]["sk"]["S"])] = spec["Item"]
            elif kind == "Delete":
                table.pop((spec["Key"]["pk"]["S"], spec["Key"]["sk"]["S"]), None)
            else:
                raise NotImplementedError(f"DynamoDBDouble: transaction {kind}")
        return {}

    def _BatchWriteItem(self, body):
        for name, requests in body["RequestItems"].items():
            table = self._table(name)
            for r in requests:
                if "DeleteRequest" not in r:
                    raise NotImplementedError("DynamoDBDouble: BatchWriteItem puts")
                key = r["DeleteRequest"]["Key"]
                table.pop((key["pk"]["S"], key["sk"]["S"]), None)
        return {"UnprocessedItems": {}}


class _Error(Exception):
    def __init__(self, code: str, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.extra = code, message, extra or {}


def _holds(condition: str | None, current: dict[str, Any] | None, values: dict[str, Any]) -> bool:
    if condition is None:
        return True
    if condition == "attribute_not_exists(pk)":
        return current is None
    if condition == "seq = :seq":
        return current is not None and current.get("seq") == values[":seq"]
    if condition == "attribute_not_exists(pk) OR expires < :now":
        return current is None or float(current["expires"]["N"]) < float(values[":now"]["N"])
    if condition == "holder = :me":
        return current is not None and current.get("holder") == values[":me"]
    raise NotImplementedError(f"DynamoDBDouble: condition {condition!r}")


class SQSDouble:
    """Standard queues on the caller's clock. Register with `attach(client)`."""

    ACCOUNT, REGION = "123456789012", "ap-northeast-1"

    def __init__(self, now: Callable[[], float]) -> None:
        self.now = now
        self.queues: dict[str, dict[str, Any]] = {}  # name -> {attributes, messages: {id: message}}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def attach(self, client) -> None:
        client.meta.events.register_first("before-send.sqs", self)

    def __call__(self, request, **_) -> AWSResponse:
        return _json_target(self, request, (KeyError, "com.amazonaws.sqs#QueueDoesNotExist",
                                            "The specified queue does not exist."))

    def _queue(self, url: str) -> dict[str, Any]:
        return self.queues[url.rsplit("/", 1)[1]]

    def _CreateQueue(self, body):
        name = body["QueueName"]
        attrs = {"VisibilityTimeout": "30", **body.get("Attributes", {})}
        self.queues.setdefault(name, {"attributes": attrs, "messages": {}})
        return {"QueueUrl": f"https://sqs.{self.REGION}.amazonaws.com/{self.ACCOUNT}/{name}"}

    def _GetQueueAttributes(self, body):
        q = self._queue(body["QueueUrl"])
        now = self.now()
        visible = sum(1 for m in q["messages"].values() if m["visible_at"] <= now)
        name = body["QueueUrl"].rsplit("/", 1)[1]
        attrs = {"QueueArn": f"arn:aws:sqs:{self.REGION}:{self.ACCOUNT}:{name}",
                 "ApproximateNumberOfMessages": str(visible),
                 "ApproximateNumberOfMessagesNotVisible": str(len(q["messages"]) - visible)}
        wanted = body.get("AttributeNames", ["All"])
        return {"Attributes": {k: v for k, v in attrs.items() if "All" in wanted or k in wanted}}

    def _put(self, q, text: str) -> dict[str, str]:
        mid = f"m-{next(self._ids):08d}"
        q["messages"][mid] = {"body": text, "visible_at": self.now(), "receives": 0, "sent": self.now()}
        return {"MessageId": mid, "MD5OfMessageBody": hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()}

    def _SendMessage(self, body):
        return self._put(self._queue(body["QueueUrl"]), body["MessageBody"])

    def _SendMessageBatch(self, body):
        q = self._queue(body["QueueUrl"])
        return {"Successful": [{"Id": e["Id"], **self._put(q, e["MessageBody"])} for e in body["Entries"]],
                "Failed": []}

    def _ReceiveMessage(self, body):
        q = self._queue(body["QueueUrl"])
        now, out = self.now(), []
        redrive = json.loads(q["attributes"].get("RedrivePolicy") or "null")
        timeout = float(body.get("VisibilityTimeout", q["attributes"]["VisibilityTimeout"]))
        for mid, m in sorted(q["messages"].items(), key=lambda kv: kv[1]["sent"]):
            if len(out) >= int(body.get("MaxNumberOfMessages", 1)):
                break
            if m["visible_at"] > now:
                continue
            if redrive and m["receives"] >= int(redrive["maxReceiveCount"]):
                dlq = self.queues[redrive["deadLetterTargetArn"].rsplit(":", 1)[1]]
                dlq["messages"][mid] = {**q["messages"].pop(mid), "visible_at": now}
                continue
            m["receives"] += 1
            m["visible_at"] = now + timeout
            m["handle"] = f"{mid}#{m['receives']}"
            out.append({"MessageId": mid, "ReceiptHandle": m["handle"], "Body": m["body"],
                        "MD5OfBody": hashlib.md5(m["body"].encode(), usedforsecurity=False).hexdigest(),
                        "Attributes": {"ApproximateReceiveCount": str(m["receives"])}})
        return {"Messages": out} if out else {}

    def _DeleteMessageBatch(self, body):
        q = self._queue(body["QueueUrl"])
        for e in body["Entries"]:
            mid = e["ReceiptHandle"].split("#", 1)[0]
            if q["messages"].get(mid, {}).get("handle") == e["ReceiptHandle"]:
                del q["messages"][mid]
        return {"Successful": [{"Id": e["Id"]} for e in body["Entries"]], "Failed": []}

    def _ChangeMessageVisibility(self, body):
        q = self._queue(body["QueueUrl"])
        mid = body["ReceiptHandle"].split("#", 1)[0]
        if mid in q["messages"]:
            q["messages"][mid]["visible_at"] = self.now() + float(body["VisibilityTimeout"])
        return {}
