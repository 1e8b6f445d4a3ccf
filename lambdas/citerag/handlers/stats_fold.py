"""Lambda, on a schedule: fold the BM25 statistics deltas the ingest functions wrote into the statistics object the
search side reads (citerag.adapters.stats_ledger). Thin: folds until nothing is pending or the time is nearly up;
a fold that loses to an overlapping invocation stops (the next schedule continues), never folding anything twice."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from citerag.handlers.entry import Handler, from_settings

logger = Logger(service="citerag-stats-fold")
SAFETY_MS = 30_000  # stop starting folds this long before the function's timeout


def build(components) -> Handler:
    folder = components.stats_folder()
    namespace = components.settings.namespace

    @logger.inject_lambda_context(clear_state=True)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        folded = 0
        while True:
            n = folder.fold(namespace)
            folded += n
            left = getattr(context, "get_remaining_time_in_millis", lambda: SAFETY_MS + 1)()
            if not n or left < SAFETY_MS:
                break
        logger.info("folded", extra={"deltas": folded})
        return {"folded": folded}

    return handler


handler = from_settings(build)
