"""serve's HTTP server closes a connection that sends its headers, or its body, too slowly (a client sending its
headers a byte at a time held its connection for as long as it liked), and answers normal requests meanwhile. The
deadlines here are short so the slow clients are far slower than them; nothing depends on how fast this machine is."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from citerag.cli.serve_http import with_deadlines
from citerag.testing.agentcore import free_port


async def hello(request):
    body = await request.body()
    return PlainTextResponse(f"hello {len(body)}")


@pytest.fixture(scope="module")
def server():
    app = Starlette(routes=[Route("/", hello, methods=["GET", "POST"])])
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                        http=with_deadlines(header_timeout_s=0.5, body_timeout_s=0.5)))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    while not srv.started:
        time.sleep(0.02)
    yield port
    srv.should_exit = True
    thread.join(timeout=10)


def drip(port: int, data: bytes, pause: float = 0.2, limit_s: float = 60.0) -> tuple[bytes, int]:
    """Send data a byte at a time; (what the server answered, bytes sent before it closed the connection)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=limit_s)
    sent = 0
    try:
        for b in data:
            try:
                s.sendall(bytes([b]))
            except OSError:
                break
            sent += 1
            time.sleep(pause)
            s.settimeout(0.001)
            try:
                answer = s.recv(4096)
                return answer, sent
            except (TimeoutError, BlockingIOError):
                pass
            except OSError:
                return b"", sent
            finally:
                s.settimeout(limit_s)
        s.settimeout(limit_s)
        return s.recv(4096), sent
    finally:
        s.close()


def test_slow_headers_are_cut_off_with_408(server):
    request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n"
    answer, sent = drip(server, request)
    assert answer.startswith(b"HTTP/1.1 408") and sent < len(request)


def test_a_slow_body_is_cut_off(server):
    head = b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 300\r\n\r\n"
    s = socket.create_connection(("127.0.0.1", server), timeout=60)
    s.sendall(head)
    answer, sent = b"", 0
    try:
        for _ in range(300):
            s.sendall(b"x")
            sent += 1
            time.sleep(0.2)
            s.settimeout(0.001)
            try:
                answer = s.recv(4096)
                break
            except (TimeoutError, BlockingIOError):
                pass
            finally:
                s.settimeout(60)
    except OSError:
        pass
    finally:
        s.close()
    assert sent < 300 and (answer == b"" or answer.startswith(b"HTTP/1.1 408"))


def test_many_slow_clients_are_all_let_go_and_normal_requests_answered(server):
    slow = [socket.create_connection(("127.0.0.1", server), timeout=60) for _ in range(50)]
    for s in slow:
        s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
    fast = socket.create_connection(("127.0.0.1", server), timeout=60)
    fast.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert fast.recv(4096).startswith(b"HTTP/1.1 200")
    fast.close()
    for s in slow:  # each is answered 408 and closed by the server, without the client doing anything
        data = b""
        while chunk := s.recv(4096):
            data += chunk
        assert data.startswith(b"HTTP/1.1 408")
        s.close()


def _response(s: socket.socket) -> bytes:
    """One whole HTTP response: its head and as many body bytes as Content-Length says (a body may arrive in a
    segment of its own, and be read as the start of the next response)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        assert chunk, "the connection closed mid-response"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        chunk = s.recv(4096)
        assert chunk, "the connection closed mid-body"
        body += chunk
    assert len(body) == length, "more bytes than the response holds"
    return head


def test_keep_alive_requests_are_answered(server):
    s = socket.create_connection(("127.0.0.1", server), timeout=60)
    for _ in range(3):
        s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert _response(s).startswith(b"HTTP/1.1 200")
    s.close()
