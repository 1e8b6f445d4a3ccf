"""A bulk load on AWS, simulated: N small documents uploaded to the bucket, their S3 notifications in an SQS queue,
and 1, 2, 4, ... ingest functions taking batches of 10 at once, with Titan's quota enforced. Prints documents per
second against the number of functions.

    python scripts/simulate_ingest.py [--docs 10000] [--concurrency 1,2,4,8,16,32] [--tpm 300000] [--json]

What is real: the ingest handler, NotificationIngest, the Ingestor, PineconeIndex, the statistics ledger and its
fold, the Titan embedder with its adaptive concurrency, and every AWS call through a real boto3 client, answered in
the service's wire format on botocore's before-send hook: SQS, S3 and DynamoDB by the in-process doubles of
citerag.testing.aws_doubles (moto's DynamoDB copies the whole table on every transaction and its SQS scans the queue
on every receive: hours for this load; tests/test_stats_ledger.py holds the S3 and DynamoDB doubles to moto's
answers), bedrock-runtime InvokeModel by a Titan V2 double here (200 {"embedding", "inputTextTokenCount"}, or 429
ThrottlingException). Pinecone is an in-process stand-in (not an AWS service; its SDK is tested elsewhere).

Time is simulated: every call adds its latency to a virtual clock, so the figures do not depend on how busy this
machine is (a level takes real CPU seconds, reported, but its throughput is virtual). Functions run one batch at a
time each, in virtual-time order. The Titan double holds a token bucket of --tpm tokens per minute (and --rpm
requests, if given); a throttled call costs a round trip and the embedder backs off, in virtual time. A message whose
batch item failed comes back after the queue's visibility timeout (virtual), and after 5 receives goes to the
dead-letter queue, as the stack's queue does. Latencies are assumptions (AWS documents no
latency for these calls), listed in LATENCY_S; only their ratios to the quota shape the curve.
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import json
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "ap-northeast-1")
os.environ.setdefault("AWS_REGION", "ap-northeast-1")

import boto3
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from botocore.config import Config

from citerag.adapters.document_locks import DynamoDocumentLocks
from citerag.adapters.object_stores import S3ObjectSource, SqsDeadLetters
from citerag.adapters.pinecone_index import PineconeIndex
from citerag.adapters.s3_store import S3DocumentStore
from citerag.adapters.stats_ledger import DynamoStatsLedger, StatsFolder, create_table
from citerag.adapters.titan import TitanEmbedder
from citerag.components import Components
from citerag.handlers import ingest as ingest_handler
from citerag.handlers.local import LocalContext
from citerag.settings import Settings
from citerag.testing.aws_doubles import DynamoDBDouble, S3Double, SQSDouble, response

REGION = "ap-northeast-1"
BUCKET = "citerag-documents-sim"
DIMENSIONS = 256  # Titan V2 accepts 256, 512 or 1024; the smallest keeps the simulated responses cheap
# Assumed latencies of one call, seconds (typical in-region figures; not AWS-documented).
LATENCY_S = {
    ("s3", "GetObject"): 0.020, ("s3", "HeadObject"): 0.012, ("s3", "PutObject"): 0.030,
    ("s3", "DeleteObject"): 0.015, ("s3", "DeleteObjects"): 0.025,
    ("dynamodb", "GetItem"): 0.006, ("dynamodb", "Query"): 0.008, ("dynamodb", "TransactWriteItems"): 0.020,
    ("dynamodb", "PutItem"): 0.008, ("dynamodb", "DeleteItem"): 0.008,
    ("sqs", "SendMessage"): 0.010,
    ("pinecone", "upsert"): 0.040, ("pinecone", "delete"): 0.020, ("pinecone", "list"): 0.020,
    ("bedrock", "InvokeModel"): 0.060, ("bedrock", "Throttled"): 0.015,
    ("lambda", "Invoke"): 0.010,  # the event source handing a batch to a warm function
}
WORDS = ("pump filter valve pressure manual warranty install drain reset error code panel water heater service "
         "check clean replace battery power supply cable mount bracket sensor display button timer mode").split()


class Clock:
    """The virtual time of whichever function is running (functions run one at a time, in start order)."""

    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


class TitanQuota:
    """A per-minute quota, enforced smoothly: the calls stamped in any one second take at most a sixtieth of it (no
    minute-long bursts, which would flatter short runs). Each call is judged in its own second, so a function
    started earlier but run later in this process is judged at its own time."""

    def __init__(self, per_minute: float) -> None:
        self.per_second = per_minute / 60.0
        self.used: dict[int, float] = {}

    def take(self, now: float, amount: float) -> bool:
        second = int(now)
        if self.used.get(second, 0.0) + amount > self.per_second:
            return False
        self.used[second] = self.used.get(second, 0.0) + amount
        return True


class TitanDouble:
    """bedrock-runtime InvokeModel for amazon.titan-embed-text-v2:0, answered on the client's before-send hook."""

    def __init__(self, clock: Clock, tpm: float, rpm: float | None) -> None:
        self.clock = clock
        self.tokens = TitanQuota(tpm)
        self.requests = TitanQuota(rpm) if rpm else None
        self.calls = Counter()

    def __call__(self, request, **_):
        body = json.loads(request.body)
        text, dims = body["inputText"], body.get("dimensions", 1024)
        n_tokens = max(1, round(len(text.split()) * 1.3))  # English averages ~4.7 characters a token (AWS docs)
        now = self.clock.now
        allowed = (self.requests is None or self.requests.take(now, 1)) and self.tokens.take(now, n_tokens)
        if not allowed:
            self.calls["throttled"] += 1
            self.clock.sleep(LATENCY_S[("bedrock", "Throttled")])
            payload = {"message": "Too many requests, please wait before trying again."}
            return response(request.url, 429, json.dumps(payload).encode(),
                            {"x-amzn-ErrorType": "ThrottlingException", "Content-Type": "application/json"})
        self.calls["ok"] += 1
        self.calls["tokens"] += n_tokens
        self.clock.sleep(LATENCY_S[("bedrock", "InvokeModel")])
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "little")
        vec = [0.0] * dims
        vec[seed % dims] = 1.0
        return response(request.url, 200, json.dumps({"embedding": vec, "inputTextTokenCount": n_tokens}).encode(),
                        {"Content-Type": "application/json"})


