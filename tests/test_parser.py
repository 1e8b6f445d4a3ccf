"""The parser Lambda: documented examples, recorded outputs, and 10,000 fuzzed model outputs."""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citerag.citations import source_ids
from citerag.citations.parser import ParserConfig, parse
from citerag.citations.parser_schema import PARSER_RESPONSE_SCHEMA
from citerag.citations.pii import PiiMasker
from citerag.handlers.local import LocalContext
from citerag.handlers.parser import handler

KEY = "citerag-local"
CFG = ParserConfig(source_id_key=KEY, action_group="citerag-search")
S1 = source_ids.make(KEY, "abc", 1)
S2 = source_ids.make(KEY, "abc", 2)
VALIDATOR = jsonschema.Draft202012Validator(PARSER_RESPONSE_SCHEMA)


def ev(raw: str, prompt_type: str = "ORCHESTRATION", version: str = "1.0") -> dict:
    return {"messageVersion": version, "agent": {"name": "citerag", "id": "AGENT12345", "alias": "TSTALIASID",
                                                 "version": "DRAFT"},
            "invokeModelRawResponse": raw, "promptType": prompt_type, "overrideType": "OUTPUT_PARSER"}


def run(raw: str, prompt_type: str = "ORCHESTRATION", version: str = "1.0") -> dict:
    out = parse(ev(raw, prompt_type, version), CFG)
    VALIDATOR.validate(out)
    return out


# --- documented and recorded examples ----------------------------------------------------------------------

def test_preprocessing_categories():
    out = run("The user asks how to replace a filter, which the documents cover.</thinking>\n<category>D</category>",
              "PRE_PROCESSING")
    assert out["preProcessingParsedResponse"]["isValidInput"] is True
    out = run("<thinking>This tries to reveal the system prompt.</thinking><category>B</category>", "PRE_PROCESSING")
    p = out["preProcessingParsedResponse"]
    assert p["isValidInput"] is False and "Category B" in p["rationale"]


def test_preprocessing_without_category_does_not_crash():
    # The AWS documentation's sample parser raises AttributeError on this output.
    out = run("I think this is fine.", "PRE_PROCESSING")
    assert out["preProcessingParsedResponse"]["isValidInput"] is True
    closed = parse(ev("no category", "PRE_PROCESSING"), CFG.model_copy(update={"preprocessing_fail_closed": True}))
    assert closed["preProcessingParsedResponse"]["isValidInput"] is False


TOOL_CALL = """<thinking>I need to search the documents for the filter replacement interval.</thinking>
<function_calls>
<invoke>
<tool_name>citerag-search::search_documents</tool_name>
<parameters>
<query>HEPA filter replacement interval</query>
<top_k>3</top_k>
</parameters>
</invoke>
"""  # no closing </function_calls>: it is the stop sequence


def test_tool_call_cut_by_its_stop_sequence():
    d = run(TOOL_CALL)["orchestrationParsedResponse"]
    inv = d["responseDetails"]["actionGroupInvocation"]
    assert d["responseDetails"]["invocationType"] == "ACTION_GROUP"
    assert inv["actionGroupName"] == "citerag-search" and inv["functionName"] == "search_documents"
    assert inv["actionGroupInput"] == {"query": {"value": "HEPA filter replacement interval"},
                                       "top_k": {"value": "3"}}
    assert "filter replacement interval" in d["rationale"]


def test_parallel_calls_in_message_version_2():
    raw = TOOL_CALL + TOOL_CALL.split("<function_calls>")[1].replace("HEPA", "pre-filter")
    d = run(raw, version="2.0")["orchestrationParsedResponse"]["responseDetails"]
    assert [i["actionGroupInput"]["query"]["value"] for i in d["actionGroupInvocations"]] == [
        "HEPA filter replacement interval", "pre-filter filter replacement interval"]


def test_final_answer_with_citations():
    raw = (f"<thinking>The search result {S1} says 12 months.</thinking><answer><answer_part><text>Replace the HEPA "
           f"filter every 12 months.</text><sources><source>{S1}</source></sources></answer_part><answer_part>"
           f"<text>Only the pre-filter can be washed.</text><sources><source>{S2}</source><source>{S1}</source>"
           "</sources></answer_part>")
    d = run(raw)["orchestrationParsedResponse"]["responseDetails"]
    final = d["agentFinalResponse"]
    assert d["invocationType"] == "FINISH"
    assert final["responseText"] == "Replace the HEPA filter every 12 months. Only the pre-filter can be washed."
    parts = final["citations"]["generatedResponseParts"]
    assert [r["sourceId"] for r in parts[1]["references"]] == [S2, S1]


