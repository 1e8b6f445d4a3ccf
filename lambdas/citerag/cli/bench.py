"""`citerag bench`, `bench-agent`, `bench-handler`: retrieval quality, the agent end to end, and the search
Lambda's latency against local doubles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from citerag.cli.common import JsonOpt, app, components, errors, out, progress, samples_dir, settings
from citerag.components import Components
from citerag.errors import CiteragError
from citerag.extras import needs


def _dataset(dataset: Path) -> Path:
    """A folder, or the name of a public set fetched with `citerag datasets fetch` (jaquad, jsquad, scifact)."""
    from citerag.bench.public_sets import resolve

    return resolve(dataset, settings().data_dir)


@app.command()
def bench(
    dataset: Annotated[Path, typer.Argument(
        help="jaquad, jsquad or scifact (see citerag datasets fetch), or a folder with corpus.jsonl, queries.jsonl, "
             "qrels.tsv")],
    mode: Annotated[str, typer.Option("--mode", help="bm25, dense, hybrid or all")] = "all",
    qrels: Annotated[Path | None, typer.Option("--qrels", help="another qrels file of the dataset")] = None,
    fusion: Annotated[str | None, typer.Option("--fusion", help="rrf or convex (default: settings)")] = None,
    alpha: Annotated[float | None, typer.Option("--alpha", min=0.0, max=1.0,
                                                help="convex fusion's dense weight (default: settings)")] = None,
    sweep: Annotated[bool, typer.Option("--sweep", help="also compare fusion methods and alphas")] = False,
    packing: Annotated[bool, typer.Option("--packing", help="also compare packers on the top 20 in 25 KB")] = False,
    runs: Annotated[Path | None, typer.Option("--runs", help="write the ranking as a TREC run file (one per mode: "
                                              "FILE-MODE.trec when there are several)")] = None,
    index: Annotated[Path | None, typer.Option("--index", help="keep the benchmark index at this path (default: a "
                                               "new file for this run, deleted afterwards)")] = None,
    as_json: JsonOpt = False,
) -> None:
    """nDCG@10, Recall@5/100, MRR@10 and latency for bm25, dense and hybrid retrieval."""
    from citerag.bench import retrieval as b

    with errors(as_json):
        dataset = _dataset(dataset)
        if qrels is not None and not qrels.exists() and (dataset / qrels).is_file():
            qrels = dataset / qrels  # --qrels qrels_context_only.tsv: a file of the dataset
        modes = b.MODES if mode == "all" else (mode,)
        if any(m not in b.MODES for m in modes):
            raise CiteragError(f"--mode {mode!r}: choose bm25, dense, hybrid or all")
        if fusion not in (None, "rrf", "convex"):
            raise CiteragError(f"--fusion {fusion!r}: choose rrf or convex")
        if runs is not None and runs.is_dir():  # refused before the benchmark runs, not after (a traceback)
            raise CiteragError(f"--runs {runs}: a folder; name a file (its folder is made if missing)")
        ds = b.load_dataset(dataset, qrels)
        # BM25 alone needs no vectors: the model is neither loaded nor run.
        dense_needed = bool({"dense", "hybrid"} & set(modes)) or sweep or packing
        rankings: dict[str, dict[str, list[tuple[str, float]]]] = {}
        bench_dir = components(None).settings.data_dir / "bench"
        with b.run_index_path(bench_dir, ds.name, index) as path, progress() as bar:
            comps = components(path, fusion=fusion, alpha=alpha)
            embedder = comps.embedder if dense_needed else None
            tasks: dict[str, Any] = {}

            def tick(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(f"{ds.name}: {stage}", total=total)
                bar.update(tasks[stage], completed=done)

            tokens = comps.bm25_tokens
            idx, build_s, embedded = b.build_index(ds, embedder, comps.index, tick, dim=comps.embedder_identity[1],
                                                   tokens=tokens)
            results = b.run(ds, embedder, idx, comps.settings.search_config(), modes, tick, runs_out=rankings,
                            tokens=tokens)
            sweep_res = b.fusion_sweep(ds, comps.embedder, idx, tokens=tokens) if sweep else None
            packing_res = (b.packing_comparison(ds, comps.embedder, idx, comps.settings.search_config(),
                                                budget=comps.settings.response_budget_bytes, tokens=tokens)
                           if packing else None)
            idx.close()
        run_files = []
        if runs is not None:
            for m, ranking in rankings.items():
                target = b.run_file_for(runs, m, modes)
                try:
                    b.write_trec_run(target, ranking, f"citerag-{m}")
                except OSError as exc:
                    reason = exc.strerror or type(exc).__name__
                    raise CiteragError(f"--runs: cannot write {target} ({reason})") from None
                run_files.append(str(target))
        for m in results.values():
            m["index_build_s"] = build_s
        cfg = comps.settings.search_config()
        meta = {"dataset": ds.name, "qrels": str(qrels or "qrels.tsv"), "documents": len(ds.corpus),
                "embedded_now": embedded, "index_build_s": build_s,
                "fusion": cfg.fusion, "alpha": cfg.alpha, "bm25_tokens": tokens.name, "run_files": run_files}
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
        vectors = f" ({embedded} passages embedded now, the rest from the cache)" if dense_needed else " (no vectors)"
        fused = (f"; hybrid = {cfg.fusion}" + (f" alpha {cfg.alpha}" if cfg.fusion == "convex" else "")
                 if "hybrid" in modes or sweep else "")
        out.print(f"index build {build_s:.1f} s{vectors}{fused}; BM25 tokens: {tokens.name}")
        for f in run_files:
            out.print(f"run file: {f}", highlight=False)
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




@app.command("bench-index")
def bench_index(
    sizes: Annotated[str, typer.Option("--sizes", help="comma-separated chunk counts, built up in one index")]
    = "10000,100000",
    work_dir: Annotated[Path | None, typer.Option("--work-dir", help="where the synthetic indexes go (default: "
                                                  "DATA_DIR/bench/index; deleted and rebuilt)")] = None,
    queries: Annotated[int, typer.Option("--queries", min=10, max=10_000, help="timed queries at each size")] = 200,
    seed: Annotated[int, typer.Option("--seed", help="seed of the synthetic chunks and queries")] = 0,
    references: Annotated[bool, typer.Option("--references/--no-references", help="numpy floor, LanceDB, "
                                             "sqlite-vec, usearch HNSW (those installed) on the same data")] = True,
    replacements: Annotated[int, typer.Option("--replacements", min=0, help="also search while another process "
                                              "replaces this many documents")] = 0,
    ann: Annotated[str | None, typer.Option("--ann", help="also probe this CITERAG_INDEX_ANN setting (hnsw)")]
    = None,
    float16: Annotated[bool, typer.Option("--float16", help="also build and probe an index of float16 vectors "
                                          "(CITERAG_INDEX_VECTORS=float16): size, latency, recall@10")] = False,
    hnsw_max: Annotated[int, typer.Option("--hnsw-max", min=0, help="the usearch reference row only up to this "
                                          "many chunks (its graph takes long to build)")] = 1_000_000,
    as_json: JsonOpt = False,
) -> None:
    """The embedded index at scale on synthetic chunks: build chunks/s, open + first query, memory, warm p50/p95
    of dense, sparse and hybrid searches with and without a tenant filter, against reference systems."""
    from citerag.bench import index as ib

    with errors(as_json):
        try:
            counts = [int(s.replace("_", "")) for s in sizes.split(",") if s.strip()]
        except ValueError:
            raise CiteragError(f"--sizes {sizes!r}: give chunk counts such as 10000,100000") from None
        if not counts or any(c < ib.CHUNKS_PER_DOC * 10 or c > 10_000_000 for c in counts):
            raise CiteragError("--sizes: each size must be between 100 and 10,000,000 chunks")
        if ann not in (None, "hnsw"):
            raise CiteragError(f"--ann {ann!r}: the approximate option is hnsw")
        root = work_dir or components(None).settings.data_dir / "bench" / "index"
        with progress() as bar:
            task = bar.add_task("bench-index", total=None)
            report = ib.run(counts, root, queries=queries, seed=seed, references=references,
                            replacements=replacements, ann=ann, float16=float16, hnsw_max=hnsw_max,
                            progress=lambda msg: bar.update(task, description=msg))
        if as_json:
            print(json.dumps(report))
            return
        table = Table(title=f"embedded index, synthetic chunks ({queries} queries, top {ib.TOP_K}; ms p50 / p95)")
        for col in ib.COLUMNS:
            table.add_column(col, justify="left" if col == "system" else "right")
        for row in ib.table_rows(report):
            table.add_row(*row)
        out.print(table)
        for line in ib.summary_lines(report):
            out.print(line)


@app.command("bench-agent")
def bench_agent(
    dataset: Annotated[Path, typer.Argument(help="jaquad or jsquad (fetched), or a folder with answers.jsonl "
                                                 "(JaQuAD layout)")],
    questions: Annotated[int, typer.Option("--questions", min=1, help="how many of the set's questions to ask")] = 200,
    qrels: Annotated[Path | None, typer.Option("--qrels", help="qrels file (default qrels_context_only.tsv)")]
    = None,
    agent: Annotated[str, typer.Option("--agent", help="comma-separated: local (Classic), agentcore-local, "
                                                        "agentcore-native; several run side by side")] = "local",
    as_json: JsonOpt = False,
) -> None:
    """The local agent end to end: share of answers whose cited passage holds a gold answer, citation
    resolution, latency."""
    from citerag.bench import agent as ab
    from citerag.bench import retrieval as b

    with errors(as_json):
        dataset = _dataset(dataset)
        qrels_path = qrels or (dataset / "qrels_context_only.tsv")
        ds = b.load_dataset(dataset, qrels_path if qrels_path.exists() else None)
        answers = ab.load_answers(dataset)
        ds = ab.without_answer_documents(ds, answers, dataset / "qrels.tsv")

        def components_for(index_path: Path) -> Components:
            return components(index_path if str(index_path) not in ("", ".") else None)

        agents = tuple(a.strip() for a in agent.split(",") if a.strip())
        if not agents or any(a not in ab.AGENTS for a in agents):
            raise CiteragError(f"--agent {agent!r}: choose from {', '.join(ab.AGENTS)}")
        with progress() as bar:
            task = bar.add_task(f"{ds.name}: questions", total=questions * len(agents))
            res = ab.run(ds, answers, components_for, questions, lambda i, n: bar.update(task, completed=i, total=n),
                         agents=agents)
        if as_json:
            print(json.dumps(res))
            return
        if len(agents) > 1:
            table = Table(title=f"{res['questions']} questions over {res['index_documents']} passages")
            for col in ("agent", "answered", "cited passage has gold", "citations", "resolved", "p50 ms", "p95 ms"):
                table.add_column(col, justify="left" if col == "agent" else "right")
            for name, r in res["agents"].items():
                table.add_row(name, f"{r['answered']:.1%}", f"{r['cited_passage_contains_gold_answer']:.1%}",
                              str(r["citations"]), f"{r['citations_resolved']:.1%}", f"{r['p50_ms']:.0f}",
                              f"{r['p95_ms']:.0f}")
            out.print(table)
            return
        out.print(f"[bold]{res['questions']} questions[/] over {res['index_documents']} passages")
        out.print(f"answered: {res['answered']:.1%}; a cited passage contains a gold answer: "
                  f"{res['cited_passage_contains_gold_answer']:.1%}")
        out.print(f"citations resolving to a passage the search returned: {res['citations_resolved']:.1%} "
                  f"({res['citations']} citations)")
        out.print(f"answer latency p50 {res['p50_ms']:.0f} ms, p95 {res['p95_ms']:.0f} ms")


@app.command("bench-handler")
def bench_handler(
    repeats: Annotated[int, typer.Option("--repeats", min=5, help="timed searches of each kind")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Search Lambda latency against local doubles: 100 ms Titan + 50 ms per Pinecone query, then zero latency
    with 50 candidates (the handler's own overhead). Needs the dev extra (moto)."""
    from citerag.bench import handler as handler_bench

    with errors(as_json):
        try:
            import moto  # noqa: F401
        except ImportError:
            raise CiteragError(needs("bench-handler (moto)", "dev")) from None
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


