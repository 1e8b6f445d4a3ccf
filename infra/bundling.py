"""Lambda assets built offline without Docker: `pip install --target` with Linux x86_64 wheels for the
Lambda runtime's Python, base dependencies only (no embedded model, no command line).

boto3/botocore are left out: the Lambda Python runtime provides them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROVIDED_BY_RUNTIME = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six.py")
NOT_IN_LAMBDA = ("citerag/samples", "citerag/testing", "citerag/cli", "citerag/bench")
LAMBDA_PYTHON = "3.13"


def build(out_dir: Path, *, python_version: str = LAMBDA_PYTHON, quiet: bool = True) -> Path:
    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    q = ["-q"] if quiet else []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "wheel", *q, "--no-deps", "-w", tmp, str(ROOT)], check=True)
        wheel = next(Path(tmp).glob("citerag-*.whl"))
        subprocess.run([sys.executable, "-m", "pip", "install", *q, "--target", str(out_dir), "--platform",
                        "manylinux2014_x86_64", "--implementation", "cp", "--python-version", python_version,
                        "--only-binary=:all:", "--upgrade", str(wheel)], check=True)
    for name in PROVIDED_BY_RUNTIME:
        for path in out_dir.glob(name + "*"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    for rel in NOT_IN_LAMBDA:
        path = out_dir / rel
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    for cache in out_dir.rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)
    return out_dir


def size_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "cdk.out/lambda-asset")
    build(target, quiet=False)
    print(f"{target}: {size_bytes(target) / 1e6:.1f} MB unzipped")