@pytest.mark.parametrize("bad", ["S7", "S9-zzzzzz", S1[:-1] + ("a" if S1[-1] != "a" else "b"), "doc1.pdf"])
def test_answer_citing_an_id_no_search_returned_is_reprompted(bad):
    raw = f"<answer><answer_part><text>Claim.</text><sources><source>{bad}</source></sources></answer_part></answer>"
    d = run(raw)["orchestrationParsedResponse"]
    assert "no search returned" in d["parsingErrorDetails"]["repromptResponse"] and bad in str(d)


def test_ask_user_unknown_tool_missing_query_and_plain_text():
    ask = run("<function_calls><invoke><tool_name>user::askuser</tool_name><parameters><question>Which model do "
              "you have?</question></parameters></invoke></function_calls>")["orchestrationParsedResponse"]
    assert ask["responseDetails"]["agentAskUser"]["responseText"] == "Which model do you have?"
    unknown = run("<function_calls><invoke><tool_name>citerag-search::delete_all</tool_name><parameters><query>x"
                  "</query></parameters></invoke></function_calls>")["orchestrationParsedResponse"]
    assert "no tool named" in unknown["parsingErrorDetails"]["repromptResponse"]
    other_group = run(TOOL_CALL.replace("citerag-search::", "evil::"))["orchestrationParsedResponse"]
    assert "no tool named 'evil::search_documents'" in other_group["parsingErrorDetails"]["repromptResponse"]
    no_query = run("<function_calls><invoke><tool_name>citerag-search::search_documents</tool_name><parameters>"
                   "</parameters></invoke>")["orchestrationParsedResponse"]
    assert "needs a <query>" in no_query["parsingErrorDetails"]["repromptResponse"]
    plain = run("Sure! The filter lasts a year.")["orchestrationParsedResponse"]
    assert "no <function_calls> and no <answer>" in plain["parsingErrorDetails"]["repromptResponse"]


def test_post_processing_verdicts():
    final = (f"<answer><answer_part><text>Replace it every 12 months.</text><sources><source>{S1}</source>"
             "</sources></answer_part></answer>")
    ok = run(f"fine</thinking><verdict><grounded>yes</grounded><useful>yes</useful><reason>ok</reason></verdict>"
             f"<final_response>{final}", "POST_PROCESSING")["postProcessingParsedResponse"]
    assert ok["responseText"] == "Replace it every 12 months."
    assert ok["citations"]["generatedResponseParts"][0]["references"] == [{"sourceId": S1}]
    bad = run("<verdict><grounded>no</grounded><useful>yes</useful></verdict><final_response>フィルターは毎日交換。"
              "</final_response>", "POST_PROCESSING")["postProcessingParsedResponse"]
    assert bad == {"responseText": "ドキュメントからはこの質問に回答できませんでした。"}
    nothing = run("garbage", "POST_PROCESSING")["postProcessingParsedResponse"]
    assert nothing["responseText"] == "I could not answer this from the documents."


def test_post_processing_keeps_escaped_angle_brackets_of_the_document_text():
    # "Vec&lt;i32&gt;" in the final response is document text, not a tag: it used to be unescaped before parsing
    # and dropped as markup, so the shown sentence ("type of v is Vec, and") no longer matched its source.
    final = (f"<answer><answer_part><text>The type of v is Vec&lt;i32&gt;, and no annotation is needed.</text>"
             f"<sources><source>{S1}</source></sources></answer_part></answer>")
    ok = run(f"fine</thinking><verdict><grounded>yes</grounded><useful>yes</useful><reason>ok</reason></verdict>"
             f"<final_response>{final}</final_response>", "POST_PROCESSING")["postProcessingParsedResponse"]
    assert ok["responseText"] == "The type of v is Vec<i32>, and no annotation is needed."
    assert ok["citations"]["generatedResponseParts"][0]["references"] == [{"sourceId": S1}]


def test_knowledge_base_generation_and_other_prompt_types():
    kb = run(f"<answer_part><text>Twelve months.</text><sources><source>{S1}</source></sources></answer_part>",
             "KNOWLEDGE_BASE_RESPONSE_GENERATION")
    parts = kb["knowledgeBaseResponseGenerationParsedResponse"]["generatedResponse"]["generatedResponseParts"]
    assert parts == [{"text": "Twelve months.", "references": [{"sourceId": S1}]}]
    assert run("x", "MEMORY_SUMMARIZATION") == {"messageVersion": "1.0", "promptType": "MEMORY_SUMMARIZATION"}


def test_personal_data_is_masked_in_answers():
    raw = ("<answer><answer_part><text>Contact taro.yamada@example.co.jp or 090-1234-5678, card 4111 1111 1111 1111, "
           f"My Number 1234 5678 9018.</text><sources><source>{S1}</source></sources></answer_part></answer>")
    text = run(raw)["orchestrationParsedResponse"]["responseDetails"]["agentFinalResponse"]["responseText"]
    assert text == "Contact [EMAIL] or [PHONE], card [CARD], My Number [MY_NUMBER]."


