"""Generative answers from an OpenAI-compatible server (Ollama, llama.cpp, vLLM): the real `openai` SDK against a
local HTTP double that speaks Chat Completions with server-sent-event streaming (role deltas, content deltas,
tool-call deltas split across chunks, a usage chunk, `data: [DONE]`). The whole agent runs through it: the same
prompts, parser and source-id checks as with Claude on Bedrock."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from typer.testing import CliRunner

pytest.importorskip("openai")

from citerag.cli import app


class ChatDouble(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict]] = []
    forge = False

    def log_message(self, *_):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert self.path == "/v1/chat/completions" and body["stream"] is True
        type(self).requests.append(body)
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
        results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        if "classif" in system:
            chunks = [_text("<thinking>A question about the documents.</thinking><category>D")]
            finish = "stop"
        elif "<latest_response>" in system:
            latest = system.split("<latest_response>")[1].split("</latest_response>")[0]
            chunks = [_text("ok</thinking><verdict><grounded>yes</grounded><useful>yes</useful></verdict>"),
                      _text(f"<final_response>{latest}")]
            finish = "stop"
        elif not results:  # first orchestration step: call the search tool, arguments split over chunks
            name = body["tools"][0]["function"]["name"]
            chunks = [_tool(0, "call_1", name, '{"que'), _tool(0, None, None, 'ry": "error E2"}')]
            finish = "tool_calls"
        else:
            hits = json.loads(results[-1])["results"]
            hit = next((h for h in hits if "E2" in h["text"]), hits[0])
            sid = "S9-forged1" if type(self).forge else hit["source_id"]
            sentence = next((s for s in re.split(r"(?<=\.)\s", hit["text"]) if "E2" in s), hit["text"][:80])
            answer = f"<answer><answer_part><text>{sentence}</text><sources><source>{sid}</source></sources>"
            chunks = [_text(answer[:20]), _text(answer[20:]), _text("</answer_part>")]
            finish = "stop"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        frames = [{"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}, *chunks,
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
                  {"choices": [], "usage": {"prompt_tokens": 321, "completion_tokens": 12, "total_tokens": 333}}]
        for f in frames:
            f.update({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": body["model"]})
            self.wfile.write(f"data: {json.dumps(f)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


def _text(t):
    return {"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]}


def _tool(index, call_id, name, args):
    fn = {"arguments": args, **({"name": name} if name else {})}
    tc = {"index": index, "function": fn, **({"id": call_id, "type": "function"} if call_id else {})}
    return {"choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": None}]}


@pytest.fixture
def server():
    ChatDouble.requests, ChatDouble.forge = [], False
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), ChatDouble)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def _env(tmp_path, url):
    return {"CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path / "data"),
            "CITERAG_CHAT_MODEL_PROVIDER": "openai", "CITERAG_OPENAI_BASE_URL": url,
            "CITERAG_CHAT_MODEL_ID": "llama3.1"}


def test_a_local_model_answers_through_the_same_prompts_parser_and_checks(server, tmp_path):
    r = CliRunner().invoke(app, ["ask", "What does error E2 mean?", "--json"], env=_env(tmp_path, server))
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["answered"] and "E2" in out["answer"]
    cited = out["citations"][0]
    assert "/samples/" in cited["uri"] and "E2" in cited["excerpt"]
    calls = ChatDouble.requests
    orchestration = [c for c in calls if c.get("tools")]
    assert orchestration[0]["tools"][0]["function"]["name"] == "citerag-search__search_documents"
    # The tool call went back as an assistant tool_calls message and a role "tool" result with its id.
    second = orchestration[1]["messages"]
    assistant = next(m for m in second if m.get("tool_calls"))
    assert assistant["tool_calls"][0]["id"] == "call_1"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"query": "error E2"}
    assert any(m["role"] == "tool" and m["tool_call_id"] == "call_1" for m in second)
    assert all(c["temperature"] == 0.0 and "top_p" not in c and c["model"] == "llama3.1" for c in calls)


def test_a_citation_the_search_never_returned_is_reprompted_not_shown(server, tmp_path):
    ChatDouble.forge = True
    r = CliRunner().invoke(app, ["ask", "What does error E2 mean?", "--json"], env=_env(tmp_path, server))
    assert r.exit_code == 0, r.output
    assert "S9-forged1" not in r.stdout and not json.loads(r.stdout)["citations"]
    reprompted = [m for c in ChatDouble.requests for m in c["messages"]
                  if m["role"] == "user" and "S9-forged1" in str(m.get("content"))]
    assert reprompted  # the parser's REPROMPT reached the model as the next turn


def test_an_unreachable_server_is_one_line(tmp_path):
    r = CliRunner().invoke(app, ["ask", "What does error E2 mean?"], env=_env(tmp_path, "http://127.0.0.1:9/v1"))
    assert r.exit_code == 1 and "unreachable" in r.output and "Traceback" not in r.output
