"""citerag.handlers.ingest with moto S3/SQS: partial batch failures, DLQ with reasons, idempotency."""

from __future__ import annotations

import copy
import json
from urllib.parse import quote_plus

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citerag.errors import DependencyError
from citerag.handlers import ingest as ingest_handler
from citerag.handlers.local import LocalContext
from citerag.ingestion.s3_events import PoisonMessage, parse_notification

from conftest import BUCKET, SAMPLES, make_encrypted_pdf
from handler_support import event


@pytest.fixture
def env(s3_ingest):
    return s3_ingest


def s3_record(key: str, name: str = "ObjectCreated:Put", bucket: str = BUCKET) -> dict:
    rec = copy.deepcopy(json.loads(event("ingest-created.json")["Records"][0]["body"])["Records"][0])
    rec["eventName"] = name
    rec["s3"]["bucket"]["name"] = bucket
    rec["s3"]["object"]["key"] = key
    return rec


def sqs_event(*bodies) -> dict:
    base = event("ingest-created.json")["Records"][0]
    recs = []
    for i, b in enumerate(bodies):
        r = copy.deepcopy(base)
        r["messageId"] = f"msg-{i}"
        r["body"] = b if isinstance(b, str) else json.dumps(b, ensure_ascii=False)
        recs.append(r)
    return {"Records": recs}


def run(ev, comps):
    return ingest_handler.build(comps)(ev, LocalContext(function_name="citerag-ingest"))


def dlq_messages(env) -> list[dict]:
    out = env["sqs"].receive_message(QueueUrl=env["dlq"], MaxNumberOfMessages=10, MessageAttributeNames=["All"])
    return out.get("Messages", [])


def drain(env) -> None:
    """Empty the dead-letter queue (SQS allows one PurgeQueue a minute)."""
    for m in dlq_messages(env):
        env["sqs"].delete_message(QueueUrl=env["dlq"], ReceiptHandle=m["ReceiptHandle"])


def put(env, key: str, data: bytes, **meta):
    env["s3"].put_object(Bucket=BUCKET, Key=key, Body=data, Metadata=meta)


def docs(env):
    return {d.source_uri: d for d in env["comps"].index.list_documents()}


def test_sample_events_index_and_remove(env):
    for name in ("faq-en.md", "kumo-pure-300-manual-ja.pdf"):
        put(env, name, (SAMPLES / name).read_bytes())
    assert run(event("ingest-created.json"), env["comps"]) == {"batchItemFailures": []}
    assert set(docs(env)) == {f"s3://{BUCKET}/faq-en.md", f"s3://{BUCKET}/kumo-pure-300-manual-ja.pdf"}
    misses = env["comps"].embedder.misses
    assert run(event("ingest-created.json"), env["comps"]) == {"batchItemFailures": []}  # redelivery: nothing changes
    assert env["comps"].embedder.misses == misses
    env["s3"].delete_object(Bucket=BUCKET, Key="faq-en.md")  # the removal the event reports
    assert run(event("ingest-removed.json"), env["comps"]) == {"batchItemFailures": []}
    assert set(docs(env)) == {f"s3://{BUCKET}/kumo-pure-300-manual-ja.pdf"}
    assert run(event("ingest-test-event.json"), env["comps"]) == {"batchItemFailures": []}


def test_unicode_and_url_encoded_keys(env):
    key = "マニュアル/よくある質問 2026.md"
    put(env, key, (SAMPLES / "faq-ja.md").read_bytes())
    assert run(event("ingest-unicode-key.json"), env["comps"]) == {"batchItemFailures": []}
    assert f"s3://{BUCKET}/{key}" in docs(env)


def test_object_metadata_becomes_access_metadata(env):
    put(env, "acme/manual.md", b"# Manual\n\nThe acme manual text.\n", tenant="acme", groups="support, sales")
    run(sqs_event({"Records": [s3_record("acme/manual.md")]}), env["comps"])
    import numpy as np

    (m,) = env["comps"].index.query_dense(np.ones(env["comps"].embedder.dim, np.float32), 5, {"tenant": "acme"})
    assert m.metadata["groups"] == ["support", "sales"]


