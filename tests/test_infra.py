"""The CDK app synthesizes offline; the template is checked resource by resource, by cfn-lint and cdk-nag."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
pytest.importorskip("aws_cdk")

from citerag.citations import prompts
from citerag.citations.tool import FUNCTION_DESCRIPTION, FUNCTION_NAME, PARAMETERS

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    from infra.app import build_app

    out = tmp_path_factory.mktemp("cdk.out")
    # Bundling (pip install of the Lambda asset) is skipped here; `python -m infra.app` does it.
    build_app({"aws:cdk:bundling-stacks": []}, outdir=str(out)).synth()  # raises if cdk-nag finds anything
    template = json.loads((out / "Citerag.template.json").read_text())
    return out, template


def of_type(template, kind):
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def one(template, kind):
    (res,) = of_type(template, kind).values()
    return res["Properties"]


def logical_id(template, kind, pred=lambda p: True):
    (lid,) = [k for k, v in of_type(template, kind).items() if pred(v.get("Properties", {}))]
    return lid


def test_documents_bucket_is_encrypted_private_versioned_tls_only_and_logged(synth):
    _, t = synth
    buckets = of_type(t, "AWS::S3::Bucket")
    docs = next(v["Properties"] for v in buckets.values() if "LoggingConfiguration" in v["Properties"])
    assert docs["VersioningConfiguration"] == {"Status": "Enabled"}
    assert docs["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "AES256"}
    assert all(docs["PublicAccessBlockConfiguration"][k] for k in
               ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"))
    policies = [p["Properties"]["PolicyDocument"]["Statement"] for p in of_type(t, "AWS::S3::BucketPolicy").values()]
    assert any(s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
               for stmts in policies for s in stmts)


def test_s3_to_sqs_to_ingest_lambda_with_dlq_and_partial_batch_failures(synth):
    _, t = synth
    notif = one(t, "Custom::S3BucketNotifications")["NotificationConfiguration"]["QueueConfigurations"]
    assert {n["Events"][0] for n in notif} == {"s3:ObjectCreated:*", "s3:ObjectRemoved:*"}
    queues = of_type(t, "AWS::SQS::Queue")
    main = next(v["Properties"] for v in queues.values() if "RedrivePolicy" in v["Properties"])
    assert main["RedrivePolicy"]["maxReceiveCount"] == 3
    esm = one(t, "AWS::Lambda::EventSourceMapping")
    assert esm["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_three_functions_with_their_handlers_log_groups_and_tracing(synth):
    _, t = synth
    fns = {v["Properties"]["Handler"]: v["Properties"] for v in of_type(t, "AWS::Lambda::Function").values()
           if v["Properties"].get("Handler", "").startswith("citerag.")}
    assert set(fns) == {"citerag.handlers.search.handler", "citerag.handlers.ingest.handler",
                        "citerag.handlers.parser.handler"}
    assert all(f["TracingConfig"] == {"Mode": "Active"} and "LoggingConfig" in f for f in fns.values())
    assert fns["citerag.handlers.ingest.handler"]["ReservedConcurrentExecutions"] == 1
    env = fns["citerag.handlers.search.handler"]["Environment"]["Variables"]
    assert env["CITERAG_EMBEDDER"] == "titan" and env["CITERAG_INDEX_BACKEND"] == "pinecone"
    assert env["CITERAG_RESPONSE_BUDGET_BYTES"] == "25000"
    groups = of_type(t, "AWS::Logs::LogGroup")
    assert len(groups) >= 4 and all(g["Properties"].get("RetentionInDays") == 30 for g in groups.values())


def test_agent_action_group_schema_is_generated_from_the_handler_definition(synth):
    _, t = synth
    agent = one(t, "AWS::Bedrock::Agent")
    (group,) = agent["ActionGroups"]
    (fn,) = group["FunctionSchema"]["Functions"]
    assert fn["Name"] == FUNCTION_NAME and fn["Description"] == FUNCTION_DESCRIPTION
    assert fn["Parameters"] == {n: {"Type": p["type"], "Description": p["description"],
                                    "Required": bool(p.get("required"))} for n, p in PARAMETERS.items()}
    assert len(FUNCTION_DESCRIPTION) <= 1200 and all(len(p["description"]) <= 500 for p in PARAMETERS.values())
    search_id = logical_id(t, "AWS::Lambda::Function", lambda p: p.get("Handler") == "citerag.handlers.search.handler")
    assert group["ActionGroupExecutor"]["Lambda"] == {"Fn::GetAtt": [search_id, "Arn"]}


def test_four_prompt_overrides_with_the_parser_lambda(synth):
    _, t = synth
    agent = one(t, "AWS::Bedrock::Agent")
    poc = agent["PromptOverrideConfiguration"]
    parser_id = logical_id(t, "AWS::Lambda::Function", lambda p: p.get("Handler") == "citerag.handlers.parser.handler")
    assert poc["OverrideLambda"] == {"Fn::GetAtt": [parser_id, "Arn"]}
    loaded = prompts.load()
    configs = {c["PromptType"]: c for c in poc["PromptConfigurations"]}
    assert set(configs) == set(prompts.PROMPT_TYPES)
    for ptype, c in configs.items():
        assert c["PromptCreationMode"] == c["ParserMode"] == "OVERRIDDEN"
        assert c["BasePromptTemplate"] == loaded[ptype]["template"]
        assert c["InferenceConfiguration"]["StopSequences"] == loaded[ptype]["stopSequences"]


def test_parser_and_search_permissions_for_the_agent_only(synth):
    _, t = synth
    agent_id = logical_id(t, "AWS::Bedrock::Agent")
    perms = [p["Properties"] for p in of_type(t, "AWS::Lambda::Permission").values()
             if p["Properties"].get("Principal") == "bedrock.amazonaws.com"]
    assert len(perms) == 2
    for p in perms:
        assert p["Action"] == "lambda:InvokeFunction"
        assert p["SourceArn"] == {"Fn::GetAtt": [agent_id, "AgentArn"]}
    parser_id = logical_id(t, "AWS::Lambda::Function", lambda p: p.get("Handler") == "citerag.handlers.parser.handler")
    assert any(p["FunctionName"] == {"Fn::GetAtt": [parser_id, "Arn"]} for p in perms)


def test_guardrail_is_attached_and_covers_prompt_attacks_pii_and_denied_topics(synth):
    _, t = synth
    g = one(t, "AWS::Bedrock::Guardrail")
    filters = {f["Type"]: f for f in g["ContentPolicyConfig"]["FiltersConfig"]}
    assert filters["PROMPT_ATTACK"]["InputStrength"] == "HIGH"
    assert {p["Type"] for p in g["SensitiveInformationPolicyConfig"]["PiiEntitiesConfig"]} >= {"EMAIL", "PHONE"}
    assert [x["Name"] for x in g["TopicPolicyConfig"]["TopicsConfig"]] == ["Investment advice", "Medical diagnosis"]
    agent = one(t, "AWS::Bedrock::Agent")
    gid = logical_id(t, "AWS::Bedrock::Guardrail")
    assert agent["GuardrailConfiguration"]["GuardrailIdentifier"] == {"Fn::GetAtt": [gid, "GuardrailId"]}
    assert one(t, "AWS::Bedrock::AgentAlias")["AgentId"] == {"Fn::GetAtt": [logical_id(t, "AWS::Bedrock::Agent"),
                                                                             "AgentId"]}


def test_agent_role_has_no_wildcard_actions_and_only_the_configured_models(synth):
    _, t = synth
    role_id = next(k for k, v in of_type(t, "AWS::IAM::Role").items()
                   if "AgentRole" in k)
    policies = [v["Properties"] for v in of_type(t, "AWS::IAM::Policy").values()
                if {"Ref": role_id} in v["Properties"]["Roles"]]
    statements = [s for p in policies for s in p["PolicyDocument"]["Statement"]]
    actions = [a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])]
    assert actions and not any("*" in a for a in actions)
    invoke = next(s for s in statements if "bedrock:InvokeModel" in s["Action"])
    assert "anthropic.claude" in json.dumps(invoke["Resource"])


def test_secret_alarms_and_model_invocation_logging(synth):
    _, t = synth
    assert len(of_type(t, "AWS::SecretsManager::Secret")) == 2  # the Pinecone key and the source-id key
    alarms = [a["Properties"] for a in of_type(t, "AWS::CloudWatch::Alarm").values()]
    assert {a["MetricName"] for a in alarms} == {"ApproximateNumberOfMessagesVisible", "Errors", "Throttles"}
    assert len(alarms) == 7
    logging_call = json.dumps(one(t, "Custom::AWS"))
    assert "PutModelInvocationLoggingConfiguration" in logging_call and "cloudWatchConfig" in logging_call


def test_cdk_nag_reports_no_unacknowledged_findings(synth):
    out, _ = synth
    # Synthesis itself fails on any unacknowledged finding; the report then lists the plugins that failed.
    report = json.loads((out / "validation-report.json").read_text())
    assert report["pluginReports"] == []


@pytest.mark.skipif(shutil.which("cfn-lint") is None and not (Path(sys.executable).parent / "cfn-lint").exists(),
                    reason="cfn-lint not installed")
def test_cfn_lint_finds_no_errors(synth):
    out, _ = synth
    exe = shutil.which("cfn-lint") or str(Path(sys.executable).parent / "cfn-lint")
    res = subprocess.run([exe, "--format", "parseable", str(out / "Citerag.template.json")],
                         capture_output=True, text=True)
    rules = {line.split(":")[5] for line in res.stdout.splitlines() if line.count(":") >= 6}
    assert not any(r.startswith("E") for r in rules), res.stdout
    # Known warnings: W3005 only (explicit DependsOn that CDK itself adds next to a GetAtt).
    assert rules <= {"W3005"}, res.stdout
