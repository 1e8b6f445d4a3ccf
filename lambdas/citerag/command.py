"""The `citerag` entry point: the command line when an extra that brings it is installed, else one line saying
which to install (the base install is what a Lambda function needs, and has no typer or rich)."""

from __future__ import annotations

import importlib.util

NEEDS_EXTRA = ("citerag: the command line needs an extra: pip install 'citerag[local]' (with the embedded model) "
               "or 'citerag[cli]' (without it)")


def main() -> None:
    if any(importlib.util.find_spec(name) is None for name in ("typer", "rich")):
        raise SystemExit(NEEDS_EXTRA)
    from citerag.cli import main as run

    run()
