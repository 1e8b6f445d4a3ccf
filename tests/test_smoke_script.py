"""The post-deploy smoke test's own checks: what it accepts as a cited answer, and how it reads the stack."""

from __future__ import annotations

from urllib.parse import parse_qs
from xml.sax.saxutils import escape

import boto3
import pytest
from botocore.stub import Stubber

from citerag.agentcore_app import create_app
from citerag.citations.answer import Answer, Citation
from citerag.components import Components
from citerag.errors import CiteragError
from citerag.runtimes.local import local_agent
from citerag.search.passage import Passage
from citerag.settings import Settings
from citerag.testing import eventstream
from citerag.testing.agentcore import RuntimeDouble, serve
from citerag.testing.doubles import AgentRuntimeDouble, _Server
from scripts.smoke_test import KEY, SAMPLE, check_answer, main, stack_outputs

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


def test_a_cited_excerpt_with_masked_personal_data_is_still_the_documents_text():
    # The deployed answer masks the support number; the excerpt is the document's text with [PHONE] in its place.
    masked = "Phone support is available on weekdays from 9:00 to 18:00 (Japan time), except public holidays. " \
             "Phone: [PHONE] (toll-free in Japan)."
    assert check_answer(answer("Weekdays 9:00 to 18:00 [S1].", excerpt=masked), KEY, DOC) == []
    forged = "Phone: [PHONE] (available around the clock)."
    problems = check_answer(answer("Weekdays 9:00 to 18:00 [S1].", excerpt=forged), KEY, DOC)
    assert any("not in the document" in p for p in problems)


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


# --- the whole script against local doubles behind the real boto3 clients ------------------------------------------

ARN = "arn:aws:bedrock-agentcore:ap-northeast-1:123456789012:runtime/citerag_agent-AbCdEf1234"
CFN_NS = "http://cloudformation.amazonaws.com/doc/2010-05-15/"


class StackAndBucket(_Server):
    """CloudFormation DescribeStacks (the query protocol: a form body, an XML answer; botocore's cloudformation
    model) and S3 PutObject / DeleteObject (REST, path-style on an IP endpoint). A PUT of a document ingests it as the
    deployed ingest function would, under its s3:// URI; a DELETE removes it."""

    def __init__(self, comps, outputs: dict[str, str], ingest: bool = True) -> None:
        super().__init__()
        self.comps, self.outputs, self.ingest = comps, outputs, ingest
        self.objects: dict[str, bytes] = {}

    def route(self, req):
        if req.method == "POST" and req.path == "/":
            form = {k: v[0] for k, v in parse_qs(req.raw.decode()).items()}
            assert form["Action"] == "DescribeStacks" and form["Version"] == "2010-05-15"
            if form.get("StackName") != "Citerag":
                error = (f'<ErrorResponse xmlns="{CFN_NS}"><Error><Type>Sender</Type><Code>ValidationError</Code>'
                         f"<Message>Stack with id {escape(form.get('StackName', ''))} does not exist</Message>"
                         "</Error><RequestId>r-1</RequestId></ErrorResponse>")
                return 400, error.encode(), {"Content-Type": "text/xml"}
            outputs = "".join(f"<member><OutputKey>{k}</OutputKey><OutputValue>{escape(v)}</OutputValue></member>"
                              for k, v in self.outputs.items())
            xml = (f'<DescribeStacksResponse xmlns="{CFN_NS}"><DescribeStacksResult><Stacks><member>'
                   "<StackId>arn:aws:cloudformation:ap-northeast-1:123456789012:stack/Citerag/1</StackId>"
                   "<StackName>Citerag</StackName><CreationTime>2026-11-27T00:00:00Z</CreationTime>"
                   f"<StackStatus>CREATE_COMPLETE</StackStatus><Outputs>{outputs}</Outputs></member></Stacks>"
                   "</DescribeStacksResult><ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata>"
                   "</DescribeStacksResponse>")
            return 200, xml.encode(), {"Content-Type": "text/xml"}
        bucket, _, key = req.path.lstrip("/").partition("/")
        uri = f"s3://{bucket}/{key}"
        if req.method == "PUT" and key:
            self.objects[uri] = req.raw
            if self.ingest:
                self.comps.ingestor().ingest_bytes(req.raw, uri, key.rsplit("/", 1)[-1])
            return 200, b"", {"ETag": '"e1"'}
        if req.method == "DELETE" and key:
            self.objects.pop(uri, None)
            self.comps.ingestor().remove(uri)
            return 204, b"", {}
        return 404, {"message": f"no route {req.method} {req.path}"}, {}


