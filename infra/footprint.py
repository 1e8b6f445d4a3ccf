"""What each deployed function costs: its asset's size and the CPU time a cold start spends importing its handler,
against a handler that imports only boto3, measured in the same run (the ratio is what holds on a busy machine).

Each measurement is a fresh child interpreter of the Lambda runtime's Python version, with the function's asset and a
stand-in for the runtime's own packages (boto3, botocore and their dependencies, compiled like the runtime's) on its
path and nothing else (no site-packages); its CPU time (user + system, from the kernel's accounting of the child) is
the whole interpreter start and import, as a Lambda init does. The median of the rounds is reported; rounds run the
functions in turn, so a busy moment falls on all of them alike.
"""

from __future__ import annotations

import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from infra import bundling


@dataclass(frozen=True)
class Function:
    name: str
    bundle: str  # infra.bundling asset
    module: str  # what the Lambda runtime imports at init (the Handler setting's module)


FUNCTIONS = (
    Function("search", "search", "citerag.handlers.search"),
    Function("ingest", "search", "citerag.handlers.ingest"),
    Function("gateway target", "search", "citerag.handlers.gateway"),
    Function("parser", "slim", "citerag.handlers.parser"),
    Function("gateway interceptor", "slim", "citerag.handlers.gateway_interceptor"),
    Function("invocation-logging setup", "slim", "citerag.handlers.invocation_logging"),
)
FLOOR = "boto3"  # a handler that imports only boto3
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six")
FORBIDDEN_IN_SLIM = ("numpy", "pinecone", "pdfminer", "pypdf", "cryptography", "aws_xray_sdk")


def runtime_packages(target: Path, python: str | None) -> Path:
    """A copy of boto3 and its dependencies from this environment, compiled by `python` as the runtime ships them."""
    target.mkdir(parents=True, exist_ok=True)
    for name in RUNTIME_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise RuntimeError(f"{name} is not installed here: the boto3 floor needs it")
        origin = Path(spec.origin)
        if origin.name == "__init__.py":
            shutil.copytree(origin.parent, target / name, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(origin, target / origin.name)
    if python:
        subprocess.run([python, "-m", "compileall", "-q", "-j", "2", "--invalidation-mode", "unchecked-hash",
                        str(target)], check=True, capture_output=True)
    return target


def child_env(path: list[Path], tracing: bool) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.pathsep.join(map(str, path)),
           "PYTHONDONTWRITEBYTECODE": "1", "AWS_REGION": "ap-northeast-1", "AWS_DEFAULT_REGION": "ap-northeast-1",
           "AWS_LAMBDA_FUNCTION_NAME": "citerag-footprint", "LAMBDA_TASK_ROOT": str(path[0]),
           "CITERAG_ACTION_GROUP": "citerag-search"}
    if not tracing:
        env["POWERTOOLS_TRACE_DISABLED"] = "true"
    return env


def import_cpu_ms(python: str, module: str, env: dict[str, str]) -> float:
    """CPU milliseconds of a fresh interpreter that imports `module` (no site-packages: -S)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([python, "-S", "-c", f"import {module}"], env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"import {module} failed:\n{proc.stderr[-2000:]}")
    return 1000 * ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))


def loaded_modules(python: str, module: str, env: dict[str, str]) -> set[str]:
    code = f"import sys, {module}; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([python, "-S", "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    return set(out.split())


@dataclass
class Row:
    name: str
    bundle: str
    size_mb: float
    zipped_mb: float
    on_ms: float
    off_ms: float


def measure(assets: dict[str, Path], runtime: Path, python: str, rounds: int) -> tuple[float, list[Row]]:
    """(floor ms, one row per function) with tracing on and off."""
    floor_runs: list[float] = []
    runs: dict[tuple[str, bool], list[float]] = {}
    for _ in range(rounds):
        floor_runs.append(import_cpu_ms(python, FLOOR, child_env([runtime], tracing=False)))
        for fn in FUNCTIONS:
            for tracing in (True, False):
                env = child_env([assets[fn.bundle], runtime], tracing)
                runs.setdefault((fn.name, tracing), []).append(import_cpu_ms(python, fn.module, env))
    sizes = {b: (bundling.size_bytes(p) / 1e6, bundling.zip_size_bytes(p) / 1e6) for b, p in assets.items()}
    rows = [Row(fn.name, fn.bundle, *sizes[fn.bundle], statistics.median(runs[(fn.name, True)]),
                statistics.median(runs[(fn.name, False)])) for fn in FUNCTIONS]
    return statistics.median(floor_runs), rows


def build_assets(folder: Path, python_version: str = bundling.LAMBDA_PYTHON) -> dict[str, Path]:
    return {b: bundling.build(folder / b, bundle=b, python_version=python_version) for b in bundling.BUNDLES}


def report(floor: float, rows: list[Row], python: str, rounds: int) -> str:
    lines = [f"Cold-import CPU time: median of {rounds} fresh `{python} -S` processes per row; floor = a handler "
             f"importing only boto3: {floor:.0f} ms",
             f"{'function':<26} {'asset':<7} {'unzipped':>9} {'zipped':>7} {'tracing on':>11} {'ratio':>6} "
             f"{'tracing off':>12} {'ratio':>6}"]
    for r in rows:
        lines.append(f"{r.name:<26} {r.bundle:<7} {r.size_mb:>7.1f}MB {r.zipped_mb:>5.1f}MB {r.on_ms:>9.0f}ms "
                     f"{r.on_ms / floor:>5.2f}x {r.off_ms:>10.0f}ms {r.off_ms / floor:>5.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--assets", type=Path, help="a folder with search/ and slim/ built before (python -m "
                                                "infra.bundling search DIR/search; ... slim DIR/slim)")
    args = ap.parse_args(argv)
    python = bundling.target_python(bundling.LAMBDA_PYTHON)
    if python is None:
        print(f"Python {bundling.LAMBDA_PYTHON} (the Lambda runtime's) is needed to measure; set CITERAG_TARGET_PYTHON",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        assets = ({b: args.assets / b for b in bundling.BUNDLES} if args.assets else build_assets(Path(tmp)))
        runtime = runtime_packages(Path(tmp) / "runtime", python)
        slim_env = child_env([assets["slim"], runtime], tracing=True)
        leaked = {m for fn in FUNCTIONS if fn.bundle == "slim"
                  for m in loaded_modules(python, fn.module, slim_env) if m in FORBIDDEN_IN_SLIM}
        floor, rows = measure(assets, runtime, python, args.rounds)
    print(report(floor, rows, python, args.rounds))
    if leaked:
        print(f"slim functions import {', '.join(sorted(leaked))}", file=sys.stderr)
        return 1
    return 0
