"""AWS and Pinecone adapters against local doubles (real boto3 and Pinecone SDK clients) and moto."""

from __future__ import annotations

import json
import logging

import boto3
import numpy as np
import pytest
from moto import mock_aws
from pinecone import Index

from citerag.adapters import aws
from citerag.adapters.pinecone_index import MAX_BATCH_BYTES, PineconeIndex, batches, clean_metadata
from citerag.adapters.s3_store import S3DocumentStore
from citerag.adapters.titan import TitanEmbedder
from citerag.errors import DependencyError
from citerag.search.ports import DocumentInfo, Record
from citerag.search.sparse import SparseVector
from citerag.testing.doubles import BedrockRuntimeDouble, PineconeDouble

from conftest import boto3_pointed_at


@pytest.fixture
def bedrock(monkeypatch):
    with boto3_pointed_at(BedrockRuntimeDouble(), "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", monkeypatch) as d:
        yield d


def test_titan_requests_have_the_documented_shape(bedrock):
    emb = TitanEmbedder(aws.client("bedrock-runtime"), dimensions=512, concurrency=3)
    vecs = emb.embed_passages(["first passage", "二つ目の文章", "third"])
    assert vecs.shape == (3, 512) and emb.embed_query("q").shape == (512,)
    req = bedrock.requests[0]
    assert req.path == "/model/amazon.titan-embed-text-v2:0/invoke"
    assert req.headers["content-type"] == "application/json"
    assert set(req.body) == {"inputText", "dimensions", "normalize"} and req.body["normalize"] is True
    assert {r.body["inputText"] for r in bedrock.requests[:3]} == {"first passage", "二つ目の文章", "third"}
    assert "authorization" in req.headers  # signed with SigV4 by the real client


def test_titan_throttling_is_retried_adaptively(bedrock):
    bedrock.behaviour.fail_status = 429
    bedrock.behaviour.fail_body = {"message": "Too many requests"}
    bedrock.behaviour.fail_headers = {"x-amzn-ErrorType": "ThrottlingException"}
    bedrock.behaviour.fail_times = 2
    emb = TitanEmbedder(aws.client("bedrock-runtime"), dimensions=256)
    assert emb.embed_query("hello").shape == (256,)
    assert len(bedrock.requests) == 3


@pytest.mark.parametrize(("status", "code", "text"), [
    (403, "AccessDeniedException", "AccessDeniedException"),
    (400, "ValidationException", "ValidationException"),
])
def test_titan_errors_are_clear(bedrock, status, code, text):
    bedrock.behaviour.fail_status = status
    bedrock.behaviour.fail_body = {"message": "nope"}
    bedrock.behaviour.fail_times = None
    bedrock.behaviour.fail_headers = {"x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/"}
    emb = TitanEmbedder(aws.client("bedrock-runtime"), dimensions=256)
    with pytest.raises(DependencyError, match=f"Titan embedding failed: {text}: nope"):
        emb.embed_query("hello")


def test_titan_rejects_unsupported_dimensions():
    with pytest.raises(ValueError, match="256, 512 or 1024"):
        TitanEmbedder(object(), dimensions=384)


# --- Pinecone --------------------------------------------------------------------------------------------


