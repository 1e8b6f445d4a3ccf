"""`citerag ingest`: index files and folders; unchanged files are skipped."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from citerag.cli.common import (
    INGEST_INTERRUPTED,
    IndexOpt,
    JsonOpt,
    NamespaceOpt,
    added_line,
    app,
    components,
    display,
    errors,
    out,
    parse_meta,
    plural,
    run_ingest,
    shown,
)


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="files or folders")],
    sync: Annotated[bool, typer.Option("--sync", help="also remove documents whose files are gone")] = False,
    watch: Annotated[bool, typer.Option("--watch", help="then keep the index in step with the folders until "
                                                        "Ctrl-C (new, changed, moved and deleted files; implies "
                                                        "--sync)")] = False,
    meta: Annotated[list[str] | None, typer.Option("--meta", help="key=value added to every chunk")] = None,
    ocr: Annotated[bool, typer.Option("--ocr", help="read scanned PDF pages and PNG/JPEG/TIFF images with Tesseract "
                                                    "(the ocr extra; CITERAG_OCR=true)")] = False,
    index: IndexOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Index PDF, Markdown, HTML, text, Word, Excel, CSV, PowerPoint and EPUB files. Unchanged files are skipped.

    Exit status: 0 when done (a file that cannot be indexed for what it holds is reported, not fatal); 1 when no
    file could be indexed or the command itself failed; 3 when any file failed for a system reason (an I/O error,
    no space left, a permission, the index), which the summary names; 130 when interrupted (Ctrl-C), keeping every
    document that finished."""
    with errors(as_json, INGEST_INTERRUPTED):
        extra = parse_meta(meta or [])
        comps = components(index, namespace, ocr=True if ocr else None)
        started, started_at = time.monotonic(), time.time()
        results = run_ingest(comps, paths, sync=sync or watch, extra=extra, quiet=as_json, say_added=True)
        seconds = time.monotonic() - started
        counts = {s: sum(1 for r in results if r.status == s)
                  for s in ("added", "replaced", "unchanged", "removed", "skipped", "failed")}
        embedded = comps.embedder.misses  # passages and the answerer's statements
        statements = getattr(comps, "statements_prepared", 0)
        passages = sum(r.chunks for r in results if r.status in ("added", "replaced"))
        # Without --sync, documents whose files were deleted or renamed stay searchable (and a renamed one is cited
        # twice): say so, and how to drop them.
        gone = [] if sync or watch else comps.ingestor(extra).gone(paths)
        system = system_failures(results)
        if as_json:
            print(json.dumps({"summary": counts, "system_failures": system, "embedded": embedded,
                              "statements_prepared": statements, "passages": passages,
                              "seconds": round(seconds, 3), "search_graph": getattr(comps, "graph_builds", []),
                              "results": [r.model_dump() for r in results],
                              "files_gone": gone}, ensure_ascii=False))
        else:
            _print_ingest(results, counts, embedded - statements, statements, passages, seconds)
            if system:
                reasons = ", ".join(f"{reason} ({n})" for reason, n in system.items())
                out.print(f"[bold red]{plural(sum(system.values()), 'file')} failed for a system reason, not for "
                          f"what {'it holds' if sum(system.values()) == 1 else 'they hold'}: {shown(reasons)}[/]",
                          highlight=False, soft_wrap=True)
            if gone:
                one = len(gone) == 1
                named = ", ".join(shown(display(g)) for g in gone[:GONE_NAMED])
                more = f" and {len(gone) - GONE_NAMED:,} more" if len(gone) > GONE_NAMED else ""
                out.print(f"[yellow]{plural(len(gone), 'indexed document')} under these paths "
                          f"{'has' if one else 'have'} no file any more (deleted or renamed): "
                          f"{named}{more}; add --sync to remove {'it' if one else 'them'}[/]",
                          highlight=False, soft_wrap=True)
        if system and not watch:
            raise typer.Exit(SYSTEM_FAILURE)
        if watch:
            from citerag.cli.watch import watch_folders

            watch_folders(comps, paths, extra, as_json, since=started_at)
            return
        if counts["failed"] and not (counts["added"] or counts["replaced"] or counts["unchanged"]):
            raise typer.Exit(1)


SYSTEM_FAILURE = 3  # the exit status when any file failed for a system reason (documented in `ingest --help`)
GONE_NAMED = 5


def system_failures(results) -> dict[str, int]:
    """How many files failed (or were not attempted) for each system reason, as the summary names them: the reason
    without the file's own part ("cannot read: Input/output error", "the disk holding … is full")."""
    out: dict[str, int] = {}
    for r in results:
        if r.system and r.status in ("failed", "skipped"):
            reason = (r.reason or "unknown").split(";")[0]
            out[reason] = out.get(reason, 0) + 1
    return out  # the files a notice names before it counts the rest


def _print_ingest(results, counts: dict[str, int], embedded: int, statements: int, passages: int,
                  seconds: float) -> None:
    """Failures and skips were printed on stderr, and documents added or replaced on stdout, as they happened; here
    what --sync removed, then one summary line: passages indexed, passages embedded (the rest came from the cache)
    and the answerer's statements prepared ("396 passages indexed, 2667 embedded" counted both as one)."""
    for r in results:
        if r.status == "removed":
            out.print(added_line(r), highlight=False, soft_wrap=True)
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    rate = f", {passages / seconds:.1f} passages/s" if passages and seconds > 0 else ""
    prepared = f", {plural(statements, 'answer statement')} prepared" if statements else ""
    out.print(f"[bold]{summary or 'nothing to do'}[/]; {plural(passages, 'passage')} indexed, {embedded} embedded"
              f"{prepared} in {seconds:.1f} s{rate}", highlight=False, soft_wrap=True)
