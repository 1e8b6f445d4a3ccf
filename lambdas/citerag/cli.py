"""The `citerag` command line: ingest, search, ask, bench, status.

Every command takes --index PATH and --json. Errors print one specific line (or {"error": ...} with
--json) and exit with status 1; no tracebacks for anything a user can cause.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

try:
    import typer
    from rich.console import Console
except ImportError:  # pragma: no cover - the Lambda base install has no command line
    raise SystemExit("The command line needs an extra: pip install 'citerag[local]' or 'citerag[cli]'") from None
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from citerag.errors import CiteragError
from citerag.settings import Components, Settings

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Answers with verifiable citations.")
out = Console()
err = Console(stderr=True)

IndexOpt = Annotated[Path | None, typer.Option("--index", help="index file (default: per-user data dir)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="machine-readable output")]
NamespaceOpt = Annotated[str | None, typer.Option("--namespace", help="index namespace")]


def _components(index: Path | None, namespace: str | None = None, **extra: Any) -> Components:
    overrides: dict[str, Any] = {k: v for k, v in extra.items() if v is not None}
    if index is not None:
        overrides["index_path"] = index
    if namespace is not None:
        overrides["namespace"] = namespace
    return Components(Settings(**overrides))


@contextmanager
def _errors(as_json: bool):
    try:
        yield
    except CiteragError as exc:
        _fail(str(exc), as_json)
    except ImportError as exc:
        _fail(str(exc), as_json)
    except KeyboardInterrupt:
        _fail("interrupted; the index keeps every document that finished", as_json, code=130)


def _fail(message: str, as_json: bool, code: int = 1) -> None:
    if as_json:
        print(json.dumps({"error": message}, ensure_ascii=False))
    else:
        err.print(f"[bold red]Error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True,
    )


def samples_dir() -> Path:
    return Path(str(resources.files("citerag") / "samples"))


# --- ingest --------------------------------------------------------------------------------------------------


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="files or folders")],
    sync: Annotated[bool, typer.Option("--sync", help="also remove documents whose files are gone")] = False,
    meta: Annotated[list[str] | None, typer.Option("--meta", help="key=value added to every chunk")] = None,
    index: IndexOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Index PDF, Markdown, HTML and text files. Unchanged files are skipped."""
    with _errors(as_json):
        extra = _parse_meta(meta or [])
        comps = _components(index, namespace)
        results = _ingest(comps, paths, sync=sync, extra=extra, quiet=as_json)
        counts = {s: sum(1 for r in results if r.status == s)
                  for s in ("added", "replaced", "unchanged", "removed", "skipped", "failed")}
        if as_json:
            print(json.dumps({"summary": counts, "embedded": comps.embedder.misses,
                              "results": [r.model_dump() for r in results]}, ensure_ascii=False))
        else:
            _print_ingest(results, counts, comps.embedder.misses)
        if counts["failed"] and not (counts["added"] or counts["replaced"] or counts["unchanged"]):
            raise typer.Exit(1)


def _ingest(comps: Components, paths: list[Path], *, sync: bool, extra: dict, quiet: bool):
    ingestor = comps.ingestor(extra)
    with _progress() as progress:
        task = progress.add_task("Ingesting", total=None)

        def on_start(n: int) -> None:
            progress.update(task, total=n)

        def on_file(r) -> None:
            progress.advance(task)

        return ingestor.ingest_paths(paths, sync=sync, on_start=on_start, on_file=on_file)


def _print_ingest(results, counts: dict[str, int], embedded: int) -> None:
    for r in results:
        if r.status in ("failed", "skipped"):
            colour = "red" if r.status == "failed" else "yellow"
            out.print(f"[{colour}]{r.status}[/] {_display(r.source)}: {r.reason}", highlight=False)
        elif r.status != "unchanged":
            out.print(f"[green]{r.status}[/] {_display(r.source)} ({r.chunks} chunks)", highlight=False)
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    out.print(f"[bold]{summary or 'nothing to do'}[/]; {embedded} passages embedded", highlight=False)


def _display(uri: str) -> str:
    from citerag.ingestion import uri_to_path

    p = uri_to_path(uri)
    if p is None:
        return uri
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def _parse_meta(items: list[str]) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CiteragError(f"--meta {item!r}: write key=value")
        extra[key.strip()] = [v for v in value.split(",") if v] if "," in value else value
    return extra


