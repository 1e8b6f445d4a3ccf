"""`citerag search`: hybrid search, passages with their source ids."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from citerag.cli.common import (
    IndexOpt,
    JsonOpt,
    NamespaceOpt,
    app,
    check_filter_keys,
    errors,
    one_line,
    open_index,
    out,
    shown,
    where,
)
from citerag.errors import CiteragError


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="what to look for")],
    top_k: Annotated[int, typer.Option("--top-k", min=1, max=100, help="how many passages to print")] = 5,
    filter_: Annotated[list[str] | None, typer.Option("--filter", help="key=value, key>=n or JSON")] = None,
    mode: Annotated[str, typer.Option("--mode", help="hybrid, dense or bm25")] = "hybrid",
    index: IndexOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Hybrid search; prints passages with their source ids."""
    from citerag.citations import source_ids
    from citerag.search.filters import parse_cli
    from citerag.search.query import analyze

    with errors(as_json):
        q = analyze(query)
        if mode not in ("hybrid", "dense", "bm25"):
            raise CiteragError(f"--mode {mode!r}: choose hybrid, dense or bm25")
        flt = parse_cli(filter_ or [])
        comps = open_index(index, namespace, quiet=as_json)
        check_filter_keys(comps, flt)
        outcome = comps.pipeline().search(q, top_k=top_k, flt=flt, namespace=comps.settings.namespace,
                                          mode=mode)  # type: ignore[arg-type]
        rows = [
            {"source_id": h.source_id, "text": h.text, "score": h.score, "uri": h.uri, "title": h.title,
             "page": h.page, "doc_id": h.doc_id, "section": h.section, "relevant": h.relevant}
            for h in source_ids.assign(outcome.hits)
        ]
        if as_json:
            print(json.dumps(rows, ensure_ascii=False))
            return
        if not rows:
            out.print("No results. Try: citerag docs")
            return
        for r in rows:
            out.print(f"[bold cyan]{r['source_id']}[/] {r['score']:.3f}  [bold]{shown(r['title'])}[/]  {where(r)}",
                      highlight=False)
            out.print(f"   {one_line(r['text'], 300)}", highlight=False)
