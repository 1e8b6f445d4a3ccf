"""The `citerag` command line. Every command but the servers (mcp, serve) takes --json; index commands take --index
PATH. Each command lives in its own module and registers itself on the one Typer app (citerag.cli.root); a command
line imports the module of the command it runs and nothing else (`citerag --version` not even typer)."""

from __future__ import annotations

import os
import sys

__all__ = ["app", "main"]


def __getattr__(name: str):
    """`citerag.cli.app`: the whole command line, every command registered (what tests and embedders drive)."""
    if name == "app":
        from citerag.cli.root import app, load_all

        load_all()
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    argv = sys.argv[1:]
    if argv == ["--version"]:
        from importlib.metadata import version

        print(f"citerag {version('citerag')}")
        return
    from citerag.cli.root import app, load

    load(argv, os.environ)
    try:
        app()
    except BrokenPipeError:  # `citerag search ... | head`
        sys.stderr.close()