# --- search --------------------------------------------------------------------------------------------------


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="what to look for")],
    top_k: Annotated[int, typer.Option("--top-k", min=1, max=100)] = 5,
    filter_: Annotated[list[str] | None, typer.Option("--filter", help="key=value, key>=n or JSON")] = None,
    mode: Annotated[str, typer.Option("--mode", help="hybrid, dense or bm25")] = "hybrid",
    index: IndexOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Hybrid search; prints passages with their source ids."""
    from citerag.search.filters import parse_cli
    from citerag.search.pipeline import validate_query

    with _errors(as_json):
        validate_query(query)
        if mode not in ("hybrid", "dense", "bm25"):
            raise CiteragError(f"--mode {mode!r}: choose hybrid, dense or bm25")
        flt = parse_cli(filter_ or [])
        comps = _components(index, namespace)
        outcome = comps.pipeline().search(query, top_k=top_k, flt=flt, namespace=comps.settings.namespace,
                                          mode=mode)  # type: ignore[arg-type]
        rows = [
            {"source_id": f"S{i}", "text": h.text, "score": h.score, "uri": h.uri, "title": h.title,
             "page": h.page, "doc_id": h.doc_id, "section": h.section, "relevant": h.relevant}
            for i, h in enumerate(outcome.hits, start=1)
        ]
        if as_json:
            print(json.dumps(rows, ensure_ascii=False))
            return
        if not rows:
            out.print("No results. Is anything ingested? Try: citerag status")
            return
        for r in rows:
            where = _where(r)
            out.print(f"[bold cyan]{r['source_id']}[/] {r['score']:.3f}  [bold]{r['title']}[/]  {where}",
                      highlight=False)
            out.print(f"   {_one_line(r['text'], 300)}", highlight=False)


def _where(r: dict) -> str:
    loc = _display(r["uri"])
    if r.get("page"):
        loc += f", page {r['page']}"
    elif r.get("section"):
        loc += f", {r['section']}"
    return loc


def _one_line(text: str, n: int) -> str:
    t = " ".join(text.split())
    return t if len(t) <= n else t[: n - 1] + "…"


# --- ask -----------------------------------------------------------------------------------------------------


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="your question")],
    agent: Annotated[str, typer.Option("--agent", help="local (default), AGENT_ID:ALIAS_ID of a deployed agent, "
                                                        "or none (search + extractive answer, no agent steps)")]
    = "local",
    filter_: Annotated[list[str] | None, typer.Option("--filter", help="key=value, key>=n or JSON (--agent none)")]
    = None,
    trace: Annotated[bool, typer.Option("--trace", help="print each agent step")] = False,
    save_trace: Annotated[Path | None, typer.Option("--save-trace", help="write the events to FILE")] = None,
    session: Annotated[list[str] | None, typer.Option("--session-attr", help="key=value session attribute")] = None,
    index: IndexOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer from the indexed documents, with a citation (file and page) for every claim."""
    from citerag.search.filters import parse_cli
    from citerag.search.pipeline import validate_query

    with _errors(as_json):
        validate_query(question)
        flt = parse_cli(filter_ or [])
        attrs = {k: str(v) for k, v in _parse_meta(session or []).items()}
        events: list[dict] = []
        if agent == "none":
            from citerag.agent.embedded import EmbeddedAnswerer

            comps = _components(index, namespace)
            _ensure_samples(comps, quiet=as_json)
            answer = EmbeddedAnswerer(comps.pipeline(expand_parents=True),
                                      budget_bytes=comps.settings.response_budget_bytes).ask(
                question, flt=flt, namespace=comps.settings.namespace)
        elif agent == "local":
            from citerag.agent.client import answer_from_events
            from citerag.agent.local import build_runtime

            if flt:
                raise CiteragError("--filter works with --agent none; the agent's filters come from --session-attr")
            comps = _components(index, namespace)
            _ensure_samples(comps, quiet=as_json)
            events = list(build_runtime(comps).invoke(question, session_attributes=attrs))
            answer = answer_from_events(events)
        else:
            from citerag import aws
            from citerag.agent.client import AgentClient

            agent_id, sep, alias_id = agent.partition(":")
            if not sep or not agent_id or not alias_id:
                raise CiteragError(f"--agent {agent!r}: write local, none, or AGENT_ID:ALIAS_ID")
            client = AgentClient(aws.client("bedrock-agent-runtime", read_timeout=120))
            answer = client.ask(question, agent_id, alias_id, session_attributes=attrs)
            events = client.last_events
        if save_trace:
            from citerag.agent.tracefile import save

            save(save_trace, question=question, agent=agent, events=events)
        if as_json:
            print(json.dumps({"answer": answer.text, "answered": answer.answered,
                              "citations": answer.flat_citations()}, ensure_ascii=False))
            return
        _print_answer(answer)
        if trace:
            from citerag.agent.steps import steps_from_events

            _print_steps(steps_from_events(events))


