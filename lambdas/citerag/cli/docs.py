"""`citerag docs`, `citerag remove`, `citerag reset`: what is in the index, and taking it out again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from citerag.cli.common import IndexOpt, JsonOpt, NamespaceOpt, app, components, display, errors, out, shown
from citerag.errors import CiteragError


def _existing(index: Path | None, namespace: str | None):
    comps = components(index, namespace)
    path = comps.settings.resolved_index_path
    if comps.settings.index_backend == "sqlite" and not path.exists():
        raise CiteragError(f"no index at {path}; add documents with: citerag ingest PATH")
    return comps


@app.command()
def docs(index: IndexOpt = None, namespace: NamespaceOpt = None, as_json: JsonOpt = False) -> None:
    """List the indexed documents: source, title, chunks, tenant, when ingested."""
    with errors(as_json):
        comps = _existing(index, namespace)
        ns = comps.settings.namespace
        infos = sorted(comps.index.list_documents(ns), key=lambda d: d.source_uri)
        first = comps.index.fetch([f"{d.doc_id}#0" for d in infos], ns) if infos else {}
        rows = [{"source": d.source_uri, "title": d.title, "kind": d.kind, "chunks": d.n_chunks,
                 "tenant": first.get(f"{d.doc_id}#0", {}).get("tenant"), "ingested_at": d.ingested_at,
                 "doc_id": d.doc_id} for d in infos]
        if as_json:
            print(json.dumps(rows, ensure_ascii=False))
            return
        if not rows:
            out.print("No documents. Add some: citerag ingest PATH")
            return
        table = Table(title=f"{len(rows)} document{'s' if len(rows) != 1 else ''}")
        for col in ("source", "title", "chunks", "tenant", "ingested"):
            table.add_column(col, overflow="fold")
        for r in rows:
            table.add_row(shown(display(r["source"])), shown(r["title"]), str(r["chunks"]), shown(r["tenant"] or ""),
                          shown(r["ingested_at"][:19]))
        out.print(table)


@app.command()
def remove(
    paths: Annotated[list[Path], typer.Argument(help="files or folders whose documents to remove")],
    index: IndexOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remove documents from the index (the files themselves are not touched)."""
    with errors(as_json):
        comps = _existing(index, namespace)
        ns = comps.settings.namespace
        prefixes = [p.expanduser().absolute().as_uri() for p in paths]
        by_uri = {d.source_uri: d for d in comps.index.list_documents(ns)}
        chosen = [u for u in by_uri if any(u == p or u.startswith(p.rstrip("/") + "/") for p in prefixes)]
        if not chosen:
            raise CiteragError(f"no indexed document is under {', '.join(map(str, paths))} (citerag docs lists them)")
        ingestor = comps.ingestor()
        removed = [ingestor.remove(u) for u in chosen]
        if as_json:
            print(json.dumps([{"source": r.source, "chunks": r.chunks} for r in removed], ensure_ascii=False))
            return
        for r in removed:
            out.print(f"[yellow]removed[/] {shown(display(r.source))} ({r.chunks} chunks)", highlight=False)


@app.command()
def reset(
    yes: Annotated[bool, typer.Option("--yes", help="do not ask for confirmation")] = False,
    index: IndexOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete the whole index (every document and namespace); the files themselves are not touched."""
    from citerag.adapters.sqlite_index import remove_index_files

    with errors(as_json):
        comps = components(index)
        if comps.settings.index_backend != "sqlite":
            raise CiteragError("reset deletes the embedded index only; a Pinecone index is managed in Pinecone")
        path = comps.settings.resolved_index_path
        if not path.exists():
            raise CiteragError(f"no index at {path}")
        if not yes and not as_json and not typer.confirm(f"Delete the index {path} and everything in it?"):
            raise CiteragError("nothing deleted")
        if not yes and as_json:
            raise CiteragError("reset --json needs --yes")
        remove_index_files(path)
        if as_json:
            print(json.dumps({"deleted": str(path)}))
            return
        out.print(f"deleted {shown(path)}", highlight=False)
