"""What each question kind (lambdas/citerag/answerer/rules/kinds.json) earns on the development pool: every
question is asked through `citerag ask`'s default path with all kinds on, then again with each kind switched off.

    python scripts/ablate_kinds.py datasets/answers datasets/pool --json ablation.json

The pool's test families (datasets/pool/README.md) are left out unless --test is given: a kind is kept or removed
on the development families. A kind that earns nothing there (no fact and no refusal lost when it is off) is a
candidate for removal; the table says how many questions it changed either way.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from citerag.answerer.question_kinds import kinds
from citerag.bench import answers as ab
from citerag.components import Components
from citerag.settings import Settings

TEST_FAMILIES = ("en-sqlite", "en-postgresql", "ja-jlreq", "ja-platex")  # datasets/pool/README.md


def families(paths: list[Path], test: bool) -> list[Path]:
    found = []
    for p in paths:
        found += [p] if any(p.glob("questions-*.jsonl")) else sorted(d for d in p.iterdir() if d.is_dir())
    return [f for f in found if test or f.name not in TEST_FAMILIES]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", type=Path, nargs="+", help="a pool folder (each subfolder a family) or family folders")
    ap.add_argument("--test", action="store_true", help="include the pool's test families")
    ap.add_argument("--json", type=Path, help="write the per-family and total figures here")
    args = ap.parse_args()
    ids = tuple(k["id"] for k in kinds())
    total: dict[str, dict[str, dict[str, int]]] = {}
    base: dict[str, dict[str, int]] = {}
    per_family = {}
    for family in families(args.paths, args.test):
        with tempfile.TemporaryDirectory(prefix="citerag-ablate-") as tmp:
            comps = Components(Settings(index_path=Path(tmp) / "index.sqlite"))
            res = ab.run(ab.load(family), comps, ablate=ids,
                         progress=lambda i, n, f=family.name: print(f"\r{f}: {i}/{n}", end="", file=sys.stderr))
        print(file=sys.stderr)
        per_family[family.name] = res["ablation"]
        for r in res["rows"]:
            b = base.setdefault(r["lang"], {"facts": 0, "answerable": 0, "refusals": 0, "near_misses": 0})
            b["answerable" if r["answerable"] else "near_misses"] += 1
            b["facts" if r["answerable"] else "refusals"] += bool(r["right"])
        for kind, by_lang in res["ablation"].items():
            for lang, d in by_lang.items():
                t = total.setdefault(kind, {}).setdefault(lang, {"facts": 0, "refusals": 0, "changed": 0})
                for k in t:
                    t[k] += d[k]
    langs = sorted(base)
    print("all kinds on: " + "; ".join(f"{lang} facts {base[lang]['facts']}/{base[lang]['answerable']}, near misses "
                                       f"refused {base[lang]['refusals']}/{base[lang]['near_misses']}"
                                       for lang in langs))
    print(f"{'kind switched off':18}" + "".join(f"{lang + ': facts / refusals (changed)':>36}" for lang in langs))
    zero = {"facts": 0, "refusals": 0, "changed": 0}
    for kind in ids:
        cells = [total[kind].get(lang, zero) for lang in langs]
        print(f"{kind:18}" + "".join(f"{d['facts']:+d} / {d['refusals']:+d} ({d['changed']})".rjust(36)
                                     for d in cells))
    if args.json:
        args.json.write_text(json.dumps({"families": sorted(per_family), "all_on": base, "switched_off": total,
                                         "per_family": per_family}, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