def _print_answer(answer) -> None:
    """The answer with [n] after each cited span, then the numbered source list."""
    numbers: dict[str, int] = {}
    for s in answer.sources:
        numbers.setdefault(s.source_id, len(numbers) + 1)
    text = answer.text
    if answer.citations and not any(f"[{s.source_id}]" in text for s in answer.sources):
        pieces, cursor = [], 0
        for c in answer.citations:
            marks = "".join(f"[{numbers[s.source_id]}]" for s in c.sources)
            pieces.append(text[cursor : c.end] + " " + marks)
            cursor = c.end
        text = "".join(pieces) + text[cursor:]
        label = {sid: str(n) for sid, n in numbers.items()}
    else:
        label = {sid: sid for sid in numbers}
    out.print(text, highlight=False)
    if answer.sources:
        out.print()
        out.print("[bold]Sources[/]")
        for s in answer.sources:
            page = f", page {s.page}" if s.page else ""
            out.print(f" [bold cyan]\\[{label[s.source_id]}][/] {_display(s.uri)}{page} — {s.title}", highlight=False)
            out.print(f"      “{_one_line(s.excerpt, 200)}”", highlight=False)


def _print_steps(steps) -> None:
    table = Table(title="agent steps", show_lines=False)
    for col in ("#", "stage", "step", "tokens in/out", "ms"):
        table.add_column(col, overflow="fold")
    for i, st in enumerate(steps, start=1):
        tokens = f"{st.input_tokens}/{st.output_tokens}" if st.input_tokens is not None else ""
        table.add_row(str(i), (st.prompt_type or st.kind).lower(), f"[bold]{st.kind}[/] {st.title}", tokens,
                      str(st.ms) if st.ms is not None else "")
    out.print(table)


def _ensure_samples(comps: Components, quiet: bool) -> None:
    """On first use (empty index) ingest the bundled sample documents so `ask` works out of the box."""
    ns = comps.settings.namespace
    if comps.index.list_documents(ns):
        return
    folder = samples_dir()
    if not quiet:
        err.print(f"[dim]The index is empty: indexing the bundled sample documents from {folder} ...[/]")
    results = _ingest(comps, [folder], sync=False, extra={}, quiet=quiet)
    failed = [r for r in results if r.status == "failed"]
    if failed:
        raise CiteragError(f"could not index the sample {failed[0].source}: {failed[0].reason}")


# --- status --------------------------------------------------------------------------------------------------


@app.command()
def status(index: IndexOpt = None, as_json: JsonOpt = False) -> None:
    """Documents, chunks, namespaces and size of the index."""
    with _errors(as_json):
        comps = _components(index)
        path = comps.settings.resolved_index_path
        if not path.exists():
            raise CiteragError(f"no index at {path}; run: citerag ingest PATH")
        from citerag.search.sqlite_index import SqliteIndex

        idx = SqliteIndex(path)
        spaces = idx.namespaces()
        data = {
            "index": str(path),
            "documents": sum(v["documents"] for v in spaces.values()),
            "chunks": sum(v["chunks"] for v in spaces.values()),
            "namespaces": {(k or "(default)"): v for k, v in spaces.items()},
            "size_bytes": idx.size_bytes(),
        }
        if as_json:
            print(json.dumps(data, ensure_ascii=False))
            return
        out.print(f"[bold]{data['index']}[/]  {data['size_bytes'] / 1e6:.1f} MB", highlight=False)
        out.print(f"{data['documents']} documents, {data['chunks']} chunks")
        for name, v in data["namespaces"].items():
            out.print(f"  namespace {name}: {v['documents']} documents, {v['chunks']} chunks", highlight=False)


