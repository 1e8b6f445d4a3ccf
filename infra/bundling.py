"""Assets built offline without Docker: `pip install --target` with Linux wheels, then compiled for the target's
Python. Each asset holds only what its functions import:

- `search` (search, ingest, the Gateway target): citerag and its base dependencies, x86_64.
- `slim` (the Classic parser, the Gateway interceptor, the invocation-logging setup): citerag with pydantic,
  pydantic-settings, Powertools (no tracer extra) and platformdirs: no numpy, pinecone, pypdf, pdfminer or cryptography.
- `agentcore` (the AgentCore Runtime's code): citerag with its agentcore extra and ADOT, aarch64.

Every asset is deterministic, so the same tree gives the same asset hash and an unchanged function is not
uploaded again: citerag's wheel is built from a copy of the package (no egg-info written into the tree), nothing that
names this machine is kept (console scripts, pip's direct_url.json, caches), and the modules are compiled to .pyc with
unchecked-hash invalidation (no timestamps; CPython's "reproducible builds" mode) by the target's Python version, so
a cold start reads bytecode instead of compiling every module it imports.

boto3/botocore are left out: the Lambda Python runtime provides them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROVIDED_BY_RUNTIME = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "python_dateutil", "urllib3",
                       "six.py", "six-")
# Swagger UI's static files (1.7 MB): Powertools serves them only from enable_swagger(), which no function calls.
NOT_IN_LAMBDA = ("citerag/samples", "citerag/testing", "citerag/cli", "citerag/bench",
                 "aws_lambda_powertools/event_handler/openapi/swagger_ui/swagger-ui*.min.*")
LAMBDA_PYTHON = "3.13"
LAMBDA_PLATFORMS = ("manylinux2014_x86_64",)
# The slim asset's dependencies, by name; their bounds come from pyproject.toml so they live in one place.
SLIM_DEPENDENCIES = ("pydantic", "pydantic-settings", "aws-lambda-powertools", "platformdirs")
BUNDLES = ("search", "slim")
LAMBDA_TASK_ROOT = "/var/task"  # where Lambda unpacks the asset: the path tracebacks show


def _base_requirements() -> dict[str, str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    return {re.split(r"[\[<>=!~; ]", d, maxsplit=1)[0].lower(): d for d in deps}


def slim_requirements() -> list[str]:
    base = _base_requirements()
    # Powertools without its [tracer] extra: the X-Ray SDK is what a slim function must not carry.
    return [re.sub(r"\[[^\]]*\]", "", base[name]) for name in SLIM_DEPENDENCIES]


def _wheel(tmp: Path, quiet: bool) -> Path:
    """citerag's wheel, built from a copy of the package so the build writes nothing into the working tree."""
    src = tmp / "src"
    (src / "lambdas").mkdir(parents=True)
    shutil.copy2(ROOT / "pyproject.toml", src / "pyproject.toml")
    # The wheel's METADATA would carry the README: an edit of it is no reason for a new asset of every function.
    (src / "README.md").write_text("citerag: see the project's README.\n", encoding="utf-8")
    shutil.copytree(ROOT / "lambdas" / "citerag", src / "lambdas" / "citerag",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    q = ["-q"] if quiet else []
    subprocess.run([sys.executable, "-m", "pip", "wheel", *q, "--no-deps", "-w",
                    str(tmp / "dist"), str(src)], check=True)
    return next((tmp / "dist").glob("citerag-*.whl"))


def _pip_target(out_dir: Path, platforms: tuple[str, ...], python_version: str, quiet: bool, *specs: str,
                deps: bool = True) -> None:
    q = ["-q"] if quiet else []
    subprocess.run([sys.executable, "-m", "pip", "install", *q, "--target", str(out_dir), "--no-compile",
                    *[a for p in platforms for a in ("--platform", p)], "--implementation", "cp",
                    "--python-version", python_version, "--only-binary=:all:", "--upgrade",
                    *([] if deps else ["--no-deps"]), *specs], check=True)


def _install(out_dir: Path, platforms: tuple[str, ...], python_version: str, quiet: bool, extra: str = "",
             packages: tuple[str, ...] = (), deps: bool = True) -> Path:
    """A fresh folder with citerag (with `extra`) and, when `deps`, its dependencies installed for the target
    platforms from binary wheels only; `packages` are installed beside it with their own dependencies."""
    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = _wheel(Path(tmp), quiet)
        spec = f"citerag[{extra}] @ {wheel.as_uri()}" if extra else str(wheel)
        _pip_target(out_dir, platforms, python_version, quiet, spec, *(packages if deps else ()), deps=deps)
        if not deps and packages:
            _pip_target(out_dir, platforms, python_version, quiet, *packages)
    return out_dir


def _remove(out_dir: Path, rels) -> None:
    for rel in rels:
        for path in out_dir.glob(rel):
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def _scrub(out_dir: Path) -> None:
    """Drop what differs between machines or builds and nothing imports: caches, pip's record of where the wheel
    came from (a temporary path), console scripts written with this machine's interpreter."""
    for cache in list(out_dir.rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)
    dropped = ("direct_url.json", "REQUESTED")
    _remove(out_dir, (*(f"*.dist-info/{name}" for name in dropped), "*.egg-info"))
    for record in out_dir.glob("*.dist-info/RECORD"):  # its lines name (and hash) the files just dropped
        lines = record.read_text(encoding="utf-8").splitlines(keepends=True)
        record.write_text("".join(x for x in lines if x.split(",", 1)[0].rsplit("/", 1)[-1] not in dropped),
                          encoding="utf-8")


def target_python(version: str) -> str | None:
    """An interpreter of the target's Python version to compile with: CITERAG_TARGET_PYTHON, this one, pythonX.Y on
    PATH, or a pyenv install; None when this machine has none."""
    candidates = [os.environ.get("CITERAG_TARGET_PYTHON"), sys.executable, shutil.which(f"python{version}"),
                  *sorted(str(p) for p in Path.home().glob(f".pyenv/versions/{version}*/bin/python{version}"))]
    for exe in filter(None, candidates):
        try:
            got = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            continue
        if got == version:
            return exe
    return None


def compile_tree(out_dir: Path, python_version: str, prefix: str | None) -> bool:
    """Write .pyc next to every module for `python_version`, reproducibly (unchecked-hash, fixed hash seed, paths
    recorded under `prefix`). False, with a note on stderr, when no interpreter of that version is found: the asset
    is still correct, its functions only compile at cold start."""
    exe = target_python(python_version)
    if exe is None:
        print(f"note: no Python {python_version} here (set CITERAG_TARGET_PYTHON): the asset ships without .pyc",
              file=sys.stderr)
        return False
    strip = ["-s", str(out_dir)] + (["-p", prefix] if prefix else [])
    subprocess.run([exe, "-m", "compileall", "-q", "-j", "2", "--invalidation-mode", "unchecked-hash", *strip,
                    str(out_dir)], check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    return True


def build(out_dir: Path, *, bundle: str = "search", python_version: str = LAMBDA_PYTHON, quiet: bool = True,
          compile_pyc: bool = True) -> Path:
    """A Lambda asset: `search` (citerag and its base dependencies) or `slim` (see the module's docstring)."""
    if bundle not in BUNDLES:
        raise ValueError(f"unknown Lambda bundle {bundle!r}; one of {', '.join(BUNDLES)}")
    if bundle == "slim":
        out_dir = _install(out_dir, LAMBDA_PLATFORMS, python_version, quiet, packages=tuple(slim_requirements()),
                           deps=False)
    else:
        out_dir = _install(out_dir, LAMBDA_PLATFORMS, python_version, quiet)
    _remove(out_dir, [f"{name}*" for name in PROVIDED_BY_RUNTIME])
    _remove(out_dir, (*NOT_IN_LAMBDA, "bin"))
    _scrub(out_dir)
    if compile_pyc:
        compile_tree(out_dir, python_version, LAMBDA_TASK_ROOT)
    return out_dir


# AgentCore Runtime direct code deployment: ARM64 (Amazon Linux 2023, glibc 2.34), Python 3.12+ (3.10 and 3.11 are
# update-blocked since 2026-08-31), the zip root holds main.py and the vendored packages (docs
# runtime-get-started-code-deploy). numpy's current aarch64 wheels are manylinux_2_28 only, hence both tags.
AGENTCORE_PYTHON = "3.13"
AGENTCORE_PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")
AGENTCORE_ENTRYPOINT = ["opentelemetry-instrument", "main.py"]
AGENTCORE_EXTRA_PACKAGES = ("aws-opentelemetry-distro>=0.12",)  # ADOT: spans to X-Ray / aws/spans
AGENTCORE_MAIN = (
    '"""AgentCore Runtime entry point (generated by infra.bundling): serve the citerag agent on 0.0.0.0:8080."""\n'
    "from citerag.agentcore_app import main\n\nmain()\n")


def build_agentcore(out_dir: Path, *, python_version: str = AGENTCORE_PYTHON, quiet: bool = True,
                    compile_pyc: bool = True) -> Path:
    """The runtime's code asset: citerag with its agentcore extra and ADOT, aarch64 wheels only, main.py at the root."""
    out_dir = _install(out_dir, AGENTCORE_PLATFORMS, python_version, quiet, "agentcore", AGENTCORE_EXTRA_PACKAGES)
    _remove(out_dir, NOT_IN_LAMBDA)
    _scrub(out_dir)
    # pip writes console scripts with this machine's interpreter path; the runtime has its own python3.
    for script in sorted((out_dir / "bin").glob("*")) if (out_dir / "bin").is_dir() else []:
        lines = script.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        if lines and lines[0].startswith("#!") and "python" in lines[0]:
            script.write_text("#!/usr/bin/env python3\n" + "".join(lines[1:]), encoding="utf-8")
            script.chmod(0o755)
    (out_dir / "main.py").write_text(AGENTCORE_MAIN, encoding="utf-8")
    if compile_pyc:
        compile_tree(out_dir, python_version, None)
    return out_dir


def zip_size_bytes(folder: Path) -> int:
    """The deflated zip the CDK asset uploads (AgentCore limits: 250 MB zipped, 750 MB unzipped)."""
    import zipfile

    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "asset.zip"
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
            for p in sorted(Path(folder).rglob("*")):
                if p.is_file():
                    zf.write(p, p.relative_to(folder))
        return target.stat().st_size


def size_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


KINDS = ("search", "slim", "agentcore", "lambda")  # "lambda": the search asset, under its former name

if __name__ == "__main__":
    # python -m infra.bundling [search|slim|agentcore] [DIR]: build an asset and print its sizes.
    kind = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] in KINDS else "search"
    rest = [a for a in sys.argv[1:] if a not in KINDS]
    target = Path(rest[0] if rest else f"cdk.out/{kind}-asset")
    if kind == "agentcore":
        build_agentcore(target, quiet=False)
    else:
        build(target, bundle="search" if kind == "lambda" else kind, quiet=False)
    print(f"{target}: {size_bytes(target) / 1e6:.1f} MB unzipped, {zip_size_bytes(target) / 1e6:.1f} MB zipped")
