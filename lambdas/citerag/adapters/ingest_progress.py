"""How a bulk load is going, from what the stack already publishes: the ingest queue's and the dead-letter queue's
depth (SQS GetQueueAttributes) and the documents the ingest functions counted (CloudWatch GetMetricData on the
metrics handlers/ingest.py emits: namespace citerag, dimension service=citerag-ingest, one metric per outcome)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel

from citerag.adapters.aws import describe_error
from citerag.errors import CiteragError, DependencyError

DONE = ("added", "replaced", "unchanged", "removed", "skipped")
COUNTED = (*DONE, "staged", "failed", "dead_lettered")  # staged: waiting for a batch job (bulk path)
RATE_WINDOW = timedelta(minutes=10)  # documents per minute: over the last ten minutes


class IngestProgress(BaseModel):
    waiting: int  # messages in the ingest queue not yet taken (S3 sends one notification per message)
    in_progress: int
    dead_lettered_now: int  # messages in the dead-letter queue
    done: int  # documents indexed, removed, unchanged or skipped since `since`
    failed: int
    by_outcome: dict[str, int]
    per_minute: float  # documents done per minute, over the last ten minutes
    since: str

    @property
    def eta_minutes(self) -> float | None:
        pending = self.waiting + self.in_progress
        if not pending:
            return 0.0
        return pending / self.per_minute if self.per_minute > 0 else None


def read_progress(sqs: Any, cloudwatch: Any, queue_url: str, dlq_url: str | None, since: timedelta,
                  now: datetime | None = None) -> IngestProgress:
    if not queue_url.startswith("https://") and not queue_url.startswith("http://"):
        raise CiteragError(f"not an SQS queue URL: {queue_url[:200]!r} (the stack's IngestQueueUrl output)")
    now = now or datetime.now(UTC)
    try:
        q = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=[
            "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        dead = 0
        if dlq_url:
            dead = int(sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=[
                "ApproximateNumberOfMessages"])["Attributes"]["ApproximateNumberOfMessages"])
        totals = _sums(cloudwatch, now - since, now)
        recent = _sums(cloudwatch, now - RATE_WINDOW, now)
    except CiteragError:
        raise
    except Exception as exc:
        raise DependencyError(f"cannot read the ingest progress: {describe_error(exc)}") from None
    return IngestProgress(
        waiting=int(q["ApproximateNumberOfMessages"]), in_progress=int(q["ApproximateNumberOfMessagesNotVisible"]),
        dead_lettered_now=dead, done=sum(totals[s] for s in DONE), failed=totals["failed"], by_outcome=totals,
        per_minute=sum(recent[s] for s in DONE) / (RATE_WINDOW.total_seconds() / 60),
        since=(now - since).strftime("%Y-%m-%dT%H:%M:%SZ"))


def _sums(cloudwatch: Any, start: datetime, end: datetime) -> dict[str, int]:
    # One period spanning the window (GetMetricData: period a multiple of 60 s; data older than 15 days is kept at
    # coarser periods, so the window is bounded by the caller's --since, at most 14 days).
    seconds = max(60, int((end - start).total_seconds()) // 60 * 60)
    queries = [{"Id": f"m{i}", "ReturnData": True, "MetricStat": {
        "Metric": {"Namespace": "citerag", "MetricName": f"Ingest_{s}",
                   "Dimensions": [{"Name": "service", "Value": "citerag-ingest"}]},
        "Period": seconds, "Stat": "Sum"}} for i, s in enumerate(COUNTED)]
    sums = dict.fromkeys(COUNTED, 0)
    kwargs: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": start, "EndTime": end}
    while True:
        page = cloudwatch.get_metric_data(**kwargs)
        for r in page.get("MetricDataResults", []):
            sums[COUNTED[int(r["Id"][1:])]] += int(sum(r.get("Values", [])))
        if not page.get("NextToken"):
            return sums
        kwargs["NextToken"] = page["NextToken"]
