"""A Claude model Bedrock serves only on its Messages-API endpoint (Opus 4.7): the real `anthropic` SDK's
SigV4-signing client against a local double of bedrock-mantle (citerag.testing.messages_api) that verifies the
signature for the `bedrock-mantle` service, the version header and the body, and answers in the Messages API's wire
format. The whole embedded agent runs through it: the same prompts, parser and source-id checks as with Converse."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

pytest.importorskip("anthropic")

from citerag.cli import app
from citerag.testing.messages_api import MessagesApiDouble

MODEL = "anthropic.claude-opus-4-7"


class Scripted:
    """The model's side of one `ask`: classify, call the search tool, answer citing what the search returned."""

    def __init__(self) -> None:
        self.forge = False

    def __call__(self, body: dict) -> tuple[list[dict], str]:
        system = body.get("system", "")
        results = [b["content"] for m in body["messages"] if isinstance(m["content"], list)
                   for b in m["content"] if b.get("type") == "tool_result"]
        if "classif" in system:
            return [{"type": "text", "text": "<thinking>A question about the documents.</thinking><category>D"}], \
                "stop_sequence"
        if "<latest_response>" in system:
            latest = system.split("<latest_response>")[1].split("</latest_response>")[0]
            return [{"type": "text", "text": "ok</thinking><verdict><grounded>yes</grounded><useful>yes</useful>"
                                             f"</verdict><final_response>{latest}"}], "end_turn"
        if not results:
            return [{"type": "text", "text": "<thinking>Search.</thinking>"},
                    {"type": "tool_use", "id": "toolu_01", "name": body["tools"][0]["name"],
                     "input": {"query": "error E2"}}], "tool_use"
        hits = json.loads(results[-1])["results"]
        hit = next((h for h in hits if "E2" in h["text"]), hits[0])
        sid = "S9-forged1" if self.forge else hit["source_id"]
        sentence = next((s for s in re.split(r"(?<=\.)\s", hit["text"]) if "E2" in s), hit["text"][:80])
        return [{"type": "text", "text": f"<answer><answer_part><text>{sentence}</text><sources><source>{sid}"
                                         "</source></sources></answer_part>"}], "end_turn"


@pytest.fixture
def mantle():
    with MessagesApiDouble(Scripted()) as double:
        yield double


def _env(tmp_path, double, model=MODEL):
    return {"CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path / "data"),
            "CITERAG_CHAT_MODEL_PROVIDER": "bedrock", "CITERAG_CHAT_MODEL_ID": model,
            "ANTHROPIC_BEDROCK_MANTLE_BASE_URL": double.base_url, "AWS_REGION": double.region,
            "AWS_ACCESS_KEY_ID": double.access_key, "AWS_SECRET_ACCESS_KEY": double.secret_key,
            "AWS_SESSION_TOKEN": "", "AWS_BEARER_TOKEN_BEDROCK": "", "AWS_PROFILE": ""}


def _ask(tmp_path, double, *extra):
    env = _env(tmp_path, double)
    env = {k: (v or None) for k, v in env.items()}  # None: unset for the run
    return CliRunner().invoke(app, ["ask", "What does error E2 mean?", "--json", *extra], env=env)


def test_a_messages_api_model_answers_with_citations_through_the_same_agent(mantle, tmp_path):
    r = _ask(tmp_path, mantle)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["answered"] and "E2" in out["answer"]
    cited = out["citations"][0]
    assert "/samples/" in cited["uri"] and "E2" in cited["excerpt"]
    sent = mantle.requests
    assert sent and all(q.path == "/anthropic/v1/messages" and q.headers["anthropic-version"] == "2023-06-01"
                        for q in sent)
    # Signed for bedrock-mantle in the region; the double recomputed each signature before answering.
    assert all(re.match(r"AWS4-HMAC-SHA256 Credential=AKIDMESSAGESDOUBLE/\d{8}/ap-northeast-1/bedrock-mantle/"
                        r"aws4_request, SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$",
                        q.headers["authorization"]) for q in sent)
    bodies = [q.body for q in sent]
    # Opus 4.7 refuses sampling parameters; the model is named in the body, not in the path.
    assert all(b["model"] == MODEL and "temperature" not in b and "top_p" not in b for b in bodies)
    tool_calls = [b for b in bodies if b.get("tools")]
    assert tool_calls[0]["tools"][0]["name"] == "citerag-search__search_documents"
    assert tool_calls[0]["tools"][0]["input_schema"]["type"] == "object"
    # The tool call went back as the assistant's tool_use and the user's tool_result with its id.
    second = tool_calls[1]["messages"]
    assert any(b.get("type") == "tool_use" and b["id"] == "toolu_01" and b["input"] == {"query": "error E2"}
               for m in second if m["role"] == "assistant" for b in m["content"])
    assert any(b.get("type") == "tool_result" and b["tool_use_id"] == "toolu_01"
               for m in second if m["role"] == "user" for b in m["content"])
    # Every conversation ends with a user message (the 4.6-and-later family: no assistant prefill).
    assert all(b["messages"][-1]["role"] == "user" for b in bodies)


