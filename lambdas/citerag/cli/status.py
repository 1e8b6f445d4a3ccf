"""`citerag status`: documents, chunks, namespaces and size of the index."""

from __future__ import annotations

import json

from citerag.cli.common import IndexOpt, JsonOpt, app, components, errors, out, shown
from citerag.errors import CiteragError


@app.command()
def status(index: IndexOpt = None, as_json: JsonOpt = False) -> None:
    """Documents, chunks, namespaces and size of the index."""
    with errors(as_json):
        comps = components(index)
        s = comps.settings
        if s.index_backend == "sqlite" and not s.resolved_index_path.exists():
            raise CiteragError(f"no index at {s.resolved_index_path}; run: citerag ingest PATH")
        idx = comps.index
        if hasattr(idx, "namespaces"):
            spaces = idx.namespaces()
        else:  # a remote index reports the configured namespace only
            docs = idx.list_documents(s.namespace)
            spaces = {s.namespace: {"documents": len(docs), "chunks": sum(d.n_chunks for d in docs)}}
        data = {
            "index": str(s.resolved_index_path) if s.index_backend == "sqlite" else s.index_backend,
            "documents": sum(v["documents"] for v in spaces.values()),
            "chunks": sum(v["chunks"] for v in spaces.values()),
            "namespaces": {(k or "(default)"): v for k, v in spaces.items()},
            "size_bytes": idx.size_bytes() if hasattr(idx, "size_bytes") else 0,
        }
        if as_json:
            print(json.dumps(data, ensure_ascii=False))
            return
        out.print(f"[bold]{shown(data['index'])}[/]  {data['size_bytes'] / 1e6:.1f} MB", highlight=False)
        out.print(f"{data['documents']} documents, {data['chunks']} chunks")
        for name, v in data["namespaces"].items():
            out.print(f"  namespace {name}: {v['documents']} documents, {v['chunks']} chunks", highlight=False)
