"""What a deployment region decides, in one table: whether Agents Classic and AgentCore are offered there, which
inference-profile geography its default model goes through (and where that geography may route), and which guardrail
profile the Standard-tier guardrail uses (and where that may route).

Sources (read 2026-11; `docs/models-and-regions.md` explains how to re-check them):
- Agents Classic regions: AWS docs bedrock/latest/userguide/agents-supported ("Amazon Bedrock Agents is supported in
  the following Regions").
- AgentCore regions: AWS docs bedrock-agentcore/latest/devguide/agentcore-regions (the English table; a region is
  listed here when Runtime, Gateway and Memory are all offered, as the stack deploys all three).
- Which geographic profile exists for Claude Sonnet 4.6: Anthropic's "Claude on Amazon Bedrock (legacy)" model table
  (global, us, eu, jp: yes; apac: no). A region whose geography has no profile for the model uses `global.`.
- Profile destination regions: AWS docs inference-profiles-support and aws-cdk-lib
  CrossRegionInferenceProfileRegion (jp: Tokyo and Osaka; us, eu and apac as listed below).
- Guardrail profiles and their destinations: AWS docs guardrails-cross-region-support (us.guardrail.v1:0 from
  us-east-1/us-east-2/us-west-2: us-east-1, us-east-2, us-west-2; eu.guardrail.v1:0 from eu-central-1 and eu-west-1:
  eu-central-1, eu-west-1, eu-west-3, eu-north-1; apac.guardrail.v1:0 from Tokyo as below).

A region not in the table fails synthesis by name; every derived value can still be overridden with context
(agentModelId, agentModelRegions, guardrailProfileId, guardrailProfileRegions).
"""

from __future__ import annotations

from dataclasses import dataclass

CLASSIC_REGIONS = frozenset({
    "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-1", "ap-southeast-2", "ca-central-1",
    "eu-central-1", "eu-central-2", "eu-west-1", "eu-west-2", "eu-west-3", "sa-east-1", "us-east-1", "us-east-2",
    "us-gov-west-1", "us-west-2"})
AGENTCORE_REGIONS = frozenset({
    "us-east-1", "us-east-2", "us-west-2", "eu-central-1", "eu-west-1", "eu-west-2", "eu-west-3", "eu-north-1",
    "ap-south-1", "ap-southeast-1", "ap-southeast-2", "ap-northeast-1", "ap-northeast-2", "ca-central-1"})

# Where a geographic inference profile may route a request (IAM needs the foundation model in each).
PROFILE_DESTINATIONS: dict[str, tuple[str, ...]] = {
    "jp": ("ap-northeast-1", "ap-northeast-3"),
    "apac": ("ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1", "ap-south-2", "ap-southeast-1",
             "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5", "ap-southeast-7", "ap-east-2",
             "me-central-1"),
    "us": ("us-east-1", "us-east-2", "us-west-2"),
    "eu": ("eu-central-1", "eu-west-1", "eu-west-3", "eu-north-1", "eu-south-1", "eu-south-2"),
}

_US_RAIL = ("us.guardrail.v1:0", ("us-east-1", "us-east-2", "us-west-2"))
_EU_RAIL = ("eu.guardrail.v1:0", ("eu-central-1", "eu-west-1", "eu-west-3", "eu-north-1"))
_APAC_RAIL = ("apac.guardrail.v1:0", ("ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
                                      "ap-southeast-1", "ap-southeast-2"))


@dataclass(frozen=True)
class RegionDefaults:
    region: str
    model_geography: str  # the default model's profile prefix: jp, us, eu or global
    guardrail_profile: str | None  # None: no cross-region guardrail profile (the Classic tier is used)
    guardrail_regions: tuple[str, ...]

    @property
    def classic(self) -> bool:
        return self.region in CLASSIC_REGIONS

    @property
    def agentcore(self) -> bool:
        return self.region in AGENTCORE_REGIONS

    def model_id(self, base_model: str) -> str:
        return f"{self.model_geography}.{base_model}"

    def model_regions(self) -> list[str]:
        """Destination regions of the default profile ([] for global: IAM then uses the region-less ARN)."""
        return list(PROFILE_DESTINATIONS.get(self.model_geography, ()))


def _row(region: str, geography: str, rail: tuple[str, tuple[str, ...]] | None) -> RegionDefaults:
    return RegionDefaults(region, geography, rail[0] if rail else None, rail[1] if rail else ())


REGIONS: dict[str, RegionDefaults] = {r.region: r for r in (
    _row("ap-northeast-1", "jp", _APAC_RAIL),
    _row("ap-northeast-3", "jp", _APAC_RAIL),  # Osaka: AgentCore/Classic are not offered; listed for the message
    _row("ap-northeast-2", "global", _APAC_RAIL),
    _row("ap-south-1", "global", _APAC_RAIL),
    _row("ap-southeast-1", "global", _APAC_RAIL),
    _row("ap-southeast-2", "global", _APAC_RAIL),
    _row("us-east-1", "us", _US_RAIL),
    _row("us-east-2", "us", _US_RAIL),
    _row("us-west-2", "us", _US_RAIL),
    _row("eu-central-1", "eu", _EU_RAIL),
    _row("eu-west-1", "eu", _EU_RAIL),
    _row("eu-west-3", "eu", _EU_RAIL),
    _row("eu-north-1", "eu", _EU_RAIL),
    _row("eu-west-2", "global", None),
    _row("eu-central-2", "global", None),
    _row("ca-central-1", "global", None),
    _row("sa-east-1", "global", None),
)}

# The region the defaults describe when synthesis has no region (no CDK_DEFAULT_REGION, no credentials): the one the
# project's first users deploy to, so an offline `cdk synth` shows what such a deploy gets.
FALLBACK_REGION = "ap-northeast-1"


class UnsupportedRegion(ValueError):
    pass


def defaults_for(region: str | None) -> RegionDefaults:
    name = region or FALLBACK_REGION
    if name not in REGIONS:
        raise UnsupportedRegion(
            f"citerag has no defaults for the region {name!r}: it knows {', '.join(sorted(REGIONS))}. Deploy to one "
            "of those, or add the region to infra/regions.py with its sources (docs/models-and-regions.md).")
    return REGIONS[name]


def check_runtimes(region: str | None, runtimes: list[str]) -> None:
    """Fail by name when a chosen runtime is not offered in the region (only when the region is known)."""
    if not region:
        return
    d = defaults_for(region)
    missing = [name for name, offered in (("classic", d.classic), ("agentcore", d.agentcore))
               if name in runtimes and not offered]
    if missing:
        where = {"classic": "Bedrock Agents Classic (docs agents-supported)",
                 "agentcore": "Bedrock AgentCore Runtime, Gateway and Memory (docs agentcore-regions)"}
        offered = [n for n, ok in (("classic", d.classic), ("agentcore", d.agentcore)) if ok]
        hint = f"; use -c runtimes={','.join(offered)}" if offered else "; choose another region"
        raise UnsupportedRegion(
            f"{' and '.join(where[m] for m in missing)} not offered in {region}{hint}.")
