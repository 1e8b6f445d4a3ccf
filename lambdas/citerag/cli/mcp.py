"""`citerag mcp`: serve the embedded index to MCP clients (stdio by default, streamable HTTP with --http PORT)."""

from __future__ import annotations

from typing import Annotated

import typer

from citerag.cli.common import IndexOpt, NamespaceOpt, app, err, errors, open_index, port_free
from citerag.errors import CiteragError
from citerag.extras import needs


@app.command()
def mcp(
    http: Annotated[int | None, typer.Option("--http", min=1, max=65535, help="serve streamable HTTP on "
                                                                             "HOST:PORT/mcp instead of stdio")]
    = None,
    host: Annotated[str, typer.Option("--host", help="with --http: the address to bind")] = "127.0.0.1",
    tenant: Annotated[str | None, typer.Option("--tenant", help="search as this tenant (documents ingested with "
                                                                "--meta tenant=...)")] = None,
    group: Annotated[list[str] | None, typer.Option("--group", help="a group the searches may see (repeatable)")]
    = None,
    index: IndexOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Serve search_documents, ask and the documents (as resources) to MCP clients over the local index."""
    import json

    with errors(False):
        try:
            from citerag.mcp_server import build_server
        except ImportError:
            raise CiteragError(needs("citerag mcp", "local")) from None
        # stdout belongs to the MCP protocol: progress goes nowhere (the samples' index when nothing is ingested)
        comps = open_index(index, namespace, quiet=True)
        access = {"tenant": tenant} if tenant else {}
        if group:
            access["groups"] = json.dumps(group)
        server = build_server(comps, access=access)
        if http is None:
            import anyio

            from citerag.mcp_stdio import run_stdio

            anyio.run(run_stdio, server)
        else:
            port_free(host, http, "--http")
            err.print(f"citerag MCP server on http://{host}:{http}/mcp", highlight=False)
            server.run("streamable-http", host=host, port=http)
