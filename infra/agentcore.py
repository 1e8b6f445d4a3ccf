"""Amazon Bedrock AgentCore beside the Classic agent, on the same data plane (documents bucket, ingestion, Pinecone
secret, source-id key, search code): the code-defined agent on AgentCore Runtime (direct code deployment, ARM64,
Python 3.13), the `search_documents` Gateway (MCP) with its Lambda target and, with JWT inbound auth, the REQUEST
interceptor that turns the caller's claims into access data; short-term Memory; roles scoped to what each part uses;
log groups, alarms and tracing.

aws-cdk-lib's stable L2 `aws_bedrockagentcore` (2.255+). Facts relied on (checked against aws-cdk-lib 2.275 and
cfn-lint 1.58's schemas): Runtime and Memory names allow no hyphens; the Runtime's default role has no Bedrock model
permission (added here); a Gateway without an authorizer gets a Cognito user pool (so one is always passed); Memory
EventExpiryDuration is 3..365 days in the CloudFormation schema; inline tool schemas carry only type, properties,
required, items and description.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import aws_cdk as cdk
import jsii
from aws_cdk import aws_bedrock as bedrock
from aws_cdk import aws_bedrockagentcore as ac
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_xray as xray

from citerag.citations.families import bedrock_model
from citerag.citations.tool import FUNCTION_DESCRIPTION, FUNCTION_NAME, INSTRUCTION, input_schema
from infra import guardrail as guardrail_mod
from infra.common import ASSET_EXCLUDES, ROOT, ack, ack_xray, function, nag_text
from infra.config import DeployConfig
from infra.data import SharedData
from infra.models import invoke_statements, mantle_statements

TARGET_NAME = "citerag-search"
GATEWAY_NAME = "citerag-gateway"


@jsii.implements(cdk.ILocalBundling)
class RuntimeLocalBundling:
    """Builds the runtime's code asset with pip on this machine (aarch64 wheels), no Docker needed."""

    def try_bundle(self, output_dir: str, *args, **kwargs) -> bool:
        from infra import bundling

        bundling.build_agentcore(Path(output_dir))
        return True


@dataclass
class AgentCore:
    runtime: ac.Runtime
    gateway: ac.Gateway
    memory: ac.Memory
    functions: dict[str, lambda_.Function]


def tool_schema() -> ac.ToolSchema:
    """The Gateway target's inline schema, from the one tool definition (citerag.citations.tool)."""
    schema = input_schema()
    props = {name: ac.SchemaDefinition(type=ac.SchemaDefinitionType.of(p["type"]), description=p["description"])
             for name, p in schema["properties"].items()}
    return ac.ToolSchema.from_inline([ac.ToolDefinition(
        name=FUNCTION_NAME, description=FUNCTION_DESCRIPTION,
        input_schema=ac.SchemaDefinition(type=ac.SchemaDefinitionType.OBJECT, properties=props,
                                         required=schema["required"]))])


