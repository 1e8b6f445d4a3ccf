"""The AgentCore resources synthesize beside the Classic agent on the shared data plane, or alone; picked with the
`runtimes` context; checked resource by resource, by cfn-lint (>= 1.58, AWS::BedrockAgentCore::* schemas) and
cdk-nag."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
if shutil.which("node") is None:  # aws-cdk-lib runs the CDK's JavaScript through jsii: Node.js must be installed
    pytest.skip("needs Node.js (apt-get install nodejs)", allow_module_level=True)
pytest.importorskip("aws_cdk")

from citerag.citations.tool import FUNCTION_NAME, input_schema

DISCOVERY = "https://cognito-idp.ap-northeast-1.amazonaws.com/ap-northeast-1_AbCdEfGhI/.well-known/openid-configuration"


def _synth(tmp_path_factory, name: str, context: dict):
    from infra.app import build_app

    out = tmp_path_factory.mktemp(name)
    build_app({"aws:cdk:bundling-stacks": [], **context}, outdir=str(out)).synth()  # raises on cdk-nag findings
    return out, json.loads((out / "Citerag.template.json").read_text())


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return _synth(tmp_path_factory, "both", {"runtimes": "classic,agentcore"})


@pytest.fixture(scope="module")
def jwt_only(tmp_path_factory):
    return _synth(tmp_path_factory, "jwt", {"runtimes": "agentcore", "agentcoreJwtDiscoveryUrl": DISCOVERY,
                                            "agentcoreJwtAudience": "citerag", "agentcoreTransactionSearch": "true",
                                            "agentcoreMemoryDays": "90"})


def of_type(t, kind):
    return {k: v for k, v in t["Resources"].items() if v["Type"] == kind}


def one(t, kind):
    (res,) = of_type(t, kind).values()
    return res["Properties"]


def statements_of_role(t, role_pred):
    role_ids = [k for k, v in of_type(t, "AWS::IAM::Role").items() if role_pred(k, v)]
    return [s for p in of_type(t, "AWS::IAM::Policy").values()
            if any({"Ref": r} in p["Properties"]["Roles"] for r in role_ids)
            for s in p["Properties"]["PolicyDocument"]["Statement"]]


def actions(statements):
    return {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}


def test_both_runtimes_share_one_data_plane_and_one_guardrail(both):
    _, t = both
    assert len(of_type(t, "AWS::Bedrock::Agent")) == 1 and len(of_type(t, "AWS::BedrockAgentCore::Runtime")) == 1
    assert len(of_type(t, "AWS::Bedrock::Guardrail")) == 1 and len(of_type(t, "AWS::SecretsManager::Secret")) == 2
    # One documents bucket (plus the invocation-log bodies bucket): the runtimes share the data plane.
    logged = [k for k, b in of_type(t, "AWS::S3::Bucket").items() if "LoggingConfiguration" in b["Properties"]]
    assert sorted(k.rstrip("0123456789ABCDEF") for k in logged) == ["Documents", "ModelInvocationBodies"]
    handlers = {v["Properties"].get("Handler") for v in of_type(t, "AWS::Lambda::Function").values()}
    assert {"citerag.handlers.search.handler", "citerag.handlers.parser.handler", "citerag.handlers.ingest.handler",
            "citerag.handlers.gateway.handler"} <= handlers
    assert {"AgentId", "AgentRuntimeArn", "GatewayUrl", "MemoryId", "DocumentsBucket"} <= set(t["Outputs"])


def test_agentcore_alone_has_no_classic_agent(jwt_only):
    _, t = jwt_only
    assert not of_type(t, "AWS::Bedrock::Agent") and not of_type(t, "AWS::Bedrock::AgentAlias")
    assert "AgentId" not in t["Outputs"] and "AgentRuntimeArn" in t["Outputs"]


def test_runtime_is_python_3_13_code_with_the_agent_settings(both):
    _, t = both
    rt = one(t, "AWS::BedrockAgentCore::Runtime")
    code = rt["AgentRuntimeArtifact"]["CodeConfiguration"]
    assert code["Runtime"] == "PYTHON_3_13" and code["EntryPoint"] == ["opentelemetry-instrument", "main.py"]
    assert rt["AgentRuntimeName"] == "citerag_agent" and "AuthorizerConfiguration" not in rt  # IAM by default
    env = rt["EnvironmentVariables"]
    assert env["CITERAG_AGENTCORE_MODEL"] == "bedrock" and env["CITERAG_AGENTCORE_ACCESS"] == "payload"
    assert env["CITERAG_EMBEDDER"] == "titan" and env["CITERAG_INDEX_BACKEND"] == "pinecone"
    memory_id = next(iter(of_type(t, "AWS::BedrockAgentCore::Memory")))
    assert env["CITERAG_AGENTCORE_MEMORY_ID"] == {"Fn::GetAtt": [memory_id, "MemoryId"]}
    guardrail = next(iter(of_type(t, "AWS::Bedrock::Guardrail")))
    assert env["CITERAG_GUARDRAIL_ID"] == {"Fn::GetAtt": [guardrail, "GuardrailId"]}
    assert rt["LifecycleConfiguration"] == {"IdleRuntimeSessionTimeout": 900, "MaxLifetime": 28800}


def test_runtime_role_may_call_exactly_its_model_guardrail_memory_and_data(both):
    _, t = both
    rt = one(t, "AWS::BedrockAgentCore::Runtime")
    role = rt["RoleArn"]["Fn::GetAtt"][0]
    stmts = statements_of_role(t, lambda k, v: k == role)
    invoke = [s for s in stmts if s["Action"] == ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]]
    text = json.dumps([s["Resource"] for s in invoke])
    assert "inference-profile/jp.anthropic.claude-sonnet-4-6" in text
    assert "bedrock:ap-northeast-1::foundation-model/anthropic.claude-sonnet-4-6" in text
    assert "bedrock:ap-northeast-3::foundation-model/anthropic.claude-sonnet-4-6" in text
    acts = actions(stmts)
    assert {"bedrock:GetInferenceProfile", "bedrock:ApplyGuardrail", "bedrock-agentcore:CreateEvent",
            "bedrock-agentcore:ListEvents", "secretsmanager:GetSecretValue"} <= acts
    assert not any(a.endswith(":*") or a == "*" for a in acts)


def test_gateway_uses_iam_and_the_one_tool_definition(both):
    _, t = both
    gw = one(t, "AWS::BedrockAgentCore::Gateway")
    assert gw["AuthorizerType"] == "AWS_IAM" and gw["ProtocolType"] == "MCP" and "InterceptorConfigurations" not in gw
    assert not of_type(t, "AWS::Cognito::UserPool")  # the L2's default authorizer would add one
    target = one(t, "AWS::BedrockAgentCore::GatewayTarget")
    (tool,) = target["TargetConfiguration"]["Mcp"]["Lambda"]["ToolSchema"]["InlinePayload"]
    schema = input_schema()
    assert tool["Name"] == FUNCTION_NAME and tool["InputSchema"]["Required"] == schema["required"]
    assert {k: {"Type": v["type"], "Description": v["description"]} for k, v in schema["properties"].items()} == \
        tool["InputSchema"]["Properties"]
    fn_id = target["TargetConfiguration"]["Mcp"]["Lambda"]["LambdaArn"]["Fn::GetAtt"][0]
    fn = t["Resources"][fn_id]["Properties"]
    assert fn["Handler"] == "citerag.handlers.gateway.handler"
    assert fn["Environment"]["Variables"]["CITERAG_GATEWAY_ACCESS"] == "none"
    # Every statement trusting the AgentCore service is bound to this account's gateway (confused deputy).
    role = t["Resources"][gw["RoleArn"]["Fn::GetAtt"][0]]["Properties"]
    for statement in role["AssumeRolePolicyDocument"]["Statement"]:
        assert set(statement["Condition"]) == {"StringEquals", "ArnLike"}
        assert "aws:SourceAccount" in statement["Condition"]["StringEquals"]
    invoke = statements_of_role(t, lambda k, v: k == gw["RoleArn"]["Fn::GetAtt"][0])
    assert "lambda:InvokeFunction" in actions(invoke)


def test_the_runtime_models_regions_follow_its_profile():
    from infra.config import DeployConfig
    from infra.models import destination_regions

    c = DeployConfig(agentcore_model_id="apac.anthropic.claude-sonnet-4-6")
    assert "ap-southeast-2" in destination_regions(c.agentcore_model_id, c.agentcore_model_regions)


def test_the_runtime_stdout_log_group_gets_the_retention_too(both):
    _, t = both
    (retention,) = [r["Properties"] for r in t["Resources"].values() if r["Type"] == "Custom::LogRetention"]
    assert retention["RetentionInDays"] == 30
    name = retention["LogGroupName"]["Fn::Join"][1]
    assert name[0] == "/aws/bedrock-agentcore/runtimes/" and name[2] == "-DEFAULT"


def test_jwt_mode_authorizes_both_entry_points_and_adds_the_interceptor(jwt_only):
    _, t = jwt_only
    rt = one(t, "AWS::BedrockAgentCore::Runtime")
    assert rt["AuthorizerConfiguration"]["CustomJWTAuthorizer"] == {"DiscoveryUrl": DISCOVERY,
                                                                    "AllowedAudience": ["citerag"]}
    assert rt["RequestHeaderConfiguration"]["RequestHeaderAllowlist"] == ["Authorization"]
    assert rt["EnvironmentVariables"]["CITERAG_AGENTCORE_ACCESS"] == "jwt"
    gw = one(t, "AWS::BedrockAgentCore::Gateway")
    assert gw["AuthorizerType"] == "CUSTOM_JWT"
    (ic,) = gw["InterceptorConfigurations"]
    assert ic["InterceptionPoints"] == ["REQUEST"] and ic["InputConfiguration"] == {"PassRequestHeaders": True}
    fn = t["Resources"][ic["Interceptor"]["Lambda"]["Arn"]["Fn::GetAtt"][0]]["Properties"]
    assert fn["Handler"] == "citerag.handlers.gateway_interceptor.handler"
    target_fn = next(v["Properties"] for v in of_type(t, "AWS::Lambda::Function").values()
                     if v["Properties"].get("Handler") == "citerag.handlers.gateway.handler")
    assert target_fn["Environment"]["Variables"]["CITERAG_GATEWAY_ACCESS"] == "interceptor"
    assert one(t, "AWS::BedrockAgentCore::Memory")["EventExpiryDuration"] == 90
    assert one(t, "AWS::XRay::TransactionSearchConfig") == {"IndexingPercentage": 100}


def test_memory_logs_alarms_and_tracing(both):
    _, t = both
    mem = one(t, "AWS::BedrockAgentCore::Memory")
    assert mem["Name"] == "citerag_memory" and mem["EventExpiryDuration"] == 30
    names = {a["Properties"].get("AlarmDescription") for a in of_type(t, "AWS::CloudWatch::Alarm").values()}
    assert {"citerag AgentCoreRuntimeSystemErrors", "citerag AgentCoreGatewayThrottles",
            "citerag gateway Lambda errors"} <= names
    assert {d["Properties"]["LogType"] for d in of_type(t, "AWS::Logs::DeliverySource").values()} == \
        {"TRACES", "APPLICATION_LOGS"}
    assert not of_type(t, "AWS::XRay::TransactionSearchConfig")  # account-wide: only on request


@pytest.mark.parametrize("context, message", [
    ({"runtimes": "classic,bedrock"}, "runtimes"),
    ({"runtimes": "agentcore", "agentcoreMemoryDays": "400"}, "agentcore_memory_days"),
])
def test_bad_context_is_rejected_before_synthesis(context, message):
    from infra.config import DeployConfig

    with pytest.raises(ValueError, match=message):
        DeployConfig.from_context(context.get)


@pytest.mark.skipif(shutil.which("cfn-lint") is None and not (Path(sys.executable).parent / "cfn-lint").exists(),
                    reason="cfn-lint not installed")
@pytest.mark.parametrize("which", ["both", "jwt_only"])
def test_cfn_lint_and_cdk_nag_are_clean(which, request):
    out, _ = request.getfixturevalue(which)
    assert json.loads((out / "validation-report.json").read_text())["pluginReports"] == []
    exe = shutil.which("cfn-lint") or str(Path(sys.executable).parent / "cfn-lint")
    res = subprocess.run([exe, "--format", "parseable", str(out / "Citerag.template.json")],
                         capture_output=True, text=True)
    rules = {line.split(":")[5] for line in res.stdout.splitlines() if line.count(":") >= 6}
    assert rules <= {"W3005"}, res.stdout
