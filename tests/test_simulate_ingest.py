"""The bulk-load simulation (scripts/simulate_ingest.py), small: throughput grows with the functions until Titan's
quota, then stays flat, and no document is lost, doubled or dead-lettered. Throughput is in simulated time, so these
ratios do not depend on how busy the machine is."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "simulate_ingest.py"


@pytest.fixture(autouse=True)
def _credentials(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")  # signed by the real clients, answered by the doubles
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


@pytest.fixture(scope="module")
def simulate():
    spec = importlib.util.spec_from_file_location("simulate_ingest", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


def test_more_functions_ingest_faster_below_the_quota_and_lose_nothing(simulate):
    one, four = simulate(["--docs", "80", "--concurrency", "1,4", "--json"])
    for row in (one, four):
        assert row["documents"] == 80 and row["indexed_passages"] == 80  # every document once, in the statistics
        assert row["dead_lettered"] == 0 and row["failed_items"] == 0
    assert four["docs_per_s"] > 3.0 * one["docs_per_s"]


def test_at_the_quota_more_functions_add_nothing_and_nothing_is_dead_lettered(simulate):
    # 6,000 tokens a minute: about 75 of these documents a minute, which one function alone nearly reaches.
    one, four = simulate(["--docs", "60", "--concurrency", "1,4", "--tpm", "6000", "--json"])
    assert four["titan_throttled"] > 0  # the quota is what holds them back
    for row in (one, four):
        assert row["documents"] == 60 and row["indexed_passages"] == 60 and row["dead_lettered"] == 0
        assert row["tokens_per_min"] <= 6000  # never above the quota
    assert four["docs_per_s"] < 1.5 * one["docs_per_s"]
