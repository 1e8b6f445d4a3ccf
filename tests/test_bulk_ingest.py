"""The bulk path: ingest functions stage passages, a scheduled step sends them to a Bedrock batch inference job
and, when the job ends, writes every document through the same reconcile as a notification. Real boto3 clients:
S3, SQS and DynamoDB on moto; `bedrock` (moto has no CreateModelInvocationJob) against a local HTTP double whose
requests and responses are checked against botocore's service model (citerag.testing.bedrock_batch_double)."""

from __future__ import annotations

import json

import boto3
import pytest
from test_ingest_handler import s3_record, sqs_event

from citerag.adapters import bedrock_batch
from citerag.adapters.batch_staging import DynamoBatchStaging
from citerag.adapters.document_locks import DynamoDocumentLocks
from citerag.adapters.embedders import HashingEmbedder
from citerag.adapters.stats_ledger import create_table
from citerag.components import Components
from citerag.handlers import ingest as ingest_handler
from citerag.handlers.local import LocalContext
from citerag.settings import Settings
from citerag.testing.bedrock_batch_double import BedrockBatchDouble, ShapeError, check

from conftest import BUCKET

ROLE = "arn:aws:iam::123456789012:role/citerag-batch"
SCHEDULE = {"version": "0", "source": "aws.events", "detail-type": "Scheduled Event", "resources": [], "detail": {}}
HASHING = HashingEmbedder()


def embed(text: str, dims: int) -> list[float]:
    return [float(x) for x in HASHING.embed_passages([text])[0]]


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0


@pytest.fixture
def bulk(s3_ingest, tmp_path):
    s3, comps = s3_ingest["s3"], s3_ingest["comps"]
    db = boto3.client("dynamodb", region_name="ap-northeast-1")
    create_table(db, "stats")
    clock = Clock()
    with BedrockBatchDouble(s3, embed) as double:
        bedrock = boto3.client("bedrock", region_name="ap-northeast-1", endpoint_url=double.endpoint)

        def components(**settings) -> Components:
            c = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", dlq_url=s3_ingest["dlq"],
                                    stats_table="stats", document_bucket=BUCKET, batch_role_arn=ROLE,
                                    titan_dimensions=HASHING.dim,  # 256: a size Titan V2 offers
                                    **settings))
            c.object_source = comps.object_source
            c.index = comps.index
            c.document_locks = DynamoDocumentLocks(db, "stats", wait_s=0)
            c.batch_staging = DynamoBatchStaging(db, "stats", s3, BUCKET, "citerag/batch", HASHING.dim,
                                                 now=lambda: clock.now)
            real = c.aws_client

            def client(service, **kw):
                return bedrock if service == "bedrock" else real(service, **kw)

            c.aws_client = client  # type: ignore[method-assign]
            return c

        yield {"s3": s3, "db": db, "double": double, "components": components, "clock": clock,
               "index": comps.index, "sqs": s3_ingest["sqs"], "dlq": s3_ingest["dlq"]}


def upload(env, n: int, prefix: str = "docs/") -> list[str]:
    keys = []
    for i in range(n):
        key = f"{prefix}manual-{i}.md"
        body = "\n\n".join(f"## Part {j}\n\nStep {j} of manual {i}: turn the valve {i * j} times, then check "
                           f"the pump pressure reads {i + j} bar before closing the cover." for j in range(6))
        env["s3"].put_object(Bucket=BUCKET, Key=key, Body=f"# Manual {i}\n\n{body}\n".encode())
        keys.append(key)
    return keys


def notify(env, comps, keys) -> dict:
    event = sqs_event(*({"Records": [s3_record(k)]} for k in keys))
    return ingest_handler.build(comps)(event, LocalContext(function_name="citerag-ingest"))


def step(comps) -> dict:
    return ingest_handler.build(comps)(dict(SCHEDULE), LocalContext(function_name="citerag-ingest"))