def test_poison_and_permanent_failures_go_to_the_dlq_with_their_reason(env):
    put(env, "support-contacts.txt", (SAMPLES / "support-contacts.txt").read_bytes())
    put(env, "slides.pptx", b"PK\x03\x04")
    resp = run(event("ingest-mixed.json"), env["comps"])
    assert resp == {"batchItemFailures": []}  # retrying cannot fix these: they are not returned as failures
    assert f"s3://{BUCKET}/support-contacts.txt" in docs(env)
    reasons = sorted(m["MessageAttributes"]["reason"]["StringValue"] for m in dlq_messages(env))
    assert reasons == ["message body is not JSON", f"s3://{BUCKET}/slides.pptx: not a PowerPoint (.pptx) file "
                       "(not a ZIP package); the file is corrupt or misnamed"]


def test_an_object_over_the_size_limit_is_refused_before_its_body_is_read(env):
    # A multi-GB upload must not be read into the function's memory: GetObject's ContentLength says enough.
    env["comps"].settings.max_file_bytes = 1000
    put(env, "big.txt", b"word " * 2000)
    put(env, "small.txt", b"A short note about filters.")
    reads = []

    class Counting:  # the real client, with every body read counted
        def __init__(self, s3):
            self.s3 = s3

        def head_object(self, **kw):
            return self.s3.head_object(**kw)

        def get_object(self, **kw):
            obj = self.s3.get_object(**kw)
            body, read = obj["Body"], obj["Body"].read
            body.read = lambda *a: reads.append((kw["Key"], a)) or read(*a)
            return obj

    from citerag.adapters.object_stores import S3ObjectSource

    env["comps"].object_source = S3ObjectSource(Counting(env["s3"]))
    ev = sqs_event({"Records": [s3_record("big.txt")]}, {"Records": [s3_record("small.txt")]})
    assert run(ev, env["comps"]) == {"batchItemFailures": []}
    assert [key for key, _ in reads] == ["small.txt"]
    reasons = [m["MessageAttributes"]["reason"]["StringValue"] for m in dlq_messages(env)]
    assert reasons == [f"s3://{BUCKET}/big.txt: object is too large (10,000 bytes; the limit is 1,000)"]
    assert set(docs(env)) == {f"s3://{BUCKET}/small.txt"}


def test_records_sqs_never_sends_are_dropped_and_the_rest_of_the_batch_is_indexed(env):
    # A record without a body or a messageId, and an S3 notification sent straight to the function, raised KeyError
    # and failed the whole batch.
    put(env, "faq-en.md", (SAMPLES / "faq-en.md").read_bytes())
    ev = sqs_event({"Records": [s3_record("faq-en.md")]}, {"Records": [s3_record("faq-en.md")]},
                   {"Records": [s3_record("faq-en.md")]})
    del ev["Records"][1]["body"]
    del ev["Records"][2]["messageId"]
    ev["Records"].append(s3_record("faq-en.md"))  # what S3 sends when it invokes the function itself
    assert run(ev, env["comps"]) == {"batchItemFailures": []}
    assert set(docs(env)) == {f"s3://{BUCKET}/faq-en.md"}
    assert dlq_messages(env) == []


def test_a_message_is_dead_lettered_once_with_every_reason_and_not_on_each_delivery(env):
    # Two bad records made two copies of one message; a bad record beside a transient failure made a copy on every
    # delivery, and replaying the queue processed the notification several times.
    put(env, "a.key", b"PK")
    put(env, "b.key", b"PK")
    run(sqs_event({"Records": [s3_record("a.key"), s3_record("b.key")]}), env["comps"])
    reasons = [m["MessageAttributes"]["reason"]["StringValue"] for m in dlq_messages(env)]
    assert len(reasons) == 1 and "a.key: unsupported" in reasons[0] and "b.key: unsupported" in reasons[0]
    drain(env)
    # Many long reasons: as many as fit whole, then how many more (they were cut at 1,000 characters mid-reason).
    keys = [f"{n}-{'k' * 990}.key" for n in range(8)]
    for key in keys:
        put(env, key, b"PK")
    run(sqs_event({"Records": [s3_record(k) for k in keys]}), env["comps"])
    [reason] = [m["MessageAttributes"]["reason"]["StringValue"] for m in dlq_messages(env)]
    assert len(reason) <= 4000 and reason.endswith(" more") and reason.count("unsupported file type") >= 3
    drain(env)
    put(env, "c.md", b"# Care\n\nClean the filter every month.\n")
    real = env["comps"].object_source

    class Flaky:  # c.md cannot be read yet; a.key can never be indexed
        def get(self, bucket, key, max_bytes=None):
            if key == "c.md":
                raise DependencyError(f"cannot read s3://{bucket}/{key}: SlowDown")
            return real.get(bucket, key, max_bytes)

        def version(self, bucket, key):
            return real.version(bucket, key)

    env["comps"].object_source = Flaky()
    for _ in range(3):  # (a batch whose every message fails raises, which SQS retries the same way)
        ev = sqs_event({"Records": [s3_record("a.key"), s3_record("c.md")]}, {"Event": "s3:TestEvent"})
        assert run(ev, env["comps"]) == {"batchItemFailures": [{"itemIdentifier": "msg-0"}]}
    assert dlq_messages(env) == []  # SQS's redrive moves it after its last delivery
    env["comps"].object_source = real
    run(sqs_event({"Records": [s3_record("a.key"), s3_record("c.md")]}), env["comps"])
    assert len(dlq_messages(env)) == 1 and f"s3://{BUCKET}/c.md" in docs(env)