def _kinds(ablate: str) -> tuple[str, ...]:
    """The question kinds `--ablate` names: ids of rules/kinds.json, or each of them."""
    from citerag.answerer.question_kinds import kinds

    known = [k["id"] for k in kinds()]
    asked = known if ablate.strip() == "each" else [k.strip() for k in ablate.split(",") if k.strip()]
    unknown = [k for k in asked if k not in known]
    if unknown:
        raise CiteragError(f"--ablate {', '.join(unknown)}: no such question kind; choose from {', '.join(known)}, "
                           "or each")
    return tuple(asked)


@app.command("bench-answers")
def bench_answers(
    dataset: Annotated[Path, typer.Argument(help="folder with docs/ and questions-*.jsonl (datasets/answers), or "
                                                 "a JaQuAD folder (answers.jsonl, corpus.jsonl)")],
    split: Annotated[str, typer.Option("--split", help="dev, test or all")] = "test",
    questions: Annotated[int, typer.Option("--questions", min=1, max=2048, help="JaQuAD: how many questions")] = 400,
    agent: Annotated[str, typer.Option("--agent", help="local (citerag ask's default) or none (search + "
                                                        "extractive answer)")] = "local",
    show_failures: Annotated[bool, typer.Option("--failures", help="list every wrong answer")] = False,
    ablate: Annotated[str, typer.Option("--ablate", help="question kinds to measure by switching each off "
                                                        "(comma-separated ids of rules/kinds.json, or each)")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Answers a user can trust: exact facts with the right file and page, abstention on questions the documents
    do not answer, no sentence shown under a source that does not hold it. English and Japanese separately."""
    import tempfile

    from citerag.bench import answers as ab
    from citerag.bench import answers_jaquad

    with errors(as_json):
        dataset = _dataset(dataset)
        if split not in ("dev", "test", "all"):
            raise CiteragError(f"--split {split!r}: choose dev, test or all")
        if agent not in ab.ASKERS:
            raise CiteragError(f"--agent {agent!r}: choose {' or '.join(ab.ASKERS)}")
        ds = answers_jaquad.load(dataset, questions) if answers_jaquad.is_jaquad(dataset) else ab.load(dataset)
        splits = ("dev", "test") if split == "all" else (split,)
        kinds = _kinds(ablate)
        with tempfile.TemporaryDirectory(prefix="citerag-bench-answers-") as tmp, progress() as bar:
            comps = components(Path(tmp) / "index.sqlite")
            task = bar.add_task(f"{dataset.name}: questions", total=None)
            res = ab.run(ds, comps, agent=agent, splits=splits, ablate=kinds,
                         progress=lambda i, n: bar.update(task, completed=i, total=n))
        if as_json:
            print(ab.dump(res))
            return
        # One table per split, a column per language and a row per figure: eleven columns across, every figure
        # was cut to "95.…" in an 80-column terminal.
        rows = (("answerable", lambda m: str(m["answerable"])),
                ("fact + right citation", lambda m: _pct(m["fact_with_right_citation"])),
                ("  95% CI", lambda m: _ci(m.get("fact_with_right_citation_ci95"))),
                ("unanswerable", lambda m: str(m["unanswerable"])),
                ("abstention recall", lambda m: _pct(m["abstention_recall"])),
                ("  95% CI", lambda m: _ci(m.get("abstention_recall_ci95"))),
                ("abstention precision", lambda m: _pct(m["abstention_precision"])),
                ("refused: fact at a place to look",
                 lambda m: f"{m['refused_with_fact_at_a_place']} of {m['refused_answerable']}"),
                ("misattributed", lambda m: str(m["misattributed_sentences"])),
                ("stray excerpts", lambda m: str(m["stray_excerpts"])),
                ("p50 / p95 ms", lambda m: f"{m['p50_ms']:.0f} / {m['p95_ms']:.0f}"))
        out.print(f"[bold]bench-answers[/]: {res['documents']} documents, agent {agent}", highlight=False)
        by_split: dict[str, dict[str, dict]] = {}
        for key, m in res["summary"].items():
            split, _, lang = key.partition("/")
            by_split.setdefault(split, {})[lang or split] = m
        for split, langs in by_split.items():
            table = Table(title=split, title_justify="left")
            table.add_column("", overflow="fold")
            for lang in langs:
                table.add_column(lang, justify="right", no_wrap=True)
            for name, cell in rows:
                table.add_row(name, *(cell(m) for m in langs.values()))
            out.print(table)
        for key, m in res["summary"].items():
            if m.get("wrong_fact_at"):
                out.print(f"{key}: the facts of the wrong answers were "
                          + ", ".join(f"{FACT_STAGE_WORDS[k]} {n}" for k, n in m["wrong_fact_at"].items()),
                          highlight=False)
        if kinds:
            table = Table(title="switched off: change in facts / near misses refused (questions changed)",
                          title_justify="left")
            table.add_column("kind")
            langs = sorted({lang for by_lang in res["ablation"].values() for lang in by_lang})
            for lang in langs:
                table.add_column(lang, justify="right")
            for kind, by_lang in res["ablation"].items():
                table.add_row(kind, *(f"{d['facts']:+d} / {d['refusals']:+d} ({d['changed']})"
                                      for d in (by_lang.get(lang, {"facts": 0, "refusals": 0, "changed": 0})
                                                for lang in langs)))
            out.print(table)
        if show_failures:
            from citerag.cli.common import one_line

            for r in ab.failures(res["rows"]):
                what = "should answer" if r["answerable"] else "should abstain"
                out.print(f"[bold]{r['id']}[/] ({what}): {one_line(r['answer'], 160)} "
                          f"cited {', '.join(r['cited']) or 'nothing'}", highlight=False)
                for m in r["misattributed"]:
                    out.print(f"   [red]misattributed[/] to {m['cited']}: {one_line(m['sentence'], 120)}",
                              highlight=False)
                for m in r.get("stray_excerpts", ()):
                    out.print(f"   [red]stray excerpt[/] under {m['cited']}: {one_line(m['excerpt'], 120)}",
                              highlight=False)
                if "fact_at" in r:
                    out.print(f"   fact: {_fact_at(r['fact_at'])}", highlight=False)


FACT_STAGE_WORDS = {"not_retrieved": "not in the passages searched", "not_one_sentence": "in no one sentence",
                    "ranked_lower": "ranked below the chosen sentence", "refused": "in the best sentence, refused",
                    "not_shown": "in the best sentence, not shown"}


def _fact_at(f: dict) -> str:
    """"ranked 25 of 161 (lexical 0.472, cosine 0.857; the best sentence's 0.865, 0.897)"."""
    if f["stage"] == "not_retrieved":
        return f"in none of the {f['passages']} passages search gave the answerer"
    if f["stage"] == "not_one_sentence":
        return f"in a passage, but in none of the {f['sentences']} sentences weighed"
    said = f"lexical {f['lexical']:.3f}, cosine {_num(f['cosine'])}"
    if f["stage"] != "ranked_lower":
        return f"{FACT_STAGE_WORDS[f['stage']]} (evidence {f['evidence']:.3f}; {said})"
    return (f"ranked {f['rank']} of {f['of']} ({said}; the best sentence's {f['best_lexical']:.3f}, "
            f"{_num(f['best_cosine'])})")


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _ci(ci95: list[float] | None) -> str:
    """A 95% interval, "58-92%": on a 20-question split the interval is most of the story."""
    return "-" if ci95 is None else f"{ci95[0] * 100:.0f}-{ci95[1]:.0%}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"
