"""`citerag datasets`: the public benchmark sets (JaQuAD, JSQuAD, SciFact) fetched into the data dir in the layout
`citerag bench` reads, so `citerag bench jaquad` reproduces the published figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from citerag.cli.common import JsonOpt, app, err, errors, out, settings

datasets_app = typer.Typer(no_args_is_help=True, help="Public benchmark sets: list them, fetch them.")
app.add_typer(datasets_app, name="datasets")


@datasets_app.command("list")
def list_sets(as_json: JsonOpt = False) -> None:
    """The public sets citerag can fetch, where they come from, and whether they are in the data dir."""
    from citerag.bench import public_sets

    with errors(as_json):
        root = public_sets.datasets_root(settings().data_dir)
        rows = [{"name": name, "title": spec.title, "licence": spec.licence, "homepage": spec.homepage,
                 "fetched": (root / name / "corpus.jsonl").is_file(), "path": str(root / name)}
                for name, spec in public_sets.catalog().items()]
        if as_json:
            print(json.dumps(rows, ensure_ascii=False))
            return
        for r in rows:
            state = r["path"] if r["fetched"] else "not fetched"
            out.print(f"{r['name']}: {r['title']} ({r['licence']}; {r['homepage']}) — {state}", highlight=False)


@datasets_app.command("fetch")
def fetch(
    name: Annotated[str, typer.Argument(help="jaquad, jsquad or scifact")],
    source: Annotated[Path | None, typer.Option("--from", help="a folder holding the published files already "
                                                "(nothing is downloaded)")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Download a public set from its published source, check its SHA-256, and write it into DATA_DIR/datasets/NAME
    as corpus.jsonl, queries.jsonl, qrels.tsv (and answers.jsonl), ready for `citerag bench NAME`."""
    from citerag.bench import public_sets

    with errors(as_json):
        path = public_sets.fetch(name, settings().data_dir, source_dir=source,
                                 progress=None if as_json else lambda m: err.print(m, highlight=False))
        counts = {f: sum(1 for _ in (path / f).open(encoding="utf-8")) for f in ("corpus.jsonl", "queries.jsonl")}
        if as_json:
            print(json.dumps({"dataset": name, "path": str(path), "documents": counts["corpus.jsonl"],
                              "queries": counts["queries.jsonl"]}))
            return
        out.print(f"{name}: {counts['corpus.jsonl']:,} documents, {counts['queries.jsonl']:,} queries in {path}",
                  highlight=False)
        out.print(f"run: citerag bench {name}", highlight=False)