def test_a_bulk_load_goes_through_one_batch_job_and_ends_as_an_on_demand_load_would(bulk, tmp_path):
    env = bulk
    keys = upload(env, 20)
    comps = env["components"](batch_min_passages=100, batch_max_records=5000)
    assert notify(env, comps, keys) == {"batchItemFailures": []}
    assert env["index"].list_documents() == []  # staged, not embedded
    staged = comps.batch_staging.staged()
    assert len(staged) == 20 and sum(d.passages for d in staged) >= 100

    report = step(comps)
    assert report["submitted"] == 1 and report["staged_passages"] == 0
    (_, job), = env["double"].jobs.items()
    assert job["roleArn"] == ROLE and job["modelId"] == "amazon.titan-embed-text-v2:0"
    lines = env["s3"].get_object(Bucket=BUCKET, Key=f"citerag/batch/jobs/{job['clientRequestToken']}/input/"
                                 "records.jsonl")["Body"].read().decode().splitlines()
    first = json.loads(lines[0])
    assert set(first) == {"recordId", "modelInput"} and first["recordId"].isalnum()
    assert set(first["modelInput"]) == {"inputText", "dimensions", "normalize"}
    assert len({json.loads(x)["recordId"] for x in lines}) == len(lines)

    assert step(comps)["waiting"] == 1  # still running: nothing written
    assert env["index"].list_documents() == []
    env["double"].run(job["jobArn"])
    changed = {"version": "0", "source": "aws.bedrock", "detail-type": "Batch Inference Job State Change",
               "resources": [job["jobArn"]], "detail": {"status": "Completed"}}  # Bedrock's event ends the job here
    report = ingest_handler.build(comps)(changed, LocalContext(function_name="citerag-ingest"))
    assert report["finished"] == 1 and report["written"] == 20
    assert sorted(d.source_uri for d in env["index"].list_documents()) == sorted(f"s3://{BUCKET}/{k}" for k in keys)
    assert comps.batch_staging.jobs() == []
    assert step(comps)["written"] == 0  # nothing left: a second completion writes nothing twice

    # The same documents ingested on demand into a fresh index: same passages, same vectors.
    fresh = Components(Settings(data_dir=tmp_path / "fresh", embedder="hashing"))
    fresh.object_source = comps.object_source
    notify(env, fresh, keys)
    ours = {d.source_uri: d.n_chunks for d in env["index"].list_documents()}
    theirs = {d.source_uri: d.n_chunks for d in fresh.index.list_documents()}
    assert ours == theirs
    q = HASHING.embed_query("pump pressure manual 3")
    ours_hits = [(m.id, round(m.score, 5)) for m in env["index"].query_dense(q, 5)]
    assert ours_hits == [(m.id, round(m.score, 5)) for m in fresh.index.query_dense(q, 5)]
    assert env["index"].corpus_size("") == fresh.index.corpus_size("")


def test_records_the_job_failed_and_documents_changed_since_staging_are_embedded_on_demand(bulk):
    env = bulk
    keys = upload(env, 20)
    comps = env["components"](batch_min_passages=100)
    notify(env, comps, keys)
    step(comps)
    (_, job), = env["double"].jobs.items()
    lines = env["s3"].get_object(Bucket=BUCKET, Key=f"citerag/batch/jobs/{job['clientRequestToken']}/input/"
                                 "records.jsonl")["Body"].read().decode().splitlines()
    env["double"].failing_records = {json.loads(lines[0])["recordId"], json.loads(lines[5])["recordId"]}
    env["s3"].put_object(Bucket=BUCKET, Key=keys[0], Body=b"# Manual 0, revised\n\nA wholly new procedure.\n")
    env["double"].run(job["jobArn"], status="PartiallyCompleted")
    report = step(comps)
    assert report["finished"] == 1 and report["written"] == 20
    docs = {d.source_uri: d for d in env["index"].list_documents()}
    assert len(docs) == 20 and docs[f"s3://{BUCKET}/{keys[0]}"].n_chunks == 1  # the revision, not the staging


def test_a_failed_job_still_writes_every_document_and_too_few_passages_wait_then_go_on_demand(bulk):
    env = bulk
    comps = env["components"](batch_min_passages=100, batch_max_wait_s=600)
    keys = upload(env, 20)
    notify(env, comps, keys)
    step(comps)
    (_, job), = env["double"].jobs.items()
    env["double"].run(job["jobArn"], status="Failed")
    assert step(comps)["written"] == 20
    assert len(env["index"].list_documents()) == 20

    lone = upload(env, 1, prefix="docs/late/")
    notify(env, comps, lone)
    assert step(comps)["staged_passages"] > 0 and len(env["double"].jobs) == 1  # under the threshold: waits
    env["clock"].now += 601
    assert step(comps)["written"] == 1
    assert len(env["index"].list_documents()) == 21 and comps.batch_staging.staged() == []


def test_when_bedrock_takes_no_job_the_passages_stay_staged_for_the_next_run(bulk):
    env = bulk
    comps = env["components"](batch_min_passages=100)
    notify(env, comps, upload(env, 20))
    env["double"].refuse_with = "ServiceQuotaExceededException"
    report = step(comps)
    assert report["submitted"] == 0 and "no batch job now" in report["note"]
    assert report["staged_passages"] >= 100
    env["double"].refuse_with = None
    assert step(comps)["submitted"] == 1


