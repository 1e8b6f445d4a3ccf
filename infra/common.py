"""What every part of the CDK app shares: the Lambda runtime and its Docker-free bundling, one function factory
(log group with retention, X-Ray, its cdk-nag acknowledgements), and cdk-nag acknowledgements with reasons."""

from __future__ import annotations

import re
from pathlib import Path

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = lambda_.Runtime.PYTHON_3_13
ASSET_EXCLUDES = [".git", ".venv", "**/__pycache__", "cdk.out", "tests", "node_modules", ".ci", "*.sqlite*",
                  ".pytest_cache", ".ruff_cache", ".hypothesis", "**/*.egg-info", "build", "dist"]


@jsii.implements(cdk.ILocalBundling)
class PipLocalBundling:
    """Builds a Lambda asset with pip on this machine (Linux x86_64 wheels), no Docker needed."""

    def __init__(self, bundle: str) -> None:
        self.bundle = bundle

    def try_bundle(self, output_dir: str, *args, **kwargs) -> bool:
        from infra import bundling

        bundling.build(Path(output_dir), bundle=self.bundle, python_version=RUNTIME.name.removeprefix("python"))
        return True


def lambda_code(bundle: str = "search") -> lambda_.Code:
    """A Lambda asset (infra.bundling: `search` for the functions that search or ingest, `slim` for the rest). Hashed
    by its output: the same files give the same asset, whatever else changed in the tree."""
    return lambda_.Code.from_asset(
        str(ROOT), exclude=ASSET_EXCLUDES, asset_hash_type=cdk.AssetHashType.OUTPUT,
        bundling=cdk.BundlingOptions(image=RUNTIME.bundling_image, local=PipLocalBundling(bundle),
                                     command=["bash", "-c", f"python -m infra.bundling {bundle} /asset-output"]))


def function(scope: Construct, name: str, handler: str, *, code: lambda_.Code, timeout: int, memory: int,
             env: dict[str, str], retention: logs.RetentionDays) -> lambda_.Function:
    group = logs.LogGroup(scope, f"{name}Logs", retention=retention, removal_policy=cdk.RemovalPolicy.DESTROY)
    fn = lambda_.Function(scope, name, runtime=RUNTIME, architecture=lambda_.Architecture.X86_64, code=code,
                          handler=handler, timeout=cdk.Duration.seconds(timeout), memory_size=memory,
                          environment={**env, "POWERTOOLS_SERVICE_NAME": f"citerag-{name.lower()}"},
                          tracing=lambda_.Tracing.ACTIVE, log_group=group)
    ack(fn, "AwsSolutions-L1", f"{RUNTIME.name}: the newest Lambda Python for which every dependency "
        "(numpy, pydantic-core, cryptography) ships Linux wheels.")
    ack(fn.role, "AwsSolutions-IAM4", "AWSLambdaBasicExecutionRole only allows writing this function's "
        "CloudWatch Logs.", applies_to="Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AWSLambdaBasicExecutionRole")
    return fn


def ack_xray(fn: lambda_.Function) -> None:
    ack(fn.role.node.find_child("DefaultPolicy"), "AwsSolutions-IAM5",
        "X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permissions.",
        applies_to="Resource::*")


def topic_name(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z-_ !?.]", "", text)[:100] or "denied-topic"


def retention(days: int) -> logs.RetentionDays:
    """The CloudWatch Logs retention closest to `days`."""
    r = logs.RetentionDays
    table = {1: r.ONE_DAY, 3: r.THREE_DAYS, 5: r.FIVE_DAYS, 7: r.ONE_WEEK, 14: r.TWO_WEEKS, 30: r.ONE_MONTH,
             60: r.TWO_MONTHS, 90: r.THREE_MONTHS, 120: r.FOUR_MONTHS, 150: r.FIVE_MONTHS, 180: r.SIX_MONTHS,
             365: r.ONE_YEAR, 731: r.TWO_YEARS, 1827: r.FIVE_YEARS, 3653: r.TEN_YEARS}
    return table[min(table, key=lambda d: (abs(d - days), d))]


def nag_text(stack: cdk.Stack, value: str) -> str:
    """How cdk-nag writes a stack attribute in a finding: the literal when synthesis knows it, else the
    pseudo-parameter as `<AWS::Name>` (cdk-nag renders {"Ref": "AWS::Region"} that way)."""
    if not cdk.Token.is_unresolved(value):
        return value
    resolved = stack.resolve(value)
    if isinstance(resolved, dict) and isinstance(resolved.get("Ref"), str):
        return f"<{resolved['Ref']}>"
    raise ValueError(f"cannot write {resolved!r} as cdk-nag does")


def ack(construct, rule: str, reason: str, applies_to: str | list[str] | None = None) -> None:
    """Acknowledge a cdk-nag finding on one construct, with a reason (cdk-nag 3: Validations.of().acknowledge)."""
    if construct is None:
        return
    ids = [rule] if applies_to is None else [f"{rule}[{a}]" for a in ([applies_to] if isinstance(applies_to, str)
                                                                      else applies_to)]
    cdk.Validations.of(construct).acknowledge(*[cdk.Acknowledgment(id=i, reason=reason) for i in ids])
