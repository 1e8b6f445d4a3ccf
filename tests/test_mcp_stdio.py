"""`citerag mcp` over stdio answers every malformed line with a JSON-RPC error at once (it went silent and the
client waited for its own timeout), framed as the SDK frames messages (one JSON object per line), and keeps
serving the session after it."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading

import pytest

from agentcore_support import KEY, components

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    comps = components(tmp_path_factory.mktemp("mcp-stdio"))
    env = {**os.environ, "CITERAG_DATA_DIR": str(comps.settings.data_dir), "CITERAG_EMBEDDER": "hashing",
           "CITERAG_SOURCE_ID_KEY": KEY}
    proc = subprocess.Popen([sys.executable, "-c", "from citerag.cli import main; main()", "mcp"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()

    def send(raw: bytes) -> dict:
        proc.stdin.write(raw + b"\n")
        proc.stdin.flush()
        return json.loads(lines.get(timeout=60))  # a generous bound: the reply must come, not time out

    reply = send(json.dumps(INIT).encode())
    assert reply["id"] == 1 and "result" in reply
    proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    yield send
    proc.stdin.close()
    proc.wait(timeout=30)


CASES = [
    (b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "ask", "arguments": '
     b'{"question": "\\ud83d"}}}', -32700, 5, "lone surrogate"),
    (b'{"jsonrpc": "2.0", "id": 6, "method": "tools/li', -32700, None, "not complete JSON"),
    (b"[" * 100_000, -32700, None, "nested too deeply"),
    (b"{" * 100_000, -32700, None, ""),
    (b'{"jsonrpc": "2.0", "id": 7}', -32600, 7, "Invalid Request"),
    (b'{"id": 8, "method": "tools/list"}', -32600, 8, "Invalid Request"),
    (b"42", -32600, None, "Invalid Request"),
    (b"\xff\xfe not utf-8", -32700, None, "Parse error"),
    (b'{"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"x": "' + b"a" * (4 * 1024 * 1024) + b'"}}',
     -32600, None, "over 4,194,304 bytes"),
]


@pytest.mark.parametrize(("line", "code", "ident", "says"), CASES, ids=[f"m{i}" for i in range(len(CASES))])
def test_a_malformed_line_gets_a_json_rpc_error_and_the_session_goes_on(server, line, code, ident, says):
    reply = server(line)
    assert reply["jsonrpc"] == "2.0" and reply["id"] == ident
    assert reply["error"]["code"] == code and says in reply["error"]["message"]
    after = server(json.dumps({"jsonrpc": "2.0", "id": 100, "method": "tools/list"}).encode())
    assert after["id"] == 100 and {t["name"] for t in after["result"]["tools"]} == {"search_documents", "ask"}
