"""Cold-start proxy and package size of the AgentCore deployables: the runtime's code asset (aarch64) and the Lambda
asset the Gateway target runs (x86_64), built as the CDK app builds them.

    python scripts/agentcore_footprint.py [--repeats 7] [--skip-build DIR_RUNTIME DIR_LAMBDA]

Import time is measured in fresh interpreters on this machine (`python -X importtime` totals; the median of the
runs): the runtime entry module (what a new container imports before /ping answers), the agent module (Strands;
imported on the first invocation), and the Gateway's two handler modules. It needs the dev install (strands,
bedrock-agentcore); the aarch64 asset itself cannot run here.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infra import bundling  # noqa: E402

# The Classic search handler last, as the reference measured under the same load.
MODULES = ("citerag.agentcore_app", "citerag.runtimes.agentcore.agent", "citerag.handlers.gateway",
           "citerag.handlers.gateway_interceptor", "citerag.handlers.search")


def import_ms(module: str, repeats: int) -> float:
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True,
                             text=True, check=True).stderr
        # The last line of -X importtime is the module itself: its cumulative microseconds.
        line = next(x for x in reversed(out.splitlines()) if x.rstrip().endswith(f" {module}"))
        runs.append(int(line.split("|")[1]) / 1000)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--skip-build", nargs=2, metavar=("RUNTIME_DIR", "LAMBDA_DIR"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.skip_build:
            runtime_dir, lambda_dir = map(Path, args.skip_build)
        else:
            runtime_dir = bundling.build_agentcore(Path(tmp) / "runtime")
            lambda_dir = bundling.build(Path(tmp) / "lambda")
        for name, folder, limit in (("runtime asset (aarch64, Python 3.13)", runtime_dir, "250 MB zipped / 750 MB"),
                                    ("Lambda asset (gateway target, x86_64)", lambda_dir, "250 MB unzipped")):
            print(f"{name}: {bundling.size_bytes(folder) / 1e6:.1f} MB unzipped, "
                  f"{bundling.zip_size_bytes(folder) / 1e6:.1f} MB zipped (limit {limit})")
    for module in MODULES:
        print(f"import {module}: median {import_ms(module, args.repeats):.0f} ms over {args.repeats} runs")


if __name__ == "__main__":
    main()
