"""What an embedded index answers, to compare two releases on the same file (an upgrade must not change it). Run
it, do not test it: build a synthetic index with one release, copy it, and run this with each release's Python on
its own copy (the newer release upgrades its copy when it opens it), then compare the two outputs:

    python -m citerag.bench.index build --index old.sqlite --start 0 --stop 100000
    cp -r old.sqlite new.sqlite; cp -r old.sqlite-snapshot new.sqlite-snapshot
    OLD/python scripts/index_answers.py old.sqlite old.json
    NEW/python scripts/index_answers.py new.sqlite new.json   # prints the time the open (and upgrade) took
    cmp old.json new.json

Per query (30 of the synthetic set): the dense top 10, with a tenant filter, the BM25 top 10 with scores, and the
text of the best dense hit.
"""

from __future__ import annotations

import json
import sys
import time

from citerag.adapters.sqlite_index import SqliteIndex
from citerag.bench.index import DIM, Synthetic, tenant_filter
from citerag.search.sparse import encode_query


def main(index: str, out: str) -> None:
    t, c = time.perf_counter(), time.process_time()
    idx = SqliteIndex(index, dim=DIM, model_id="synthetic")
    opened = (time.perf_counter() - t, time.process_time() - c)
    stats = idx.corpus_stats()
    answers = []
    for i, (text, v) in enumerate(Synthetic(0).queries(30)):
        answers.append({"dense": [m.id for m in idx.query_dense(v, 10)],
                        "dense_filtered": [m.id for m in idx.query_dense(v, 10, tenant_filter(i))],
                        "sparse": [(m.id, round(m.score, 4)) for m in idx.query_sparse(encode_query(text, stats), 10)],
                        "text": idx.query_dense(v, 1)[0].metadata["text"]})
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(answers, fh, ensure_ascii=False)
    print(f"opened in {opened[0]:.2f} s ({opened[1]:.2f} CPU s)", file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:3])
