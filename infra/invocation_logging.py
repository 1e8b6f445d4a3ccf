"""Bedrock model-invocation logging to CloudWatch Logs, with bodies too large for a log event delivered to S3,
which `citerag trace --log-group` reads. It is an account-level setting with no CloudFormation resource: a custom
resource (citerag.handlers.invocation_logging) keeps the account's previous configuration and restores it when the
stack is deleted, instead of overwriting it."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import custom_resources as cr

from infra.common import ack, function
from infra.data import SharedData

STATE_KEY = "state/previous-logging-config.json"
BODIES_PREFIX = "bodies"


def build(stack: cdk.Stack, retention: logs.RetentionDays, data: SharedData) -> logs.LogGroup:
    invocation_logs = logs.LogGroup(stack, "ModelInvocationLogs", retention=retention,
                                    removal_policy=cdk.RemovalPolicy.DESTROY)
    bodies = s3.Bucket(stack, "ModelInvocationBodies", encryption=s3.BucketEncryption.S3_MANAGED,
                       block_public_access=s3.BlockPublicAccess.BLOCK_ALL, enforce_ssl=True, versioned=True,
                       server_access_logs_bucket=data.access_logs, server_access_logs_prefix="invocation-bodies/",
                       # Versioned: an expiry only hides a body behind a delete marker; the noncurrent expiry
                       # is what deletes it (request bodies may hold personal data).
                       lifecycle_rules=[s3.LifecycleRule(prefix=f"{BODIES_PREFIX}/",
                                                         expiration=cdk.Duration.days(90),
                                                         noncurrent_version_expiration=cdk.Duration.days(1))])
    # The bucket policy AWS documents for invocation logging (docs model-invocation-logging).
    bodies.add_to_resource_policy(iam.PolicyStatement(
        sid="AmazonBedrockLogsWrite", principals=[iam.ServicePrincipal("bedrock.amazonaws.com")],
        actions=["s3:PutObject"],
        resources=[bodies.arn_for_objects(f"{BODIES_PREFIX}/AWSLogs/{cdk.Aws.ACCOUNT_ID}/BedrockModelInvocationLogs/*")],
        conditions={"StringEquals": {"aws:SourceAccount": cdk.Aws.ACCOUNT_ID},
                    "ArnLike": {"aws:SourceArn": f"arn:{cdk.Aws.PARTITION}:bedrock:{cdk.Aws.REGION}:"
                                                 f"{cdk.Aws.ACCOUNT_ID}:*"}}))
    logging_role = iam.Role(stack, "ModelInvocationLoggingRole", assumed_by=iam.ServicePrincipal(
        "bedrock.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": cdk.Aws.ACCOUNT_ID}}))
    invocation_logs.grant_write(logging_role)
    logging_config = {
        "cloudWatchConfig": {"logGroupName": invocation_logs.log_group_name, "roleArn": logging_role.role_arn,
                             "largeDataDeliveryS3Config": {"bucketName": bodies.bucket_name,
                                                           "keyPrefix": BODIES_PREFIX}},
        "textDataDeliveryEnabled": True, "imageDataDeliveryEnabled": False, "embeddingDataDeliveryEnabled": False}
    setup = function(stack, "ModelInvocationLoggingSetup", "citerag.handlers.invocation_logging.handler",
                     code=data.slim_code, timeout=60, memory=256, env={}, retention=retention)
    setup.add_to_role_policy(iam.PolicyStatement(
        actions=["bedrock:GetModelInvocationLoggingConfiguration", "bedrock:PutModelInvocationLoggingConfiguration",
                 "bedrock:DeleteModelInvocationLoggingConfiguration"], resources=["*"]))
    setup.add_to_role_policy(iam.PolicyStatement(actions=["iam:PassRole"], resources=[logging_role.role_arn]))
    # Putting the configuration makes Bedrock check (and attach) the bucket policy with the caller's permissions
    # (docs model-invocation-logging: "A bucket policy is automatically attached ... with the permissions
    # S3:GetBucketPolicy and S3:PutBucketPolicy").
    setup.add_to_role_policy(iam.PolicyStatement(actions=["s3:GetBucketPolicy", "s3:PutBucketPolicy"],
                                                 resources=[bodies.bucket_arn]))
    setup.add_to_role_policy(iam.PolicyStatement(actions=["s3:GetObject", "s3:PutObject"],
                                                 resources=[bodies.arn_for_objects(STATE_KEY)]))
    # Without ListBucket, GetObject on a key that does not exist yet (the first create) is 403 AccessDenied, not
    # NoSuchKey (botocore s3 2006-03-01 GetObject: "If you don't have the s3:ListBucket permission, Amazon S3
    # returns ... 403"): the custom resource would fail and roll the stack back.
    # Unconditioned: S3 does not document that its check of ListBucket for a missing key evaluates an s3:prefix
    # condition, and a condition it does not meet would leave the 403.
    setup.add_to_role_policy(iam.PolicyStatement(actions=["s3:ListBucket"], resources=[bodies.bucket_arn]))
    provider = cr.Provider(stack, "ModelInvocationLoggingProvider", on_event_handler=setup,
                           log_group=logs.LogGroup(stack, "ModelInvocationLoggingProviderLogs", retention=retention,
                                                   removal_policy=cdk.RemovalPolicy.DESTROY))
    resource = cdk.CustomResource(stack, "ModelInvocationLogging", service_token=provider.service_token,
                                  properties={"LoggingConfig": stack.to_json_string(logging_config),
                                              "StateBucket": bodies.bucket_name, "StateKey": STATE_KEY})
    resource.node.add_dependency(bodies)
    ack(setup.role.node.find_child("DefaultPolicy"), "AwsSolutions-IAM5",
        "Model invocation logging is an account-level setting with no resource ARN; X-Ray has none either.",
        applies_to="Resource::*")
    framework = provider.node.find_child("framework-onEvent")
    ack(framework.role, "AwsSolutions-IAM4", "The CDK Provider framework's function: it only writes its own logs.",
        applies_to="Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole")
    ack(framework.role.node.find_child("DefaultPolicy"), "AwsSolutions-IAM5", "The CDK Provider framework invokes "
        "the setup function and its versions.",
        applies_to=f"Resource::<{stack.get_logical_id(setup.node.default_child)}.Arn>:*")
    ack(framework, "AwsSolutions-L1", "The CDK Provider framework chooses its own Node.js runtime.")
    return invocation_logs
