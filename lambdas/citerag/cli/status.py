"""`citerag status`: documents, chunks, namespaces and size of the index."""

from __future__ import annotations

import json

from citerag.cli.common import IndexOpt, JsonOpt, app, errors, is_samples, open_index, out, plural, shown


@app.command()
def status(index: IndexOpt = None, as_json: JsonOpt = False) -> None:
    """Documents, chunks, namespaces, metadata keys (what --filter can test) and size of the index."""
    with errors(as_json):
        comps = open_index(index, quiet=True, every_namespace=True)  # it reports them all
        s = comps.settings
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
            "metadata_keys": {(k or "(default)"): idx.metadata_keys(k) for k in spaces}
            if hasattr(idx, "metadata_keys") else {},
            "samples": is_samples(comps),
        }
        if as_json:
            print(json.dumps(data, ensure_ascii=False))
            return
        out.print(f"[bold]{shown(data['index'])}[/]  {data['size_bytes'] / 1e6:.1f} MB", highlight=False)
        if data["samples"]:
            out.print("[dim]You have ingested nothing yet: this is the bundled samples' index.[/]")
        out.print(f"{plural(data['documents'], 'document')}, {plural(data['chunks'], 'chunk')}")
        for name, v in data["namespaces"].items():
            out.print(f"  namespace {name}: {plural(v['documents'], 'document')}, {plural(v['chunks'], 'chunk')}",
                      highlight=False)
            keys = data["metadata_keys"].get(name)
            if keys:
                out.print(f"    metadata keys (--filter): {shown(', '.join(keys))}", highlight=False)
