"""Commands that cannot rot: every shell block of the README and of docs/ runs here, or is marked as needing the
network, an AWS account, minutes of CPU (a benchmark run by hand, its figures reported beside it) or a terminal that
stops it (a command that runs until Ctrl-C): `<!-- needs: network -->`, `aws`, `time` or `terminal` just before
the block. Each block runs
as one bash script in a new data dir, with the hashing embedder (no model is needed to check that a command works)
and a home folder whose ~/docs holds copies of the samples."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "lambdas" / "citerag" / "samples"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(bash|console|sh|shell)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
MARKER = re.compile(r"<!--\s*needs:\s*([a-z, ]+?)\s*-->\s*\Z")
KNOWN_NEEDS = {"aws", "network", "time", "terminal"}


def _console_commands(script: str) -> str:
    """A console block shows `$ command` lines and their output: only the commands run."""
    return "\n".join(line[2:] for line in script.splitlines() if line.startswith("$ "))


def _blocks():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            before = text[:m.start()].rstrip() + "\n"
            marker = MARKER.search(before.rstrip())
            needs = {w.strip() for w in marker.group(1).split(",")} if marker else set()
            line = text.count("\n", 0, m.start()) + 1
            script = _console_commands(m.group(2)) if m.group(1) == "console" else m.group(2)
            yield pytest.param(page, line, script, needs, id=f"{page.relative_to(ROOT)}:{line}")


BLOCKS = list(_blocks())


def test_the_pages_have_shell_blocks_to_run():
    # The collection finds the README's blocks, and most blocks are run, not marked away.
    assert any(p.values[0].name == "README.md" for p in BLOCKS)
    run = [p for p in BLOCKS if not p.values[3]]
    assert len(run) >= len(BLOCKS) // 3, [p.id for p in BLOCKS if p.values[3]]


@pytest.fixture
def shell_env(tmp_path):
    home = tmp_path / "home"
    docs = home / "docs"
    docs.mkdir(parents=True)
    for f in SAMPLES.iterdir():
        if f.is_file():
            shutil.copy(f, docs / f.name)
    shutil.copy(SAMPLES / "kumo-pure-300-manual-en.pdf", docs / "old.pdf")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITERAG_")}
    env.update({
        "HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "CITERAG_DATA_DIR": str(tmp_path / "data"),
        "CITERAG_EMBEDDER": "hashing",
        "CITERAG_EMBEDDING_CACHE_PATH": str(tmp_path / "embeddings.sqlite"),
        "BROWSER": "true",  # --open hands the file to a browser: a no-op here
        "COLUMNS": "120",
    })
    return env


@pytest.mark.parametrize(("page", "line", "script", "needs"), BLOCKS)
def test_every_shell_block_runs_or_says_what_it_needs(page, line, script, needs, shell_env):
    assert needs <= KNOWN_NEEDS, f"{page.name}:{line}: unknown need {needs - KNOWN_NEEDS}"
    if needs:
        return  # an AWS account or the network: named, and not run here
    body = script
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=ROOT, env=shell_env,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
    assert result.returncode == 0, (f"{page.name}:{line} failed ({result.returncode}):\n{body}\n"
                                    f"--- stdout\n{result.stdout[-2000:]}\n--- stderr\n{result.stderr[-2000:]}")


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = next(line for line in readme.splitlines() if line.rstrip().endswith(".venv/bin/pytest"))
    last = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip()][-1]
    assert last.strip() == command.strip()


def test_no_page_points_outside_the_repository():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert "../shared" not in text and "/work/" not in text, page.name