class PineconeStandIn:
    """The Pinecone Index calls PineconeIndex makes, in memory, with their latency on the virtual clock."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.spaces: dict[str, dict[str, dict]] = {}

    def upsert(self, vectors, namespace=""):
        self.clock.sleep(LATENCY_S[("pinecone", "upsert")])
        space = self.spaces.setdefault(namespace, {})
        for v in vectors:
            space[v["id"]] = v

    def delete(self, ids, namespace=""):
        self.clock.sleep(LATENCY_S[("pinecone", "delete")])
        for i in ids:
            self.spaces.get(namespace, {}).pop(i, None)

    def list(self, prefix="", namespace=""):
        self.clock.sleep(LATENCY_S[("pinecone", "list")])
        yield type("Page", (), {"vector_ids": [i for i in self.spaces.get(namespace, {}) if i.startswith(prefix)]})


CLOCK = Clock()
DOUBLES: dict = {}


def fresh_doubles() -> None:
    DOUBLES.update(s3=S3Double(), dynamodb=DynamoDBDouble(), sqs=SQSDouble(lambda: CLOCK.now))


def client(service: str):
    c = boto3.client(service, region_name=REGION)
    DOUBLES[service].attach(c)
    return c


def timed_client(service: str, clock: Clock):
    client_ = client(service)

    def before_call(model, **_):
        clock.sleep(LATENCY_S.get((service, model.name), 0.010))

    client_.meta.events.register(f"before-call.{client_.meta.service_model.endpoint_prefix}", before_call)
    return client_


def document(n: int, rng: random.Random) -> bytes:
    """A small text document: one passage of about 60 words (one Titan call, about 80 tokens)."""
    words = [rng.choice(WORDS) for _ in range(60)]
    return (f"Note {n}\n\n" + " ".join(words) + ".\n").encode()


def upload(s3, docs: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    records = []
    for n in range(docs):
        key = f"docs/note-{n:05d}.txt"
        body = document(n, rng)
        s3.put_object(Bucket=BUCKET, Key=key, Body=body)
        records.append({"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": REGION,
                        "eventName": "ObjectCreated:Put", "s3": {"bucket": {"name": BUCKET},
                                                                 "object": {"key": key, "size": len(body),
                                                                            "sequencer": f"{n:016X}"}}})
    return records


def run_level(functions: int, notifications: list[dict], args) -> dict:
    """One bulk load with this many ingest functions; returns its figures."""
    clock = CLOCK
    clock.now = 0.0
    level = f"c{functions}"
    sqs = client("sqs")
    dlq = sqs.create_queue(QueueName=f"{level}-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    queue = sqs.create_queue(QueueName=f"{level}-ingest", Attributes={
        "VisibilityTimeout": "5400", "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn,
                                                                  "maxReceiveCount": "5"})})["QueueUrl"]
    backlog = iter(notifications)

    def depth() -> tuple[int, int]:
        a = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["All"])["Attributes"]
        return int(a["ApproximateNumberOfMessages"]), int(a["ApproximateNumberOfMessagesNotVisible"])

    def top_up() -> None:
        """Keep a few batches visible, as an upload in progress does: the whole backlog queued at once would only
        make each receive scan a longer queue in this process."""
        while depth()[0] < 40:
            batch = [r for _, r in zip(range(10), backlog, strict=False)]
            if not batch:
                return
            sqs.send_message_batch(QueueUrl=queue, Entries=[
                {"Id": str(i), "MessageBody": json.dumps({"Records": [r]})} for i, r in enumerate(batch)])

    db = client("dynamodb")
    create_table(db, f"{level}-stats")
    titan = TitanDouble(clock, args.tpm, args.rpm)

    def function_instance(k: int):
        """One warm function: its own clients, embedder (and so its own adaptive limit) and handler."""
        s3 = timed_client("s3", clock)
        ddb = timed_client("dynamodb", clock)
        bedrock = boto3.client("bedrock-runtime", region_name=REGION,
                               config=Config(retries={"mode": "standard", "max_attempts": 0}))
        bedrock.meta.events.register_first("before-send.bedrock-runtime.InvokeModel", titan)
        comps = Components(Settings(embedder="titan", index_backend="pinecone", namespace=level,
                                    sparse_tokenizer="default", document_bucket=BUCKET, data_dir=args.tmp))
        ledger = DynamoStatsLedger(ddb, f"{level}-stats")
        comps.embedder = TitanEmbedder(bedrock, dimensions=DIMENSIONS, concurrency=4, max_concurrency=16,
                                       sleep=clock.sleep, rng=random.Random(args.seed * 1000 + k))
        comps.index = PineconeIndex(PineconeStandIn(clock), PineconeStandIn(clock),
                                    S3DocumentStore(s3, BUCKET), ledger)
        comps.object_source = S3ObjectSource(s3)
        comps.dead_letters = SqsDeadLetters(timed_client("sqs", clock), dlq)
        comps.document_locks = DynamoDocumentLocks(ddb, f"{level}-stats", now=lambda: clock.now, sleep=clock.sleep,
                                                   rng=random.Random(args.seed * 1000 + k))
        return ingest_handler.build(comps), comps

    instances = [function_instance(k) for k in range(functions)]
    ready = [(0.0, k) for k in range(functions)]  # (virtual time the function is free, which)
    heapq.heapify(ready)
    outcomes: Counter[str] = Counter()
    retried = 0
    cpu0 = time.process_time()
    end = 0.0
    while ready:
        t, k = heapq.heappop(ready)
        clock.now = t
        top_up()
        got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10,
                                  AttributeNames=["ApproximateReceiveCount"]).get("Messages", [])
        if not got:
            if depth() == (0, 0):
                continue  # nothing left for this function: it stops polling
            heapq.heappush(ready, (t + 20.0, k))  # a long poll waits out messages still invisible
            continue
        clock.sleep(LATENCY_S[("lambda", "Invoke")])
        event = {"Records": [{"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                              "attributes": m.get("Attributes", {}), "messageAttributes": {},
                              "md5OfBody": m["MD5OfBody"], "eventSource": "aws:sqs",
                              "eventSourceARN": f"arn:aws:sqs:{REGION}:123456789012:{level}-ingest",
                              "awsRegion": REGION} for m in got]}
        handler, _ = instances[k]
        try:
            resp = handler(event, LocalContext(function_name=f"citerag-ingest-{k}"))
            failed = {f["itemIdentifier"] for f in resp.get("batchItemFailures", [])}
        except BatchProcessingError:  # every record failed: the invocation errs and the whole batch comes back
            failed = {m["MessageId"] for m in got}
        done = [m for m in got if m["MessageId"] not in failed]
        if done:
            sqs.delete_message_batch(QueueUrl=queue, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)])
        retried += len(failed)
        outcomes["messages"] += len(done)
        end = max(end, clock.now)
        heapq.heappush(ready, (clock.now, k))
    cpu = time.process_time() - cpu0

    store = S3DocumentStore(client("s3"), BUCKET, stats_ttl_s=0)
    folder = StatsFolder(DynamoStatsLedger(db, f"{level}-stats"), store)
    folder.fold_all(level)
    stats = store.corpus_stats(level)
    dead = int(sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["ApproximateNumberOfMessages"])[
        "Attributes"]["ApproximateNumberOfMessages"])
    limits = [inst[1].embedder.concurrency for inst in instances]
    return {"functions": functions, "documents": outcomes["messages"], "virtual_s": round(end, 2),
            "docs_per_s": round(outcomes["messages"] / end, 2) if end else 0.0,
            "titan_calls": titan.calls["ok"], "titan_throttled": titan.calls["throttled"],
            "tokens_per_min": round(titan.calls["tokens"] / end * 60) if end else 0,
            "failed_items": retried, "dead_lettered": dead, "indexed_passages": stats.n_docs,
            "final_titan_limits": f"{min(limits)}-{max(limits)}", "cpu_s": round(cpu, 1)}


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--concurrency", default="1,2,4,8,16,32", help="ingest functions at once, comma-separated")
    ap.add_argument("--tpm", type=float, default=300_000, help="Titan tokens per minute (the account's quota)")
    ap.add_argument("--rpm", type=float, default=None, help="Titan requests per minute, if the account has one")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not 1 <= args.docs <= 100_000:
        ap.error("--docs must be between 1 and 100,000")
    try:
        levels = [int(x) for x in args.concurrency.split(",")]
    except ValueError:
        ap.error("--concurrency takes whole numbers, comma-separated (1,2,4)")
    if any(not 1 <= n <= 1000 for n in levels):
        ap.error("--concurrency: each level between 1 and 1000 (the event source's maximum)")
    import tempfile

    rows = []
    fresh_doubles()
    with tempfile.TemporaryDirectory() as tmp:
        args.tmp = Path(tmp)
        notifications = upload(client("s3"), args.docs, args.seed)
        for n in levels:
            rows.append(run_level(n, notifications, args))
            if not args.json:
                _print_row(rows, args)
    if args.json:
        print(json.dumps(rows))
    return rows


def _print_row(rows: list[dict], args) -> None:
    r = rows[-1]
    if len(rows) == 1:
        print(f"{args.docs:,} documents, Titan quota {args.tpm:,.0f} tokens/min"
              + (f", {args.rpm:,.0f} requests/min" if args.rpm else ""))
        print("functions  docs/s  vs first  Titan tokens/min  throttled   failed  dead-lettered  passages  "
              "limits  cpu s")
    print(f"{r['functions']:>9}  {r['docs_per_s']:>6.1f}  {r['docs_per_s'] / rows[0]['docs_per_s']:>7.1f}x  "
          f"{r['tokens_per_min']:>16,}  {r['titan_throttled']:>9,}  {r['failed_items']:>7}  "
          f"{r['dead_lettered']:>13}  {r['indexed_passages']:>8,}  {r['final_titan_limits']:>6}  "
          f"{r['cpu_s']:>5}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
