"""`citerag ingest-progress`: how a bulk load into the deployed stack is going (queue depth, documents done and
failed, rate and time left), from SQS and CloudWatch."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Annotated

import typer

from citerag.cli.common import JsonOpt, app, errors, out
from citerag.errors import CiteragError


@app.command("ingest-progress")
def ingest_progress(
    queue_url: Annotated[str | None, typer.Option("--queue-url", envvar="CITERAG_INGEST_QUEUE_URL",
                                                  help="the stack's IngestQueueUrl output")] = None,
    dlq_url: Annotated[str | None, typer.Option("--dlq-url", envvar="CITERAG_DLQ_URL",
                                                help="the stack's IngestDLQUrl output")] = None,
    hours: Annotated[float, typer.Option("--hours", min=0.1, max=24 * 14,
                                         help="count documents done over this many hours")] = 24.0,
    as_json: JsonOpt = False,
) -> None:
    """Queue depth, documents done and failed, and the rate of a bulk load (uploading a folder to the bucket's docs/
    prefix is the bulk load; this watches it)."""
    from citerag.adapters import aws
    from citerag.adapters.ingest_progress import read_progress

    with errors(as_json):
        if not queue_url:
            raise CiteragError("which queue? --queue-url (or CITERAG_INGEST_QUEUE_URL): the stack's IngestQueueUrl "
                               "output")
        p = read_progress(aws.client("sqs"), aws.client("cloudwatch"), queue_url, dlq_url,
                          timedelta(hours=hours))
        if as_json:
            print(json.dumps({**p.model_dump(), "eta_minutes": p.eta_minutes}))
            return
        out.print(f"queue: {p.waiting:,} waiting, {p.in_progress:,} in progress; dead-letter queue: "
                  f"{p.dead_lettered_now:,}", highlight=False)
        out.print(f"documents since {p.since}: {p.done:,} done, {p.failed:,} failed "
                  f"({', '.join(f'{k} {v:,}' for k, v in p.by_outcome.items() if v)})", highlight=False)
        eta = p.eta_minutes
        left = ("nothing left" if eta == 0 else "no documents finished in the last 10 minutes" if eta is None
                else f"about {eta:,.0f} min left")
        out.print(f"rate: {p.per_minute:,.1f} documents/min; {left}", highlight=False)
