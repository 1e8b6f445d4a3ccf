"""The post-deploy smoke test's own checks: what it accepts as a cited answer, and how it reads the stack."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from citerag.citations.answer import Answer, Citation
from citerag.errors import CiteragError
from citerag.search.passage import Passage
from scripts.smoke_test import KEY, SAMPLE, check_answer, stack_outputs

DOC = SAMPLE.read_text(encoding="utf-8")
URI = "s3://citerag-documents/" + KEY
HOURS = "Phone support is available on weekdays from 9:00 to 18:00 (Japan time), except public holidays."


def answer(text: str, uri: str = URI, excerpt: str = HOURS, answered: bool = True) -> Answer:
    source = Passage(text=excerpt, uri=uri, excerpt=excerpt, source_id="S1")
    return Answer(text=text, answered=answered, sources=[source],
                  citations=[Citation(text=text, start=0, end=len(text), sources=[source])])


def test_a_cited_answer_from_the_uploaded_document_passes():
    assert check_answer(answer("Weekdays from 9:00 to 18:00 (Japan time) [S1]."), KEY, DOC) == []


@pytest.mark.parametrize(("reply", "wanted"), [
    (answer("Weekdays 9:00 to 18:00.", uri="s3://citerag-documents/docs/other.pdf"), "not the uploaded"),
    (answer("Weekdays 9:00 to 18:00.", excerpt="Phone support is open around the clock."), "not in the document"),
    (answer("I could not find that.", answered=False), "did not answer"),
    (Answer(text="Weekdays from 9:00 to 18:00."), "cites nothing"),
    (answer("Support is available on weekdays."), "does not give the hours"),
])
def test_what_a_user_could_not_check_fails(reply, wanted):
    problems = check_answer(reply, KEY, DOC)
    assert any(wanted in p for p in problems), problems


def test_the_stack_outputs_are_read_by_name():
    # botocore's Stubber checks each request and response against the CloudFormation service model.
    cfn = boto3.client("cloudformation", region_name="ap-northeast-1", aws_access_key_id="x",
                       aws_secret_access_key="x")
    with Stubber(cfn) as stub:
        stub.add_response("describe_stacks", {"Stacks": [{
            "StackName": "Citerag", "CreationTime": "2026-11-27T00:00:00Z", "StackStatus": "CREATE_COMPLETE",
            "Outputs": [{"OutputKey": "AgentId", "OutputValue": "AGENT12345"},
                        {"OutputKey": "DocumentsBucket", "OutputValue": "citerag-documents"}]}]},
            {"StackName": "Citerag"})
        stub.add_client_error("describe_stacks", "ValidationError", "Stack with id Missing does not exist",
                              expected_params={"StackName": "Missing"})
        assert stack_outputs(cfn, "Citerag") == {"AgentId": "AGENT12345", "DocumentsBucket": "citerag-documents"}
        with pytest.raises(CiteragError, match=r"cannot read the stack 'Missing'.*does not exist"):
            stack_outputs(cfn, "Missing")
