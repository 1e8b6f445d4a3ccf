"""HTTP doubles: bedrock-runtime InvokeModel (Titan embeddings) and a Pinecone data plane.

Each runs a ThreadingHTTPServer on 127.0.0.1, records every request (path, headers, JSON body, arrival and
completion times) and can inject latency or failures, so tests check what the real SDKs actually send.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import numpy as np

from citerag.adapters.embedders import HashingEmbedder
from citerag.search import filters


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    started: float
    finished: float = 0.0
    raw: bytes = b""  # the body as it arrived (a signature covers these bytes)


@dataclass
class Behaviour:
    latency_s: float = 0.0
    fail_status: int | None = None  # respond with this HTTP status instead
    fail_body: dict[str, Any] = field(default_factory=dict)
    fail_headers: dict[str, str] = field(default_factory=dict)  # e.g. {"x-amzn-ErrorType": "ThrottlingException"}
    fail_times: int | None = None  # fail only the first N requests, then recover
    cut_after_bytes: int | None = None  # send only this much of a successful response, then drop the connection


class _Server:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.behaviour = Behaviour()
        self._lock = threading.Lock()
        self._failed = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes; without TCP_NODELAY the client's delayed ACK adds
            # ~40 ms to some responses, which would be the double's latency, not the code under test.
            disable_nagle_algorithm = True

            def log_message(self, *args):  # keep test output clean
                pass

            def _handle(self) -> None:
                started = time.perf_counter()
                parsed = urlparse(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except json.JSONDecodeError:
                    body = raw
                req = Request(self.command, unquote(parsed.path), parse_qs(parsed.query),
                              {k.lower(): v for k, v in self.headers.items()}, body, started, raw=raw)
                with outer._lock:
                    outer.requests.append(req)
                b = outer.behaviour
                if b.latency_s:
                    time.sleep(b.latency_s)
                failing = b.fail_status is not None and (b.fail_times is None or outer._failed < b.fail_times)
                if failing:
                    with outer._lock:
                        outer._failed += 1
                    status, payload, headers = b.fail_status, b.fail_body, dict(b.fail_headers)
                else:
                    status, payload, headers = outer.route(req)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                if "Content-Type" not in headers:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                cut = outer.behaviour.cut_after_bytes
                if cut is not None and not failing:
                    # Simulate a connection that drops mid-stream: promise everything, send part, close.
                    self.wfile.write(data[:cut])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)
                else:
                    self.wfile.write(data)
                req.finished = time.perf_counter()

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self):
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def route(self, req: Request) -> tuple[int, Any, dict[str, str]]:
        raise NotImplementedError

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class BedrockRuntimeDouble(_Server):
    """POST /model/{modelId}/invoke with a Titan V2 body -> {"embedding", "inputTextTokenCount"}."""

    def __init__(self) -> None:
        super().__init__()
        self._embedders: dict[int, HashingEmbedder] = {}

    def route(self, req: Request):
        m = re.fullmatch(r"/model/([^/]+)/invoke", req.path)
        if req.method != "POST" or not m:
            return 404, {"message": f"no route {req.method} {req.path}"}, {}
        body = req.body if isinstance(req.body, dict) else {}
        text, dims = body.get("inputText"), body.get("dimensions", 1024)
        if not isinstance(text, str) or not text or dims not in (256, 512, 1024):
            return 400, {"message": "Malformed input request: inputText and dimensions are required"}, {
                "x-amzn-ErrorType": "ValidationException"}
        emb = self._embedders.setdefault(dims, HashingEmbedder(dims))
        return 200, {"embedding": emb.embed_query(text).tolist(), "inputTextTokenCount": len(text.split())}, {}


class PineconeDouble(_Server):
    """The Pinecone data-plane REST routes the SDK uses, with an in-memory store per namespace."""

    API_KEY_HEADER = "api-key"

    def __init__(self, api_key: str = "pc-test-key", kind: str = "dense") -> None:
        super().__init__()
        self.api_key = api_key
        self.kind = kind
        self.store: dict[str, dict[str, dict[str, Any]]] = {}

    def route(self, req: Request):
        if req.headers.get(self.API_KEY_HEADER) != self.api_key:
            return 401, {"error": {"code": "UNAUTHENTICATED", "message": "Invalid API Key"}, "status": 401}, {}
        if "x-pinecone-api-version" not in req.headers:
            return 400, {"error": {"code": "INVALID_ARGUMENT", "message": "missing API version"}}, {}
        body = req.body if isinstance(req.body, dict) else {}
        ns = body.get("namespace", (req.query.get("namespace") or [""])[0]) or ""
        space = self.store.setdefault(ns, {})
        if req.method == "POST" and req.path == "/vectors/upsert":
            vectors = body.get("vectors", [])
            if len(vectors) > 1000 or len(json.dumps(body)) > 2 * 1024 * 1024:
                return 400, {"error": {"code": "INVALID_ARGUMENT", "message": "request too large"}}, {}
            for v in vectors:
                space[v["id"]] = v
            return 200, {"upsertedCount": len(vectors)}, {}
        if req.method == "POST" and req.path == "/query":
            return 200, self._query(body, space, ns), {}
        if req.method == "POST" and req.path == "/vectors/delete":
            if body.get("deleteAll"):
                space.clear()
            for i in body.get("ids") or []:
                space.pop(i, None)
            if body.get("filter"):
                for i in [i for i, v in space.items() if filters.matches(body["filter"], v.get("metadata", {}))]:
                    space.pop(i)
            return 200, {}, {}
        if req.method == "GET" and req.path == "/vectors/list":
            prefix = (req.query.get("prefix") or [""])[0]
            ids = sorted(i for i in space if i.startswith(prefix))
            return 200, {"vectors": [{"id": i} for i in ids], "namespace": ns, "usage": {"readUnits": 1}}, {}
        if req.method == "GET" and req.path == "/vectors/fetch":
            ids = req.query.get("ids", [])
            return 200, {"vectors": {i: space[i] for i in ids if i in space}, "namespace": ns}, {}
        if req.method == "POST" and req.path == "/describe_index_stats":
            total = sum(map(len, self.store.values()))
            return 200, {"namespaces": {k: {"vectorCount": len(v)} for k, v in self.store.items()},
                         "dimension": 0, "indexFullness": 0.0, "totalVectorCount": total}, {}
        return 404, {"error": {"code": "NOT_FOUND", "message": f"no route {req.method} {req.path}"}}, {}

    def _query(self, body: dict[str, Any], space: dict[str, dict[str, Any]], ns: str) -> dict[str, Any]:
        top_k = int(body.get("topK", 10))
        flt = body.get("filter")
        qv = body.get("vector")
        qs = body.get("sparseVector")
        scored = []
        for vid, v in space.items():
            md = v.get("metadata", {})
            if flt and not filters.matches(flt, md):
                continue
            score = 0.0
            if qv is not None and v.get("values"):
                score += float(np.dot(np.asarray(qv, np.float32), np.asarray(v["values"], np.float32)))
            if qs:
                sv = v.get("sparseValues") or {"indices": [], "values": []}
                d = dict(zip(sv["indices"], sv["values"], strict=True))
                overlap = [w * d[i] for i, w in zip(qs["indices"], qs["values"], strict=True) if i in d]
                if not overlap and qv is None:
                    continue  # a sparse query only returns records that share a term with it
                score += sum(overlap)
            scored.append((score, vid))
        scored.sort(key=lambda t: (-t[0], t[1]))
        matches = []
        for score, vid in scored[:top_k]:
            m: dict[str, Any] = {"id": vid, "score": score}
            if body.get("includeMetadata"):
                m["metadata"] = space[vid].get("metadata", {})
            matches.append(m)
        return {"matches": matches, "namespace": ns, "usage": {"readUnits": 5}}


class AgentRuntimeDouble(_Server):
    """bedrock-agent-runtime InvokeAgent: POST /agents/{id}/agentAliases/{alias}/sessions/{session}/text,
    answered with a prepared event stream (see citerag.testing.eventstream)."""

    def __init__(self, stream: bytes = b"") -> None:
        super().__init__()
        self.stream = stream

    def route(self, req: Request):
        if req.method != "POST" or not re.fullmatch(r"/agents/[^/]+/agentAliases/[^/]+/sessions/[^/]+/text", req.path):
            return 404, {"message": f"no route {req.method} {req.path}"}, {}
        session = req.path.split("/")[5]
        return 200, self.stream, {"Content-Type": "application/vnd.amazon.eventstream",
                                  "x-amzn-bedrock-agent-content-type": "application/json",
                                  "x-amz-bedrock-agent-session-id": session}