def build(stack: cdk.Stack, c: DeployConfig, data: SharedData, retention: logs.RetentionDays,
          guardrail: bedrock.CfnGuardrail, guardrail_version: bedrock.CfnGuardrailVersion) -> AgentCore:
    jwt = c.agentcore_jwt_discovery_url
    memory = ac.Memory(stack, "AgentMemory", memory_name="citerag_memory",
                       expiration_duration=cdk.Duration.days(c.agentcore_memory_days),
                       description="citerag: short-term session history of the AgentCore agent")

    # --- the Runtime ------------------------------------------------------------------------------------------
    app_logs = logs.LogGroup(stack, "AgentRuntimeLogs", retention=retention, removal_policy=cdk.RemovalPolicy.DESTROY)
    env = {
        **data.env,
        "CITERAG_CHAT_MODEL_ID": c.agentcore_model_id, "CITERAG_AGENTCORE_MODEL": "bedrock",
        "CITERAG_GUARDRAIL_ID": guardrail.attr_guardrail_id,
        "CITERAG_GUARDRAIL_VERSION": guardrail_version.attr_version,
        "CITERAG_AGENTCORE_MEMORY_ID": memory.memory_id, "CITERAG_AGENTCORE_ACCESS": "jwt" if jwt else "payload",
        "CITERAG_AGENTCORE_TENANT_CLAIM": c.agentcore_tenant_claim,
        "CITERAG_AGENTCORE_GROUPS_CLAIM": c.agentcore_groups_claim,
        "CITERAG_AGENTCORE_CITATIONS": c.agentcore_citations,
        "CITERAG_RESPONSE_BUDGET_BYTES": str(c.response_budget_bytes),
        "CITERAG_ACL_REQUIRED": str(c.acl_required).lower(),
        "CITERAG_SOURCE_ID_KEY_SECRET": data.source_id_secret.secret_name,
    }
    runtime = ac.Runtime(
        stack, "AgentRuntime", runtime_name="citerag_agent",
        description="citerag: answers from your documents with verified citations",
        agent_runtime_artifact=ac.AgentRuntimeArtifact.from_code_asset(
            path=str(ROOT), exclude=ASSET_EXCLUDES, runtime=ac.AgentCoreRuntime.PYTHON_3_13,
            asset_hash_type=cdk.AssetHashType.OUTPUT,
            entrypoint=["opentelemetry-instrument", "main.py"],
            bundling=cdk.BundlingOptions(image=lambda_.Runtime.PYTHON_3_13.bundling_image, local=RuntimeLocalBundling(),
                                         command=["bash", "-c", "python -m infra.bundling agentcore /asset-output"])),
        authorizer_configuration=(ac.RuntimeAuthorizerConfiguration.using_jwt(
            jwt, allowed_audience=c.agentcore_jwt_audience or None, allowed_clients=c.agentcore_jwt_clients or None)
            if jwt else ac.RuntimeAuthorizerConfiguration.using_iam()),
        # The agent reads the caller's claims from Authorization: forwarded only with a JWT authorizer.
        request_header_configuration=ac.RequestHeaderConfiguration(allowlisted_headers=["Authorization"])
        if jwt else None,
        lifecycle_configuration=ac.LifecycleConfiguration(idle_runtime_session_timeout=cdk.Duration.minutes(15),
                                                          max_lifetime=cdk.Duration.hours(8)),
        environment_variables=env, tracing_enabled=True,
        logging_configs=[ac.LoggingConfig(destination=ac.LoggingDestination.cloud_watch_logs(app_logs),
                                          log_type=ac.LogType.APPLICATION_LOGS)])
    # The default endpoint's stdout goes to a log group the service creates on the first invocation, with no
    # retention (aws-cdk-lib Runtime.applicationLogGroup); LogRetention sets it whether or not it exists yet.
    logs.LogRetention(stack, "AgentRuntimeStdoutRetention", retention=retention,
                      log_group_name=f"/aws/bedrock-agentcore/runtimes/{runtime.agent_runtime_id}-DEFAULT")
    row = bedrock_model(c.agentcore_model_id)
    on_messages_api = row is not None and row.api == "messages"
    for statement in (mantle_statements() if on_messages_api
                      else invoke_statements(c.agentcore_model_id, c.agentcore_model_regions)):
        runtime.add_to_role_policy(statement)
    if on_messages_api:  # written with pseudo-parameters (infra.models), so cdk-nag shows them so
        ack(runtime.role.node.try_find_child("DefaultPolicy"), "AwsSolutions-IAM5",
            "Inference on Bedrock's Messages-API endpoint is authorized on the project it runs in (the default "
            "project unless a request names another), not on a model: this account's projects in this region, as "
            "AWS's managed policy AmazonBedrockMantleInferenceAccess grants it (on every region's).",
            applies_to="Resource::arn:<AWS::Partition>:bedrock-mantle:<AWS::Region>:<AWS::AccountId>:project/*")
    runtime.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:ApplyGuardrail"], resources=[
        guardrail.attr_guardrail_arn, *guardrail_mod.profile_arns(c)]))
    runtime.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[data.titan_arn]))
    data.secret.grant_read(runtime.role)
    data.source_id_secret.grant_read(runtime.role)
    data.documents.grant_read(runtime.role, "citerag/*")
    memory.grant_read_short_term_memory(runtime.role)
    memory.grant_write(runtime.role)

    # --- the Gateway: search_documents over MCP ----------------------------------------------------------------
    target_fn = function(stack, "GatewaySearch", "citerag.handlers.gateway.handler", code=data.code, timeout=30,
                         memory=1024, retention=retention,
                         env={**data.env, "CITERAG_RESPONSE_BUDGET_BYTES": str(c.response_budget_bytes),
                              "CITERAG_ACL_REQUIRED": str(c.acl_required).lower(),
                              "CITERAG_GATEWAY_ACCESS": "interceptor" if jwt else "none"})
    data.grant_search(stack, target_fn)
    functions = {"gateway": target_fn}
    interceptors = []
    if jwt:
        interceptor_fn = function(stack, "GatewayInterceptor", "citerag.handlers.gateway_interceptor.handler",
                                  code=data.slim_code, timeout=10, memory=256, retention=retention,
                                  env={"CITERAG_AGENTCORE_TENANT_CLAIM": c.agentcore_tenant_claim,
                                       "CITERAG_AGENTCORE_GROUPS_CLAIM": c.agentcore_groups_claim,
                                       "POWERTOOLS_LOG_LEVEL": "INFO"})
        ack_xray(interceptor_fn)
        functions["interceptor"] = interceptor_fn
        interceptors.append(ac.LambdaInterceptor.for_request(interceptor_fn, pass_request_headers=True))
    # The construct's own role trusts bedrock-agentcore.amazonaws.com once without conditions beside the
    # conditioned statement, which voids the confused-deputy conditions: this role has only the latter.
    gateway_role = iam.Role(stack, "GatewayRole", description="citerag: the AgentCore Gateway's role",
                            assumed_by=iam.ServicePrincipal("bedrock-agentcore.amazonaws.com", conditions={
                                "StringEquals": {"aws:SourceAccount": cdk.Aws.ACCOUNT_ID},
                                "ArnLike": {"aws:SourceArn": f"arn:{cdk.Aws.PARTITION}:bedrock-agentcore:"
                                                             f"{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}:gateway/"
                                                             f"{GATEWAY_NAME}*"}}))
    gateway = ac.Gateway(
        stack, "Gateway", gateway_name=GATEWAY_NAME, description="citerag: search_documents for MCP clients",
        role=gateway_role,
        authorizer_configuration=(ac.GatewayAuthorizer.using_custom_jwt(
            discovery_url=jwt, allowed_audience=c.agentcore_jwt_audience or None,
            allowed_clients=c.agentcore_jwt_clients or None) if jwt else ac.GatewayAuthorizer.using_aws_iam()),
        interceptor_configurations=interceptors or None,
        protocol_configuration=ac.McpProtocolConfiguration(instructions=INSTRUCTION))
    gateway.add_lambda_target("SearchTarget", gateway_target_name=TARGET_NAME, lambda_function=target_fn,
                              tool_schema=tool_schema(), description="The search_documents tool")

    # --- observability --------------------------------------------------------------------------------------
    if c.agentcore_transaction_search:
        # Account-wide (spans to the aws/spans log group): only on request, as an existing setup must not be
        # clobbered (same caution as model-invocation logging).
        policy = logs.CfnResourcePolicy(stack, "TransactionSearchLogsPolicy", policy_name="citerag-transaction-search",
                                        policy_document=cdk.Stack.of(stack).to_json_string({
                                            "Version": "2012-10-17", "Statement": [{
                                                "Sid": "TransactionSearchXRayAccess", "Effect": "Allow",
                                                "Principal": {"Service": "xray.amazonaws.com"},
                                                "Action": "logs:PutLogEvents",
                                                "Resource": [
                                                    f"arn:{cdk.Aws.PARTITION}:logs:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}"
                                                    ":log-group:aws/spans:*",
                                                    f"arn:{cdk.Aws.PARTITION}:logs:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}"
                                                    ":log-group:/aws/application-signals/data:*"],
                                                "Condition": {"ArnLike": {"aws:SourceArn": f"arn:{cdk.Aws.PARTITION}:"
                                                              f"xray:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}:*"},
                                                              "StringEquals": {"aws:SourceAccount":
                                                                               cdk.Aws.ACCOUNT_ID}}}]}))
        search_config = xray.CfnTransactionSearchConfig(stack, "TransactionSearch", indexing_percentage=100)
        search_config.add_resource_dependency(policy)
    _acknowledge(stack, runtime, gateway, data)
    return AgentCore(runtime=runtime, gateway=gateway, memory=memory, functions=functions)