@pytest.fixture
def pinecone_setup(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws(), PineconeDouble() as dense_d, PineconeDouble() as sparse_d:
        s3 = boto3.client("s3", region_name="ap-northeast-1")
        s3.create_bucket(Bucket="docs", CreateBucketConfiguration={"LocationConstraint": "ap-northeast-1"})
        store = S3DocumentStore(s3, "docs")
        dense = Index(host=dense_d.url.replace("127.0.0.1", "localhost"), api_key="pc-test-key")
        sparse = Index(host=sparse_d.url.replace("127.0.0.1", "localhost"), api_key="pc-test-key")
        yield PineconeIndex(dense, sparse, store), dense_d, sparse_d, s3


def _records(doc: str, n: int, dim: int = 8) -> list[Record]:
    out = []
    for i in range(n):
        v = np.zeros(dim, dtype=np.float32)
        v[i % dim] = 1.0
        out.append(Record(id=f"{doc}#{i}", values=v, sparse=SparseVector(indices=[i, 100 + i], values=[1.0, 0.5]),
                          metadata={"doc_id": doc, "text": f"chunk {i}", "page": i + 1, "section": None}, length=2))
    return out


def _info(doc: str, h: str = "h1") -> DocumentInfo:
    return DocumentInfo(doc_id=doc, source_uri=f"s3://docs/{doc}.pdf", title=doc, content_hash=h, kind="pdf",
                        n_chunks=0, ingested_at="2026-11-21T00:00:00Z")


def test_pinecone_upsert_query_replace_delete(pinecone_setup):
    idx, dense_d, sparse_d, _s3 = pinecone_setup
    idx.replace_document(_info("a"), _records("a", 3), {"a#p1": "page one"}, namespace="t1")
    up = next(r for r in dense_d.requests if r.path == "/vectors/upsert")
    assert up.body["namespace"] == "t1" and len(up.body["vectors"]) == 3
    assert "section" not in up.body["vectors"][0]["metadata"]  # nulls never reach Pinecone
    sp = next(r for r in sparse_d.requests if r.path == "/vectors/upsert")
    assert sp.body["vectors"][0]["sparseValues"] == {"indices": [0, 100], "values": [1.0, 0.5]}

    m = idx.query_dense(np.eye(8, dtype=np.float32)[1], 2, {"page": {"$gte": 2}}, namespace="t1")
    assert m[0].id == "a#1" and m[0].metadata["text"] == "chunk 1"
    q = next(r for r in dense_d.requests if r.path == "/query")
    assert q.body["filter"] == {"page": {"$gte": 2}} and q.body["includeMetadata"] is True
    ms = idx.query_sparse(SparseVector(indices=[102], values=[1.0]), 5, namespace="t1")
    assert [x.id for x in ms] == ["a#2"]

    assert idx.get_parent("a#p1", "t1") == "page one"
    stats = idx.corpus_stats("t1")
    assert stats.n_docs == 3 and stats.df[0] == 1

    # A new version with fewer chunks: stale ids are deleted, statistics follow.
    idx.replace_document(_info("a", "h2"), _records("a", 1), {"a#p1": "new page"}, namespace="t1")
    assert set(dense_d.store["t1"]) == {"a#0"} and set(sparse_d.store["t1"]) == {"a#0"}
    assert idx.get_document("a", "t1").content_hash == "h2"
    assert idx.corpus_stats("t1").n_docs == 1

    assert idx.delete_document("a", "t1") == 1
    assert dense_d.store["t1"] == {} and idx.get_document("a", "t1") is None
    assert idx.corpus_stats("t1").n_docs == 0


def test_delete_without_manifest_lists_ids_by_prefix(pinecone_setup):
    idx, dense_d, _, _ = pinecone_setup
    idx.dense.upsert(vectors=[{"id": "orphan#0", "values": [1.0] * 8}, {"id": "orphan#1", "values": [1.0] * 8},
                              {"id": "other#0", "values": [1.0] * 8}])
    assert idx.delete_document("orphan") == 2
    assert set(dense_d.store[""]) == {"other#0"}
    assert any(r.path == "/vectors/list" and r.query["prefix"] == ["orphan#"] for r in dense_d.requests)


def test_every_request_carries_the_api_key_and_version_header(pinecone_setup):
    idx, dense_d, sparse_d, _ = pinecone_setup
    idx.replace_document(_info("b"), _records("b", 2), {}, namespace="")
    idx.query_dense(np.ones(8), 3)
    for r in dense_d.requests + sparse_d.requests:
        assert r.headers["api-key"] == "pc-test-key" and r.headers["x-pinecone-api-version"]


def test_upsert_batches_stay_within_pinecone_limits():
    rows = [{"id": f"d#{i}", "values": [0.123456789] * 1024, "metadata": {"text": "x" * 2000}} for i in range(2500)]
    parts = batches(rows)
    assert sum(len(p) for p in parts) == 2500
    for p in parts:
        assert len(p) <= 1000
        assert len(json.dumps({"vectors": p, "namespace": "n"}).encode()) <= MAX_BATCH_BYTES


def test_metadata_is_cleaned_and_bounded():
    md = clean_metadata({"text": "あ" * 20000, "page": 3, "none": None, "groups": ("a", None, "b"), "obj": {"x": 1}})
    assert "none" not in md and md["groups"] == ["a", "b"] and md["obj"] == "{'x': 1}"
    assert len(json.dumps(md, ensure_ascii=False).encode()) <= 40 * 1024


def test_pinecone_down_is_a_dependency_error(pinecone_setup):
    idx, dense_d, _, _ = pinecone_setup
    dense_d.behaviour.fail_status = 500
    dense_d.behaviour.fail_body = {"error": {"code": "INTERNAL", "message": "boom"}}
    with pytest.raises(DependencyError, match="Pinecone upsert failed"):
        idx.replace_document(_info("c"), _records("c", 1), {})


# --- secrets ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stored", ["pcsk_live_SECRET123", '{"apiKey": "pcsk_live_SECRET123"}'])
def test_pinecone_key_comes_from_secrets_manager_and_never_reaches_logs(monkeypatch, caplog, stored):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    # Everything at INFO (the Lambda default), our own and Powertools' loggers at DEBUG. botocore's DEBUG wire
    # logging would print response bodies of any service; it is never enabled by citerag.
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="citerag")
    caplog.set_level(logging.DEBUG, logger="aws_lambda_powertools")
    with mock_aws():
        sm = boto3.client("secretsmanager", region_name="ap-northeast-1")
        sm.create_secret(Name="citerag/pinecone", SecretString=stored)
        from aws_lambda_powertools.utilities import parameters

        parameters.clear_caches()
        assert aws.pinecone_api_key("citerag/pinecone") == "pcsk_live_SECRET123"
        with pytest.raises(DependencyError) as err:
            aws.pinecone_api_key("citerag/missing")
        assert "citerag/missing" in str(err.value)
        sm.create_secret(Name="citerag/empty", SecretString=" ")
        with pytest.raises(DependencyError, match="is empty"):
            aws.pinecone_api_key("citerag/empty")
    assert "SECRET123" not in caplog.text


