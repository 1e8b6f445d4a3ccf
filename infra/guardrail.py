"""The Bedrock guardrail every model call goes through (Classic agent and AgentCore agent alike): prompt attacks,
harmful content, PII anonymisation, denied topics.

Standard tier: the Classic tier supports English, French and Spanish only, and the first users write Japanese
(AWS docs guardrails-tiers, guardrails-supported-languages: Japanese "optimized and supported" in Standard).
Standard requires cross-region inference (aws-cdk-lib ContentFiltersTierConfigProperty: "This tier requires that
your guardrail use cross-Region inference"), through the guardrail profile of the region's geography (Tokyo:
`apac.guardrail.v1:0`; CloudFormation takes only its ARN, cfn-lint AWS::Bedrock::Guardrail CrossRegionConfig).
Its checks may run in other APAC regions; `guardrailTier=CLASSIC` keeps them in the region."""

from __future__ import annotations

import hashlib
import json

import aws_cdk as cdk
from aws_cdk import aws_bedrock as bedrock

from infra.common import topic_name
from infra.config import DeployConfig

BLOCKED_INPUT = "Sorry, I cannot help with that request."
BLOCKED_OUTPUT = "Sorry, I cannot share that answer."
HARM_FILTERS = ("HATE", "VIOLENCE", "SEXUAL", "INSULTS", "MISCONDUCT")
PII_ANONYMISED = ("EMAIL", "PHONE", "CREDIT_DEBIT_CARD_NUMBER", "NAME", "ADDRESS")


def definition_hash(stack: cdk.Stack, guardrail: bedrock.CfnGuardrail) -> str:
    """SHA-256 of the guardrail's resolved properties. A GuardrailVersion is a snapshot taken when it is created
    and has no updatable property (cfn-lint's AWS::Bedrock::GuardrailVersion schema: only Description and
    GuardrailIdentifier, both create-only), so a changed guardrail reaches the agents only through a new version:
    the hash in its description replaces it whenever one of the properties listed here changes (every property
    `build` sets; a property set later must be added to the list)."""
    props = {k: getattr(guardrail, k) for k in (
        "name", "blocked_input_messaging", "blocked_outputs_messaging", "cross_region_config",
        "content_policy_config", "sensitive_information_policy_config", "topic_policy_config",
        "word_policy_config", "contextual_grounding_policy_config")}
    return hashlib.sha256(json.dumps(stack.resolve(props), sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def build(stack: cdk.Stack, c: DeployConfig) -> tuple[bedrock.CfnGuardrail, bedrock.CfnGuardrailVersion]:
    guardrail = bedrock.CfnGuardrail(
        stack, "Guardrail", name=f"{stack.stack_name}-guardrail",
        blocked_input_messaging=BLOCKED_INPUT, blocked_outputs_messaging=BLOCKED_OUTPUT,
        cross_region_config=bedrock.CfnGuardrail.GuardrailCrossRegionConfigProperty(
            guardrail_profile_arn=f"arn:{cdk.Aws.PARTITION}:bedrock:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}:"
                                  f"guardrail-profile/{c.guardrail_profile_id}") if c.guardrail_profile_id else None,
        content_policy_config=bedrock.CfnGuardrail.ContentPolicyConfigProperty(
            content_filters_tier_config=bedrock.CfnGuardrail.ContentFiltersTierConfigProperty(
                tier_name=c.guardrail_tier),
            filters_config=[
            bedrock.CfnGuardrail.ContentFilterConfigProperty(type="PROMPT_ATTACK", input_strength="HIGH",
                                                             output_strength="NONE"),
            *[bedrock.CfnGuardrail.ContentFilterConfigProperty(type=t, input_strength="HIGH",
                                                                output_strength="HIGH")
              for t in HARM_FILTERS]]),
        sensitive_information_policy_config=bedrock.CfnGuardrail.SensitiveInformationPolicyConfigProperty(
            pii_entities_config=[bedrock.CfnGuardrail.PiiEntityConfigProperty(type=t, action="ANONYMIZE")
                                 for t in PII_ANONYMISED]),
        topic_policy_config=bedrock.CfnGuardrail.TopicPolicyConfigProperty(
            topics_tier_config=bedrock.CfnGuardrail.TopicsTierConfigProperty(tier_name=c.guardrail_tier),
            topics_config=[
            bedrock.CfnGuardrail.TopicConfigProperty(name=topic_name(t), definition=f"Requests for {t.lower()}.",
                                                     type="DENY") for t in c.denied_topics])
        if c.denied_topics else None,
    )
    digest = definition_hash(stack, guardrail)
    guardrail_version = bedrock.CfnGuardrailVersion(stack, "GuardrailVersion",
                                                    guardrail_identifier=guardrail.attr_guardrail_id,
                                                    description=f"citerag guardrail {digest}")
    return guardrail, guardrail_version


def profile_arns(c: DeployConfig) -> list[str]:
    """ApplyGuardrail on a Standard-tier guardrail also needs its guardrail profile in every destination region
    (docs guardrail-profiles-permissions; unlike model ARNs these carry the account id)."""
    if not c.guardrail_profile_id:
        return []
    return [f"arn:{cdk.Aws.PARTITION}:bedrock:{r}:{cdk.Aws.ACCOUNT_ID}:guardrail-profile/{c.guardrail_profile_id}"
            for r in c.guardrail_profile_regions]
