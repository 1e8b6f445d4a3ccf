"""Lambda: the CloudFormation custom resource that turns on Bedrock model-invocation logging without clobbering
an account's own configuration.

Model-invocation logging is one setting per account and region, with no CloudFormation resource
(`PutModelInvocationLoggingConfiguration`, botocore bedrock 2023-04-20). On create this keeps whatever
configuration was there (in the state object), then puts the stack's; on delete it puts the kept one back, or
deletes the setting when there was none, and leaves the setting alone when someone else changed it since.
Large bodies go to S3 (`largeDataDeliveryS3Config`): CloudWatch Logs alone drops request bodies past its size limit.

Event: the CloudFormation custom-resource request as the CDK Provider framework passes it; ResourceProperties
{LoggingConfig: JSON string, StateBucket, StateKey}.
"""

from __future__ import annotations

import json
from typing import Any

from citerag.handlers.entry import Handler, from_settings

PHYSICAL_ID = "model-invocation-logging"


def build(components) -> Handler:
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        props = event.get("ResourceProperties") or {}
        wanted = json.loads(props["LoggingConfig"])
        bedrock = components.aws_client("bedrock")
        s3 = components.aws_client("s3")
        bucket, key = props["StateBucket"], props["StateKey"]
        kind = event.get("RequestType")
        if kind == "Create":
            if _state(s3, bucket, key) is None:  # a retried create must not save our own configuration
                previous = bedrock.get_model_invocation_logging_configuration().get("loggingConfig")
                s3.put_object(Bucket=bucket, Key=key, Body=json.dumps({"previous": previous}).encode())
            bedrock.put_model_invocation_logging_configuration(loggingConfig=wanted)
        elif kind == "Update":
            bedrock.put_model_invocation_logging_configuration(loggingConfig=wanted)
        elif kind == "Delete":
            current = bedrock.get_model_invocation_logging_configuration().get("loggingConfig")
            state = _state(s3, bucket, key) or {}
            if _holds(current, wanted):  # still ours: give the account its own setting back
                if state.get("previous"):
                    bedrock.put_model_invocation_logging_configuration(loggingConfig=state["previous"])
                else:
                    bedrock.delete_model_invocation_logging_configuration()
        return {"PhysicalResourceId": PHYSICAL_ID}

    return handler


def _holds(current: Any, wanted: Any) -> bool:
    """Whether the account's configuration is still the one we put: every field we set has our value. Get returns
    fields we never set as well (`audioDataDeliveryEnabled`, `videoDataDeliveryEnabled`: botocore bedrock
    2023-04-20 LoggingConfig), so equality would never hold and the account would keep a dead configuration."""
    if isinstance(wanted, dict):
        return isinstance(current, dict) and all(_holds(current.get(k), v) for k, v in wanted.items())
    return current == wanted


def _state(s3, bucket: str, key: str) -> dict[str, Any] | None:
    try:
        return json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    except s3.exceptions.NoSuchKey:
        return None


handler = from_settings(build)
