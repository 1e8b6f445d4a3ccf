"""`citerag ingest --watch`: after the ingest, the index follows the folders until Ctrl-C, one line (or one JSON
object with --json) for each document added, replaced, removed or failed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from citerag.cli.common import added_line, display, err, out, shown
from citerag.components import Components
from citerag.ingestion.files import IngestResult
from citerag.ingestion.watch import FolderSync, changes_of


def watch_folders(comps: Components, paths: list[Path], extra: dict[str, Any], as_json: bool,
                  since: float | None = None, stop_event: Any = None) -> None:
    """`since`: when the ingest before the watch started (time.time()); files changed after it are read again once
    the watcher runs, so a change made while the ingest ran is not missed."""
    folders = [p for p in paths if p.is_dir()]
    if not folders:
        err.print("[yellow]--watch follows folders; none was given, so there is nothing to watch[/]")
        return

    def said(r: IngestResult) -> None:
        if as_json:
            print(json.dumps(r.model_dump(), ensure_ascii=False), flush=True)
        elif r.status in ("added", "replaced", "removed"):
            out.print(added_line(r), highlight=False, soft_wrap=True)
        elif r.status == "failed":
            err.print(f"[red]failed[/] {shown(display(r.source))}: {shown(r.reason or '')}", highlight=False,
                      soft_wrap=True)

    sync = FolderSync(comps.ingestor(extra), folders, on_file=said)
    if not as_json:
        err.print(f"[dim]Watching {', '.join(shown(display(f.resolve().as_uri())) for f in folders)}; "
                  "Ctrl-C stops[/]", highlight=False, soft_wrap=True)
    try:
        for _ in sync.watch(changes_of(folders, stop_event), since=since):
            pass
    except KeyboardInterrupt:  # between batches or inside an ingest: every document finished is kept
        pass
    if not as_json:
        err.print("[dim]Stopped watching[/]")
