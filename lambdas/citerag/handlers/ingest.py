"""Lambda: S3 event notifications from SQS -> index or remove documents.

Powertools batch processing reports partial failures, so one bad message never blocks the batch.
Transient failures (S3, Titan or Pinecone errors) are raised and retried by SQS, then land in the DLQ via
its redrive policy; permanent ones (poison messages, corrupt or unsupported files) are sent to the DLQ at
once with their reason, since retrying cannot fix them.
"""

from __future__ import annotations

import os
import posixpath
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

logger = Logger(service="citerag-ingest")
tracer = Tracer(service="citerag-ingest")
metrics = Metrics(namespace="citerag", service="citerag-ingest")
processor = BatchProcessor(event_type=EventType.SQS)

_components = None


def _count(name: str) -> None:
    # Only inside Lambda: run in-process (citerag ask/invoke, tests) metrics would pile up and print EMF lines.
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
_source = None


def components():
    global _components
    if _components is None:
        from citerag.settings import Components, Settings

        _components = Components(Settings())
    return _components


def object_source():
    global _source
    if _source is None:
        from citerag import aws
        from citerag.documents.sources import S3ObjectSource

        _source = S3ObjectSource(aws.client("s3"))
    return _source


@tracer.capture_method
def record_handler(record: SQSRecord) -> list[dict[str, Any]]:
    from citerag.agent.s3_events import PoisonMessage, parse_notification
    from citerag.documents.sources import ObjectGone

    try:
        events = parse_notification(record.body)
    except PoisonMessage as exc:
        _dead_letter(record, str(exc))
        return [{"status": "poison", "reason": str(exc)}]
    ingestor = components().ingestor()
    outcomes = []
    for ev in events:
        if ev.action == "removed":
            r = ingestor.remove(ev.uri)
        else:
            try:
                data, meta = object_source().get(ev.bucket, ev.key)
            except ObjectGone:
                # Created, then deleted before we got to it: the end state is "no document".
                r = ingestor.remove(ev.uri)
            else:
                r = ingestor.ingest_bytes(data, ev.uri, posixpath.basename(ev.key), metadata=_acl_metadata(meta))
        logger.info("object", extra={"uri": ev.uri, "status": r.status, "chunks": r.chunks, "reason": r.reason})
        _count(f"Ingest_{r.status}")
        if r.status == "failed":
            if r.transient:
                raise RuntimeError(f"transient failure for {ev.uri}: {r.reason}")
            _dead_letter(record, f"{ev.uri}: {r.reason}")
        outcomes.append(r.model_dump())
    return outcomes


def _acl_metadata(meta: dict[str, str]) -> dict[str, Any]:
    """Object user metadata x-amz-meta-tenant / x-amz-meta-groups become access metadata on every chunk."""
    out: dict[str, Any] = {}
    if meta.get("tenant"):
        out["tenant"] = meta["tenant"]
    if meta.get("groups"):
        out["groups"] = [g.strip() for g in meta["groups"].split(",") if g.strip()]
    return out


def _dead_letter(record: SQSRecord, reason: str) -> None:
    from citerag import aws

    url = components().settings.dlq_url
    logger.error("permanent failure", extra={"message_id": record.message_id, "reason": reason})
    _count("Ingest_dead_lettered")
    if not url:
        return
    aws.client("sqs").send_message(
        QueueUrl=url, MessageBody=record.body,
        MessageAttributes={"reason": {"DataType": "String", "StringValue": reason[:1000]},
                           "source_message_id": {"DataType": "String", "StringValue": record.message_id}},
    )


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if not isinstance(event, dict) or not isinstance(event.get("Records"), list):
        logger.error("not an SQS event")
        return {"batchItemFailures": []}
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
