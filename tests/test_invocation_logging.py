"""The model-invocation logging custom resource keeps an account's own configuration: it saves it on create and
puts it back on delete (real boto3 clients: bedrock through botocore's Stubber, which validates every request
against the service model; S3 on moto)."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from citerag.handlers.invocation_logging import build

OURS = {"cloudWatchConfig": {"logGroupName": "citerag-logs", "roleArn": "arn:aws:iam::123456789012:role/log",
                             "largeDataDeliveryS3Config": {"bucketName": "bodies", "keyPrefix": "bodies"}},
        "textDataDeliveryEnabled": True, "imageDataDeliveryEnabled": False, "embeddingDataDeliveryEnabled": False}
THEIRS = {"s3Config": {"bucketName": "their-audit-bucket", "keyPrefix": "bedrock"}, "textDataDeliveryEnabled": True}


class _Components:
    def __init__(self, bedrock, s3):
        self.clients = {"bedrock": bedrock, "s3": s3}

    def aws_client(self, service, **_):
        return self.clients[service]


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        s3 = boto3.client("s3", region_name="ap-northeast-1")
        s3.create_bucket(Bucket="bodies", CreateBucketConfiguration={"LocationConstraint": "ap-northeast-1"})
        bedrock = boto3.client("bedrock", region_name="ap-northeast-1")
        with Stubber(bedrock) as stub:
            yield stub, build(_Components(bedrock, s3)), s3


def _event(kind):
    return {"RequestType": kind, "PhysicalResourceId": "model-invocation-logging", "ResourceProperties": {
        "LoggingConfig": json.dumps(OURS), "StateBucket": "bodies", "StateKey": "state/previous.json"}}


def test_an_existing_configuration_is_kept_and_restored_on_delete(env):
    stub, handler, s3 = env
    stub.add_response("get_model_invocation_logging_configuration", {"loggingConfig": THEIRS})
    stub.add_response("put_model_invocation_logging_configuration", {}, {"loggingConfig": OURS})
    assert handler(_event("Create"), None) == {"PhysicalResourceId": "model-invocation-logging"}
    saved = json.loads(s3.get_object(Bucket="bodies", Key="state/previous.json")["Body"].read())
    assert saved == {"previous": THEIRS}
    stub.add_response("get_model_invocation_logging_configuration", {"loggingConfig": OURS})
    stub.add_response("put_model_invocation_logging_configuration", {}, {"loggingConfig": THEIRS})
    handler(_event("Delete"), None)
    stub.assert_no_pending_responses()


def test_without_a_previous_configuration_delete_removes_ours(env):
    stub, handler, _ = env
    stub.add_response("get_model_invocation_logging_configuration", {})
    stub.add_response("put_model_invocation_logging_configuration", {}, {"loggingConfig": OURS})
    handler(_event("Create"), None)
    stub.add_response("get_model_invocation_logging_configuration", {"loggingConfig": OURS})
    stub.add_response("delete_model_invocation_logging_configuration", {})
    handler(_event("Delete"), None)
    stub.assert_no_pending_responses()


def test_a_configuration_someone_changed_since_is_left_alone_on_delete(env):
    stub, handler, _ = env
    stub.add_response("get_model_invocation_logging_configuration", {})
    stub.add_response("put_model_invocation_logging_configuration", {}, {"loggingConfig": OURS})
    handler(_event("Create"), None)
    stub.add_response("get_model_invocation_logging_configuration", {"loggingConfig": THEIRS})
    handler(_event("Delete"), None)  # no put, no delete: it is not ours any more
    stub.assert_no_pending_responses()


def test_a_retried_create_does_not_save_our_own_configuration_as_theirs(env):
    stub, handler, s3 = env
    stub.add_response("get_model_invocation_logging_configuration", {"loggingConfig": THEIRS})
    stub.add_response("put_model_invocation_logging_configuration", {}, {"loggingConfig": OURS})
    handler(_event("Create"), None)
    stub.add_response("put_model_invocation_logging_configuration", {}, {"loggingConfig": OURS})
    handler(_event("Create"), None)
    saved = json.loads(s3.get_object(Bucket="bodies", Key="state/previous.json")["Body"].read())
    assert saved == {"previous": THEIRS}


def test_fields_the_service_adds_on_get_still_count_as_ours(env):
    stub, handler, _ = env
    stub.add_response("get_model_invocation_logging_configuration", {})
    stub.add_response("put_model_invocation_logging_configuration", {}, {"loggingConfig": OURS})
    handler(_event("Create"), None)
    as_read = {**OURS, "videoDataDeliveryEnabled": False, "audioDataDeliveryEnabled": False}
    stub.add_response("get_model_invocation_logging_configuration", {"loggingConfig": as_read})
    stub.add_response("delete_model_invocation_logging_configuration", {})
    handler(_event("Delete"), None)
    stub.assert_no_pending_responses()