# --- bench ---------------------------------------------------------------------------------------------------


@app.command()
def bench(
    dataset: Annotated[Path, typer.Argument(help="folder with corpus.jsonl, queries.jsonl, qrels.tsv")],
    mode: Annotated[str, typer.Option("--mode", help="bm25, dense, hybrid or all")] = "all",
    qrels: Annotated[Path | None, typer.Option("--qrels", help="another qrels file of the dataset")] = None,
    fusion: Annotated[str | None, typer.Option("--fusion", help="rrf or convex (default: settings)")] = None,
    alpha: Annotated[float | None, typer.Option("--alpha", min=0.0, max=1.0)] = None,
    sweep: Annotated[bool, typer.Option("--sweep", help="also compare fusion methods and alphas")] = False,
    packing: Annotated[bool, typer.Option("--packing", help="also compare packers on the top 20 in 25 KB")] = False,
    index: IndexOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """nDCG@10, Recall@5/100, MRR@10 and latency for bm25, dense and hybrid retrieval."""
    from citerag.search import bench as b

    with _errors(as_json):
        modes = b.MODES if mode == "all" else (mode,)
        if any(m not in b.MODES for m in modes):
            raise CiteragError(f"--mode {mode!r}: choose bm25, dense, hybrid or all")
        if fusion not in (None, "rrf", "convex"):
            raise CiteragError(f"--fusion {fusion!r}: choose rrf or convex")
        ds = b.load_dataset(dataset, qrels)
        comps = _components(None, fusion=fusion, alpha=alpha)
        path = index or comps.settings.data_dir / "bench" / f"{ds.name}.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        with _progress() as progress:
            tasks: dict[str, Any] = {}

            def tick(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = progress.add_task(f"{ds.name}: {stage}", total=total)
                progress.update(tasks[stage], completed=done)

            idx, build_s, embedded = b.build_index(ds, comps.embedder, path, tick)
            results = b.run(ds, comps.embedder, idx, comps.settings.search_config(), modes, tick)
            sweep_res = b.fusion_sweep(ds, comps.embedder, idx) if sweep else None
            packing_res = (b.packing_comparison(ds, comps.embedder, idx, comps.settings.search_config(),
                                                budget=comps.settings.response_budget_bytes) if packing else None)
        for m in results.values():
            m["index_build_s"] = build_s
        cfg = comps.settings.search_config()
        meta = {"dataset": ds.name, "qrels": str(qrels or "qrels.tsv"), "documents": len(ds.corpus),
                "embedded_now": embedded, "index_build_s": build_s,
                "fusion": cfg.fusion, "alpha": cfg.alpha}
        if as_json:
            payload: dict[str, Any] = dict(results)
            payload["_run"] = meta
            if sweep_res:
                payload["_fusion_sweep"] = sweep_res
            if packing_res:
                payload["_packing"] = packing_res
            print(json.dumps(payload))
            return
        table = Table(title=f"{ds.name} ({len(ds.corpus)} docs, {results[modes[0]]['queries']} queries)")
        for col in ("mode", "nDCG@10", "Recall@5", "Recall@100", "MRR@10", "p50 ms", "p95 ms"):
            table.add_column(col, justify="right" if col != "mode" else "left")
        for m, r in results.items():
            table.add_row(m, *(f"{r[k]:.4f}" for k in ("ndcg@10", "recall@5", "recall@100", "mrr@10")),
                          f"{r['p50_ms']:.1f}", f"{r['p95_ms']:.1f}")
        out.print(table)
        out.print(f"index build {build_s:.1f} s ({embedded} passages embedded now, the rest from the cache); "
                  f"hybrid = {cfg.fusion}" + (f" alpha {cfg.alpha}" if cfg.fusion == "convex" else ""))
        if sweep_res:
            st = Table(title="fusion comparison")
            for col in ("fusion", "nDCG@10", "Recall@5", "Recall@100", "MRR@10"):
                st.add_column(col)
            for name, r in sweep_res.items():
                st.add_row(name, *(f"{r[k]:.4f}" for k in ("ndcg@10", "recall@5", "recall@100", "mrr@10")))
            out.print(st)
        if packing_res:
            p = packing_res
            out.print(f"packing top {p['top_k']} into {p['budget_bytes']:,} bytes: relevant document in the payload "
                      f"for {p['relevant_in_payload']['citerag']:.1%} of queries (citerag) vs "
                      f"{p['relevant_in_payload']['drop_tail']:.1%} (drop whole results from the tail); "
                      f"{p['relevant_in_top_k']:.1%} had it in the top {p['top_k']}; median results kept "
                      f"{p['median_results_kept']['citerag']} vs {p['median_results_kept']['drop_tail']}")


# --- invoke --------------------------------------------------------------------------------------------------


@app.command()
def invoke(
    handler: Annotated[str, typer.Argument(help="search or ingest")],
    event: Annotated[Path, typer.Argument(help="event JSON file, e.g. events/search-basic.json")],
    bucket_dir: Annotated[Path | None, typer.Option("--bucket-dir", help="ingest: folder standing in for the bucket "
                                                     "(default: the bundled samples)")] = None,
    index: IndexOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a Lambda handler locally on an event file, against the embedded adapters."""
    from citerag.handlers.local import invoke as run_handler
    from citerag.handlers.local import read_event

    with _errors(as_json):
        if handler not in ("search", "ingest"):
            raise CiteragError(f"unknown handler {handler!r}: choose search or ingest")
        ev = read_event(event)
        comps = _components(index)
        if handler == "search":
            _ensure_samples(comps, quiet=True)
        # Powertools logs JSON lines to stdout; keep stdout for the response.
        from citerag.agent.local import quiet_lambda_output

        quiet_lambda_output()
        response = run_handler(handler, ev, comps, bucket_dir or samples_dir())
        if as_json:
            print(json.dumps(response, ensure_ascii=False))
            return
        out.print_json(json.dumps(response, ensure_ascii=False))
        body = response.get("response", {}).get("functionResponse", {}).get("responseBody", {}).get("TEXT", {})
        if "body" in body:
            size = len(json.dumps(response).encode())
            out.print(f"[dim]response {size:,} bytes; body decoded:[/]")
            out.print_json(body["body"])


@app.command()
def trace(
    source: Annotated[Path | None, typer.Argument(help="a trace saved by ask --save-trace, or a JSON export of "
                                                        "model-invocation logs")] = None,
    log_group: Annotated[str | None, typer.Option("--log-group", help="CloudWatch Logs group of Bedrock "
                                                                      "model-invocation logs")] = None,
    since: Annotated[str, typer.Option("--since", help="with --log-group: how far back, e.g. 30m, 1h, 2d")] = "1h",
    session: Annotated[str | None, typer.Option("--session", help="only this agent session id")] = None,
    with_lambda_logs: Annotated[list[str] | None, typer.Option(
        "--with-lambda-logs", help="Lambda log group(s) whose Powertools lines go under the steps that caused them")]
    = None,
    prompts: Annotated[bool, typer.Option("--prompts", help="show full prompts and raw model output")] = False,
    html_out: Annotated[Path | None, typer.Option("--html", help="write a self-contained HTML page")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Reconstruct agent turns step by step from a saved trace or from model-invocation logs."""
    import time as _time

    from citerag.agent import invocation_logs as il
    from citerag.agent import trace_report as tr
    from citerag.agent.tracefile import load

    with _errors(as_json):
        t0 = _time.perf_counter()
        skipped = 0
        if (source is None) == (log_group is None):
            raise CiteragError("give either a trace file or --log-group NAME")
        if log_group:
            from citerag import aws

            records, skipped = il.read_log_group(aws.client("logs"), log_group, il.parse_since(since), session)
            events = il.records_to_events(records)
        else:
            from citerag.jsonfiles import read_json

            raw = read_json(source, "trace or log export")
            if isinstance(raw, dict) and raw.get("format", "").startswith("citerag-trace"):
                events = load(source)["events"]
            else:
                records, skipped = il.read_export(raw)
                if not records:
                    raise CiteragError(f"{source} holds no model-invocation log records ({skipped} lines skipped)")
                events = il.records_to_events(records)
        turns = tr.build_turns(events)
        if session:
            turns = [t for t in turns if t.session_id in (None, session)]
        if with_lambda_logs:
            from citerag import aws

            lines = []
            for group in with_lambda_logs:
                lines.extend(il.read_lambda_lines(aws.client("logs"), group, il.parse_since(since), session))
            tr.attach_lambda_logs(turns, lines)
        stats = {"turns": len(turns), "events": len(events), "skipped_lines": skipped,
                 "seconds": round(_time.perf_counter() - t0, 3)}
        if html_out:
            html_out.write_text(tr.to_html(turns, stats), encoding="utf-8")
        if as_json:
            print(tr.to_json(turns, stats))
            return
        tr.print_turns(out, turns, prompts=prompts)
        note = f"; {skipped} unreadable log lines skipped" if skipped else ""
        out.print(f"[dim]{len(turns)} turns from {len(events)} events in {stats['seconds']} s{note}"
                  + (f"; HTML written to {html_out}" if html_out else "") + "[/]")


@app.command("bench-agent")
def bench_agent(
    dataset: Annotated[Path, typer.Argument(help="dataset folder with answers.jsonl (JaQuAD layout)")],
    questions: Annotated[int, typer.Option("--questions", min=1)] = 200,
    qrels: Annotated[Path | None, typer.Option("--qrels", help="qrels file (default qrels_context_only.tsv)")]
    = None,
    as_json: JsonOpt = False,
) -> None:
    """The local agent end to end: share of answers whose cited passage holds a gold answer, citation
    resolution, latency."""
    from citerag.agent import bench as ab
    from citerag.search import bench as b

    with _errors(as_json):
        qrels_path = qrels or (dataset / "qrels_context_only.tsv")
        ds = b.load_dataset(dataset, qrels_path if qrels_path.exists() else None)
        answers = ab.load_answers(dataset)
        ds = ab.without_answer_documents(ds, answers, dataset / "qrels.tsv")

        def components_for(index_path: Path) -> Components:
            return _components(index_path if str(index_path) not in ("", ".") else None)

        with _progress() as progress:
            task = progress.add_task(f"{ds.name}: questions", total=questions)
            res = ab.run(ds, answers, components_for, questions, lambda i, n: progress.update(task, completed=i))
        if as_json:
            print(json.dumps(res))
            return
        out.print(f"[bold]{res['questions']} questions[/] over {res['index_documents']} passages")
        out.print(f"answered: {res['answered']:.1%}; a cited passage contains a gold answer: "
                  f"{res['cited_passage_contains_gold_answer']:.1%}")
        out.print(f"citations resolving to a passage the search returned: {res['citations_resolved']:.1%} "
                  f"({res['citations']} citations)")
        out.print(f"answer latency p50 {res['p50_ms']:.0f} ms, p95 {res['p95_ms']:.0f} ms")


@app.command("bench-handler")
def bench_handler(
    repeats: Annotated[int, typer.Option("--repeats", min=5)] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Search Lambda latency against local doubles: 100 ms Titan + 50 ms per Pinecone query, then zero latency
    with 50 candidates (the handler's own overhead). Needs the dev extra (moto)."""
    from citerag.testing import handler_bench

    with _errors(as_json):
        try:
            import moto  # noqa: F401
        except ImportError:
            raise CiteragError("bench-handler needs moto: pip install -e '.[dev]'") from None
        runs = {
            "latency_100_50": handler_bench.run(samples_dir(), titan_ms=100, pinecone_ms=50, candidates=50,
                                                repeats=repeats),
            "overhead_0_0": handler_bench.run(samples_dir(), titan_ms=0, pinecone_ms=0, candidates=50,
                                              repeats=repeats),
        }
        if as_json:
            print(json.dumps(runs))
            return
        table = Table(title="search handler (doubles)")
        for col in ("run", "Titan ms", "Pinecone ms", "candidates", "p50 ms", "p95 ms", "results"):
            table.add_column(col, no_wrap=True)
        for name, r in runs.items():
            table.add_row(name, str(r["titan_ms"]), str(r["pinecone_ms"]), str(r["candidates"]),
                          f"{r['p50_ms']:.1f}", f"{r['p95_ms']:.1f}", str(r["results"]))
        out.print(table)
        out.print("sequential dependency time for the first run would be "
                  f"{100 + 50 + 50} ms (embed, dense query, sparse query one after another)")


def main() -> None:
    try:
        app()
    except BrokenPipeError:  # `citerag search ... | head`
        sys.stderr.close()


if __name__ == "__main__":
    main()
