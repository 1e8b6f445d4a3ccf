"""Ask the development pool's questions with a setting off and on, in one run, and sum the figures per language.

    python scripts/bench_pool_setting.py CITERAG_ANSWER_VARIANTS --out /tmp/variants

Each family is asked with `citerag bench-answers FAMILY --split all --json` once per value, the same code and
index settings otherwise, so the two columns differ only by the setting. The test families (datasets/pool/README.md:
the two per language whose folder name has the lowest SHA-256) are left out unless --test-families is given: their
figures are reported, never used to choose.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POOL = ROOT / "datasets" / "pool"


def families(test: bool) -> list[str]:
    names = sorted(p.name for p in POOL.iterdir() if (p / "docs").is_dir())
    held = {n for lang in ("en", "ja") for n in sorted((n for n in names if n.startswith(f"{lang}-")),
                                                       key=lambda n: hashlib.sha256(n.encode()).hexdigest())[:2]}
    return [n for n in names if (n in held) == test]


def ask(family: str, env: dict[str, str], out: Path) -> list[dict]:
    if not out.exists():
        citerag = shutil.which("citerag", path=str(Path(sys.executable).parent)) or "citerag"
        result = subprocess.run([citerag, "bench-answers", str(POOL / family),
                                 "--split", "all", "--json"], env={**os.environ, **env}, capture_output=True,
                                text=True, check=True)
        out.write_text(result.stdout, encoding="utf-8")
    return json.loads(out.read_text(encoding="utf-8"))["rows"]


def figures(rows: list[dict]) -> dict[str, dict[str, int]]:
    out = {}
    for lang in sorted({r["lang"] for r in rows}):
        sel = [r for r in rows if r["lang"] == lang]
        out[lang] = {"answerable": sum(r["answerable"] for r in sel),
                     "facts": sum(r["answerable"] and r["right"] and not r["abstained"] for r in sel),
                     "near_misses": sum(not r["answerable"] for r in sel),
                     "refused_near_misses": sum(not r["answerable"] and r["abstained"] for r in sel),
                     "refused": sum(r["abstained"] for r in sel)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("setting", help="an environment variable of citerag's settings, e.g. CITERAG_ANSWER_VARIANTS")
    ap.add_argument("--values", default="false,true", help="the values to compare, comma-separated")
    ap.add_argument("--out", type=Path, required=True, help="a folder for each family's JSON (reused if present)")
    ap.add_argument("--test-families", action="store_true", help="the four test families instead")
    args = ap.parse_args()
    values = args.values.split(",")
    report: dict = {}
    for value in values:
        folder = args.out / value
        folder.mkdir(parents=True, exist_ok=True)
        rows = []
        for family in families(args.test_families):
            print(f"{args.setting}={value} {family}", file=sys.stderr)
            rows += ask(family, {args.setting: value}, folder / f"{family}.json")
        report[value] = figures(rows)
    changed = []
    for family in families(args.test_families):
        runs = [{r["id"]: r for r in json.loads((args.out / v / f"{family}.json").read_text())["rows"]}
                for v in values]
        changed += [f"{family} {qid}" for qid, r in runs[0].items()
                    if any((o[qid]["abstained"], o[qid]["right"]) != (r["abstained"], r["right"]) for o in runs[1:])]
    print(json.dumps({"figures": report, "changed": changed}, indent=1))


if __name__ == "__main__":
    main()
