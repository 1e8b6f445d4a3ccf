"""The pip command that adds an extra to this install, worded for how citerag was installed: from a checkout
(`pip install -e ".[local]"`) or from a wheel (`pip install "citerag[local]"`). A message that names the other
one sends the user to a command that fails: no package of that name is published, or there is no checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path


@cache
def checkout() -> Path | None:
    """The source checkout this package runs from (an editable install), or None for an installed wheel."""
    root = Path(__file__).resolve().parents[2]  # lambdas/citerag/extras.py -> the checkout
    try:
        project = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if 'name = "citerag"' in project else None


def pip_install(extra: str) -> str:
    root = checkout()
    if root is None:
        return f'pip install "citerag[{extra}]"'
    try:
        here = Path.cwd().resolve() == root
    except OSError:
        here = False
    return f'pip install -e ".[{extra}]"' if here else f'pip install -e "{root}[{extra}]"'


def needs(what: str, extra: str) -> str:
    """'citerag serve needs the local extra: pip install -e ".[local]"'."""
    return f"{what} needs the {extra} extra: {pip_install(extra)}"
