"""Deploying from a real environment: synthesis with the region and account the CDK CLI sets, region-aware defaults,
and assets that are small, compiled and the same on every build."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
pytest.importorskip("aws_cdk")

from infra import bundling, regions
from infra.config import DeployConfig

ACCOUNT = "123456789012"


def synth(monkeypatch, region: str | None, context: dict, *, out: Path, bundle: bool = False) -> tuple[Path, dict]:
    from infra.app import build_app

    if region:
        monkeypatch.setenv("CDK_DEFAULT_REGION", region)
        monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", ACCOUNT)
    else:
        monkeypatch.delenv("CDK_DEFAULT_REGION", raising=False)
        monkeypatch.delenv("CDK_DEFAULT_ACCOUNT", raising=False)
    build_app({**({} if bundle else {"aws:cdk:bundling-stacks": []}), **context}, outdir=str(out)).synth()
    return out, json.loads((out / "Citerag.template.json").read_text())


def cfn_lint_errors(template: Path) -> list[str]:
    exe = shutil.which("cfn-lint") or str(Path(sys.executable).parent / "cfn-lint")
    res = subprocess.run([exe, "--format", "parseable", str(template)], capture_output=True, text=True)
    return [line for line in res.stdout.splitlines() if line.count(":") >= 6 and line.split(":")[5].startswith("E")]


@pytest.mark.parametrize("runtimes", ["classic", "agentcore", "classic,agentcore"])
def test_synthesizes_with_the_region_and_account_the_cli_sets(monkeypatch, tmp_path, runtimes):
    # cdk-nag runs in synth(): a finding raises, so reaching the assertions means cdk-nag is clean.
    out, t = synth(monkeypatch, "ap-northeast-1", {"runtimes": runtimes}, out=tmp_path)
    report = json.loads((out / "validation-report.json").read_text())
    assert report["pluginReports"] == []
    assert cfn_lint_errors(out / "Citerag.template.json") == []
    text = json.dumps(t)
    if "agentcore" in runtimes:  # the runtime's own grants name the stack's region and account literally
        assert f":logs:ap-northeast-1:{ACCOUNT}:log-group:/aws/bedrock-agentcore/runtimes/*" in text


@pytest.mark.parametrize(("region", "model", "model_regions", "rail", "rail_regions"), [
    ("ap-northeast-1", "jp.anthropic.claude-sonnet-4-6", ["ap-northeast-1", "ap-northeast-3"],
     "apac.guardrail.v1:0", "ap-southeast-2"),
    # Sonnet 4.6 has no apac. profile (Anthropic's table): Sydney goes through global.
    ("ap-southeast-2", "global.anthropic.claude-sonnet-4-6", [], "apac.guardrail.v1:0", "ap-northeast-1"),
    ("us-east-1", "us.anthropic.claude-sonnet-4-6", ["us-east-1", "us-east-2", "us-west-2"], "us.guardrail.v1:0",
     "us-west-2"),
    ("us-west-2", "us.anthropic.claude-sonnet-4-6", ["us-east-1", "us-east-2", "us-west-2"], "us.guardrail.v1:0",
     "us-east-1"),
    ("eu-central-1", "eu.anthropic.claude-sonnet-4-6", ["eu-central-1", "eu-west-1"], "eu.guardrail.v1:0",
     "eu-north-1"),
])
def test_the_region_decides_the_model_profile_and_the_guardrail_profile(region, model, model_regions, rail,
                                                                       rail_regions):
    c = DeployConfig.from_context(lambda key: None, region)
    assert c.agent_model_id == model and c.agentcore_model_id == model
    assert set(model_regions) <= set(regions.defaults_for(region).model_regions())
    assert c.guardrail_tier == "STANDARD" and c.guardrail_profile_id == rail
    assert rail_regions in c.guardrail_profile_regions and region in c.guardrail_profile_regions


def test_a_us_deployment_grants_the_us_profile_and_its_guardrail_profile(monkeypatch, tmp_path):
    _, t = synth(monkeypatch, "us-east-1", {"runtimes": "classic,agentcore"}, out=tmp_path)
    agent = next(r["Properties"] for r in t["Resources"].values() if r["Type"] == "AWS::Bedrock::Agent")
    assert agent["FoundationModel"] == "us.anthropic.claude-sonnet-4-6"
    rail = next(r["Properties"] for r in t["Resources"].values() if r["Type"] == "AWS::Bedrock::Guardrail")
    assert json.dumps(rail["CrossRegionConfig"]).endswith(":guardrail-profile/us.guardrail.v1:0\"]]}}")
    text = json.dumps(t)
    assert ":bedrock:us-west-2::foundation-model/anthropic.claude-sonnet-4-6" in text
    assert "ap-northeast" not in text


@pytest.mark.parametrize(("region", "runtimes", "named"), [
    ("ap-northeast-3", "classic", "Bedrock Agents Classic"),  # Osaka: neither runtime
    ("ap-northeast-3", "agentcore", "Bedrock AgentCore"),
    ("sa-east-1", "agentcore", "Bedrock AgentCore"),
])
def test_a_region_that_does_not_offer_the_runtime_fails_by_name(region, runtimes, named):
    with pytest.raises(ValueError) as err:
        DeployConfig.from_context(lambda key: {"runtimes": runtimes}.get(key), region)
    assert named in str(err.value) and region in str(err.value)


def test_an_unknown_region_is_named_with_the_known_ones():
    with pytest.raises(ValueError) as err:
        DeployConfig.from_context(lambda key: None, "xx-nowhere-1")
    assert "xx-nowhere-1" in str(err.value) and "ap-northeast-1" in str(err.value)


def test_a_context_value_still_wins_over_the_region():
    c = DeployConfig.from_context(lambda key: {"agentModelId": "global.anthropic.claude-opus-4-6-v1",
                                               "guardrailTier": "CLASSIC"}.get(key), "us-east-1")
    assert c.agent_model_id == "global.anthropic.claude-opus-4-6-v1" and c.guardrail_profile_id == ""


# --- assets -------------------------------------------------------------------------------------------------------

def asset_hashes(template: dict) -> dict[str, str]:
    return {k: r["Properties"]["Code"]["S3Key"] for k, r in template["Resources"].items()
            if r["Type"] == "AWS::Lambda::Function" and isinstance(r["Properties"].get("Code", {}).get("S3Key"), str)}


@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    """Two synthesis runs with real bundling (pip from the configured index) of the same tree."""
    mp = pytest.MonkeyPatch()
    try:
        runs = [synth(mp, "ap-northeast-1", {"runtimes": "classic"}, bundle=True,
                      out=tmp_path_factory.mktemp("cdk.out")) for _ in range(2)]
    finally:
        mp.undo()
    return runs


def test_two_synths_of_the_same_tree_give_the_same_assets(bundled):
    (_, first), (_, second) = bundled
    assert asset_hashes(first) == asset_hashes(second)
    assert len(set(asset_hashes(first).values())) >= 2  # search and slim assets


def _asset_dir(out: Path, template: dict, handler: str) -> Path:
    fn = next(r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"
              and r["Properties"].get("Handler") == handler)
    return out / f"asset.{fn['Properties']['Code']['S3Key'].removesuffix('.zip')}"


def test_the_parser_ships_a_small_asset_without_numpy_pinecone_pdf_readers_or_cryptography(bundled):
    out, t = bundled[0]
    slim = _asset_dir(out, t, "citerag.handlers.parser.handler")
    top = {p.name.split("-")[0].split(".")[0].lower() for p in slim.iterdir()}
    assert not top & {"numpy", "pinecone", "pdfminer", "pypdf", "cryptography", "aws_xray_sdk", "boto3"}
    assert bundling.size_bytes(slim) <= 20e6


def test_every_asset_ships_bytecode_for_the_runtime_and_nothing_machine_specific(bundled):
    out, t = bundled[0]
    tag = f"cpython-{bundling.LAMBDA_PYTHON.replace('.', '')}"
    for handler in ("citerag.handlers.parser.handler", "citerag.handlers.search.handler"):
        asset = _asset_dir(out, t, handler)
        assert not list(asset.glob("*.egg-info")) and not list(asset.glob("*.dist-info/direct_url.json"))
        assert not (asset / "bin").exists()
        if bundling.target_python(bundling.LAMBDA_PYTHON):
            modules = list((asset / "citerag").rglob("*.py"))
            compiled = {p.name for p in (asset / "citerag").rglob(f"*.{tag}.pyc")}
            assert modules and all(f"{m.stem}.{tag}.pyc" in compiled for m in modules)


@pytest.mark.skipif(bundling.target_python(bundling.LAMBDA_PYTHON) is None, reason="no Python 3.13 here")
def test_the_parser_answers_from_its_slim_asset_alone(bundled, tmp_path):
    from infra.footprint import child_env, runtime_packages

    out, t = bundled[0]
    slim = _asset_dir(out, t, "citerag.handlers.parser.handler")
    python = bundling.target_python(bundling.LAMBDA_PYTHON)
    runtime = runtime_packages(tmp_path / "runtime", None)
    event = {"messageVersion": "1.0", "agent": {"name": "citerag", "id": "AGENT12345", "alias": "TSTALIASID",
                                                "version": "DRAFT"}, "promptType": "PRE_PROCESSING",
             "overrideType": "OUTPUT_PARSER",
             "invokeModelRawResponse": "<thinking>The documents cover this.</thinking><category>D</category>"}
    code = ("import json, sys\nfrom citerag.handlers.parser import handler\n"
            "from types import SimpleNamespace\n"
            "ctx = SimpleNamespace(function_name='parser', memory_limit_in_mb=512, aws_request_id='r-1', "
            "invoked_function_arn='arn:aws:lambda:ap-northeast-1:123456789012:function:parser')\n"
            f"out = handler(json.loads({json.dumps(json.dumps(event))}), ctx)\n"
            "print(json.dumps({'out': out, 'heavy': sorted(m for m in ('numpy', 'pinecone', 'pdfminer', 'pypdf') "
            "if m in sys.modules)}))")
    env = {**child_env([slim, runtime], tracing=False), "CITERAG_SOURCE_ID_KEY": "citerag-local"}
    res = subprocess.run([python, "-S", "-c", code], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout.splitlines()[-1])
    assert got["out"]["preProcessingParsedResponse"]["isValidInput"] is True and got["heavy"] == []


def _fingerprint(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def test_the_slim_asset_is_byte_for_byte_the_same_on_a_second_build(tmp_path):
    first = bundling.build(tmp_path / "a", bundle="slim")
    second = bundling.build(tmp_path / "b", bundle="slim")
    assert _fingerprint(first) == _fingerprint(second)


# --- tracing ------------------------------------------------------------------------------------------------------

def _xray_imported(extra_env: dict[str, str]) -> bool:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "LAMBDA_TASK_ROOT", "AWS_SAM"))}
    code = "import sys, citerag.handlers.search, citerag.handlers.ingest; print('aws_xray_sdk' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], env={**env, **extra_env}, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout.strip().splitlines()[-1] == "True"


def test_the_xray_sdk_is_imported_only_when_tracing_is_on():
    in_lambda = {"LAMBDA_TASK_ROOT": "/var/task", "AWS_LAMBDA_FUNCTION_NAME": "citerag-search"}
    assert _xray_imported(in_lambda) is True
    assert _xray_imported({**in_lambda, "POWERTOOLS_TRACE_DISABLED": "true"}) is False
    assert _xray_imported({}) is False  # outside Lambda Powertools traces nothing either


def test_the_search_handler_leaves_what_only_an_invocation_uses_to_the_first_invocation():
    """Init imports the decorators' modules only: the payload code (pydantic, the passage model, the search core) and
    Powertools' event_handler package load with the components, and an invocation still answers (the handler's own
    tests)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "LAMBDA_TASK_ROOT", "AWS_SAM"))}
    heavy = ("pydantic", "numpy", "citerag.search.passage", "citerag.citations.payload",
             "aws_lambda_powertools.event_handler", "citerag.components")
    code = f"import sys, citerag.handlers.search; print([m for m in {heavy!r} if m in sys.modules])"
    res = subprocess.run([sys.executable, "-c", code], env={**env, "LAMBDA_TASK_ROOT": "/var/task"},
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().splitlines()[-1] == "[]"


def test_service_tracing_keeps_lambda_tracing_and_turns_the_sdk_off(monkeypatch, tmp_path):
    _, t = synth(monkeypatch, None, {"runtimes": "classic,agentcore", "functionTracing": "service"}, out=tmp_path)
    fns = [r["Properties"] for r in t["Resources"].values() if r["Type"] == "AWS::Lambda::Function"
           and r["Properties"].get("Handler", "").startswith("citerag.handlers.")
           and "invocation_logging" not in r["Properties"]["Handler"]]
    assert fns and all(f["Environment"]["Variables"].get("POWERTOOLS_TRACE_DISABLED") == "true" for f in fns)
    assert all(f["TracingConfig"] == {"Mode": "Active"} for f in fns)


@pytest.mark.parametrize(("env", "args", "named"), [
    ({"CDK_DEFAULT_REGION": "ap-northeast-3"}, [], "Bedrock Agents Classic"),
    ({"CDK_DEFAULT_REGION": "us-east-1"},
     ["-c", "runtimes=agentcore", "-c", "agentcoreJwtDiscoveryUrl=https://idp.example/.well-known/openid-configuration"],
     "agentcoreJwtClients"),
    ({}, ["-c", "agentcoreMemoryDays=1"], "agentcore_memory_days"),
])
def test_synthesis_stops_with_one_line_that_names_the_problem(env, args, named, tmp_path):
    # The CDK CLI runs `python3 -m infra.app` with its -c values in CDK_CONTEXT_JSON.
    context = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args[1::2]}
    base = {k: v for k, v in os.environ.items() if not k.startswith("CDK_")}
    res = subprocess.run([sys.executable, "-m", "infra.app"], capture_output=True, text=True,
                         cwd=Path(__file__).parents[1], env={**base, **env, "CDK_CONTEXT_JSON": json.dumps(context),
                              "CDK_OUTDIR": str(tmp_path)})
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith("citerag: ") and named in res.stderr


