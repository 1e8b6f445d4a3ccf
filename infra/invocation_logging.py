"""Bedrock model-invocation logging to CloudWatch Logs (an account-level setting, applied by an SDK call), which
`citerag trace --log-group` reads."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr

from infra.common import ack


def build(stack: cdk.Stack, retention: logs.RetentionDays) -> logs.LogGroup:
    invocation_logs = logs.LogGroup(stack, "ModelInvocationLogs", retention=retention,
                                    removal_policy=cdk.RemovalPolicy.DESTROY)
    logging_role = iam.Role(stack, "ModelInvocationLoggingRole", assumed_by=iam.ServicePrincipal(
        "bedrock.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": cdk.Aws.ACCOUNT_ID}}))
    invocation_logs.grant_write(logging_role)
    logging_config = {"loggingConfig": {
        "cloudWatchConfig": {"logGroupName": invocation_logs.log_group_name, "roleArn": logging_role.role_arn},
        "textDataDeliveryEnabled": True, "imageDataDeliveryEnabled": False, "embeddingDataDeliveryEnabled": False}}
    invocation_logging = cr.AwsCustomResource(
        stack, "ModelInvocationLogging",
        on_create=cr.AwsSdkCall(service="bedrock", action="PutModelInvocationLoggingConfiguration",
                                parameters=logging_config,
                                physical_resource_id=cr.PhysicalResourceId.of("model-invocation-logging")),
        on_update=cr.AwsSdkCall(service="bedrock", action="PutModelInvocationLoggingConfiguration",
                                parameters=logging_config,
                                physical_resource_id=cr.PhysicalResourceId.of("model-invocation-logging")),
        on_delete=cr.AwsSdkCall(service="bedrock", action="DeleteModelInvocationLoggingConfiguration"),
        policy=cr.AwsCustomResourcePolicy.from_statements([
            iam.PolicyStatement(actions=["bedrock:PutModelInvocationLoggingConfiguration",
                                         "bedrock:DeleteModelInvocationLoggingConfiguration"], resources=["*"]),
            iam.PolicyStatement(actions=["iam:PassRole"], resources=[logging_role.role_arn])]),
        install_latest_aws_sdk=False,
        log_group=logs.LogGroup(stack, "ModelInvocationLoggingSetupLogs", retention=retention,
                                removal_policy=cdk.RemovalPolicy.DESTROY))
    ack(invocation_logging, "AwsSolutions-IAM5", "Model invocation logging is an account-level setting with "
         "no resource ARN.", applies_to="Resource::*")
    return invocation_logs