def test_a_citation_the_search_never_returned_is_not_shown(mantle, tmp_path):
    mantle.respond.forge = True
    r = _ask(tmp_path, mantle)
    assert r.exit_code == 0, r.output
    assert "S9-forged1" not in r.stdout and not json.loads(r.stdout)["citations"]


def test_a_refusal_from_the_endpoint_is_one_line_with_its_reason(mantle, tmp_path):
    mantle.behaviour.fail_status = 403
    mantle.behaviour.fail_body = {"message": "User: arn:aws:sts::123456789012:assumed-role/x is not authorized to "
                                             "perform: bedrock-mantle:CreateInference"}
    r = _ask(tmp_path, mantle)
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "HTTP 403" in r.output and "bedrock-mantle:CreateInference" in r.output
    assert "123456789012" not in r.output and "arn:aws" not in r.output


def test_a_wrong_signature_is_refused_by_the_double(tmp_path):
    """The double's own check: a request signed for another service does not pass (so the test above means it)."""
    with MessagesApiDouble(Scripted(), service="bedrock") as strict:
        r = _ask(tmp_path, strict)
    assert r.exit_code == 1 and "HTTP 403" in r.output and "/bedrock-mantle/aws4_request" in r.output


def test_the_parser_reads_the_same_response_from_either_endpoint(mantle):
    """One model turn, answered once by Converse (botocore's Stubber checks the shapes) and once by the Messages API
    double: the adapters hand the parser the same Messages-API response JSON."""
    import boto3
    from anthropic import AnthropicBedrockMantle
    from botocore.stub import ANY, Stubber

    from citerag.adapters.converse import BedrockConverseModel
    from citerag.adapters.messages_api import BedrockMessagesModel

    tool = {"name": "citerag-search__search_documents", "description": "Search",
            "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
    prompt = {"system": "rules", "tools": [tool], "messages": [
        {"role": "user", "content": [{"type": "text", "text": "What does error E2 mean?"}, {"type": "text",
                                                                                         "text": ""}]}]}
    blocks = [{"type": "text", "text": "<thinking>Search.</thinking>"},
              {"type": "tool_use", "id": "toolu_01", "name": tool["name"], "input": {"query": "エラー E2"}}]
    mantle.respond = lambda body: (blocks, "tool_use")
    client = AnthropicBedrockMantle(base_url=mantle.base_url, aws_region=mantle.region,
                                    aws_access_key=mantle.access_key, aws_secret_key=mantle.secret_key)
    via_messages = BedrockMessagesModel(client, "anthropic.claude-opus-4-7", sampling=False).complete(
        prompt, prompt_type="ORCHESTRATION", stop_sequences=["</answer>"])
    runtime = boto3.client("bedrock-runtime", region_name="ap-northeast-1", aws_access_key_id="x",
                           aws_secret_access_key="y")
    with Stubber(runtime) as stub:
        stub.add_response("converse", {
            "output": {"message": {"role": "assistant", "content": [
                {"text": "<thinking>Search.</thinking>"},
                {"toolUse": {"toolUseId": "toolu_01", "name": tool["name"], "input": {"query": "エラー E2"}}}]}},
            "stopReason": "tool_use", "usage": {"inputTokens": 40, "outputTokens": 9, "totalTokens": 49},
            "metrics": {"latencyMs": 300}}, {"modelId": ANY, "system": ANY, "messages": ANY, "toolConfig": ANY,
                                             "inferenceConfig": ANY})
        via_converse = BedrockConverseModel(runtime, "anthropic.claude-opus-4-7").complete(
            prompt, prompt_type="ORCHESTRATION", stop_sequences=["</answer>"])

    def shape(raw: str) -> dict:
        body = json.loads(raw)
        return {k: body[k] for k in ("content", "stop_reason", "role", "type")}

    assert shape(via_messages.text) == shape(via_converse.text)
    sent = mantle.requests[-1].body
    assert sent["messages"] == [{"role": "user", "content": [{"type": "text", "text": "What does error E2 mean?"}]}]
    assert sent["system"] == "rules" and sent["stop_sequences"] == ["</answer>"] and "stream" not in sent


# --- the AgentCore agent (Strands) on the same endpoint, streaming, with the guardrail applied around it ------------

class AgentScript:
    """The model's side of one AgentCore turn: classify (no tools), call search_documents, answer citing a result."""

    def __call__(self, body: dict) -> tuple[list[dict], str]:
        if not body.get("tools"):
            return [{"type": "text", "text": "The input is classified.</thinking>\n<category>D</category>"}], \
                "end_turn"
        results = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
                   if b.get("type") == "tool_result"]
        if not results:
            return [{"type": "tool_use", "id": "toolu_01", "name": body["tools"][0]["name"],
                     "input": {"query": "error E2"}}], "tool_use"
        content = results[-1]["content"]
        text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
        hit = next(h for h in json.loads(text)["results"] if "E2" in h["text"])
        sentence = next((s for s in re.split(r"(?<=\.)\s", hit["text"]) if "E2" in s), hit["text"][:80])
        return [{"type": "text", "text": f"<answer><answer_part><text>{sentence}</text><sources><source>"
                                         f"{hit['source_id']}</source></sources></answer_part></answer>"}], "end_turn"


