"""The shared data plane every runtime uses: the documents bucket (with access logs), S3 -> SQS (+ DLQ) -> the
ingest Lambda, the Pinecone API key secret, and the settings every search or ingest function reads."""

from __future__ import annotations

import json
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as events
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3n
from aws_cdk import aws_secretsmanager as sm
from aws_cdk import aws_sqs as sqs

from infra import ingest_scale
from infra.common import ack, ack_xray, function, lambda_code
from infra.config import DeployConfig

INGEST_TIMEOUT_S = 900
NOTIFICATIONS_HANDLER = "BucketNotificationsHandler050a0587b7544547bf325f094a3db834"  # aws-cdk-lib's singleton id


@dataclass
class SharedData:
    documents: s3.Bucket
    dlq: sqs.Queue
    secret: sm.ISecret
    code: lambda_.Code  # the search asset (infra.bundling): functions that search or ingest
    slim_code: lambda_.Code  # the slim asset: functions that never search (no numpy, pinecone, pdf readers)
    env: dict[str, str]  # what every search or ingest function needs (embeddings, Pinecone, bucket)
    source_id_secret: sm.Secret
    titan_arn: str
    ingest: lambda_.Function
    access_logs: s3.Bucket
    queue: sqs.Queue

    def grant_source_ids(self, fn) -> None:
        """Sign or verify source ids: read the deployment's key (and learn its name from the environment)."""
        self.source_id_secret.grant_read(fn)
        if isinstance(fn, lambda_.Function):
            fn.add_environment("CITERAG_SOURCE_ID_KEY_SECRET", self.source_id_secret.secret_name)

    def grant_search(self, stack: cdk.Stack, fn: lambda_.Function) -> None:
        """What a search function needs: the keys, Titan, and the parents/statistics under citerag/."""
        self.secret.grant_read(fn)
        self.grant_source_ids(fn)
        fn.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[self.titan_arn]))
        self.documents.grant_read(fn, "citerag/*")
        ack(fn.role.node.find_child("DefaultPolicy"), "AwsSolutions-IAM5",
            "S3 grants are scoped to this stack's bucket and prefixes (docs/*, citerag/*).",
            applies_to=[f"Resource::<{stack.get_logical_id(self.documents.node.default_child)}.Arn>/citerag/*",
                        "Action::s3:GetObject*", "Action::s3:GetBucket*", "Action::s3:List*"])
        ack_xray(fn)


