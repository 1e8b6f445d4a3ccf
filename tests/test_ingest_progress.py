"""`citerag ingest-progress` reads queue depths from SQS and the documents the ingest functions counted from
CloudWatch (moto, behind the real boto3 clients)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from citerag.adapters import aws
from citerag.cli import app

runner = CliRunner()


@pytest.fixture
def deployed(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    aws.client.cache_clear()
    with mock_aws():
        sqs = boto3.client("sqs", region_name="ap-northeast-1")
        queue = sqs.create_queue(QueueName="ingest")["QueueUrl"]
        dlq = sqs.create_queue(QueueName="ingest-dlq")["QueueUrl"]
        yield sqs, boto3.client("cloudwatch", region_name="ap-northeast-1"), queue, dlq
    aws.client.cache_clear()


def _counted(cw, outcome: str, value: int, minutes_ago: int) -> None:
    # What Lambda makes of the handler's EMF lines: a metric in namespace citerag with the service dimension.
    cw.put_metric_data(Namespace="citerag", MetricData=[{
        "MetricName": f"Ingest_{outcome}", "Dimensions": [{"Name": "service", "Value": "citerag-ingest"}],
        "Timestamp": datetime.now(UTC) - timedelta(minutes=minutes_ago), "Value": value, "Unit": "Count"}])


def test_progress_shows_queue_depth_documents_done_failed_and_the_rate(deployed):
    sqs, cw, queue, dlq = deployed
    for i in range(7):
        sqs.send_message(QueueUrl=queue, MessageBody=json.dumps({"n": i}))
    sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=2)  # two being ingested now
    sqs.send_message(QueueUrl=dlq, MessageBody="{}")
    _counted(cw, "added", 40, minutes_ago=90)
    _counted(cw, "added", 15, minutes_ago=3)
    _counted(cw, "replaced", 5, minutes_ago=4)
    _counted(cw, "failed", 2, minutes_ago=5)
    _counted(cw, "dead_lettered", 1, minutes_ago=5)
    r = runner.invoke(app, ["ingest-progress", "--queue-url", queue, "--dlq-url", dlq, "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert (got["waiting"], got["in_progress"], got["dead_lettered_now"]) == (5, 2, 1)
    assert (got["done"], got["failed"]) == (60, 2)
    assert got["per_minute"] == pytest.approx(2.0)  # 20 documents in the last ten minutes
    assert got["eta_minutes"] == pytest.approx(3.5)

    r = runner.invoke(app, ["ingest-progress", "--queue-url", queue, "--dlq-url", dlq, "--hours", "1"])
    assert r.exit_code == 0, r.output
    assert "5 waiting, 2 in progress; dead-letter queue: 1" in r.stdout
    assert "20 done, 2 failed" in r.stdout and "about 4 min left" in r.stdout


def test_a_missing_or_malformed_queue_is_one_clear_line(deployed):
    r = runner.invoke(app, ["ingest-progress"], env={"CITERAG_INGEST_QUEUE_URL": ""})
    assert r.exit_code != 0 and "IngestQueueUrl" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["ingest-progress", "--queue-url", "ingest"])
    assert r.exit_code != 0 and "not an SQS queue URL" in r.output
    r = runner.invoke(app, ["ingest-progress", "--queue-url", "https://sqs.ap-northeast-1.amazonaws.com/123456789012/nope"])
    assert r.exit_code != 0 and "cannot read the ingest progress" in r.output and "Traceback" not in r.output