class LiveAgentRuntime(AgentRuntimeDouble):
    """InvokeAgent answered by the local Classic runtime over the same index: its events (chunk with the final
    response, traces with the search results) encoded as AWS event-stream frames, which botocore decodes."""

    def __init__(self, comps) -> None:
        super().__init__()
        self.agent = local_agent(comps)

    def route(self, req):
        self.stream = eventstream.encode_stream(list(self.agent.invoke(req.body["inputText"])))
        return super().route(req)


@pytest.fixture
def deployment(tmp_path, monkeypatch):
    """A stack's two runtimes and its bucket, each behind the endpoint its real boto3 client is pointed at."""
    comps = Components(Settings(data_dir=tmp_path / "data", embedder="hashing", source_id_key="smoke-test-key-012345"))
    outputs = {"AgentId": "AGENT12345", "AgentAliasId": "ALIAS12345", "AgentRuntimeArn": ARN,
               "DocumentsBucket": "citerag-documents"}
    with StackAndBucket(comps, outputs) as aws, LiveAgentRuntime(comps) as classic, \
            serve(RuntimeDouble(create_app(comps))) as core:
        for name, url in (("CLOUDFORMATION", aws.url), ("S3", aws.url), ("BEDROCK_AGENT_RUNTIME", classic.url),
                          ("BEDROCK_AGENTCORE", core)):
            monkeypatch.setenv(f"AWS_ENDPOINT_URL_{name}", url)
        for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("AWS_PROFILE", raising=False)
        yield comps, aws, classic


def test_one_cited_answer_through_each_runtime_passes_and_the_document_is_removed(deployment, capsys):
    _, aws, classic = deployment
    code = main(["--region", "ap-northeast-1", "--wait", "0"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "PASS InvokeAgent (Agents Classic)" in out and "PASS InvokeAgentRuntime (AgentCore)" in out
    assert out.count(f"cites: s3://citerag-documents/{KEY}") >= 2 and "18:00" in out
    sent = classic.requests[-1].body  # what the script asked InvokeAgent, as botocore serialised it
    assert sent["enableTrace"] is True and "kumo" in sent["inputText"].lower()
    assert aws.objects == {}  # deleted at the end


def test_an_answer_citing_another_copy_of_the_document_fails(deployment, capsys):
    """The index answers from a local copy (ingestion of the upload never happened): citations name the wrong file."""
    comps, aws, _ = deployment
    aws.ingest = False
    comps.ingestor().ingest_paths([SAMPLE])
    code = main(["--region", "ap-northeast-1", "--wait", "0"])
    out = capsys.readouterr().out
    assert code == 1 and "FAIL InvokeAgent (Agents Classic)" in out and "FAIL InvokeAgentRuntime (AgentCore)" in out
    assert f"not the uploaded {KEY}" in out


def test_a_stack_without_agents_or_that_does_not_exist_is_named(deployment, capsys):
    _, aws, _ = deployment
    assert main(["--stack", "Missing", "--region", "ap-northeast-1"]) == 2
    assert "cannot read the stack 'Missing'" in capsys.readouterr().err
    aws.outputs = {"DocumentsBucket": "citerag-documents"}
    assert main(["--region", "ap-northeast-1"]) == 2
    assert "neither AgentId nor AgentRuntimeArn" in capsys.readouterr().err
