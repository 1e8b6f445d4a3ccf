"""Write the first N SciFact abstracts as text files (title on the first line) so `citerag bench-ingest` can
measure the ingest pipeline on them. Reads the shared dataset; writes only to DEST (never into the repository).

    python scripts/scifact_files.py ../shared/datasets/scifact /tmp/scifact-500 --limit 500
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset", type=Path)
    ap.add_argument("dest", type=Path)
    ap.add_argument("--limit", type=int, default=500)
    args = ap.parse_args()
    args.dest.mkdir(parents=True, exist_ok=True)
    n = 0
    with (args.dataset / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if n >= args.limit:
                break
            doc = json.loads(line)
            text = f"{doc.get('title') or ''}\n\n{doc.get('text') or ''}\n"
            (args.dest / f"{doc['_id']}.txt").write_text(text, encoding="utf-8")
            n += 1
    print(f"{n} abstracts in {args.dest}")


if __name__ == "__main__":
    main()
