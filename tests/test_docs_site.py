"""The documentation site: its generated reference pages are what the code gives, it builds with
`mkdocs build --strict` (no broken link, no page outside the nav), and the README stays short."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import gen_reference  # noqa: E402


def test_the_configuration_page_is_generated_from_settings():
    assert (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8") == gen_reference.configuration_md(), \
        "run python scripts/gen_reference.py"


def test_the_cli_page_is_generated_from_the_typer_app():
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == gen_reference.cli_md(), \
        "run python scripts/gen_reference.py"


def test_every_setting_and_command_is_on_its_page():
    from citerag.settings import Settings

    config = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert all(f"`CITERAG_{name.upper()}`" in config for name in Settings.model_fields)
    cli = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for command in ("ask", "chat", "ingest", "serve", "mcp", "bench", "datasets fetch"):
        assert f"## `citerag {command}`" in cli


def test_the_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocs")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "site" / "configuration" / "index.html").is_file()


def test_the_readme_is_short_and_has_the_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    assert '.venv/bin/pip install -e ".[local]" && .venv/bin/citerag ask "' in readme
    assert '.venv/bin/pip install -e ".[local,dev]" && .venv/bin/pytest' in readme