def test_bedrock_rerank_request_matches_the_botocore_model():
    from botocore.stub import Stubber

    from citerag.adapters.rerank import BedrockReranker

    client = boto3.client("bedrock-agent-runtime", region_name="ap-northeast-1",
                          aws_access_key_id="x", aws_secret_access_key="y")
    arn = "arn:aws:bedrock:ap-northeast-1::foundation-model/amazon.rerank-v1:0"
    with Stubber(client) as stub:  # the stubber validates our request against the real service model
        stub.add_response("rerank", {"results": [{"index": 1, "relevanceScore": 0.9}]})
        order = BedrockReranker(client, arn).rerank("filter", ["a", "b", "c"], 2)
    assert order == [(1, 0.9), (0, 0.0), (2, 0.0)]


# --- Which model: credentials as boto3 finds them -----------------------------------------------------------------


def _chat_model(tmp_path):
    from citerag.components import Components
    from citerag.settings import Settings

    return Components(Settings(data_dir=tmp_path / "data", embedder="hashing",
                               chat_model_id="jp.anthropic.claude-sonnet-4-6")).chat_model


def test_a_profile_in_the_shared_credentials_file_selects_bedrock(tmp_path, monkeypatch):
    # The default profile of ~/.aws/credentials, with no AWS_* variable set: boto3 signs with it, so the model id
    # the user set runs on Bedrock instead of the offline model taking its place unannounced.
    from citerag.adapters import aws
    from citerag.adapters.converse import BedrockConverseModel

    creds = tmp_path / "credentials"
    creds.write_text("[default]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = secret\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_REGION", "ap-northeast-1")
    aws.client.cache_clear()
    assert aws.has_credentials()
    assert isinstance(_chat_model(tmp_path), BedrockConverseModel)
    aws.client.cache_clear()


def test_no_credentials_anywhere_keeps_the_offline_model(tmp_path):
    from citerag.adapters import aws
    from citerag.adapters.offline_claude import ExtractiveClaudeModel

    assert not aws.has_credentials()
    assert isinstance(_chat_model(tmp_path), ExtractiveClaudeModel)


def test_a_named_profile_the_files_lack_counts_as_configured(monkeypatch):
    # As before: AWS_PROFILE says the user means AWS; the Bedrock call then names the missing profile.
    from citerag.adapters import aws

    monkeypatch.setenv("AWS_PROFILE", "work")
    assert aws.has_credentials()


def test_a_credential_process_counts_without_being_run(tmp_path, monkeypatch):
    # It may prompt (aws-vault, a password manager) and the client runs it again for the call: named is enough.
    from citerag.adapters import aws

    ran = tmp_path / "ran"
    config = tmp_path / "config"
    config.write_text(f"[default]\ncredential_process = touch {ran}\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    assert aws.has_credentials()
    assert not ran.exists()


def test_credentials_without_a_region_are_one_line_naming_the_setting(tmp_path, monkeypatch):
    from citerag.adapters import aws
    from citerag.errors import CiteragError

    creds = tmp_path / "credentials"
    creds.write_text("[default]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = secret\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    aws.client.cache_clear()
    with pytest.raises(CiteragError, match="no AWS region; set AWS_REGION"):
        _chat_model(tmp_path)
    aws.client.cache_clear()
