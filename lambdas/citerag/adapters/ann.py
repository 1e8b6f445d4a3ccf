"""Approximate dense search for large embedded indexes: an HNSW graph (usearch) over the read structure's vectors.

Chosen by `CITERAG_INDEX_ANN=hnsw` (the `ann` extra), for indexes where the exact scan no longer answers in 50 ms.
The graph is built or extended by ingest, once its documents are written (`SqliteIndex.prepare_search`), and saved
beside the vectors (memory-mapped by searches); a search never builds it: rows appended since the graph was saved
(or every row, before there is a graph) are scanned exactly. Candidates are
re-scored with the exact float32 vectors, so scores are the exact scan's; what changes is that a true neighbour can
be missed (recall@10 measured by `citerag bench-index --ann hnsw`). Filters and deleted rows: the graph is asked
for enough neighbours that, at the allowed share of rows, k survive; when too few rows are allowed (or the graph
returns too few), the allowed rows are scanned exactly instead.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path

import numpy as np

from citerag.adapters.index_store import IndexStore, Snapshot, scan
from citerag.errors import CiteragError
from citerag.extras import needs

# Below this many rows the exact scan is a few milliseconds: no graph.
MIN_ROWS = 50_000
# Allowed rows scanned exactly rather than through the graph when there are at most this many of them.
EXACT_ALLOWED = 20_000
_BUILD_BATCH = 50_000


class HnswDense:
    def __init__(self, store: IndexStore, *, ef_search: int = 64, connectivity: int = 16,
                 expansion_add: int = 128) -> None:
        try:
            from usearch.index import Index
        except ImportError:
            raise CiteragError(needs("CITERAG_INDEX_ANN=hnsw (usearch)", "ann")) from None
        self._Index = Index
        self.store = store
        self.ef_search, self.connectivity, self.expansion_add = ef_search, connectivity, expansion_add
        self._graphs: dict[tuple[str, int], tuple[object, int, int]] = {}  # graph, rows, hnsw.json's mtime
        self._lock = threading.Lock()

    def search(self, snap: Snapshot, q: np.ndarray, k: int, allowed: np.ndarray | None) -> tuple[np.ndarray,
                                                                                                   np.ndarray]:
        """Candidate rows (allowed ones only) and their exact scores."""
        n_allowed = snap.n if allowed is None else int(np.count_nonzero(allowed))
        if n_allowed == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        graph, covered = self.graph(snap)
        if graph is None or n_allowed <= max(EXACT_ALLOWED, k):
            return self._exact(snap, q, allowed)
        want = min(covered, math.ceil(k * snap.n / n_allowed * 1.2) + 16)
        for _ in range(2):
            keys = np.asarray(graph.search(q, want, threads=1).keys, dtype=np.int64)  # type: ignore[attr-defined]
            if allowed is not None:
                keys = keys[allowed[keys]]
            tail = np.arange(covered, snap.n, dtype=np.int64)
            if allowed is not None:
                tail = tail[allowed[covered:]]
            rows = np.concatenate([keys, tail])
            if len(rows) >= min(k, n_allowed) or want >= covered:
                order = np.argsort(rows)  # read the vectors in file order, score them back in candidate order
                scores = np.empty(len(rows), dtype=np.float32)
                scores[order] = scan(snap.dense[rows[order]], q)
                return rows, scores
            want = min(covered, want * 4)
        return self._exact(snap, q, allowed)

    @staticmethod
    def _exact(snap: Snapshot, q: np.ndarray, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if allowed is None:
            return np.arange(snap.n, dtype=np.int64), scan(snap.dense, q)
        rows = np.flatnonzero(allowed)
        return rows, scan(snap.dense[rows], q)

    # --- the graph ---------------------------------------------------------------------------------------------------

    def graph(self, snap: Snapshot):
        """The saved graph of the snapshot's epoch and how many rows it covers; (None, 0) when there is none. Never
        built here: ingest builds and extends it (build)."""
        key = (snap.namespace, snap.epoch)
        try:
            mtime = (snap.root / "hnsw.json").stat().st_mtime_ns
        except OSError:
            return None, 0
        with self._lock:
            graph, covered, seen = self._graphs.get(key, (None, 0, 0))
            if graph is None or seen != mtime:  # none yet, or another process extended it
                saved = _read_json(snap.root / "hnsw.json")
                if not saved or saved["rows"] > snap.n:
                    return None, 0
                graph, covered = self._view(snap.root / saved["file"]), saved["rows"]
                self._graphs = {k: v for k, v in self._graphs.items() if k[0] != snap.namespace}
                self._graphs[key] = (graph, covered, mtime)
            return graph, covered

    def build(self, snap: Snapshot) -> dict[str, float] | None:
        """Bring the epoch's graph up to date with the snapshot: built, or extended by the rows appended since it was
        saved. None when it already covers every row."""
        root = snap.root
        with self.store.locked(snap.namespace):
            saved = _read_json(root / "hnsw.json")
            if saved and saved["rows"] >= snap.n:
                return None
            t = time.perf_counter()
            if saved:
                graph = self._Index.restore(str(root / saved["file"]))
                start = saved["rows"]
            else:
                graph = self._Index(ndim=snap.dim, metric="ip", dtype="f16", connectivity=self.connectivity,
                                    expansion_add=self.expansion_add, expansion_search=self.ef_search)
                start = 0
            for a in range(start, snap.n, _BUILD_BATCH):
                b = min(snap.n, a + _BUILD_BATCH)
                graph.add(np.arange(a, b, dtype=np.uint64), np.asarray(snap.dense[a:b]),
                          threads=os.cpu_count() or 1)
            name = f"hnsw-{snap.n}.usearch"
            graph.save(str(root / name))
            tmp = root / f"hnsw.json.tmp{os.getpid()}"
            tmp.write_text(json.dumps({"rows": snap.n, "file": name}), encoding="utf-8")
            os.replace(tmp, root / "hnsw.json")
            if saved and saved["file"] != name:
                (root / saved["file"]).unlink(missing_ok=True)
        return {"rows": snap.n, "added": snap.n - start, "seconds": round(time.perf_counter() - t, 3)}

    def _view(self, path: Path):
        graph = self._Index.restore(str(path), view=True)  # memory-mapped, not read
        graph.expansion_search = self.ef_search
        return graph


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
