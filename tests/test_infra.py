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
if shutil.which("node") is None:  # aws-cdk-lib runs the CDK's JavaScript through jsii: Node.js must be installed
    pytest.skip("needs Node.js (apt-get install nodejs)", allow_module_level=True)
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


def synth_for(context: dict, tmp=None):
    import tempfile

    from infra.app import build_app

    out = Path(tmp or tempfile.mkdtemp(prefix="cdk.out-"))
    build_app({"aws:cdk:bundling-stacks": [], **context}, outdir=str(out)).synth()
    return out, json.loads((out / "Citerag.template.json").read_text())


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
    esm = one(t, "AWS::Lambda::EventSourceMapping")
    assert esm["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    # Many ingest functions at once, as many as the queue's maximum concurrency allows (sized to the Titan quota);
    # no reserved concurrency below that, which would throttle batches into retries.
    ingest = next(v["Properties"] for v in of_type(t, "AWS::Lambda::Function").values()
                  if v["Properties"].get("Handler") == "citerag.handlers.ingest.handler")
    assert esm["ScalingConfig"]["MaximumConcurrency"] == 19  # 300,000 tokens a minute / 16,000 per function
    assert "ReservedConcurrentExecutions" not in ingest
    assert main["VisibilityTimeout"] >= 6 * ingest["Timeout"]
    assert main["RedrivePolicy"]["maxReceiveCount"] >= 5


def test_versioned_buckets_expire_what_they_keep(synth):
    _, t = synth
    for name, bucket in of_type(t, "AWS::S3::Bucket").items():
        rules = bucket["Properties"].get("LifecycleConfiguration", {}).get("Rules", [])
        assert any("NoncurrentVersionExpiration" in r for r in rules), name


def test_the_logging_setup_can_tell_a_missing_state_object_from_a_denied_one(synth):
    _, t = synth
    setup = [s for p in of_type(t, "AWS::IAM::Policy").values() if "ModelInvocationLoggingSetup" in
             json.dumps(p["Properties"]["Roles"]) for s in p["Properties"]["PolicyDocument"]["Statement"]]
    (listing,) = [s for s in setup if s["Action"] == "s3:ListBucket"]
    assert "Condition" not in listing and listing["Resource"]["Fn::GetAtt"][1] == "Arn"


def test_the_functions_with_their_handlers_log_groups_and_tracing(synth):
    _, t = synth
    fns = {v["Properties"]["Handler"]: v["Properties"] for v in of_type(t, "AWS::Lambda::Function").values()
           if v["Properties"].get("Handler", "").startswith("citerag.")}
    assert set(fns) == {"citerag.handlers.search.handler", "citerag.handlers.ingest.handler",
                        "citerag.handlers.parser.handler", "citerag.handlers.invocation_logging.handler",
                        "citerag.handlers.stats_fold.handler"}
    assert all(f["TracingConfig"] == {"Mode": "Active"} and "LoggingConfig" in f for f in fns.values())
    assert "ReservedConcurrentExecutions" not in fns["citerag.handlers.ingest.handler"]
    env = fns["citerag.handlers.search.handler"]["Environment"]["Variables"]
    assert env["CITERAG_EMBEDDER"] == "titan" and env["CITERAG_INDEX_BACKEND"] == "pinecone"
    assert env["CITERAG_RESPONSE_BUDGET_BYTES"] == "25000"
    groups = of_type(t, "AWS::Logs::LogGroup")
    assert len(groups) >= 4 and all(g["Properties"].get("RetentionInDays") == 30 for g in groups.values())
    # Every function, CDK's own included, logs to a group with that retention.
    for name, fn in of_type(t, "AWS::Lambda::Function").items():
        assert fn["Properties"]["LoggingConfig"]["LogGroup"]["Ref"] in groups, name


def test_a_changed_guardrail_is_a_new_version(synth):
    import aws_cdk as cdk

    from infra import guardrail
    from infra.config import DeployConfig

    def description(**changes):
        stack = cdk.Stack(cdk.App(), "Citerag")
        return stack.resolve(guardrail.build(stack, DeployConfig(**changes))[1].description)

    _, t = synth
    base = description()
    assert one(t, "AWS::Bedrock::GuardrailVersion")["Description"] == base and len(base) <= 200
    for changes in ({"guardrail_tier": "CLASSIC"}, {"denied_topics": ["Investment advice"]}):
        assert description(**changes) != base
    assert description() == base


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


def test_the_default_model_is_sonnet_4_6_through_the_japan_profile_with_its_family_prompts(synth):
    _, t = synth
    agent = one(t, "AWS::Bedrock::Agent")
    assert agent["FoundationModel"] == "jp.anthropic.claude-sonnet-4-6"
    poc = agent["PromptOverrideConfiguration"]
    parser_id = logical_id(t, "AWS::Lambda::Function", lambda p: p.get("Handler") == "citerag.handlers.parser.handler")
    assert poc["OverrideLambda"] == {"Fn::GetAtt": [parser_id, "Arn"]}
    loaded = prompts.load(str(prompts.prompts_dir("claude46")))
    configs = {c["PromptType"]: c for c in poc["PromptConfigurations"]}
    # No knowledge base is attached, so its generation prompt is left alone.
    assert set(configs) == {"PRE_PROCESSING", "ORCHESTRATION", "POST_PROCESSING"}
    for ptype, c in configs.items():
        assert c["PromptCreationMode"] == c["ParserMode"] == "OVERRIDDEN"
        assert c["BasePromptTemplate"] == loaded[ptype]["template"]
        assert "$tools$" not in c["BasePromptTemplate"]
        inference = c["InferenceConfiguration"]
        assert inference["StopSequences"] == loaded[ptype]["stopSequences"]
        assert "Temperature" in inference and "TopP" not in inference and "TopK" not in inference


def test_the_alias_follows_every_change_of_the_agent_definition(synth):
    from infra.classic import OVERRIDDEN, config_hash
    from infra.config import DeployConfig

    def hash_of(**changes):
        c = DeployConfig(**changes)
        loaded = prompts.load(str(prompts.prompts_dir("claude46")))
        return config_hash(c, {k: v for k, v in loaded.items() if k in OVERRIDDEN})

    base = hash_of()
    assert base == hash_of() and len(base) == 64
    assert hash_of(agent_model_id="global.anthropic.claude-sonnet-4-6") != base
    assert config_hash(DeployConfig(), {}, "citerag guardrail 1") != config_hash(DeployConfig(), {})
    _, t = synth
    alias = one(t, "AWS::Bedrock::AgentAlias")
    assert "RoutingConfiguration" not in alias  # a routing-less update is what creates a new version
    version = one(t, "AWS::Bedrock::GuardrailVersion")["Description"]
    loaded = prompts.load(str(prompts.prompts_dir("claude46")))
    expected = config_hash(DeployConfig(), {k: v for k, v in loaded.items() if k in OVERRIDDEN}, version)
    assert alias["Description"] == f"citerag agent config {expected}" and len(alias["Description"]) <= 200


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
    invoke = [s for s in statements if "bedrock:InvokeModel" in s["Action"]]
    text = json.dumps(invoke)
    # The profile, and the foundation model in each destination of jp. (Tokyo and Osaka) only through it
    # (docs inference-profiles-prereq); nothing else.
    assert "inference-profile/jp.anthropic.claude-sonnet-4-6" in text
    assert ":bedrock:ap-northeast-1::foundation-model/anthropic.claude-sonnet-4-6" in text
    assert ":bedrock:ap-northeast-3::foundation-model/anthropic.claude-sonnet-4-6" in text
    assert text.count("foundation-model/") == 2 and "bedrock:InferenceProfileArn" in text
    profile = next(s for s in statements if s["Action"] == "bedrock:GetInferenceProfile")
    assert "inference-profile/jp.anthropic.claude-sonnet-4-6" in json.dumps(profile["Resource"])
    agent_id = logical_id(t, "AWS::Bedrock::Agent")
    policy_id = next(k for k, v in of_type(t, "AWS::IAM::Policy").items() if "AgentModelAccess" in k)
    assert policy_id in t["Resources"][agent_id].get("DependsOn", [])  # CreateAgent checks the role's access


def test_the_guardrail_is_standard_tier_through_the_apac_guardrail_profile(synth):
    _, t = synth
    g = one(t, "AWS::Bedrock::Guardrail")
    assert g["ContentPolicyConfig"]["ContentFiltersTierConfig"] == {"TierName": "STANDARD"}
    assert g["TopicPolicyConfig"]["TopicsTierConfig"] == {"TierName": "STANDARD"}
    assert "guardrail-profile/apac.guardrail.v1:0" in json.dumps(g["CrossRegionConfig"])
    role_id = next(k for k in of_type(t, "AWS::IAM::Role") if "AgentRole" in k)
    apply = [s for v in of_type(t, "AWS::IAM::Policy").values() if {"Ref": role_id} in v["Properties"]["Roles"]
             for s in v["Properties"]["PolicyDocument"]["Statement"] if "bedrock:ApplyGuardrail" in s["Action"]]
    assert json.dumps(apply).count("guardrail-profile/apac.guardrail.v1:0") == 6


def test_other_models_regions_and_the_classic_tier_come_from_context():
    _, t = synth_for({"agentModelId": "global.anthropic.claude-haiku-4-5-20251001-v1:0", "guardrailTier": "CLASSIC"})
    agent = one(t, "AWS::Bedrock::Agent")
    assert agent["FoundationModel"] == "global.anthropic.claude-haiku-4-5-20251001-v1:0"
    orch = next(c for c in agent["PromptOverrideConfiguration"]["PromptConfigurations"]
                if c["PromptType"] == "ORCHESTRATION")
    assert json.loads(orch["BasePromptTemplate"])["messages"][-1]["role"] == "assistant"  # 4.5 takes a prefill
    text = json.dumps(t)
    assert ":bedrock:::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0" in text  # the global form
    assert '"aws:RequestedRegion": "unspecified"' in text
    g = one(t, "AWS::Bedrock::Guardrail")
    assert "CrossRegionConfig" not in g
    assert g["ContentPolicyConfig"]["ContentFiltersTierConfig"]["TierName"] == "CLASSIC"
    with pytest.raises(ValueError, match="no prompt set"):
        synth_for({"agentModelId": "apac.amazon.nova-pro-v1:0"})


def test_secret_alarms_and_model_invocation_logging(synth):
    _, t = synth
    assert len(of_type(t, "AWS::SecretsManager::Secret")) == 2  # the Pinecone key and the source-id key
    alarms = [a["Properties"] for a in of_type(t, "AWS::CloudWatch::Alarm").values()]
    assert {a["MetricName"] for a in alarms} == {"ApproximateNumberOfMessagesVisible", "Errors", "Throttles"}
    assert len(alarms) == 9  # the DLQ, and errors and throttles of four functions
    logging = json.dumps(one(t, "AWS::CloudFormation::CustomResource"))
    assert "cloudWatchConfig" in logging and "largeDataDeliveryS3Config" in logging and "StateKey" in logging
    setup = logical_id(t, "AWS::Lambda::Function",
                       lambda p: p.get("Handler") == "citerag.handlers.invocation_logging.handler")
    policies = json.dumps([v for v in of_type(t, "AWS::IAM::Policy").values()
                           if {"Ref": t["Resources"][setup]["Properties"]["Role"]["Fn::GetAtt"][0]}
                           in v["Properties"]["Roles"]])
    assert "bedrock:GetModelInvocationLoggingConfiguration" in policies  # reads what was there before


def test_the_statistics_table_and_its_access_belong_to_this_stack(synth):
    _, t = synth
    (table_id,) = of_type(t, "AWS::DynamoDB::Table")
    table = t["Resources"][table_id]["Properties"]
    assert {k["AttributeName"]: k["KeyType"] for k in table["KeySchema"]} == {"pk": "HASH", "sk": "RANGE"}
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    statements = [s for p in of_type(t, "AWS::IAM::Policy").values()
                  for s in p["Properties"]["PolicyDocument"]["Statement"]
                  if any(str(a).startswith("dynamodb:") for a in ([s["Action"]] if isinstance(s["Action"], str)
                                                                  else s["Action"]))]
    assert statements and all(s["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]} for s in statements)
    by_role = {}
    for p in of_type(t, "AWS::IAM::Policy").values():
        for s in p["Properties"]["PolicyDocument"]["Statement"]:
            if s in statements:
                by_role.setdefault(p["Properties"]["Roles"][0]["Ref"], set()).update(s["Action"])
    assert sorted(map(sorted, by_role.values())) == [
        ["dynamodb:BatchWriteItem", "dynamodb:Query"],
        ["dynamodb:ConditionCheckItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem",
         "dynamodb:Query"]]
    ingest = next(v["Properties"] for v in of_type(t, "AWS::Lambda::Function").values()
                  if v["Properties"].get("Handler") == "citerag.handlers.ingest.handler")
    assert ingest["Environment"]["Variables"]["CITERAG_STATS_TABLE"] == {"Ref": table_id}
    fold_id = logical_id(t, "AWS::Lambda::Function",
                         lambda p: p.get("Handler") == "citerag.handlers.stats_fold.handler")
    rule = one(t, "AWS::Events::Rule")
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    assert rule["Targets"][0]["Arn"] == {"Fn::GetAtt": [fold_id, "Arn"]}


def test_the_ingest_dashboard_shows_queue_depth_documents_done_and_failed(synth):
    _, t = synth
    body = json.dumps(one(t, "AWS::CloudWatch::Dashboard")["DashboardBody"])
    for shown in ("ApproximateNumberOfMessagesVisible", "ApproximateNumberOfMessagesNotVisible", "Ingest_added",
                  "Ingest_failed", "Ingest_dead_lettered", "InvocationThrottles", "ConcurrentExecutions"):
        assert shown in body, shown


def test_ingest_concurrency_follows_the_titan_quota_or_the_context():
    _, t = synth_for({"titanTokensPerMinute": "1200000"})
    assert one(t, "AWS::Lambda::EventSourceMapping")["ScalingConfig"]["MaximumConcurrency"] == 75
    _, t = synth_for({"ingestConcurrency": "3"})
    assert one(t, "AWS::Lambda::EventSourceMapping")["ScalingConfig"]["MaximumConcurrency"] == 3
    # A request quota binds first when it is the smaller: 600 calls a minute feed ceil(600 / 192) functions.
    _, t = synth_for({"titanRequestsPerMinute": "600"})
    assert one(t, "AWS::Lambda::EventSourceMapping")["ScalingConfig"]["MaximumConcurrency"] == 4


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


def test_the_bulk_path_adds_a_batch_role_trusting_only_this_accounts_bedrock_jobs(monkeypatch, tmp_path):
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "123456789012")
    monkeypatch.setenv("CDK_DEFAULT_REGION", "ap-northeast-1")
    out, t = synth_for({"batchMinPassages": "50000"}, tmp_path)  # raises if cdk-nag finds anything
    assert json.loads((out / "validation-report.json").read_text())["pluginReports"] == []
    (role_id, role), = [(k, v["Properties"]) for k, v in of_type(t, "AWS::IAM::Role").items()
                        if "batch inference" in v["Properties"].get("Description", "")]
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "bedrock.amazonaws.com"}
    assert trust["Condition"]["StringEquals"]["aws:SourceAccount"] == "123456789012"
    assert "model-invocation-job/*" in json.dumps(trust["Condition"]["ArnLike"]["aws:SourceArn"])
    role_statements = [s for p in of_type(t, "AWS::IAM::Policy").values()
                       if p["Properties"]["Roles"] == [{"Ref": role_id}]
                       for s in p["Properties"]["PolicyDocument"]["Statement"]]
    assert {s["Action"] for s in role_statements} == {"s3:GetObject", "s3:PutObject", "s3:ListBucket"}
    where = json.dumps({s["Action"]: s["Resource"] for s in role_statements})
    assert "citerag/batch/jobs/*/input/*" in where and "citerag/batch/jobs/*/output/*" in where
    ingest = next(v["Properties"] for v in of_type(t, "AWS::Lambda::Function").values()
                  if v["Properties"].get("Handler") == "citerag.handlers.ingest.handler")
    env = ingest["Environment"]["Variables"]
    assert env["CITERAG_BATCH_MIN_PASSAGES"] == "50000"
    assert env["CITERAG_BATCH_ROLE_ARN"] == {"Fn::GetAtt": [role_id, "Arn"]}
    passes = [s for p in of_type(t, "AWS::IAM::Policy").values()
              for s in p["Properties"]["PolicyDocument"]["Statement"]
              if s["Action"] == "iam:PassRole" and role_id in json.dumps(s["Resource"])]
    assert passes == [{"Action": "iam:PassRole", "Effect": "Allow", "Resource": {"Fn::GetAtt": [role_id, "Arn"]},
                       "Condition": {"StringEquals": {"iam:PassedToService": "bedrock.amazonaws.com"}}}]
    rules = [r["Properties"] for r in of_type(t, "AWS::Events::Rule").values()]
    ingest_id = logical_id(t, "AWS::Lambda::Function", lambda p: p.get("Handler") == "citerag.handlers.ingest.handler")
    to_ingest = [r for r in rules if r["Targets"][0]["Arn"] == {"Fn::GetAtt": [ingest_id, "Arn"]}]
    assert {r.get("ScheduleExpression") for r in to_ingest} == {"rate(5 minutes)", None}
    assert {"source": ["aws.bedrock"], "detail-type": ["Batch Inference Job State Change"]} in [
        r.get("EventPattern") for r in to_ingest]
    if shutil.which("cfn-lint") or (Path(sys.executable).parent / "cfn-lint").exists():
        exe = shutil.which("cfn-lint") or str(Path(sys.executable).parent / "cfn-lint")
        res = subprocess.run([exe, "--format", "parseable", str(out / "Citerag.template.json")],
                             capture_output=True, text=True)
        rules_hit = {line.split(":")[5] for line in res.stdout.splitlines() if line.count(":") >= 6}
        assert rules_hit <= {"W3005"}, res.stdout


def test_without_the_bulk_path_there_is_no_batch_role_and_no_bedrock_job_rights(synth):
    _, t = synth
    assert "CreateModelInvocationJob" not in json.dumps(t) and "BatchInferenceRole" not in json.dumps(t)
