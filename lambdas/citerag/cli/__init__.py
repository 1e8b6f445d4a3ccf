"""The `citerag` command line. Every command but the servers (mcp, serve) takes --json; index commands take --index
PATH. Each command lives in its own module and registers itself on the one Typer app (citerag.cli.common)."""

from __future__ import annotations

import sys

# Registration order is the order `citerag --help` lists the commands.
from citerag.cli import (  # noqa: F401
    ask,
    bench,
    bench_speed,
    chat,
    datasets,
    docs,
    ingest,
    invoke,
    mcp,
    progress,
    search,
    serve,
    status,
    trace,
)
from citerag.cli.common import app

__all__ = ["app", "main"]


def main() -> None:
    try:
        app()
    except BrokenPipeError:  # `citerag search ... | head`
        sys.stderr.close()