def build(stack: cdk.Stack, c: DeployConfig, retention: logs.RetentionDays) -> SharedData:
    access_logs = s3.Bucket(stack, "AccessLogs", encryption=s3.BucketEncryption.S3_MANAGED,
                            block_public_access=s3.BlockPublicAccess.BLOCK_ALL, enforce_ssl=True,
                            versioned=True, object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
                            lifecycle_rules=[s3.LifecycleRule(expiration=cdk.Duration.days(365),
                                                              noncurrent_version_expiration=cdk.Duration.days(1))])
    ack(access_logs, "AwsSolutions-S1", "This is the access-log bucket; logging it to itself would loop.")
    # Versioned so an overwritten or deleted document can be restored for 30 days; after that it is gone, as a
    # user who deletes a document expects.
    docs = s3.Bucket(stack, "Documents", encryption=s3.BucketEncryption.S3_MANAGED,
                     block_public_access=s3.BlockPublicAccess.BLOCK_ALL, enforce_ssl=True, versioned=True,
                     lifecycle_rules=[s3.LifecycleRule(noncurrent_version_expiration=cdk.Duration.days(30))],
                     server_access_logs_bucket=access_logs, server_access_logs_prefix="documents/")
    dlq = sqs.Queue(stack, "IngestDLQ", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
                    retention_period=cdk.Duration.days(14))
    ack(dlq, "AwsSolutions-SQS3", "This queue is the dead-letter queue of the ingest queue.")
    # Many ingest functions run at once (infra/ingest_scale.py: the statistics have no single writer), at most the
    # event source's maximum concurrency. The visibility timeout is six times the function's, which "allows Lambda
    # to retry if your function is throttled" (docs services-sqs-configure), and a message gets 5 receives before
    # the dead-letter queue (the same page's minimum for maxReceiveCount).
    queue = sqs.Queue(stack, "IngestQueue", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
                      visibility_timeout=cdk.Duration.seconds(6 * INGEST_TIMEOUT_S),
                      dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=5))
    # Documents only: the stack's own store (parents, manifests, statistics) lives under citerag/.
    for event_type in (s3.EventType.OBJECT_CREATED, s3.EventType.OBJECT_REMOVED):
        docs.add_event_notification(event_type, s3n.SqsDestination(queue), s3.NotificationKeyFilter(prefix="docs/"))
    # CDK's own function that writes the bucket's notification configuration logs to a group Lambda would create
    # without retention: give it one like every other function's.
    notifier = stack.node.find_child(NOTIFICATIONS_HANDLER).node.find_child("Resource")
    notifier_logs = logs.LogGroup(stack, "BucketNotificationsLogs", retention=retention,
                                  removal_policy=cdk.RemovalPolicy.DESTROY)
    notifier.add_property_override("LoggingConfig", {"LogGroup": notifier_logs.log_group_name})

    if c.pinecone_secret_name:
        secret = sm.Secret.from_secret_name_v2(stack, "PineconeApiKey", c.pinecone_secret_name)
    else:
        secret = sm.Secret(stack, "PineconeApiKey", description="Pinecone API key for citerag (set the value "
                           "after deploy: aws secretsmanager put-secret-value)")
        ack(secret, "AwsSolutions-SMG4", "A Pinecone API key is rotated in the Pinecone console; AWS has no "
            "rotation function for it.")

    # Source ids are signed with a random key made at deploy time (never a known default); JSON so a rotation can
    # keep the previous key for verification (see README, Security).
    source_id_secret = sm.Secret(
        stack, "SourceIdKey", description="citerag: signs the source ids search results carry",
        generate_secret_string=sm.SecretStringGenerator(
            secret_string_template=json.dumps({"previous": ""}), generate_string_key="current",
            password_length=48, exclude_punctuation=True))
    ack(source_id_secret, "AwsSolutions-SMG4", "Rotated by publishing a new {current, previous} value (README, "
        "Security); a rotation Lambda would add nothing, as every reader accepts both keys.")

    code, slim_code = lambda_code("search"), lambda_code("slim")
    env = {
        "CITERAG_EMBEDDER": "titan", "CITERAG_INDEX_BACKEND": "pinecone",
        "CITERAG_TITAN_MODEL_ID": c.embedding_model_id, "CITERAG_TITAN_DIMENSIONS": str(c.embedding_dimensions),
        "CITERAG_PINECONE_DENSE_HOST": c.pinecone_dense_host,
        "CITERAG_PINECONE_SPARSE_HOST": c.pinecone_sparse_host,
        "CITERAG_PINECONE_SECRET_NAME": secret.secret_name, "CITERAG_DOCUMENT_BUCKET": docs.bucket_name,
        "CITERAG_DATA_DIR": "/tmp/citerag",
        "POWERTOOLS_METRICS_NAMESPACE": "citerag", "POWERTOOLS_LOG_LEVEL": "INFO",
    }
    titan_arn = f"arn:{cdk.Aws.PARTITION}:bedrock:{cdk.Aws.REGION}::foundation-model/{c.embedding_model_id}"

    ingest = function(stack, "Ingest", "citerag.handlers.ingest.handler", code=code, timeout=INGEST_TIMEOUT_S,
                      memory=2048,
                      env={**env, "CITERAG_DLQ_URL": dlq.queue_url}, retention=retention)
    secret.grant_read(ingest)
    ingest.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[titan_arn]))
    docs.grant_read(ingest, "docs/*")
    docs.grant_read_write(ingest, "citerag/*")
    docs.grant_delete(ingest, "citerag/*")
    dlq.grant_send_messages(ingest)
    # MaximumConcurrency caps the functions this queue runs at once, sized to the Titan quota (docs lambda
    # services-sqs-scaling: 2-1000; a cap keeps other functions' concurrency free and throttles nothing).
    ingest.add_event_source(events.SqsEventSource(queue, batch_size=10, report_batch_item_failures=True,
                                                  max_concurrency=ingest_scale.ingest_concurrency(c)))
    ack(ingest.role.node.find_child("DefaultPolicy"), "AwsSolutions-IAM5",
        "S3 grants are scoped to this stack's bucket and prefixes (docs/*, citerag/*).",
        applies_to=[f"Resource::<{stack.get_logical_id(docs.node.default_child)}.Arn>/citerag/*",
                    f"Resource::<{stack.get_logical_id(docs.node.default_child)}.Arn>/docs/*",
                    "Action::s3:GetObject*", "Action::s3:GetBucket*", "Action::s3:List*",
                    "Action::s3:DeleteObject*", "Action::s3:Abort*"])
    ack_xray(ingest)
    return SharedData(documents=docs, dlq=dlq, secret=secret, code=code, slim_code=slim_code, env=env,
                      source_id_secret=source_id_secret,
                      titan_arn=titan_arn, ingest=ingest, access_logs=access_logs, queue=queue)
