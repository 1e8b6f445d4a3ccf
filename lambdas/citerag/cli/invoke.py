"""`citerag invoke`: run a Lambda handler locally on an event file, against the embedded adapters."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated

import typer

from citerag.cli.common import (
    IndexOpt,
    JsonOpt,
    app,
    components,
    errors,
    open_index,
    out,
    samples_dir,
    settings,
    shown,
)
from citerag.errors import CiteragError

REPLAY_INDEX = "replayed-events.sqlite"


@app.command()
def invoke(
    handler: Annotated[str, typer.Argument(help="search or ingest")],
    event: Annotated[Path, typer.Argument(help="event JSON file, e.g. events/search-basic.json")],
    bucket_dir: Annotated[Path | None, typer.Option("--bucket-dir", help="ingest: folder standing in for the bucket "
                                                     "(default: the bundled samples, replayed into "
                                                     f"{REPLAY_INDEX} unless an index is named)")] = None,
    index: IndexOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a Lambda handler locally on an event file, against the embedded adapters."""
    from citerag.citations.payload import response_bytes
    from citerag.handlers.local import invoke as run_handler
    from citerag.handlers.local import quiet_lambda_output, read_event

    with errors(as_json):
        if handler not in ("search", "ingest"):
            raise CiteragError(f"unknown handler {handler!r}: choose search or ingest")
        ev = read_event(event)
        if bucket_dir is not None and not bucket_dir.is_dir():
            raise CiteragError(f"--bucket-dir {bucket_dir}: no such folder (it stands in for the bucket the event "
                               "names)")
        if handler == "ingest" and not (isinstance(ev, dict) and isinstance(ev.get("Records"), list)):
            raise CiteragError(f"{event} is not an SQS event: the ingest handler reads its Records (see "
                               "events/ingest-created.json)")
        bucket = bucket_dir or samples_dir()
        if handler == "ingest" and index is None and bucket_dir is None and (s := settings()).index_path is None:
            # The sample events name bundled samples: replayed into an index of their own, not into the user's
            # default one (where `ask` would then see only the files they name) nor the samples' (which holds them
            # as files). An index the user names, by --index or CITERAG_INDEX_PATH, is where they go.
            index = s.data_dir / REPLAY_INDEX
        comps = (open_index(index, quiet=True, local_bucket_dir=bucket) if handler == "search"
                 else components(index, local_bucket_dir=bucket))
        # Powertools logs JSON lines to stdout; keep stdout for the response.
        quiet_lambda_output()
        response = run_handler(handler, ev, comps)
        if as_json:
            print(json.dumps(response, ensure_ascii=False))
            return
        out.print_json(json.dumps(response, ensure_ascii=False))
        if handler == "ingest" and comps.settings.index_backend == "sqlite":
            path = str(comps.settings.resolved_index_path)
            # Not wrapped: a path cut across lines cannot be pasted.
            out.print(f"[dim]index: {shown(path)}; list it with: citerag docs --index {shown(shlex.quote(path))}[/]",
                      soft_wrap=True)
        body = response.get("response", {}).get("functionResponse", {}).get("responseBody", {}).get("TEXT", {})
        if "body" in body:
            size = response_bytes(response)  # as the Lambda runtime writes it
            out.print(f"[dim]response {size:,} bytes; body decoded:[/]")
            out.print_json(body["body"])