@pytest.mark.parametrize(("context", "named"), [
    ({"agentModelId": "global.anthropic.claude-opus-4-7"}, "Bedrock Agents Classic cannot use it"),
])
def test_a_model_the_runtime_cannot_call_fails_by_name(context, named):
    with pytest.raises(ValueError) as err:
        DeployConfig.from_context(context.get, "us-east-1")
    assert "Claude Opus 4.7" in str(err.value) and named in str(err.value)


def test_an_agentcore_model_on_the_messages_api_gets_bedrock_mantle_access_instead_of_invoke_model(monkeypatch,
                                                                                                   tmp_path):
    # cdk-nag runs in synth(): reaching the assertions means it is clean with this policy too.
    _, t = synth(monkeypatch, "us-east-1", {"runtimes": "agentcore", "agentcoreModelId": "anthropic.claude-opus-4-7"},
                 out=tmp_path)
    runtime = next(r["Properties"] for r in t["Resources"].values() if r["Type"] == "AWS::BedrockAgentCore::Runtime")
    assert runtime["EnvironmentVariables"]["CITERAG_CHAT_MODEL_ID"] == "anthropic.claude-opus-4-7"
    statements = [st for r in t["Resources"].values() if r["Type"] == "AWS::IAM::Policy"
                  for st in r["Properties"]["PolicyDocument"]["Statement"]]
    text = json.dumps(statements)
    mantle = [st for st in statements if "bedrock-mantle:CreateInference" in json.dumps(st["Action"])]
    assert mantle and "bedrock-mantle:" in json.dumps(mantle[0]["Resource"]) and ":project/*" in json.dumps(
        mantle[0]["Resource"])
    assert "claude-opus-4-7" not in text  # no InvokeModel grant on a foundation model that has no such id
    assert any("bedrock:ApplyGuardrail" in json.dumps(st["Action"]) for st in statements)


def test_every_default_is_a_model_its_runtimes_can_call():
    from citerag.citations.families import DEFAULT_BASE_MODEL, bedrock_model

    row = bedrock_model(DEFAULT_BASE_MODEL)
    assert row is not None and row.classic and row.api == "converse" and not row.legacy
    for region, d in regions.REGIONS.items():
        assert d.model_geography in row.profiles, region  # the region's default profile exists for the model
