"""Latency of the search Lambda handler against local doubles: Titan (bedrock-runtime), two Pinecone indexes
(dense and sparse) and S3 (moto), with injected dependency latencies. Used by `citerag bench-handler`."""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from citerag.bench.metrics import percentile


def run(samples_dir: Path, *, titan_ms: float, pinecone_ms: float, candidates: int, repeats: int,
        expand_parents: bool = True) -> dict[str, Any]:
    import boto3
    from moto import mock_aws

    from citerag.adapters import aws
    from citerag.components import Components
    from citerag.handlers import search as search_handler
    from citerag.handlers.local import LocalContext, quiet_lambda_output
    from citerag.settings import Settings
    from citerag.testing.doubles import BedrockRuntimeDouble, PineconeDouble

    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "ap-northeast-1",
           "AWS_DEFAULT_REGION": "ap-northeast-1", "POWERTOOLS_TRACE_DISABLED": "true",
           "POWERTOOLS_LOG_LEVEL": "ERROR", "POWERTOOLS_METRICS_DISABLED": "true"}
    old = {k: os.environ.get(k) for k in [*env, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"]}
    os.environ.update(env)
    quiet_lambda_output()
    try:
        with ExitStack() as stack:
            titan = stack.enter_context(BedrockRuntimeDouble())
            dense_d = stack.enter_context(PineconeDouble())
            sparse_d = stack.enter_context(PineconeDouble())
            stack.enter_context(mock_aws())
            os.environ["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"] = titan.url
            aws.client.cache_clear()
            s3 = boto3.client("s3", region_name="ap-northeast-1")
            s3.create_bucket(Bucket="docs", CreateBucketConfiguration={"LocationConstraint": "ap-northeast-1"})
            boto3.client("secretsmanager", region_name="ap-northeast-1").create_secret(
                Name="citerag/pinecone", SecretString="pc-test-key")
            tmp = stack.enter_context(tempfile.TemporaryDirectory())
            settings = Settings(
                data_dir=Path(tmp), embedder="titan", index_backend="pinecone", titan_dimensions=256,
                pinecone_dense_host=dense_d.url.replace("127.0.0.1", "localhost"),
                pinecone_sparse_host=sparse_d.url.replace("127.0.0.1", "localhost"),
                pinecone_secret_name="citerag/pinecone", document_bucket="docs", candidates=candidates,
                min_relevance=0.0,  # hashing-double vectors: measure the full path, not the threshold
            )
            comps = Components(settings)
            ing = comps.ingestor()
            ing.ingest_paths([samples_dir])
            # Pad the index so every query has `candidates` dense and sparse candidates.
            for i in range(max(0, candidates // 4)):
                text = " ".join(["filter replacement warranty error sleep mode"] * 3) + f" note {i}."
                ing.ingest_bytes(f"# Note {i}\n\n{text}\n".encode(), f"s3://docs/pad/{i}.md", f"{i}.md")
            ev = json.loads((samples_dir.parent.parent.parent / "events" / "search-basic.json").read_text())
            if not expand_parents:
                tool = comps.search_tool()
                tool.pipeline.config = tool.pipeline.config.model_copy(update={"expand_parents": False})
            handler = search_handler.build(comps)
            handler(ev, LocalContext())  # warm: caches, connections
            titan.behaviour.latency_s = titan_ms / 1000
            dense_d.behaviour.latency_s = sparse_d.behaviour.latency_s = pinecone_ms / 1000
            times = []
            for _ in range(repeats):
                t = time.perf_counter()
                resp = handler(ev, LocalContext())
                times.append((time.perf_counter() - t) * 1000)
            body = json.loads(resp["response"]["functionResponse"]["responseBody"]["TEXT"]["body"])
            n_dense = len(dense_d.requests[-1].body.get("vector", [])) if dense_d.requests else 0
            return {"p50_ms": statistics.median(times), "p95_ms": percentile(times, 95), "runs": repeats,
                    "titan_ms": titan_ms, "pinecone_ms": pinecone_ms, "candidates": candidates,
                    "results": len(body.get("results", [])), "dense_dim": n_dense}
    finally:
        aws.client.cache_clear()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
