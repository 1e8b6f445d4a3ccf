"""IAM for calling a Bedrock model by id or by cross-region inference profile, shared by the Classic agent's role
and the AgentCore runtime's role.

AWS docs inference-profiles-prereq: "When you specify an inference profile in the Resource field ..., you must also
specify the foundation model in each Region associated with it"; global-cross-region-inference: a `global.` profile
needs the foundation model in the source region and the region-less foundation-model ARN, each conditioned on
`bedrock:InferenceProfileArn` (the latter with `aws:RequestedRegion` "unspecified"). The agent runtime also reads
the profile (`bedrock:GetInferenceProfile`, as AWS's generative-ai-cdk-constructs grant it) and streams
(`bedrock:InvokeModelWithResponseStream`, botocore InvokeAgent streamingConfigurations).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam

from infra.regions import PROFILE_DESTINATIONS

INVOKE = ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]
# Destination regions of the geographic profiles, with their sources: infra/regions.py.
GEO_DESTINATIONS = {k: list(v) for k, v in PROFILE_DESTINATIONS.items()}
PREFIXES = ("global", "jp", "apac", "us", "eu", "au", "ca", "us-gov")


def split_profile(model_id: str) -> tuple[str | None, str]:
    """(profile prefix or None, foundation-model id)."""
    prefix, _, base = model_id.partition(".")
    return (prefix, base) if prefix in PREFIXES and base else (None, model_id)


def destination_regions(model_id: str, override: list[str] | None = None) -> list[str]:
    prefix, _ = split_profile(model_id)
    if override:
        return override
    if prefix is None or prefix == "global":
        return []
    if prefix not in GEO_DESTINATIONS:
        raise ValueError(f"the destination regions of {model_id!r} are not known here; set them with the "
                         "agentModelRegions (or agentcoreModelRegions) context (aws bedrock "
                         "get-inference-profile lists them)")
    return GEO_DESTINATIONS[prefix]


def profile_arn(model_id: str) -> str:
    return f"arn:{cdk.Aws.PARTITION}:bedrock:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}:inference-profile/{model_id}"


def invoke_statements(model_id: str, regions: list[str] | None = None) -> list[iam.PolicyStatement]:
    """Exactly what invoking `model_id` needs: no wildcard action, no other model."""
    p = cdk.Aws.PARTITION
    prefix, base = split_profile(model_id)
    if prefix is None:
        return [iam.PolicyStatement(actions=INVOKE,
                                    resources=[f"arn:{p}:bedrock:{cdk.Aws.REGION}::foundation-model/{model_id}"])]
    profile = profile_arn(model_id)
    via_profile = {"StringEquals": {"bedrock:InferenceProfileArn": profile}}
    statements = [iam.PolicyStatement(actions=INVOKE, resources=[profile]),
                  iam.PolicyStatement(actions=["bedrock:GetInferenceProfile"], resources=[profile])]
    if prefix == "global":
        def only(region: str) -> dict:
            return {"StringEquals": {"bedrock:InferenceProfileArn": profile, "aws:RequestedRegion": region}}

        statements += [
            iam.PolicyStatement(actions=INVOKE, conditions=only(cdk.Aws.REGION),
                                resources=[f"arn:{p}:bedrock:{cdk.Aws.REGION}::foundation-model/{base}"]),
            iam.PolicyStatement(actions=INVOKE, resources=[f"arn:{p}:bedrock:::foundation-model/{base}"],
                                conditions=only("unspecified")),
        ]
    else:
        statements.append(iam.PolicyStatement(
            actions=INVOKE, resources=[f"arn:{p}:bedrock:{r}::foundation-model/{base}"
                                       for r in destination_regions(model_id, regions)],
            conditions=via_profile))
    return statements


# Bedrock's Messages-API endpoint (bedrock-mantle), for models served only there (citations/families.py MODELS):
# AWS docs inference ("Making inference requests", bedrock-mantle endpoint: CreateInference, GetProject,
# ListProjects, ListTagsForResources) and the managed policy AmazonBedrockMantleInferenceAccess (CreateInference and
# Get*/List* on `arn:aws:bedrock-mantle:*:*:project/*`). Inference runs in a project (the default one unless a
# request names another), so the grant is on this account's projects in this region, not on a model.
MANTLE_INFERENCE = ["bedrock-mantle:CreateInference", "bedrock-mantle:GetProject"]


def mantle_statements() -> list[iam.PolicyStatement]:
    return [iam.PolicyStatement(actions=MANTLE_INFERENCE, resources=[
        f"arn:{cdk.Aws.PARTITION}:bedrock-mantle:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}:project/*"])]
