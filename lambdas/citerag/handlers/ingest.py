"""Lambda: S3 event notifications from SQS -> index or remove documents (citerag.ingestion.notifications).

Thin: Powertools batch processing reports partial failures, so one bad message never blocks the batch; a
TransientFailure (or any dependency error) marks the message for redelivery; everything else is the use case's.
With the bulk path on, the same function also runs its scheduled step (an EventBridge schedule, or Bedrock's
"Batch Inference Job State Change" event): finish ended batch jobs, start new ones (citerag.ingestion.bulk).
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from citerag.handlers.entry import Handler, from_settings
from citerag.handlers.tracing import tracer as make_tracer

logger = Logger(service="citerag-ingest")
tracer = make_tracer("citerag-ingest")  # the X-Ray SDK only when tracing is on
metrics = Metrics(namespace="citerag", service="citerag-ingest")
# EventBridge: a schedule ("aws.events") or a batch job's state change ("aws.bedrock", detail-type "Batch Inference
# Job State Change": Bedrock user guide, monitoring-eventbridge-how-it-works).
BULK_SOURCES = ("aws.events", "aws.bedrock")



def _count(name: str) -> None:
    # Only inside Lambda: run in-process (citerag ask/invoke, tests) metrics would pile up and print EMF lines.
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


def build(components) -> Handler:
    """The handler over these components' ingestor, object source and dead-letter sink."""
    use_case = components.notification_ingest()
    processor = BatchProcessor(event_type=EventType.SQS)

    def on_result(r) -> None:
        logger.info("object", extra={"uri": r.source, "status": r.status, "chunks": r.chunks, "reason": r.reason})
        _count(f"Ingest_{r.status}")

    @tracer.capture_method
    def record_handler(record: SQSRecord) -> list[dict[str, Any]]:
        outcome = use_case.handle(record.body, record.message_id, on_result)
        if outcome.dead_letter:
            logger.error("permanent failure", extra={"message_id": record.message_id, "reason": outcome.dead_letter})
            _count("Ingest_dead_lettered")
        if not outcome.results and outcome.dead_letter:
            return [{"status": "poison", "reason": outcome.dead_letter}]
        return [r.model_dump() for r in outcome.results]

    def bulk_step(event: dict[str, Any], context: Any) -> dict[str, Any]:
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        use = components.bulk_ingest(time_left=(lambda: remaining() / 1000) if callable(remaining) else None)
        report = use.run()
        for r in report.written:
            on_result(r)
        summary = {"trigger": str(event.get("detail-type", ""))[:100], "submitted": len(report.submitted),
                   "finished": len(report.finished), "waiting": len(report.waiting),
                   "written": len(report.written), "staged_passages": report.staged_passages, "ended": report.ended,
                   "note": report.note}
        logger.info("bulk step", extra=summary)
        return summary

    @logger.inject_lambda_context(clear_state=True)
    @tracer.capture_lambda_handler(capture_response=False)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if isinstance(event, dict) and event.get("source") in BULK_SOURCES and "Records" not in event:
            return bulk_step(event, context)
        if not isinstance(event, dict) or not isinstance(event.get("Records"), list):
            logger.error("not an SQS event")
            return {"batchItemFailures": []}
        records = [r for r in event["Records"] if _deliverable(r)]
        if not records:
            return {"batchItemFailures": []}
        return process_partial_response(event={**event, "Records": records}, record_handler=record_handler,
                                        processor=processor, context=context)

    return handler


def _deliverable(record: Any) -> bool:
    """An SQS record this function can process or report (batchItemFailures names a record by its messageId).
    Anything else is logged, by kind only, and dropped: redelivering it could never help."""
    if isinstance(record, dict) and record.get("eventSource") == "aws:s3":
        logger.error("an S3 notification reached the function directly; the stack sends them through SQS")
        return False
    if not isinstance(record, dict) or not isinstance(record.get("messageId"), str) or not record["messageId"]:
        logger.error("SQS record without a messageId")
        return False
    if not isinstance(record.get("body"), str):
        logger.error("SQS record without a body", extra={"message_id": record["messageId"][:100]})
        return False
    return True


# The Lambda entry point (the function's Handler setting).
handler = from_settings(build)
