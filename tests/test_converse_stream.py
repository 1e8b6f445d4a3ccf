"""With someone listening for the draft (serve, chat), the Converse adapter asks ConverseStream and puts its events
back together: the real boto3 client reads event-stream frames from a local server (botocore's
ConverseStreamOutput), the draft hears the answer's words as they arrive, and the model's output is the one
Converse gives for the same content (botocore Stubber)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import boto3
from botocore.stub import Stubber

from citerag.adapters.converse import BedrockConverseModel
from citerag.citations.drafts import drafts_to
from citerag.testing.eventstream import event

MODEL = "jp.anthropic.claude-sonnet-4-6"
TOOL = {"name": "citerag-search__search_documents", "description": "Search",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
ANSWER = ("<thinking>The manual says it.</thinking><answer><answer_part><text>Error E2 means the air quality "
          "sensor is dirty.</text><sources><source>S1-abc</source></sources></answer_part></answer>")


def _events(pieces: list[str], tool_input: list[str] | None = None) -> list[bytes]:
    frames = [event("messageStart", {"role": "assistant"})]
    frames += [event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": p}}) for p in pieces]
    frames.append(event("contentBlockStop", {"contentBlockIndex": 0}))
    if tool_input is not None:
        frames.append(event("contentBlockStart", {"contentBlockIndex": 1, "start": {"toolUse": {
            "toolUseId": "tu2", "name": TOOL["name"]}}}))
        frames += [event("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": p}}})
                   for p in tool_input]
        frames.append(event("contentBlockStop", {"contentBlockIndex": 1}))
    frames.append(event("messageStop", {"stopReason": "tool_use" if tool_input is not None else "end_turn"}))
    frames.append(event("metadata", {"usage": {"inputTokens": 40, "outputTokens": 25, "totalTokens": 65},
                                     "metrics": {"latencyMs": 300}}))
    return frames


class Stream(BaseHTTPRequestHandler):
    frames: ClassVar[list[bytes]] = []
    requests: ClassVar[list[tuple[str, dict]]] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Stream.requests.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.amazon.eventstream")
        self.send_header("Content-Length", str(sum(map(len, Stream.frames))))
        self.end_headers()
        for frame in Stream.frames:
            self.wfile.write(frame)

    def log_message(self, *args):
        pass


def _client(endpoint: str | None = None):
    return boto3.client("bedrock-runtime", region_name="ap-northeast-1", aws_access_key_id="x",
                        aws_secret_access_key="y", endpoint_url=endpoint)


def _ask(model: BedrockConverseModel, heard: list | None):
    prompt = {"system": "rules", "tools": [TOOL], "messages": [
        {"role": "user", "content": [{"type": "text", "text": "What does error E2 mean?"}]}]}
    if heard is None:
        return model.complete(prompt, prompt_type="ORCHESTRATION", stop_sequences=[])
    with drafts_to(heard.append):
        return model.complete(prompt, prompt_type="ORCHESTRATION", stop_sequences=[])


def _serving():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Stream)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def test_a_listened_answer_streams_its_words_and_comes_out_as_converse_gives_it():
    pieces = [ANSWER[:60], ANSWER[60:95], ANSWER[95:]]
    Stream.frames, Stream.requests = _events(pieces), []
    httpd = _serving()
    try:
        heard: list = []
        streamed = _ask(BedrockConverseModel(_client(f"http://127.0.0.1:{httpd.server_address[1]}"), MODEL), heard)
    finally:
        httpd.shutdown()
    path, body = Stream.requests[0]
    assert path == f"/model/{MODEL}/converse-stream" and body["toolConfig"]["tools"][0]["toolSpec"]["name"]
    assert heard[0] is None and "".join(h for h in heard[1:]) == "Error E2 means the air quality sensor is dirty."
    client = _client()
    with Stubber(client) as stub:
        stub.add_response("converse", {
            "output": {"message": {"role": "assistant", "content": [{"text": ANSWER}]}}, "stopReason": "end_turn",
            "usage": {"inputTokens": 40, "outputTokens": 25, "totalTokens": 65}, "metrics": {"latencyMs": 300}})
        whole = _ask(BedrockConverseModel(client, MODEL), None)
    assert streamed == whole


def test_a_streamed_tool_call_keeps_its_input():
    Stream.frames, Stream.requests = _events(["I will search."], ['{"que', 'ry": "error E2"}']), []
    httpd = _serving()
    try:
        out = _ask(BedrockConverseModel(_client(f"http://127.0.0.1:{httpd.server_address[1]}"), MODEL), [])
    finally:
        httpd.shutdown()
    response = json.loads(out.text)
    assert response["stop_reason"] == "tool_use"
    assert [b for b in response["content"] if b["type"] == "tool_use"] == [
        {"type": "tool_use", "id": "tu2", "name": TOOL["name"], "input": {"query": "error E2"}}]