def test_the_older_of_two_uploads_indexed_at_once_never_ends_in_the_index(env):
    # Two invocations, two uploads of one key: the one that read the first version wrote last, and nothing
    # corrected it. Here B's whole invocation runs while A holds version ONE between reading and writing.
    from citerag.adapters.object_stores import S3ObjectSource

    put(env, "guide.md", b"# Guide\n\nVersion ONE: the filter lasts 6 months.\n")
    container_b = ingest_handler.build(env["comps"])

    class SlowFirstRead(S3ObjectSource):
        held = False

        def get(self, bucket, key, max_bytes=None):
            obj = super().get(bucket, key, max_bytes)
            if not self.held:
                self.held = True
                put(env, "guide.md", b"# Guide\n\nVersion TWO: the filter lasts 12 months.\n")
                container_b(sqs_event({"Records": [s3_record("guide.md")]}), LocalContext())
            return obj

    env["comps"].object_source = SlowFirstRead(env["s3"])
    assert run(sqs_event({"Records": [s3_record("guide.md")]}), env["comps"]) == {"batchItemFailures": []}
    hits = env["comps"].pipeline().search("How long does the filter last?", top_k=3).hits
    assert hits and "Version TWO" in hits[0].text and not any("Version ONE" in h.text for h in hits)


def test_transient_failures_are_reported_for_retry(env, monkeypatch):
    put(env, "faq-en.md", (SAMPLES / "faq-en.md").read_bytes())

    class Down:
        def get(self, bucket, key, max_bytes=None):
            raise DependencyError(f"cannot read s3://{bucket}/{key}: SlowDown")

    env["comps"].object_source = Down()
    ev = sqs_event({"Records": [s3_record("faq-en.md")]}, {"Event": "s3:TestEvent"})
    assert run(ev, env["comps"]) == {"batchItemFailures": [{"itemIdentifier": "msg-0"}]}
    assert dlq_messages(env) == []  # SQS retries it; the redrive policy moves it to the DLQ later


def test_object_deleted_before_processing_removes_the_document(env):
    put(env, "faq-en.md", (SAMPLES / "faq-en.md").read_bytes())
    run(sqs_event({"Records": [s3_record("faq-en.md")]}), env["comps"])
    env["s3"].delete_object(Bucket=BUCKET, Key="faq-en.md")
    assert run(sqs_event({"Records": [s3_record("faq-en.md")]}), env["comps"]) == {"batchItemFailures": []}
    assert docs(env) == {}


def test_a_failed_reingest_keeps_the_previous_version(env):
    put(env, "guide.md", b"# Guide\n\nVersion one text.\n")
    run(sqs_event({"Records": [s3_record("guide.md")]}), env["comps"])
    before = docs(env)[f"s3://{BUCKET}/guide.md"].content_hash
    put(env, "guide.md", b"\xff\xfe not utf-8 \xff")
    run(sqs_event({"Records": [s3_record("guide.md")]}), env["comps"])
    assert docs(env)[f"s3://{BUCKET}/guide.md"].content_hash == before
    assert "not valid text in a UTF-16 byte-order mark" in \
        dlq_messages(env)[0]["MessageAttributes"]["reason"]["StringValue"]


