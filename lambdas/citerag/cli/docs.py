"""`citerag docs`, `citerag remove`, `citerag reset`: see and manage what the index holds (there was no way to list
or remove a document, and `status` showed only counts)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from citerag.cli.common import (
    IndexOpt,
    JsonOpt,
    NamespaceOpt,
    app,
    components,
    display,
    errors,
    is_samples,
    open_index,
    out,
    plural,
    shown,
)
from citerag.errors import CiteragError


@app.command()
def docs(index: IndexOpt = None, namespace: NamespaceOpt = None, as_json: JsonOpt = False) -> None:
    """List the indexed documents: source, title, kind, chunks, tenant and when each was ingested."""
    with errors(as_json):
        comps = open_index(index, namespace, quiet=True)
        idx = comps.index
        rows = []
        for d in idx.list_documents(comps.settings.namespace):
            md = idx.document_metadata(d.doc_id, d.namespace) if hasattr(idx, "document_metadata") else {}
            rows.append({"source": d.source_uri, "title": d.title, "kind": d.kind, "chunks": d.n_chunks,
                         "tenant": md.get("tenant"), "ingested_at": d.ingested_at, "doc_id": d.doc_id})
        samples = is_samples(comps)
        if as_json:
            print(json.dumps({"index": str(comps.settings.resolved_index_path), "samples": samples,
                              "documents": rows}, ensure_ascii=False))
            return
        if samples:
            out.print("[dim]You have ingested nothing yet; these are the bundled samples that ask and search use "
                      "until you run: citerag ingest PATH[/]")
        if not rows:
            out.print("No documents. Add some with: citerag ingest PATH")
            return
        table = Table(title=f"{plural(len(rows), 'document')} in {shown(comps.settings.resolved_index_path)}")
        for col in ("source", "title", "kind", "chunks", "tenant", "ingested"):
            table.add_column(col, overflow="fold")
        for r in rows:
            table.add_row(shown(display(r["source"])), shown(r["title"]), shown(r["kind"]), str(r["chunks"]),
                          shown(r["tenant"] or ""), shown(r["ingested_at"][:19].replace("T", " ")))
        out.print(table)


@app.command()
def remove(
    paths: Annotated[list[str], typer.Argument(help="files (or folders: every document under them), or sources "
                                                     "as `docs` lists them (file://…, s3://…), to remove")],
    index: IndexOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remove documents from the index (the files themselves are not touched)."""
    with errors(as_json):
        comps = open_index(index, namespace, quiet=True, samples=False)
        ns = comps.settings.namespace
        docs = comps.index.list_documents(ns)
        chosen: dict[str, str] = {}
        for given in paths:
            if re.match(r"[a-z][a-z0-9+.-]*://", given):  # a source as `docs --json` lists it
                uri = given
            else:
                p = Path(given)
                uri = p.resolve().as_uri() if p.exists() else p.absolute().as_uri()
            hits = [d for d in docs if d.source_uri == uri or d.source_uri.startswith(uri.rstrip("/") + "/")]
            if not hits:
                raise CiteragError(f"{given} is not in the index; see: citerag docs")
            chosen.update({d.doc_id: d.source_uri for d in hits})
        removed = []
        for doc_id, uri in chosen.items():
            comps.index.delete_document(doc_id, ns)
            removed.append(uri)
        if as_json:
            print(json.dumps({"removed": removed}, ensure_ascii=False))
            return
        for uri in removed:
            out.print(f"[green]removed[/] {shown(display(uri))}", highlight=False)
        out.print(f"[bold]{plural(len(removed), 'document')} removed[/]")


@app.command()
def reset(
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False,
    index: IndexOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete the whole index (ask and search use the bundled samples again until you ingest)."""
    from citerag.adapters.sqlite_index import check_deletable, remove_index_files

    with errors(as_json):
        s = components(index).settings
        if s.index_backend != "sqlite":
            raise CiteragError("reset deletes an embedded index; remove a remote index's documents with remove")
        path = s.resolved_index_path
        if not path.exists():
            raise CiteragError(f"no index at {path}")
        check_deletable(path)  # before asking: the question would offer to delete a folder or a document
        if not yes:
            if as_json or not sys.stdin.isatty():
                raise CiteragError("reset deletes every document: add --yes")
            typer.confirm(f"Delete the index {path} and every document in it?", abort=True)
        remove_index_files(path)
        if as_json:
            print(json.dumps({"deleted": str(path)}, ensure_ascii=False))
            return
        out.print(f"deleted {shown(path)}", highlight=False)