def _agentcore(tmp_path, monkeypatch, double, **settings):
    from citerag.adapters import aws

    from agentcore_support import components

    for key, value in (("ANTHROPIC_BEDROCK_MANTLE_BASE_URL", double.base_url), ("AWS_REGION", double.region),
                       ("AWS_ACCESS_KEY_ID", double.access_key), ("AWS_SECRET_ACCESS_KEY", double.secret_key)):
        monkeypatch.setenv(key, value)
    for key in ("AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    aws.client.cache_clear()
    return components(tmp_path, chat_model_id=MODEL, agentcore_model="bedrock", **settings)


def _turn(comps, question="What does error E2 mean?"):
    import asyncio

    from citerag.runtimes.agentcore.events import TurnRequest

    async def collect():
        return [e async for e in comps.agentcore_agent().stream(
            TurnRequest(question=question, session_id="s" * 36, access={}))]
    return asyncio.run(collect())


def _guardrail_response(action="NONE", outputs=(), assessments=()):
    return {"usage": {"topicPolicyUnits": 1, "contentPolicyUnits": 1, "wordPolicyUnits": 1,
                      "sensitiveInformationPolicyUnits": 1, "sensitiveInformationPolicyFreeUnits": 0,
                      "contextualGroundingPolicyUnits": 0},
            "action": action, "outputs": [{"text": t} for t in outputs], "assessments": list(assessments)}


def test_the_agentcore_agent_answers_with_citations_over_the_streaming_messages_api(tmp_path, monkeypatch):
    with MessagesApiDouble(AgentScript()) as double:
        comps = _agentcore(tmp_path, monkeypatch, double)
        events = _turn(comps)
    final = events[-1]
    assert final["type"] == "answer" and final["answered"], final
    cited = final["citations"][0]["sources"][0]
    assert "E2" in final["text"] and "/samples/" in cited["uri"] and "E2" in cited["excerpt"]
    sent = [q.body for q in double.requests]
    assert len(sent) == 3 and all(b["stream"] is True and b["model"] == MODEL and "temperature" not in b
                                  for b in sent)
    assert all("/bedrock-mantle/aws4_request" in q.headers["authorization"] for q in double.requests)
    assert sent[1]["tools"][0]["name"] == "search_documents"


def test_the_guardrail_is_applied_around_each_messages_api_call(tmp_path, monkeypatch):
    from botocore.stub import ANY, Stubber

    with MessagesApiDouble(AgentScript()) as double:
        comps = _agentcore(tmp_path, monkeypatch, double, guardrail_id="gr-citerag", guardrail_version="3")
        runtime = comps.aws_client("bedrock-runtime", read_timeout=30)
        with Stubber(runtime) as stub:  # checks each ApplyGuardrail request against botocore's model
            for source in ("INPUT", "OUTPUT", "INPUT", "OUTPUT"):  # classification; the answer (after the tool turn)
                stub.add_response("apply_guardrail", _guardrail_response(), {
                    "guardrailIdentifier": "gr-citerag", "guardrailVersion": "3", "source": source, "content": ANY})
            events = _turn(comps)
            stub.assert_no_pending_responses()
        assert events[-1]["type"] == "answer" and events[-1]["answered"]

        blocked = {"topicPolicy": {"topics": [{"name": "Investment advice", "type": "DENY", "action": "BLOCKED"}]}}
        with Stubber(runtime) as stub:
            stub.add_response("apply_guardrail", _guardrail_response(
                "GUARDRAIL_INTERVENED", ["Sorry, I cannot help with that request."], [blocked]),
                {"guardrailIdentifier": "gr-citerag", "guardrailVersion": "3", "source": "INPUT", "content": ANY})
            calls = len(double.requests)
            events = _turn(comps, "Which stock should I buy?")
        # Blocked before any model call: the guardrail's message, not an answer.
        assert len(double.requests) == calls
        assert any(e.get("kind") == "guardrail" and e.get("action") == "INTERVENED" for e in events)
        assert events[-1]["type"] == "answer" and not events[-1]["answered"]
        assert events[-1]["text"] == "Sorry, I cannot help with that request."


def test_a_guardrail_that_only_masks_passes_the_masked_reply_on_and_a_failed_check_fails_the_call():
    import asyncio

    import boto3
    from botocore.stub import ANY, Stubber

    from citerag.adapters.guardrail_model import GuardedModel
    from citerag.errors import DependencyError

    from agentcore_support import ScriptedModel, text_turn, tool_turn

    runtime = boto3.client("bedrock-runtime", region_name="ap-northeast-1", aws_access_key_id="x",
                           aws_secret_access_key="y")
    inner = ScriptedModel(text_turn("Call k.sato@acme.example for exceptions."), tool_turn({"query": "q"}),
                          text_turn("anything"))
    model = GuardedModel(inner, runtime, "gr-citerag", "3")
    question = [{"role": "user", "content": [{"text": "Who handles exceptions?"}]}]

    def run(messages):
        async def collect():
            return [e async for e in model.stream(messages, None, "system")]
        return asyncio.run(collect())

    masked = {"sensitiveInformationPolicy": {"piiEntities": [{"match": "k.sato@acme.example", "type": "EMAIL",
                                                              "action": "ANONYMIZED"}], "regexes": []}}
    with Stubber(runtime) as stub:
        stub.add_response("apply_guardrail", _guardrail_response(), {
            "guardrailIdentifier": "gr-citerag", "guardrailVersion": "3", "source": "INPUT",
            "content": [{"text": {"text": "Who handles exceptions?"}}]})
        reply = _guardrail_response("GUARDRAIL_INTERVENED", ["Call {EMAIL} for exceptions."], [masked])
        stub.add_response("apply_guardrail", reply, {
            "guardrailIdentifier": "gr-citerag", "guardrailVersion": "3", "source": "OUTPUT",
            "content": [{"text": {"text": "Call k.sato@acme.example for exceptions."}}]})
        events = run(question)
        # A reply with no text (a tool call) after a tool result (no user text): nothing to check, passed as is.
        stub.add_response("apply_guardrail", _guardrail_response(), {
            "guardrailIdentifier": "gr-citerag", "guardrailVersion": "3", "source": "INPUT", "content": ANY})
        tool_events = run(question)
        stub.add_client_error("apply_guardrail", "ThrottlingException", "Rate exceeded")
        with pytest.raises(DependencyError, match="guardrail check failed: ThrottlingException"):
            run(question)
        stub.assert_no_pending_responses()
    texts = [e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e]
    assert texts == ["Call {EMAIL} for exceptions."] and not any("redactContent" in e for e in events)
    assert events[-2]["messageStop"]["stopReason"] == "end_turn"  # masked, not blocked: the turn goes on
    assert any("toolUse" in str(e) for e in tool_events) and tool_events[-2]["messageStop"]["stopReason"] == "tool_use"