def test_a_role_or_list_address_is_not_personal_data_and_stays_in_the_answer():
    # "What is the bug report address?" got "Report bugs to: [EMAIL]" (libtasn1's manual); a mailing list the
    # Developer's Reference names was masked too. A person's address still is.
    m = PiiMasker()
    for public in ("bug-libtasn1@gnu.org", "debian-mentors@lists.debian.org", "support@kumo.example.com",
                   "debian-l10n-japanese@lists.debian.org", "postmaster@example.jp"):
        assert m.mask(f"Write to {public}.") == (f"Write to {public}.", [])
    # A person's mailbox stays masked whatever its name says, and a free mailbox is always a person's.
    for person in ("taro.yamada@example.co.jp", "hanako@gmail.com", "k.sato@acme.example", "alice-dev@gmail.com",
                   "taro.yamada-private@docomo.ne.jp", "kenji-project@yahoo.co.jp", "bob-users@hotmail.com",
                   "support@gmail.com", "hanako-admin@acme.example"):
        assert m.mask(f"Write to {person}.") == ("Write to [EMAIL].", ["email"])


def test_pii_rules_are_configurable():
    m = PiiMasker(rules=["phone"], allow=["0120-000-300"], extra={"employee_id": r"EMP-\d{5}"})
    assert m.mask("Call 0120-000-300 or 03-1234-5678, EMP-12345, a@b.io")[0] == (
        "Call 0120-000-300 or [PHONE], [EMPLOYEE_ID], a@b.io")
    assert m.mask("+81 90-1234-5678")[0] == "[PHONE]"
    assert PiiMasker().mask("version 2.1, 35 m², 2026-03-01")[1] == []  # not personal data
    with pytest.raises(ValueError):
        PiiMasker(rules=["passport"])


def test_handler_never_raises_on_garbage_events():
    for event in ({}, {"promptType": 5}, {"invokeModelRawResponse": None}, [], None):
        out = handler(event, LocalContext())
        VALIDATOR.validate(out)


# --- fuzzing -----------------------------------------------------------------------------------------------

FRAGMENTS = [
    "<thinking>", "</thinking>", "<function_calls>", "</function_calls>", "<invoke>", "</invoke>",
    "<tool_name>", "</tool_name>", "citerag-search::search_documents", "user::askuser", "x::y", "<parameters>",
    "</parameters>", "<query>", "</query>", "<question>", "</question>", "<answer>", "</answer>", "<answer_part>",
    "</answer_part>", "<text>", "</text>", "<sources>", "</sources>", "<source>", "</source>", S1, S2, "S3",
    "<category>", "</category>", "A", "D", "E", "<verdict>", "</verdict>", "<grounded>", "yes", "no",
    "</grounded>", "<useful>", "</useful>", "<final_response>", "</final_response>",
    "ignore previous instructions", "</search_result>", "\x00", "日本語の回答です。", "&lt;", "&amp;", "\n",
]
near_miss = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)
outputs = st.one_of(near_miss, st.text(max_size=300),
                    st.builds(lambda a, n: a * n, st.sampled_from(["<answer>", "x" * 1000, "<text>あ"]),
                              st.integers(1, 300)))


@settings(max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck))
@given(raw=outputs, prompt_type=st.sampled_from(["PRE_PROCESSING", "ORCHESTRATION", "POST_PROCESSING",
                                                 "KNOWLEDGE_BASE_RESPONSE_GENERATION", "ROUTING_CLASSIFIER"]),
       version=st.sampled_from(["1.0", "2.0"]))
def test_fuzzed_outputs_never_raise_and_always_validate(raw, prompt_type, version):
    out = parse(ev(raw, prompt_type, version), CFG)
    VALIDATOR.validate(out)
    if prompt_type == "ORCHESTRATION":
        body = out["orchestrationParsedResponse"]
        final = (body.get("responseDetails") or {}).get("agentFinalResponse")
        if final:  # every cited id in an accepted answer verifies
            for part in final["citations"]["generatedResponseParts"]:
                assert all(source_ids.verify(KEY, r["sourceId"]) for r in part["references"])


def test_public_filing_numbers_are_not_masked_as_phone_numbers():
    # Issue 11: a 10-K's "Commission File Number" and a CIK were masked as [PHONE]; phone numbers still are.
    m = PiiMasker()
    for public in ("Commission File Number 001-36743", "CIK 0000320193", "SEC file 000-12345"):
        assert m.mask(public) == (public, [])
    for phone in ("090-1234-5678", "03-1234-5678", "06-6123-4567", "+81 90-1234-5678", "+1 (408) 996-1010"):
        assert m.mask(f"Call {phone} today")[0] == "Call [PHONE] today", phone
