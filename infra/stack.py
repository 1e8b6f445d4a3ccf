"""The citerag stack: documents bucket -> SQS -> ingest Lambda; search and parser Lambdas; the Bedrock Agent with
its action group, four overridden prompts, guardrail and alias; secret, logs, model-invocation logging, alarms."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import aws_cdk as cdk
import jsii
from aws_cdk import aws_bedrock as bedrock
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as events
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3n
from aws_cdk import aws_secretsmanager as sm
from aws_cdk import aws_sqs as sqs
from aws_cdk import custom_resources as cr
from constructs import Construct

from infra.config import DeployConfig

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lambdas"))
from citerag.agent.runtime import DEFAULT_INSTRUCTION  # noqa: E402
from citerag.agent.tool_spec import FUNCTION_DESCRIPTION, FUNCTION_NAME, PARAMETERS  # noqa: E402

RUNTIME = lambda_.Runtime.PYTHON_3_13
ACTION_GROUP = "citerag-search"
ASSET_EXCLUDES = [".git", ".venv", "**/__pycache__", "cdk.out", "tests", "node_modules", ".ci", "*.sqlite*",
                  ".pytest_cache", ".ruff_cache", ".hypothesis"]


@jsii.implements(cdk.ILocalBundling)
class PipLocalBundling:
    """Builds the Lambda asset with pip on this machine (Linux x86_64 wheels), no Docker needed."""

    def try_bundle(self, output_dir: str, *args, **kwargs) -> bool:
        from infra import bundling

        bundling.build(Path(output_dir), python_version=RUNTIME.name.removeprefix("python"))
        return True


def function_schema() -> bedrock.CfnAgent.FunctionSchemaProperty:
    """The action group's schema, generated from the handler's own definition (citerag.agent.tool_spec)."""
    return bedrock.CfnAgent.FunctionSchemaProperty(functions=[bedrock.CfnAgent.FunctionProperty(
        name=FUNCTION_NAME, description=FUNCTION_DESCRIPTION,
        parameters={name: bedrock.CfnAgent.ParameterDetailProperty(
            type=p["type"], description=p["description"], required=bool(p.get("required")))
            for name, p in PARAMETERS.items()},
    )])


class CiteragStack(cdk.Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig, **kwargs) -> None:
        super().__init__(scope, construct_id, **kwargs)
        c = config
        retention = _retention(c.log_retention_days)

        # --- storage and ingestion queue ---------------------------------------------------------------------
        access_logs = s3.Bucket(self, "AccessLogs", encryption=s3.BucketEncryption.S3_MANAGED,
                                block_public_access=s3.BlockPublicAccess.BLOCK_ALL, enforce_ssl=True,
                                versioned=True, object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
                                lifecycle_rules=[s3.LifecycleRule(expiration=cdk.Duration.days(365))])
        _ack(access_logs, "AwsSolutions-S1", "This is the access-log bucket; logging it to itself would loop.")
        docs = s3.Bucket(self, "Documents", encryption=s3.BucketEncryption.S3_MANAGED,
                         block_public_access=s3.BlockPublicAccess.BLOCK_ALL, enforce_ssl=True, versioned=True,
                         server_access_logs_bucket=access_logs, server_access_logs_prefix="documents/")
        self.documents = docs
        dlq = sqs.Queue(self, "IngestDLQ", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
                        retention_period=cdk.Duration.days(14))
        _ack(dlq, "AwsSolutions-SQS3", "This queue is the dead-letter queue of the ingest queue.")
        queue = sqs.Queue(self, "IngestQueue", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
                          visibility_timeout=cdk.Duration.minutes(16),
                          dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3))
        # Documents only: the stack's own store (parents, manifests, statistics) lives under citerag/.
        for event_type in (s3.EventType.OBJECT_CREATED, s3.EventType.OBJECT_REMOVED):
            docs.add_event_notification(event_type, s3n.SqsDestination(queue), s3.NotificationKeyFilter(prefix="docs/"))

        if c.pinecone_secret_name:
            secret = sm.Secret.from_secret_name_v2(self, "PineconeApiKey", c.pinecone_secret_name)
        else:
            secret = sm.Secret(self, "PineconeApiKey", description="Pinecone API key for citerag (set the value "
                               "after deploy: aws secretsmanager put-secret-value)")
            _ack(secret, "AwsSolutions-SMG4", "A Pinecone API key is rotated in the Pinecone console; AWS has no "
                 "rotation function for it.")

        # --- Lambda functions ---------------------------------------------------------------------------------
        code = lambda_.Code.from_asset(str(ROOT), exclude=ASSET_EXCLUDES, bundling=cdk.BundlingOptions(
            image=RUNTIME.bundling_image, local=PipLocalBundling(),
            command=["bash", "-c", "pip install --no-cache-dir . -t /asset-output"]))
        source_id_key = cdk.Names.unique_id(self) + "-source-ids"
        common_env = {
            "CITERAG_EMBEDDER": "titan", "CITERAG_INDEX_BACKEND": "pinecone",
            "CITERAG_TITAN_MODEL_ID": c.embedding_model_id, "CITERAG_TITAN_DIMENSIONS": str(c.embedding_dimensions),
            "CITERAG_PINECONE_DENSE_HOST": c.pinecone_dense_host,
            "CITERAG_PINECONE_SPARSE_HOST": c.pinecone_sparse_host,
            "CITERAG_PINECONE_SECRET_NAME": secret.secret_name, "CITERAG_DOCUMENT_BUCKET": docs.bucket_name,
            "CITERAG_DATA_DIR": "/tmp/citerag", "CITERAG_SOURCE_ID_KEY": source_id_key,
            "POWERTOOLS_METRICS_NAMESPACE": "citerag", "POWERTOOLS_LOG_LEVEL": "INFO",
        }

        def function(name: str, handler: str, *, timeout: int, memory: int, env: dict[str, str]) -> lambda_.Function:
            group = logs.LogGroup(self, f"{name}Logs", retention=retention,
                                  removal_policy=cdk.RemovalPolicy.DESTROY)
            fn = lambda_.Function(self, name, runtime=RUNTIME, architecture=lambda_.Architecture.X86_64, code=code,
                                  handler=handler, timeout=cdk.Duration.seconds(timeout), memory_size=memory,
                                  environment={**env, "POWERTOOLS_SERVICE_NAME": f"citerag-{name.lower()}"},
                                  tracing=lambda_.Tracing.ACTIVE, log_group=group)
            _ack(fn, "AwsSolutions-L1", f"{RUNTIME.name}: the newest Lambda Python for which every dependency "
                 "(numpy, pydantic-core, cryptography) ships Linux wheels.")
            _ack(fn.role, "AwsSolutions-IAM4", "AWSLambdaBasicExecutionRole only allows writing this function's "
                 "CloudWatch Logs.", applies_to="Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                 "AWSLambdaBasicExecutionRole")
            return fn

        titan_arn = f"arn:{cdk.Aws.PARTITION}:bedrock:{cdk.Aws.REGION}::foundation-model/{c.embedding_model_id}"
        search = function("Search", "citerag.handlers.search.handler", timeout=30, memory=1024, env={
            **common_env, "CITERAG_RESPONSE_BUDGET_BYTES": str(c.response_budget_bytes),
            "CITERAG_ACL_REQUIRED": str(c.acl_required).lower(),
            **({"CITERAG_RERANK_MODEL_ARN": c.rerank_model_arn} if c.rerank_model_arn else {})})
        ingest = function("Ingest", "citerag.handlers.ingest.handler", timeout=900, memory=2048, env={
            **common_env, "CITERAG_DLQ_URL": dlq.queue_url})
        parser = function("Parser", "citerag.handlers.parser.handler", timeout=30, memory=512, env={
            "CITERAG_SOURCE_ID_KEY": source_id_key, "CITERAG_ACTION_GROUP": ACTION_GROUP})
        self.functions = {"search": search, "ingest": ingest, "parser": parser}

        for fn in (search, ingest):
            secret.grant_read(fn)
            fn.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[titan_arn]))
        if c.rerank_model_arn:
            search.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:Rerank"], resources=["*"]))
            search.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"],
                                                          resources=[c.rerank_model_arn]))
        docs.grant_read(search, "citerag/*")
        docs.grant_read(ingest, "docs/*")
        docs.grant_read_write(ingest, "citerag/*")
        docs.grant_delete(ingest, "citerag/*")
        dlq.grant_send_messages(ingest)
        ingest.add_event_source(events.SqsEventSource(queue, batch_size=10, report_batch_item_failures=True,
                                                      max_concurrency=2))
        # One writer of the BM25 statistics (see citerag.search.s3_store).
        cfn_ingest = ingest.node.default_child
        cfn_ingest.add_property_override("ReservedConcurrentExecutions", 1)
        for fn in (search, ingest):
            _ack(fn.role.node.find_child("DefaultPolicy"), "AwsSolutions-IAM5",
                 "S3 grants are scoped to this stack's bucket and prefixes (docs/*, citerag/*).",
                 applies_to=[f"Resource::<{self.get_logical_id(docs.node.default_child)}.Arn>/citerag/*",
                             f"Resource::<{self.get_logical_id(docs.node.default_child)}.Arn>/docs/*",
                             "Action::s3:GetObject*", "Action::s3:GetBucket*", "Action::s3:List*",
                             "Action::s3:DeleteObject*", "Action::s3:Abort*"])
            _ack(fn.role.node.find_child("DefaultPolicy"), "AwsSolutions-IAM5",
                 "X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permissions.",
                 applies_to="Resource::*")
        _ack(parser.role.node.find_child("DefaultPolicy"), "AwsSolutions-IAM5",
             "X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permissions.",
             applies_to="Resource::*")

        # --- guardrail ---------------------------------------------------------------------------------------
        guardrail = bedrock.CfnGuardrail(
            self, "Guardrail", name=f"{construct_id}-guardrail",
            blocked_input_messaging="Sorry, I cannot help with that request.",
            blocked_outputs_messaging="Sorry, I cannot share that answer.",
            content_policy_config=bedrock.CfnGuardrail.ContentPolicyConfigProperty(filters_config=[
                bedrock.CfnGuardrail.ContentFilterConfigProperty(type="PROMPT_ATTACK", input_strength="HIGH",
                                                                 output_strength="NONE"),
                *[bedrock.CfnGuardrail.ContentFilterConfigProperty(type=t, input_strength="HIGH",
                                                                    output_strength="HIGH")
                  for t in ("HATE", "VIOLENCE", "SEXUAL", "INSULTS", "MISCONDUCT")]]),
            sensitive_information_policy_config=bedrock.CfnGuardrail.SensitiveInformationPolicyConfigProperty(
                pii_entities_config=[bedrock.CfnGuardrail.PiiEntityConfigProperty(type=t, action="ANONYMIZE")
                                     for t in ("EMAIL", "PHONE", "CREDIT_DEBIT_CARD_NUMBER", "NAME", "ADDRESS")]),
            topic_policy_config=bedrock.CfnGuardrail.TopicPolicyConfigProperty(topics_config=[
                bedrock.CfnGuardrail.TopicConfigProperty(name=_topic_name(t), definition=f"Requests for {t.lower()}.",
                                                         type="DENY") for t in c.denied_topics])
            if c.denied_topics else None,
        )
        guardrail_version = bedrock.CfnGuardrailVersion(self, "GuardrailVersion",
                                                        guardrail_identifier=guardrail.attr_guardrail_id)

        # --- the agent ---------------------------------------------------------------------------------------
        model_arns = [f"arn:{cdk.Aws.PARTITION}:bedrock:{cdk.Aws.REGION}::foundation-model/{c.agent_model_id}",
                      *c.agent_model_arns]
        agent_role = iam.Role(self, "AgentRole", assumed_by=iam.ServicePrincipal(
            "bedrock.amazonaws.com", conditions={
                "StringEquals": {"aws:SourceAccount": cdk.Aws.ACCOUNT_ID},
                "ArnLike": {"aws:SourceArn": f"arn:{cdk.Aws.PARTITION}:bedrock:{cdk.Aws.REGION}:"
                                             f"{cdk.Aws.ACCOUNT_ID}:agent/*"}}))
        agent_role.add_to_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel",
                                                              "bedrock:InvokeModelWithResponseStream"],
                                                     resources=model_arns))
        agent_role.add_to_policy(iam.PolicyStatement(actions=["bedrock:ApplyGuardrail", "bedrock:GetGuardrail"],
                                                     resources=[guardrail.attr_guardrail_arn]))
        prompts = _prompts()
        agent = bedrock.CfnAgent(
            self, "Agent", agent_name=f"{construct_id}-agent", agent_resource_role_arn=agent_role.role_arn,
            foundation_model=c.agent_model_id, instruction=DEFAULT_INSTRUCTION, idle_session_ttl_in_seconds=900,
            auto_prepare=True, description="Answers from your documents with verifiable citations",
            action_groups=[bedrock.CfnAgent.AgentActionGroupProperty(
                action_group_name=ACTION_GROUP, description="Search the documents",
                action_group_executor=bedrock.CfnAgent.ActionGroupExecutorProperty(lambda_=search.function_arn),
                function_schema=function_schema())],
            prompt_override_configuration=bedrock.CfnAgent.PromptOverrideConfigurationProperty(
                override_lambda=parser.function_arn,
                prompt_configurations=[bedrock.CfnAgent.PromptConfigurationProperty(
                    prompt_type=ptype, prompt_creation_mode="OVERRIDDEN", parser_mode="OVERRIDDEN",
                    prompt_state="ENABLED", base_prompt_template=p["template"],
                    inference_configuration=bedrock.CfnAgent.InferenceConfigurationProperty(
                        temperature=p["temperature"], top_p=1, top_k=250, maximum_length=p["maximumLength"],
                        stop_sequences=p["stopSequences"]))
                    for ptype, p in prompts.items()]),
            guardrail_configuration=bedrock.CfnAgent.GuardrailConfigurationProperty(
                guardrail_identifier=guardrail.attr_guardrail_id, guardrail_version=guardrail_version.attr_version),
        )
        alias = bedrock.CfnAgentAlias(self, "AgentAlias", agent_id=agent.attr_agent_id, agent_alias_name="live")
        # The agent invokes both functions; neither L2 library grants this, and the parser needs it too.
        for fn, sid in ((search, "AllowAgentInvokeSearch"), (parser, "AllowAgentInvokeParser")):
            fn.add_permission(sid, principal=iam.ServicePrincipal("bedrock.amazonaws.com"),
                              action="lambda:InvokeFunction", source_arn=agent.attr_agent_arn,
                              source_account=cdk.Aws.ACCOUNT_ID)

        # --- model invocation logging (account-level setting, applied by an SDK call) -----------------------
        invocation_logs = logs.LogGroup(self, "ModelInvocationLogs", retention=retention,
                                        removal_policy=cdk.RemovalPolicy.DESTROY)
        logging_role = iam.Role(self, "ModelInvocationLoggingRole", assumed_by=iam.ServicePrincipal(
            "bedrock.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": cdk.Aws.ACCOUNT_ID}}))
        invocation_logs.grant_write(logging_role)
        logging_config = {"loggingConfig": {
            "cloudWatchConfig": {"logGroupName": invocation_logs.log_group_name, "roleArn": logging_role.role_arn},
            "textDataDeliveryEnabled": True, "imageDataDeliveryEnabled": False, "embeddingDataDeliveryEnabled": False}}
        invocation_logging = cr.AwsCustomResource(
            self, "ModelInvocationLogging",
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
            log_group=logs.LogGroup(self, "ModelInvocationLoggingSetupLogs", retention=retention,
                                    removal_policy=cdk.RemovalPolicy.DESTROY))
        _ack(invocation_logging, "AwsSolutions-IAM5", "Model invocation logging is an account-level setting with "
             "no resource ARN.", applies_to="Resource::*")

        # --- alarms ------------------------------------------------------------------------------------------
        cw.Alarm(self, "DLQDepth", metric=dlq.metric_approximate_number_of_messages_visible(
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

        # Singleton functions CDK adds itself (bucket notifications, SDK-call custom resource).
        for child in self.node.children:
            if child.node.id.startswith(("BucketNotificationsHandler", "AWS679f53fac002430cb0da5b7982bd2287")):
                _ack(child, "AwsSolutions-IAM4", "CDK's own singleton Lambda for bucket notifications / SDK calls; "
                     "the managed policy only grants writing its CloudWatch Logs.",
                     applies_to="Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole")

        for key, value in (("AgentId", agent.attr_agent_id), ("AgentAliasId", alias.attr_agent_alias_id),
                           ("DocumentsBucket", docs.bucket_name), ("PineconeSecretName", secret.secret_name),
                           ("ModelInvocationLogGroup", invocation_logs.log_group_name),
                           ("IngestDLQUrl", dlq.queue_url)):
            cdk.CfnOutput(self, key, value=value)


def _prompts() -> dict[str, dict]:
    root = ROOT / "prompts"
    config = json.loads((root / "config.json").read_text(encoding="utf-8"))
    return {ptype: {**cfg, "template": (root / cfg["file"]).read_text(encoding="utf-8")}
            for ptype, cfg in config.items()}


def _topic_name(text: str) -> str:
    import re

    return re.sub(r"[^0-9A-Za-z-_ !?.]", "", text)[:100] or "denied-topic"


def _retention(days: int) -> logs.RetentionDays:
    """The CloudWatch Logs retention closest to `days`."""
    r = logs.RetentionDays
    table = {1: r.ONE_DAY, 3: r.THREE_DAYS, 5: r.FIVE_DAYS, 7: r.ONE_WEEK, 14: r.TWO_WEEKS, 30: r.ONE_MONTH,
             60: r.TWO_MONTHS, 90: r.THREE_MONTHS, 120: r.FOUR_MONTHS, 150: r.FIVE_MONTHS, 180: r.SIX_MONTHS,
             365: r.ONE_YEAR, 731: r.TWO_YEARS, 1827: r.FIVE_YEARS, 3653: r.TEN_YEARS}
    return table[min(table, key=lambda d: (abs(d - days), d))]


def _ack(construct, rule: str, reason: str, applies_to: str | list[str] | None = None) -> None:
    """Acknowledge a cdk-nag finding on one construct, with a reason (cdk-nag 3: Validations.of().acknowledge)."""
    if construct is None:
        return
    ids = [rule] if applies_to is None else [f"{rule}[{a}]" for a in ([applies_to] if isinstance(applies_to, str)
                                                                      else applies_to)]
    cdk.Validations.of(construct).acknowledge(*[cdk.Acknowledgment(id=i, reason=reason) for i in ids])
