"""The Bedrock guardrail every model call goes through (Classic agent and AgentCore agent alike): prompt attacks,
harmful content, PII anonymisation, denied topics."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_bedrock as bedrock

from infra.common import topic_name
from infra.config import DeployConfig


def build(stack: cdk.Stack, c: DeployConfig) -> tuple[bedrock.CfnGuardrail, bedrock.CfnGuardrailVersion]:
    guardrail = bedrock.CfnGuardrail(
        stack, "Guardrail", name=f"{stack.stack_name}-guardrail",
        blocked_input_messaging="Sorry, I cannot help with that request.",
        blocked_outputs_messaging="Sorry, I cannot share that answer.",
        content_policy_config=bedrock.CfnGuardrail.ContentPolicyConfigProperty(filters_config=[
            bedrock.CfnGuardrail.ContentFilterConfigProperty(type="PROMPT_ATTACK", input_strength="HIGH",
                                                             output_strength="NONE"),
            *[bedrock.CfnGuardrail.ContentFilterConfigProperty(type=t, input_strength="HIGH",
                                                                output_strength="HIGH")
              for t in ("HATE", "VIOLENCE", "SEXUAL", "INSULTS", "MISCONDUCT")]]),
        sensitive_information_policy_config=bedrock.CfnGuardrail.SensitiveInformationPolicyConfigProperty(
            pii_entities_config=[bedrock.CfnGuardrail.PiiEntityConfigProperty(type=t, action="ANONYMIZE")
                                 for t in ("EMAIL", "PHONE", "CREDIT_DEBIT_CARD_NUMBER", "NAME", "ADDRESS")]),
        topic_policy_config=bedrock.CfnGuardrail.TopicPolicyConfigProperty(topics_config=[
            bedrock.CfnGuardrail.TopicConfigProperty(name=topic_name(t), definition=f"Requests for {t.lower()}.",
                                                     type="DENY") for t in c.denied_topics])
        if c.denied_topics else None,
    )
    guardrail_version = bedrock.CfnGuardrailVersion(stack, "GuardrailVersion",
                                                    guardrail_identifier=guardrail.attr_guardrail_id)
    return guardrail, guardrail_version
