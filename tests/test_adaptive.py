"""Titan calls in flight per function adapt (AIMD): halve on throttling, grow while calls succeed."""

from __future__ import annotations

import random
import threading

import pytest

from citerag.adapters import aws
from citerag.adapters.adaptive import AdaptiveConcurrency
from citerag.adapters.titan import TitanEmbedder
from citerag.errors import DependencyError
from citerag.testing.doubles import BedrockRuntimeDouble

from conftest import boto3_pointed_at


def test_a_burst_of_throttles_halves_the_limit_once_and_successes_grow_it_back():
    lim = AdaptiveConcurrency(initial=8, maximum=16)
    windows = [lim.acquire() for _ in range(8)]  # eight calls in flight, all throttled together
    for w in windows:
        lim.release(w, throttled=True, succeeded=False)
    assert lim.slots == 4 and lim.throttles == 8  # one signal, not eight halvings
    for _ in range(4 + 5 + 6):  # about one more slot per window of successes
        lim.release(lim.acquire())
    assert 6.5 < lim.limit < 7.1
    for _ in range(500):
        lim.release(lim.acquire())
    assert lim.slots == 16  # never above the maximum
    for _ in range(10):
        lim.release(lim.acquire(), throttled=True, succeeded=False)
    assert lim.slots == 1  # never below one


def test_callers_beyond_the_limit_wait_for_a_slot():
    lim = AdaptiveConcurrency(initial=2, maximum=2)
    a, b = lim.acquire(), lim.acquire()
    got = []
    t = threading.Thread(target=lambda: got.append(lim.acquire()))
    t.start()
    t.join(0.2)
    assert t.is_alive() and not got  # the third call waits
    lim.release(a)
    t.join(5)
    assert got and lim.in_flight == 2
    lim.release(b)
    lim.release(got[0])


@pytest.fixture
def bedrock(monkeypatch):
    with boto3_pointed_at(BedrockRuntimeDouble(), "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", monkeypatch) as d:
        yield d


def test_titan_backs_off_when_throttled_and_every_passage_is_embedded(bedrock):
    bedrock.behaviour.fail_status = 429
    bedrock.behaviour.fail_body = {"message": "Too many requests, please wait before trying again."}
    bedrock.behaviour.fail_headers = {"x-amzn-ErrorType": "ThrottlingException"}
    bedrock.behaviour.fail_times = 6
    slept: list[float] = []
    # No SDK retries: every throttle reaches the embedder, as it does once botocore's own attempts run out.
    emb = TitanEmbedder(aws.client("bedrock-runtime", max_attempts=0), dimensions=256, concurrency=4,
                        max_concurrency=8, sleep=slept.append, rng=random.Random(1))
    vecs = emb.embed_passages([f"passage {i}" for i in range(12)])
    assert vecs.shape == (12, 256)
    assert len(bedrock.requests) == 12 + 6 and len(slept) == 6 and emb.limit.throttles == 6
    assert emb.concurrency < 4 + 12  # it halved at least once on the way
    assert all(0 <= s <= 10 for s in slept)


def test_titan_gives_up_after_bounded_retries_with_a_clear_error(bedrock):
    bedrock.behaviour.fail_status = 429
    bedrock.behaviour.fail_body = {"message": "Too many requests"}
    bedrock.behaviour.fail_headers = {"x-amzn-ErrorType": "ThrottlingException"}
    bedrock.behaviour.fail_times = None
    slept: list[float] = []
    emb = TitanEmbedder(aws.client("bedrock-runtime", max_attempts=0), dimensions=256, sleep=slept.append,
                        rng=random.Random(3), throttle_wait_s=30.0)
    with pytest.raises(DependencyError, match="Titan embedding failed: ThrottlingException"):
        emb.embed_query("q")
    # It waited its budget out (the last pause may take it past), then gave up on the next throttle.
    assert sum(slept) >= 30.0 and sum(slept[:-1]) < 30.0 and len(bedrock.requests) == len(slept) + 1
