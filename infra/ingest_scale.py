"""Ingest at scale: the BM25 statistics table the ingest functions write (adapters.stats_ledger), the scheduled
function that folds it into the statistics object searches read, how many ingest functions run at once (sized to
the account's Titan quota), and the dashboard of a bulk load (queue depth, documents done and failed)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_dynamodb as ddb
from aws_cdk import aws_events as ev
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs

from infra.common import ack, ack_xray, function
from infra.config import DeployConfig

# The quotas that bound a bulk load, per account, Region and model (Service Quotas, service "Amazon Bedrock"):
# "On-demand model inference tokens per minute for Amazon Titan Text Embeddings V2" (quota code L-DE641971) and
# "... requests per minute ..." (L-26C560CE). The Bedrock user guide names them (quotas-runtime) and says embedding
# models "are throttled by Requests Per Minute (RPM), not Tokens Per Minute" (titan-embedding-models), but gives no
# default value for this model on any page checked: the values are your account's (docs/aws-ingest.md). The
# defaults below (titanTokensPerMinute 300,000, no request quota) are therefore assumptions to override.
# Titan tokens and calls one ingest function uses per minute on small documents (one passage each, the slowest case:
# each costs a whole round of S3, Titan, Pinecone and DynamoDB calls): scripts/simulate_ingest.py at concurrency 1
# measured 15,619 tokens and 192 calls (docs/aws-ingest.md). Concurrency = quota / this reaches the quota even
# then; larger documents reach it with fewer functions, and the adaptive Titan limit of each function shares it out.
TOKENS_PER_FUNCTION_MINUTE = 16_000
CALLS_PER_FUNCTION_MINUTE = 192
FOLD_TIMEOUT_S = 300
# What the ingest handler counts (handlers/ingest.py, Powertools EMF: namespace citerag, dimension service).
DONE = ("added", "replaced", "unchanged", "removed", "skipped")


def ingest_concurrency(c: DeployConfig) -> int:
    if c.ingest_concurrency:
        return c.ingest_concurrency
    wanted = math.ceil(c.titan_tokens_per_minute / TOKENS_PER_FUNCTION_MINUTE)
    if c.titan_requests_per_minute:
        wanted = min(wanted, math.ceil(c.titan_requests_per_minute / CALLS_PER_FUNCTION_MINUTE))
    return min(1000, max(2, wanted))


@dataclass
class IngestScale:
    table: ddb.Table
    fold: lambda_.Function
    dashboard: cw.Dashboard


def build(stack: cdk.Stack, c: DeployConfig, shared, queue: sqs.Queue, retention: logs.RetentionDays) -> IngestScale:
    # On-demand: a bulk load writes in bursts. Point-in-time recovery: the table holds what the statistics are
    # folded from, and rebuilding it means re-ingesting every document.
    table = ddb.Table(stack, "IngestStats", partition_key=ddb.Attribute(name="pk", type=ddb.AttributeType.STRING),
                      sort_key=ddb.Attribute(name="sk", type=ddb.AttributeType.STRING),
                      billing_mode=ddb.BillingMode.PAY_PER_REQUEST, encryption=ddb.TableEncryption.AWS_MANAGED,
                      point_in_time_recovery_specification=ddb.PointInTimeRecoverySpecification(
                          point_in_time_recovery_enabled=True))
    ingest = shared.ingest
    ingest.add_environment("CITERAG_STATS_TABLE", table.table_name)
    # TransactWriteItems is authorised per item action (docs amazondynamodb transaction-apis-iam).
    ingest.add_to_role_policy(iam.PolicyStatement(
        actions=["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:DeleteItem",
                 "dynamodb:ConditionCheckItem"], resources=[table.table_arn]))

    fold = function(stack, "StatsFold", "citerag.handlers.stats_fold.handler", code=shared.code,
                    timeout=FOLD_TIMEOUT_S, memory=1024,
                    env={**shared.env, "CITERAG_STATS_TABLE": table.table_name}, retention=retention)
    fold.add_to_role_policy(iam.PolicyStatement(actions=["dynamodb:Query", "dynamodb:BatchWriteItem"],
                                                resources=[table.table_arn]))
    stats_key = shared.documents.arn_for_objects("citerag/stats/*")
    fold.add_to_role_policy(iam.PolicyStatement(actions=["s3:GetObject", "s3:PutObject"], resources=[stats_key]))
    ack(fold.role.node.find_child("DefaultPolicy"), "AwsSolutions-IAM5",
        "The statistics objects of this stack's bucket, one per namespace, under citerag/stats/.",
        applies_to=[f"Resource::<{stack.get_logical_id(shared.documents.node.default_child)}.Arn>/citerag/stats/*"])
    ack_xray(fold)
    ev.Rule(stack, "StatsFoldSchedule", schedule=ev.Schedule.rate(cdk.Duration.minutes(1)),
            targets=[targets.LambdaFunction(fold, retry_attempts=0)],
            description="citerag: fold BM25 statistics deltas into the statistics searches read")

    if c.batch_min_passages:
        _bulk_path(stack, c, shared, table)
    dashboard = _dashboard(stack, c, shared, queue, fold)
    return IngestScale(table=table, fold=fold, dashboard=dashboard)


BATCH_PREFIX = "citerag/batch"
BULK_STEP_MINUTES = 5


def _bulk_path(stack: cdk.Stack, c: DeployConfig, shared, table: ddb.Table) -> iam.Role:
    """Bedrock batch inference for bulk loads (citerag.ingestion.bulk): the service role a job runs with, the
    ingest function's rights to start and read jobs, and what runs its bulk step (a schedule, and each batch job's
    state change)."""
    # The stack's own account and Region: concrete when the deployment names them, else CloudFormation's.
    account, region, partition = stack.account, stack.region, stack.partition
    jobs_arn = f"arn:{partition}:bedrock:{region}:{account}:model-invocation-job/*"
    # Trust as the Bedrock user guide's batch service role (batch-iam-sr): Bedrock only, for this account's jobs
    # (aws:SourceAccount, aws:SourceArn: no confused deputy).
    role = iam.Role(stack, "BatchInferenceRole", description="citerag: Bedrock batch inference jobs of the bulk path",
                    assumed_by=iam.ServicePrincipal("bedrock.amazonaws.com", conditions={
                        "StringEquals": {"aws:SourceAccount": account},
                        "ArnLike": {"aws:SourceArn": jobs_arn}}))
    docs = shared.documents
    # A job reads its input and writes its output under its own folder, nothing else of the bucket.
    role.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"],
                                           resources=[docs.arn_for_objects(f"{BATCH_PREFIX}/jobs/*/input/*")]))
    role.add_to_policy(iam.PolicyStatement(actions=["s3:PutObject"],
                                           resources=[docs.arn_for_objects(f"{BATCH_PREFIX}/jobs/*/output/*")]))
    role.add_to_policy(iam.PolicyStatement(actions=["s3:ListBucket"], resources=[docs.bucket_arn],
                                           conditions={"StringLike": {"s3:prefix": [f"{BATCH_PREFIX}/jobs/*"]}}))
    bucket_id = stack.get_logical_id(docs.node.default_child)
    ack(role.node.find_child("DefaultPolicy"), "AwsSolutions-IAM5",
        "A batch job's input and output folders under citerag/batch/jobs/ of this stack's bucket; the job id is "
        "chosen when the job starts.",
        applies_to=[f"Resource::<{bucket_id}.Arn>/{BATCH_PREFIX}/jobs/*/input/*",
                    f"Resource::<{bucket_id}.Arn>/{BATCH_PREFIX}/jobs/*/output/*"])

    ingest = shared.ingest
    ingest.add_environment("CITERAG_BATCH_MIN_PASSAGES", str(c.batch_min_passages))
    ingest.add_environment("CITERAG_BATCH_MAX_RECORDS", str(c.batch_max_records))
    ingest.add_environment("CITERAG_BATCH_MIN_RECORDS", str(c.batch_min_records))
    ingest.add_environment("CITERAG_BATCH_ROLE_ARN", role.role_arn)
    # CreateModelInvocationJob is authorised on the model and the job (Bedrock user guide,
    # batch-inference-permissions); the role is passed to Bedrock only.
    ingest.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:CreateModelInvocationJob"],
                                                  resources=[shared.titan_arn, jobs_arn]))
    ingest.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:GetModelInvocationJob"], resources=[jobs_arn]))
    ingest.add_to_role_policy(iam.PolicyStatement(
        actions=["iam:PassRole"], resources=[role.role_arn],
        conditions={"StringEquals": {"iam:PassedToService": "bedrock.amazonaws.com"}}))
    ingest.add_to_role_policy(iam.PolicyStatement(actions=["dynamodb:BatchWriteItem"], resources=[table.table_arn]))
    ack(ingest.role.node.find_child("DefaultPolicy"), "AwsSolutions-IAM5",
        "Batch inference jobs of this account and Region; a job's id is Bedrock's, known once it starts.",
        applies_to=[f"Resource::arn:{_nag(partition, 'AWS::Partition')}:bedrock:{_nag(region, 'AWS::Region')}:"
                    f"{_nag(account, 'AWS::AccountId')}:model-invocation-job/*"])

    # The bulk step runs on Bedrock's job-state events, and on a schedule too: Bedrock "emits events on a
    # best-effort basis" (user guide, monitoring-eventbridge), and passages under the threshold need a clock.
    ev.Rule(stack, "BulkStepSchedule", schedule=ev.Schedule.rate(cdk.Duration.minutes(BULK_STEP_MINUTES)),
            targets=[targets.LambdaFunction(ingest, retry_attempts=0)],
            description="citerag: start Bedrock batch jobs for staged passages, finish ended ones")
    ev.Rule(stack, "BatchJobStateChange", event_pattern=ev.EventPattern(
        source=["aws.bedrock"], detail_type=["Batch Inference Job State Change"]),
        targets=[targets.LambdaFunction(ingest, retry_attempts=0)],
        description="citerag: a Bedrock batch inference job changed state")
    return role


def _nag(value: str, pseudo: str) -> str:
    """How cdk-nag writes a value in a finding: a pseudo parameter as <AWS::...>, a concrete one as is."""
    return f"<{pseudo}>" if cdk.Token.is_unresolved(value) else value


def _dashboard(stack, c: DeployConfig, shared, queue: sqs.Queue, fold: lambda_.Function) -> cw.Dashboard:
    minute = cdk.Duration.minutes(1)

    def counted(status: str) -> cw.Metric:
        return cw.Metric(namespace="citerag", metric_name=f"Ingest_{status}",
                         dimensions_map={"service": "citerag-ingest"}, statistic="Sum", period=minute)

    done = cw.MathExpression(expression=" + ".join(f"FILL(d{i}, 0)" for i in range(len(DONE))),
                             using_metrics={f"d{i}": counted(s) for i, s in enumerate(DONE)},
                             label="documents done", period=minute)
    titan = {"ModelId": c.embedding_model_id}
    dashboard = cw.Dashboard(stack, "IngestDashboard", default_interval=cdk.Duration.hours(3))
    dashboard.add_widgets(
        cw.GraphWidget(title="Queue depth", width=12, left=[
            queue.metric_approximate_number_of_messages_visible(period=minute, label="waiting"),
            queue.metric_approximate_number_of_messages_not_visible(period=minute, label="in progress"),
            shared.dlq.metric_approximate_number_of_messages_visible(period=minute, label="dead-lettered")]),
        cw.GraphWidget(title="Documents per minute", width=12, left=[
            done, counted("failed").with_(label="failed"), counted("dead_lettered").with_(label="dead-lettered")]),
    )
    dashboard.add_widgets(
        cw.GraphWidget(title="Ingest functions", width=12, left=[
            shared.ingest.metric("ConcurrentExecutions", statistic="Maximum", period=minute, label="running"),
            shared.ingest.metric_throttles(period=minute, label="throttled"),
            shared.ingest.metric_errors(period=minute, label="errors")]),
        cw.GraphWidget(title="Titan embeddings", width=12, left=[
            cw.Metric(namespace="AWS/Bedrock", metric_name="Invocations", dimensions_map=titan, statistic="Sum",
                      period=minute, label="calls"),
            cw.Metric(namespace="AWS/Bedrock", metric_name="InvocationThrottles", dimensions_map=titan,
                      statistic="Sum", period=minute, label="throttled")],
            right=[cw.Metric(namespace="AWS/Bedrock", metric_name="InputTokenCount", dimensions_map=titan,
                             statistic="Sum", period=minute, label="tokens")]),
    )
    dashboard.add_widgets(cw.GraphWidget(title="Statistics fold", width=24, left=[
        fold.metric_invocations(period=minute), fold.metric_errors(period=minute)]))
    return dashboard