def test_the_double_holds_requests_to_botocores_service_model():
    with pytest.raises(ShapeError, match="timeoutDurationInHours"):
        check("CreateModelInvocationJobRequest", {
            "jobName": "citerag-x", "roleArn": ROLE, "modelId": "amazon.titan-embed-text-v2:0",
            "inputDataConfig": {"s3InputDataConfig": {"s3Uri": "s3://bucket/in/"}},
            "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": "s3://bucket/out/"}}, "timeoutDurationInHours": 1})
    with pytest.raises(ShapeError, match="jobName"):
        check("CreateModelInvocationJobRequest", {
            "jobName": "citerag x!", "roleArn": ROLE, "modelId": "amazon.titan-embed-text-v2:0",
            "inputDataConfig": {}, "outputDataConfig": {}})


def test_record_ids_are_alphanumeric_and_one_per_distinct_text():
    got = list(bedrock_batch.records(["a pump", "a valve", "a pump"], 1024))
    assert len(got) == 2 and all(rid.isalnum() and rid.isascii() and len(rid) == 11 for rid, _ in got)
    assert json.loads(got[0][1])["modelInput"] == {"inputText": "a pump", "dimensions": 1024, "normalize": True}


def test_a_completion_stopped_for_the_timeout_goes_on_next_run_and_writes_nothing_twice(bulk):
    env = bulk
    comps = env["components"](batch_min_passages=100)
    notify(env, comps, upload(env, 20))
    step(comps)
    (_, job), = env["double"].jobs.items()
    env["double"].run(job["jobArn"])
    budget = iter([1000.0] * 6)  # time for a few documents, then the function is about to time out
    first = comps.bulk_ingest(time_left=lambda: next(budget, 0.0)).run()
    assert first.finished == [] and first.waiting and 0 < len(first.written) < 20
    assert comps.batch_staging.jobs()  # the job is kept until all its documents are written
    second = comps.bulk_ingest().run()
    assert len(second.finished) == 1
    statuses = {r.source: r.status for r in second.written}
    assert {statuses[r.source] for r in first.written} == {"unchanged"}  # not written twice
    assert len(env["index"].list_documents()) == 20


def test_through_pinecone_and_the_statistics_ledger_a_bulk_load_folds_to_the_statistics_of_an_on_demand_one(bulk):
    from pinecone import Index

    from citerag.adapters.pinecone_index import PineconeIndex
    from citerag.adapters.s3_store import S3DocumentStore
    from citerag.adapters.stats_ledger import DynamoStatsLedger, StatsFolder
    from citerag.ingestion.ports import NoLocks
    from citerag.testing.doubles import PineconeDouble

    env = bulk
    keys = upload(env, 20)

    def deployment(table: str, prefix: str, dense_d, sparse_d):
        create_table(env["db"], table)
        store = S3DocumentStore(env["s3"], BUCKET, prefix, stats_ttl_s=0)
        ledger = DynamoStatsLedger(env["db"], table)
        host = lambda d: d.url.replace("127.0.0.1", "localhost")  # noqa: E731
        index = PineconeIndex(Index(host=host(dense_d), api_key="pc-test-key"),
                              Index(host=host(sparse_d), api_key="pc-test-key"), store, ledger)
        return index, store, StatsFolder(ledger, store)

    with PineconeDouble() as d1, PineconeDouble() as s1, PineconeDouble() as d2, PineconeDouble() as s2:
        bulk_index, bulk_store, bulk_fold = deployment("bulk", "citerag/", d1, s1)
        comps = env["components"](batch_min_passages=100)
        comps.index = bulk_index
        notify(env, comps, keys)
        step(comps)
        (_, job), = env["double"].jobs.items()
        env["double"].run(job["jobArn"])
        assert step(comps)["written"] == 20
        assert step(comps)["written"] == 0

        plain_index, plain_store, plain_fold = deployment("plain", "plain/", d2, s2)
        plain = Components(Settings(data_dir=comps.settings.data_dir, embedder="hashing"))
        plain.object_source, plain.index, plain.document_locks = comps.object_source, plain_index, NoLocks()
        assert notify(env, plain, keys) == {"batchItemFailures": []}

        bulk_fold.fold_all("")
        plain_fold.fold_all("")
        ours, theirs = bulk_store.corpus_stats(""), plain_store.corpus_stats("")
        assert ours.n_docs == theirs.n_docs > 20 and ours.total_len == theirs.total_len and ours.df == theirs.df
        assert ({d.source_uri: d.n_chunks for d in bulk_index.list_documents()}
                == {d.source_uri: d.n_chunks for d in plain_index.list_documents()})