BAD = [
    ("not JSON", "{{{", "poison", "not JSON"),
    ("JSON array", "[1, 2]", "poison", "not a JSON object"),
    ("JSON number", "42", "poison", "not a JSON object"),
    ("JSON null", "null", "poison", "not a JSON object"),
    ("no Records", {"foo": 1}, "poison", "no Records list"),
    ("Records not a list", {"Records": {"a": 1}}, "poison", "no Records list"),
    ("record not an object", {"Records": ["x"]}, "poison", "not an S3 event"),
    ("wrong eventSource", {"Records": [{**s3_record("a.md"), "eventSource": "aws:sns"}]}, "poison", "not an S3 event"),
    ("missing s3 block", {"Records": [{k: v for k, v in s3_record("a.md").items() if k != "s3"}]}, "poison",
     "no object key"),
    ("empty key", {"Records": [s3_record("")]}, "poison", "no object key"),
    ("bad percent-encoding", {"Records": [s3_record("bad%FFkey.md")]}, "poison", "not valid URL-encoded UTF-8"),
    ("bucket name too short", {"Records": [s3_record("a.md", bucket="b")]}, "poison", "bucket"),
    ("key too long", {"Records": [s3_record("k" * 1100 + ".md")]}, "poison", "key"),
    ("unsupported type", {"Records": [s3_record("deck.key")]}, "failed", "unsupported file type .key"),
    ("empty object", {"Records": [s3_record("empty.txt")]}, "skipped", ""),
    ("folder placeholder", {"Records": [s3_record("manuals/")]}, "ignored", ""),
    ("corrupt pdf", {"Records": [s3_record("broken.pdf")]}, "failed", "corrupt"),
    ("encrypted pdf", {"Records": [s3_record("locked.pdf")]}, "failed", "password-protected"),
    ("non-UTF-8 text", {"Records": [s3_record("sjis.txt")]}, "failed", "not valid UTF-8"),
    ("image-free binary as text", {"Records": [s3_record("bin.txt")]}, "failed", "binary file"),
    ("no extension", {"Records": [s3_record("README")]}, "failed", "unsupported file type (no extension)"),
    ("missing object", {"Records": [s3_record("never-uploaded.md")]}, "removed", ""),
    ("object removed event", {"Records": [s3_record("never-uploaded.md", "ObjectRemoved:Delete")]}, "removed", ""),
    ("lifecycle expiration", {"Records": [s3_record("x.md", "LifecycleExpiration:Delete")]}, "removed", ""),
    ("restore event ignored", {"Records": [s3_record("x.md", "ObjectRestore:Completed")]}, "ignored", ""),
    ("S3 test event", {"Event": "s3:TestEvent", "Service": "Amazon S3"}, "ignored", ""),
    ("empty Records", {"Records": []}, "ignored", ""),
    ("plus means space", {"Records": [s3_record("my+notes.md")]}, "added", ""),
]


@pytest.mark.parametrize(("name", "body", "outcome", "text"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_matrix(env, name, body, outcome, text):
    put(env, "empty.txt", b"")
    put(env, "broken.pdf", b"%PDF-1.4 truncated")
    put(env, "locked.pdf", make_encrypted_pdf())
    put(env, "sjis.txt", "日本語".encode("shift_jis"))
    put(env, "bin.txt", b"\x00\x01\x02\x03")
    put(env, "deck.key", b"PK")
    put(env, "README", b"text")
    put(env, "my notes.md", b"# Notes\n\nSome notes.\n")
    resp = run(sqs_event(body), env["comps"])
    assert resp == {"batchItemFailures": []}, name
    dead = dlq_messages(env)
    if outcome in ("poison", "failed"):
        assert len(dead) == 1 and text in dead[0]["MessageAttributes"]["reason"]["StringValue"]
        assert dead[0]["Body"] == (body if isinstance(body, str) else json.dumps(body, ensure_ascii=False))
    else:
        assert dead == []
    if outcome == "added":
        assert f"s3://{BUCKET}/my notes.md" in docs(env)


def test_not_an_sqs_event_is_rejected_without_raising(env):
    assert run({"hello": "world"}, env["comps"]) == {"batchItemFailures": []}


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20)),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(
        st.sampled_from(["Records", "eventSource", "eventName", "s3", "bucket", "object", "key", "name", "Event"]),
        c, max_size=4)), max_leaves=20).map(json.dumps)))
def test_fuzzed_notification_bodies_only_ever_raise_poison(body):
    try:
        events = parse_notification(body)
    except PoisonMessage:
        return
    for ev in events:
        assert ev.action in ("created", "removed") and ev.key and ev.bucket


def test_url_encoding_round_trip():
    (ev,) = parse_notification(json.dumps({"Records": [s3_record(quote_plus("資料/a b+c.md"))]}))
    assert ev.key == "資料/a b+c.md"
