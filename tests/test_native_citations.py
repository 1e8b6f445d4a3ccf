"""Native citations: Strands 1.62's BedrockModel cannot carry Converse `searchResult` blocks; our subclass formats a
ConverseStream request that botocore's own validator accepts (bedrock-runtime service model), with the guardrail
in it; and the mode is refused for models that do not cite search results."""

from __future__ import annotations

import boto3
import pytest
from botocore.validate import validate_parameters
from strands.models.bedrock import BedrockModel

from citerag.adapters.bedrock_citations import SearchResultBedrockModel, supports_native_citations
from citerag.components import Components
from citerag.errors import CiteragError
from citerag.settings import Settings

MESSAGES = [
    {"role": "user", "content": [{"text": "What does error E2 mean?"}]},
    {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tooluse_1", "name": "search_documents",
                                                   "input": {"query": "error E2"}}}]},
    {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_1", "status": "success", "content": [
        {"searchResult": {"source": "S1-abcdef", "title": "Kumo Pure 300 manual",
                          "content": [{"text": "Error E2 means the air quality sensor is dirty."}],
                          "citations": {"enabled": True}}}]}}]},
]
SESSION = boto3.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name="ap-northeast-1")
TOOL = {"name": "search_documents", "description": "Search.", "inputSchema": {"json": {"type": "object",
                                                                                         "properties": {}}}}


def test_strands_bedrock_model_cannot_carry_search_results():
    with pytest.raises(TypeError, match="searchResult"):
        BedrockModel(model_id="jp.anthropic.claude-sonnet-4-5-20250929-v1:0", boto_session=SESSION).format_request(
            MESSAGES, [TOOL])


def test_the_adapter_formats_a_request_botocore_accepts():
    model = SearchResultBedrockModel(model_id="jp.anthropic.claude-sonnet-4-5-20250929-v1:0", boto_session=SESSION,
                                     guardrail_id="gr-123", guardrail_version="1")
    request = model.format_request(MESSAGES, [TOOL], [{"text": "system"}])
    block = request["messages"][2]["content"][0]["toolResult"]["content"][0]["searchResult"]
    assert block == {"source": "S1-abcdef", "title": "Kumo Pure 300 manual", "citations": {"enabled": True},
                     "content": [{"text": "Error E2 means the air quality sensor is dirty."}]}
    assert request["guardrailConfig"]["guardrailIdentifier"] == "gr-123"
    shape = boto3.client("bedrock-runtime", region_name="ap-northeast-1", aws_access_key_id="t",
                         aws_secret_access_key="t").meta.service_model.operation_model("ConverseStream").input_shape
    validate_parameters(request, shape)  # raises ParamValidationError on any unknown or missing member


@pytest.mark.parametrize(("model_id", "supported"), [
    ("jp.anthropic.claude-sonnet-4-5-20250929-v1:0", True),
    ("anthropic.claude-sonnet-4-20250514-v1:0", True),
    ("us.anthropic.claude-opus-4-1-20250805-v1:0", True),
    ("anthropic.claude-3-5-haiku-20241022-v1:0", True),
    ("jp.anthropic.claude-haiku-4-5-20251001-v1:0", False),
    ("anthropic.claude-opus-4-5-20251101-v1:0", False),
    ("amazon.nova-pro-v1:0", False),
])
def test_native_mode_only_for_models_that_cite_search_results(model_id, supported):
    assert supports_native_citations(model_id) is supported


def test_components_refuse_native_mode_for_other_models(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    comps = Components(Settings(data_dir=tmp_path, embedder="hashing", chat_model_id="jp.anthropic.claude-haiku-4-5-"
                                "20251001-v1:0", agentcore_citations="native"))
    with pytest.raises(CiteragError, match="cannot cite search results natively"):
        _ = comps.agent_model
