"""The code base stays ruff-clean; run as a test so the one test command checks it too."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    res = subprocess.run([ruff, "check", "lambdas", "tests", "scripts", "infra"], cwd=ROOT, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stdout + res.stderr
