"""One writer per document across ingest functions (adapters.document_locks on moto's DynamoDB, real boto3 client):
a second function waits or retries later, a function killed while holding a document lets go when its lease runs
out, and its late release cannot take the document from the next holder."""

from __future__ import annotations

import boto3
import pytest
from test_ingest_handler import s3_record, sqs_event

from citerag.adapters.document_locks import DynamoDocumentLocks
from citerag.adapters.stats_ledger import create_table
from citerag.handlers import ingest as ingest_handler
from citerag.handlers.local import LocalContext
from citerag.ingestion.ports import LockBusy

from conftest import BUCKET


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def sleep(self, s: float) -> None:
        self.now += s


@pytest.fixture
def locks(s3_ingest):
    db = boto3.client("dynamodb", region_name="ap-northeast-1")
    create_table(db, "stats")
    clock = Clock()

    def function(**kw):
        return DynamoDocumentLocks(db, "stats", lease_s=900, wait_s=30, now=lambda: clock.now, sleep=clock.sleep,
                                   **kw)

    return function, clock, s3_ingest


def test_a_second_function_waits_for_the_document_then_gives_up_for_a_retry(locks):
    function, clock, _ = locks
    a, b = function(), function()
    with a.hold("s3://bucket/docs/a.pdf"):
        start = clock.now
        with pytest.raises(LockBusy), b.hold("s3://bucket/docs/a.pdf"):
            pass
        assert 30 <= clock.now - start < 40  # it waited its bound, backing off
        with b.hold("s3://bucket/docs/other.pdf"):  # another document is free
            pass
    with b.hold("s3://bucket/docs/a.pdf"):  # given back
        pass


def test_a_killed_holder_lets_go_when_its_lease_runs_out_and_cannot_release_the_next_holders(locks):
    function, clock, _ = locks
    killed, b, c = function(), function(), function()
    held = killed.hold("s3://bucket/docs/a.pdf")
    held.__enter__()  # the function dies inside: it never gives the document back
    clock.now += 901
    with b.hold("s3://bucket/docs/a.pdf"):
        held.__exit__(None, None, None)  # the dead function's late release: not its lease any more
        with pytest.raises(LockBusy), c.hold("s3://bucket/docs/a.pdf"):
            pass


def test_a_notification_for_a_document_another_function_holds_is_retried_not_dead_lettered(locks):
    function, _, env = locks
    for key in ("docs/guide.md", "docs/faq.md"):
        env["s3"].put_object(Bucket=BUCKET, Key=key, Body=f"# {key}\n\nHow to reset the pump.\n".encode())
    comps = env["comps"]
    comps.document_locks = function()
    other = function()
    batch = sqs_event({"Records": [s3_record("docs/guide.md")]}, {"Records": [s3_record("docs/faq.md")]})
    with other.hold(f"s3://{BUCKET}/docs/guide.md"):
        resp = ingest_handler.build(comps)(batch, LocalContext(function_name="citerag-ingest"))
    assert resp == {"batchItemFailures": [{"itemIdentifier": "msg-0"}]}  # redelivered later; faq.md is done
    dead = env["sqs"].receive_message(QueueUrl=env["dlq"], MaxNumberOfMessages=10).get("Messages", [])
    assert dead == []
    resp = ingest_handler.build(comps)(sqs_event({"Records": [s3_record("docs/guide.md")]}),
                                       LocalContext(function_name="citerag-ingest"))
    assert resp == {"batchItemFailures": []}
    assert sorted(d.source_uri for d in comps.index.list_documents()) == [
        f"s3://{BUCKET}/docs/faq.md", f"s3://{BUCKET}/docs/guide.md"]
