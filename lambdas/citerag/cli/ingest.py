"""`citerag ingest`: index files and folders; unchanged files are skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from citerag.cli.common import (
    IndexOpt,
    JsonOpt,
    NamespaceOpt,
    app,
    components,
    display,
    errors,
    out,
    parse_meta,
    run_ingest,
)


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="files or folders")],
    sync: Annotated[bool, typer.Option("--sync", help="also remove documents whose files are gone")] = False,
    meta: Annotated[list[str] | None, typer.Option("--meta", help="key=value added to every chunk")] = None,
    index: IndexOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Index PDF, Markdown, HTML and text files. Unchanged files are skipped."""
    with errors(as_json):
        extra = parse_meta(meta or [])
        comps = components(index, namespace)
        results = run_ingest(comps, paths, sync=sync, extra=extra, quiet=as_json)
        counts = {s: sum(1 for r in results if r.status == s)
                  for s in ("added", "replaced", "unchanged", "removed", "skipped", "failed")}
        if as_json:
            print(json.dumps({"summary": counts, "embedded": comps.embedder.misses,
                              "results": [r.model_dump() for r in results]}, ensure_ascii=False))
        else:
            _print_ingest(results, counts, comps.embedder.misses)
        if counts["failed"] and not (counts["added"] or counts["replaced"] or counts["unchanged"]):
            raise typer.Exit(1)


def _print_ingest(results, counts: dict[str, int], embedded: int) -> None:
    for r in results:
        if r.status in ("failed", "skipped"):
            colour = "red" if r.status == "failed" else "yellow"
            out.print(f"[{colour}]{r.status}[/] {display(r.source)}: {r.reason}", highlight=False)
        elif r.status != "unchanged":
            out.print(f"[green]{r.status}[/] {display(r.source)} ({r.chunks} chunks)", highlight=False)
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    out.print(f"[bold]{summary or 'nothing to do'}[/]; {embedded} passages embedded", highlight=False)
