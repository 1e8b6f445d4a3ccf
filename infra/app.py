"""CDK app: `python -m infra.app` or `cdk synth` (cdk.json). Synthesis needs no network and no AWS account."""

from __future__ import annotations

import os

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from infra.config import DeployConfig
from infra.stack import CiteragStack

# Feature flags this app relies on (also in cdk.json): server access logs are authorised with a bucket policy,
# not the legacy LogDeliveryWrite ACL.
FEATURE_FLAGS = {"@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": True}


def build_app(context: dict | None = None, outdir: str | None = None) -> cdk.App:
    app = cdk.App(context={**FEATURE_FLAGS, **(context or {})}, outdir=outdir)
    region = os.environ.get("CDK_DEFAULT_REGION") or None
    config = DeployConfig.from_context(app.node.try_get_context, region)
    CiteragStack(app, app.node.try_get_context("stackName") or "Citerag", config=config,
                 env=cdk.Environment(account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=region))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app


def main() -> None:
    from pydantic import ValidationError

    try:
        app = build_app()
    except ValidationError as exc:  # a context value out of bounds: name it, no traceback
        raise SystemExit("citerag: " + "; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}"
                                                 for e in exc.errors())) from None
    except ValueError as exc:  # an unsupported region or runtime, an unknown model
        raise SystemExit(f"citerag: {exc}") from None
    app.synth()


if __name__ == "__main__":
    main()
