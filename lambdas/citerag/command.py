"""The `citerag` entry point: the command line when an extra that brings it is installed, else one line saying
which to install (the base install is what a Lambda function needs, and has no typer or rich)."""

from __future__ import annotations

import importlib.util

from citerag.extras import pip_install

NEEDS_EXTRA = (f"citerag: the command line needs an extra: {pip_install('local')} (with the embedded model), "
               f"or {pip_install('cli')} (without it)")


def main() -> None:
    if any(importlib.util.find_spec(name) is None for name in ("typer", "rich")):
        raise SystemExit(NEEDS_EXTRA)
    from citerag.cli import main as run

    run()
