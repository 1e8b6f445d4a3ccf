"""The citerag stack: the shared data plane (documents bucket -> SQS -> ingest Lambda, Pinecone secret), the
guardrail, the Bedrock Agents Classic agent (search and parser Lambdas, prompts, alias) and/or the AgentCore agent
(Runtime, Gateway with its Lambda target, Memory), chosen with context `runtimes`, model-invocation logging, and
alarms on every function, the runtime, the gateway and the dead-letter queue."""

from __future__ import annotations

import sys

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cw
from constructs import Construct

from infra.common import ROOT, ack, retention
from infra.config import DeployConfig

sys.path.insert(0, str(ROOT / "lambdas"))
from infra import agentcore, classic, data, guardrail, ingest_scale, invocation_logging


class CiteragStack(cdk.Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig, **kwargs) -> None:
        super().__init__(scope, construct_id, **kwargs)
        c = config
        keep = retention(c.log_retention_days)

        shared = data.build(self, c, keep)
        scale = ingest_scale.build(self, c, shared, shared.queue, keep)
        self.documents = shared.documents
        rail, rail_version = guardrail.build(self, c)
        invocation_logs = invocation_logging.build(self, keep, shared)
        self.functions = {"ingest": shared.ingest, "statsfold": scale.fold}
        outputs: dict[str, str] = {}
        # Which runtimes to deploy (context `runtimes`): both share the data plane and the guardrail.
        if "classic" in c.runtimes:
            agent = classic.build(self, c, shared, keep, rail, rail_version)
            self.functions.update(agent.functions)
            outputs.update(AgentId=agent.agent.attr_agent_id, AgentAliasId=agent.alias.attr_agent_alias_id)
        if "agentcore" in c.runtimes:
            core = agentcore.build(self, c, shared, keep, rail, rail_version)
            self.functions.update(core.functions)
            outputs.update(AgentRuntimeArn=core.runtime.agent_runtime_arn, GatewayUrl=core.gateway.gateway_url or "",
                           GatewayId=core.gateway.gateway_id, MemoryId=core.memory.memory_id)
            for kind, metric in (("AgentCoreRuntimeSystemErrors", core.runtime.metric_system_errors()),
                                 ("AgentCoreRuntimeThrottles", core.runtime.metric_throttles()),
                                 ("AgentCoreGatewaySystemErrors", core.gateway.metric_system_errors()),
                                 ("AgentCoreGatewayThrottles", core.gateway.metric_throttles())):
                cw.Alarm(self, kind, metric=metric, threshold=1, evaluation_periods=1,
                         comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                         alarm_description=f"citerag {kind}",
                         treat_missing_data=cw.TreatMissingData.NOT_BREACHING)

        if c.function_tracing == "service":
            # Lambda still traces every invocation (active tracing); the handlers then never import the X-Ray SDK.
            for fn in self.functions.values():
                fn.add_environment("POWERTOOLS_TRACE_DISABLED", "true")

        cw.Alarm(self, "DLQDepth", metric=shared.dlq.metric_approximate_number_of_messages_visible(
            period=cdk.Duration.minutes(5)), threshold=1, evaluation_periods=1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            alarm_description="Documents failed to ingest (see the DLQ messages' reason attribute)",
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING)
        for name, fn in self.functions.items():
            for kind, metric in (("Errors", fn.metric_errors(period=cdk.Duration.minutes(5))),
                                 ("Throttles", fn.metric_throttles(period=cdk.Duration.minutes(5)))):
                cw.Alarm(self, f"{name.title()}{kind}", metric=metric, threshold=1, evaluation_periods=1,
                         comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                         alarm_description=f"citerag {name} Lambda {kind.lower()}",
                         treat_missing_data=cw.TreatMissingData.NOT_BREACHING)

        # Singleton functions CDK adds itself (bucket notifications, SDK-call custom resource, log retention).
        for child in self.node.children:
            if child.node.id.startswith(("BucketNotificationsHandler", "AWS679f53fac002430cb0da5b7982bd2287",
                                         "LogRetention")):
                ack(child, "AwsSolutions-IAM4", "CDK's own singleton Lambda for bucket notifications / SDK calls / "
                    "log retention; the managed policy only grants writing its CloudWatch Logs.",
                    applies_to="Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole")
            if child.node.id.startswith("LogRetention"):
                ack(child, "AwsSolutions-IAM5", "CDK's log-retention function sets a retention policy on a log group "
                    "the AgentCore service creates later, whose ARN is not known at deploy time.",
                    applies_to="Resource::*")

        for key, value in (*outputs.items(), ("DocumentsBucket", shared.documents.bucket_name),
                           ("PineconeSecretName", shared.secret.secret_name),
                           ("ModelInvocationLogGroup", invocation_logs.log_group_name),
                           ("IngestDLQUrl", shared.dlq.queue_url), ("IngestQueueUrl", shared.queue.queue_url),
                           ("IngestStatsTableName", scale.table.table_name),
                           ("IngestDashboardName", scale.dashboard.dashboard_name)):
            cdk.CfnOutput(self, key, value=value)
