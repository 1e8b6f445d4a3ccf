"""Session history on AgentCore Memory: the adapter against moto's Memory events and against the real client with a
Stubber that answers newest first, as the service does; id mapping; failures degrade, never break a turn."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from citerag.adapters.agentcore_memory import LocalHistory, MemoryHistory, memory_actor_id, memory_session_id
from citerag.errors import DependencyError

MEMORY_ID = "citerag_memory-abcdefghij"  # botocore MemoryId pattern: name, '-', 10 characters


def client():
    return boto3.client("bedrock-agentcore", region_name="us-east-1", aws_access_key_id="test",
                        aws_secret_access_key="test")


@mock_aws
def test_turns_round_trip_through_moto_memory_events():
    history = MemoryHistory(client(), MEMORY_ID)
    session = str(uuid.uuid4())
    history.save("acme:alice", session, "What does E2 mean?", "The sensor is dirty.")
    history.save("acme:alice", session, "How do I fix it?", "Clean the sensor.")
    assert history.load("acme:alice", session, 5) == [("What does E2 mean?", "The sensor is dirty."),
                                                     ("How do I fix it?", "Clean the sensor.")]
    assert history.load("acme:alice", session, 1) == [("How do I fix it?", "Clean the sensor.")]
    assert history.load("acme:bob", session, 5) == []  # another actor never sees this session


def _event(n: int, at: datetime) -> dict:
    return {"memoryId": MEMORY_ID, "actorId": "acme", "sessionId": "s" * 36, "eventId": f"{n}#abc{n}",
            "eventTimestamp": at, "payload": [
                {"conversational": {"content": {"text": f"q{n}"}, "role": "USER"}},
                {"conversational": {"content": {"text": f"a{n}"}, "role": "ASSISTANT"}}]}


def test_newest_first_pages_are_read_in_conversation_order():
    c = client()
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    events = [_event(n, t0 + timedelta(seconds=n)) for n in range(1, 6)]
    stub = Stubber(c)
    params = {"memoryId": MEMORY_ID, "actorId": "acme", "sessionId": "s" * 36, "includePayloads": True,
              "maxResults": 100}
    # The service lists newest first (bedrock-agentcore-sdk-python PR #97), in pages.
    stub.add_response("list_events", {"events": events[::-1][:3], "nextToken": "page2"}, params)
    stub.add_response("list_events", {"events": events[::-1][3:]}, {**params, "nextToken": "page2"})
    with stub:
        turns = MemoryHistory(c, MEMORY_ID).load("acme", "s" * 36, 3)
    assert turns == [("q3", "a3"), ("q4", "a4"), ("q5", "a5")]


def test_memory_failures_are_dependency_errors_without_account_ids():
    c = client()
    stub = Stubber(c)
    stub.add_client_error("list_events", "AccessDeniedException", "User arn:aws:iam::123456789012:role/x is not "
                          "authorized", 403)
    stub.add_client_error("create_event", "ThrottlingException", "slow down", 429)
    with stub:
        with pytest.raises(DependencyError) as read:
            MemoryHistory(c, MEMORY_ID).load("acme", "s" * 36, 3)
        with pytest.raises(DependencyError, match="ThrottlingException"):
            MemoryHistory(c, MEMORY_ID).save("acme", "s" * 36, "q", "a")
    assert "AccessDeniedException" in str(read.value) and "123456789012" not in str(read.value)


def test_runtime_session_and_actor_ids_become_valid_memory_ids():
    sid = str(uuid.uuid4())
    assert memory_session_id(sid) == sid  # uuid4 serves both contracts
    long = "x" * 33 + ":" + "y" * 200
    mapped = memory_session_id(long)
    assert len(mapped) == 64 and mapped.isalnum() and memory_session_id(long) == mapped
    assert memory_actor_id("acme:alice") == "acme:alice"
    assert memory_actor_id("acme:alice@example.com").startswith("a") and "@" not in memory_actor_id("acme:a@b.c")


def test_local_history_keeps_sessions_and_actors_apart():
    h = LocalHistory()
    h.save("a", "s1", "q1", "a1")
    h.save("b", "s1", "q2", "a2")
    assert h.load("a", "s1", 5) == [("q1", "a1")] and h.load("a", "s2", 5) == [] and h.load("a", "s1", 0) == []
