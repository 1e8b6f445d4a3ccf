"""Bedrock Agents Classic: the agent with the `search_documents` action group (search Lambda), the four
overridden prompts with the parser Lambda, the guardrail, and the alias apps call through InvokeAgent."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_bedrock as bedrock
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from citerag.citations import prompts as prompt_sets
from citerag.citations.families import family_for
from citerag.citations.tool import ACTION_GROUP, FUNCTION_DESCRIPTION, FUNCTION_NAME, INSTRUCTION, PARAMETERS
from infra import guardrail as guardrail_mod
from infra.common import ack_xray, function
from infra.config import DeployConfig
from infra.data import SharedData
from infra.models import invoke_statements

# No knowledge base is attached (search is the action group), so its prompt is not overridden.
OVERRIDDEN = ("PRE_PROCESSING", "ORCHESTRATION", "POST_PROCESSING")


def function_schema() -> bedrock.CfnAgent.FunctionSchemaProperty:
    """The action group's schema, generated from the handler's own definition (citerag.citations.tool)."""
    return bedrock.CfnAgent.FunctionSchemaProperty(functions=[bedrock.CfnAgent.FunctionProperty(
        name=FUNCTION_NAME, description=FUNCTION_DESCRIPTION,
        parameters={name: bedrock.CfnAgent.ParameterDetailProperty(
            type=p["type"], description=p["description"], required=bool(p.get("required")))
            for name, p in PARAMETERS.items()},
    )])


def config_hash(c: DeployConfig, prompts: dict, guardrail: str = "") -> str:
    """SHA-256 of the agent's definition: model, instruction, tool schema, prompt templates and parameters, and
    the guardrail version's description, which hashes its definition (a changed guardrail is a new guardrail
    version, which the alias must follow)."""
    definition = {"model": c.agent_model_id, "instruction": INSTRUCTION, "action_group": ACTION_GROUP,
                  "guardrail": guardrail,
                  "function": [FUNCTION_NAME, FUNCTION_DESCRIPTION, PARAMETERS],
                  "prompts": {t: {k: v for k, v in p.items() if k != "file"} for t, p in sorted(prompts.items())}}
    return hashlib.sha256(json.dumps(definition, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass
class ClassicAgent:
    agent: bedrock.CfnAgent
    alias: bedrock.CfnAgentAlias
    functions: dict[str, lambda_.Function]


def build(stack: cdk.Stack, c: DeployConfig, data: SharedData, retention: logs.RetentionDays,
          guardrail: bedrock.CfnGuardrail, guardrail_version: bedrock.CfnGuardrailVersion) -> ClassicAgent:
    search = function(stack, "Search", "citerag.handlers.search.handler", code=data.code, timeout=30, memory=1024,
                      env={**data.env, "CITERAG_RESPONSE_BUDGET_BYTES": str(c.response_budget_bytes),
                           "CITERAG_ACL_REQUIRED": str(c.acl_required).lower(),
                           **({"CITERAG_RERANK_MODEL_ARN": c.rerank_model_arn} if c.rerank_model_arn else {})},
                      retention=retention)
    data.grant_search(stack, search)
    if c.rerank_model_arn:
        search.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:Rerank"], resources=["*"]))
        search.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"],
                                                      resources=[c.rerank_model_arn]))
    parser = function(stack, "Parser", "citerag.handlers.parser.handler", code=data.slim_code, timeout=30, memory=512,
                      env={"CITERAG_ACTION_GROUP": ACTION_GROUP, "POWERTOOLS_LOG_LEVEL": "INFO"},
                      retention=retention)
    data.grant_source_ids(parser)
    ack_xray(parser)

    agent_role = iam.Role(stack, "AgentRole", assumed_by=iam.ServicePrincipal(
        "bedrock.amazonaws.com", conditions={
            "StringEquals": {"aws:SourceAccount": cdk.Aws.ACCOUNT_ID},
            "ArnLike": {"aws:SourceArn": f"arn:{cdk.Aws.PARTITION}:bedrock:{cdk.Aws.REGION}:"
                                         f"{cdk.Aws.ACCOUNT_ID}:agent/*"}}))
    # Created (and validated by CreateAgent) before the agent: the policy must already allow the profile.
    model_policy = iam.Policy(stack, "AgentModelAccess", statements=[
        *invoke_statements(c.agent_model_id, c.agent_model_regions or None),
        *([iam.PolicyStatement(actions=["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
                               resources=c.agent_model_arns)] if c.agent_model_arns else []),
        iam.PolicyStatement(actions=["bedrock:ApplyGuardrail", "bedrock:GetGuardrail"],
                            resources=[guardrail.attr_guardrail_arn, *guardrail_mod.profile_arns(c)])])
    model_policy.attach_to_role(agent_role)
    family = family_for(c.agent_model_id)
    prompts = {t: p for t, p in prompt_sets.load(str(prompt_sets.prompts_dir(family.name))).items() if t in OVERRIDDEN}
    agent = bedrock.CfnAgent(
        stack, "Agent", agent_name=f"{stack.stack_name}-agent", agent_resource_role_arn=agent_role.role_arn,
        foundation_model=c.agent_model_id, instruction=INSTRUCTION, idle_session_ttl_in_seconds=900,
        auto_prepare=True, description="Answers from your documents with verifiable citations",
        action_groups=[bedrock.CfnAgent.AgentActionGroupProperty(
            action_group_name=ACTION_GROUP, description="Search the documents",
            action_group_executor=bedrock.CfnAgent.ActionGroupExecutorProperty(lambda_=search.function_arn),
            function_schema=function_schema())],
        prompt_override_configuration=bedrock.CfnAgent.PromptOverrideConfigurationProperty(
            override_lambda=parser.function_arn,
            prompt_configurations=[bedrock.CfnAgent.PromptConfigurationProperty(
                prompt_type=ptype, prompt_creation_mode="OVERRIDDEN", parser_mode="OVERRIDDEN",
                prompt_state="ENABLED", base_prompt_template=p["template"],
                # Temperature only: Claude Sonnet 4.5 / Haiku 4.5 and later refuse temperature with top_p.
                inference_configuration=bedrock.CfnAgent.InferenceConfigurationProperty(
                    temperature=p["temperature"], maximum_length=p["maximumLength"],
                    stop_sequences=p["stopSequences"]))
                for ptype, p in prompts.items()]),
        guardrail_configuration=bedrock.CfnAgent.GuardrailConfigurationProperty(
            guardrail_identifier=guardrail.attr_guardrail_id, guardrail_version=guardrail_version.attr_version),
    )
    agent.node.add_dependency(model_policy)
    # There is no AgentVersion resource and no CreateAgentVersion API: an alias update without a routing
    # configuration is what creates a version (botocore bedrock-agent; cfn-lint has no AWS::Bedrock::AgentVersion).
    # The alias description carries a hash of everything that defines the agent, so a deploy that changes the
    # prompts, instruction, action group or model changes the alias and the alias serves a new version.
    digest = config_hash(c, prompts, guardrail_version.description or "")
    alias = bedrock.CfnAgentAlias(stack, "AgentAlias", agent_id=agent.attr_agent_id, agent_alias_name="live",
                                  description=f"citerag agent config {digest}")
    # The agent invokes both functions; neither L2 library grants this, and the parser needs it too.
    for fn, sid in ((search, "AllowAgentInvokeSearch"), (parser, "AllowAgentInvokeParser")):
        fn.add_permission(sid, principal=iam.ServicePrincipal("bedrock.amazonaws.com"),
                          action="lambda:InvokeFunction", source_arn=agent.attr_agent_arn,
                          source_account=cdk.Aws.ACCOUNT_ID)
    return ClassicAgent(agent=agent, alias=alias, functions={"search": search, "parser": parser})