def _acknowledge(stack: cdk.Stack, runtime: ac.Runtime, gateway: ac.Gateway, data: SharedData) -> None:
    """cdk-nag findings on the roles the AgentCore L2 constructs write themselves, each with its reason. The
    constructs write the stack's own region and account: literal when synthesis knows them (the CDK CLI always sets
    the region), pseudo-parameters otherwise, so the exemptions are written the same way."""
    region, account_id, partition = (nag_text(stack, v) for v in (stack.region, stack.account, stack.partition))
    account = f"arn:{partition}:{{}}:{region}:{account_id}"
    ack(runtime.role.node.try_find_child("DefaultPolicy"), "AwsSolutions-IAM5",
        "The AgentCore Runtime construct's grants: writing its own log groups and streams under "
        "/aws/bedrock-agentcore/runtimes/ (and DescribeLogGroups, which has no resource scope), workload-identity "
        "tokens of this account's default directory, reading its code asset from the CDK assets bucket; X-Ray and "
        "CloudWatch metrics have no resource-level permissions; S3 reads are this stack's bucket prefix citerag/*.",
        applies_to=["Resource::*",
                    f"Resource::{account.format('logs')}:log-group:*",
                    f"Resource::{account.format('logs')}:log-group:/aws/bedrock-agentcore/runtimes/*",
                    f"Resource::{account.format('logs')}:log-group:/aws/bedrock-agentcore/runtimes/*:log-stream:*",
                    f"Resource::{account.format('bedrock-agentcore')}:workload-identity-directory/default/"
                    "workload-identity/*",
                    f"Resource::arn:{partition}:s3:::cdk-hnb659fds-assets-{account_id}-{region}/*",
                    "Action::s3:GetObject*", "Action::s3:GetBucket*", "Action::s3:List*",
                    f"Resource::<{stack.get_logical_id(data.documents.node.default_child)}.Arn>/citerag/*"])
    functions = [c for c in stack.node.children if c.node.id in ("GatewaySearch", "GatewayInterceptor")]
    ack(gateway.role.node.try_find_child("DefaultPolicy"), "AwsSolutions-IAM5",
        "lambda:InvokeFunction on the Gateway's target and interceptor functions and their versions (CDK's grants).",
        applies_to=[f"Resource::<{stack.get_logical_id(f.node.default_child)}.Arn>:*" for f in functions])
