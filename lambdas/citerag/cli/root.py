"""The one Typer app every command registers on, and the table of commands that lets `citerag` import only the
module of the command it runs: `citerag --help` and shell completion list the commands from the table (no numpy, no
model, no index), `citerag search ...` imports citerag.cli.search alone. Only typer is imported here."""

from __future__ import annotations

import importlib
import shlex
from collections.abc import Mapping, Sequence
from typing import Annotated

import typer

app = typer.Typer(no_args_is_help=True, help="Answers with verifiable citations.")  # --install-completion

# (command, module under citerag.cli, the first paragraph of its help), in the order `citerag --help` lists them.
# tests/test_cli_startup.py renders `citerag --help` from this table and from the modules and compares the two.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("ask", "ask", "Answer from the indexed documents, with a citation (file and page) for every claim."),
    ("bench", "bench", "nDCG@10, Recall@5/100, MRR@10 and latency for bm25, dense and hybrid retrieval."),
    ("bench-index", "bench",
     "The embedded index at scale on synthetic chunks: build chunks/s, open + first query, memory, warm p50/p95\n"
     "of dense, sparse and hybrid searches with and without a tenant filter, against reference systems."),
    ("bench-agent", "bench",
     "The local agent end to end: share of answers whose cited passage holds a gold answer, citation\n"
     "resolution, latency."),
    ("bench-handler", "bench",
     "Search Lambda latency against local doubles: 100 ms Titan + 50 ms per Pinecone query, then zero latency\n"
     "with 50 candidates (the handler's own overhead). Needs the dev extra (moto)."),
    ("bench-answers", "bench",
     "Answers a user can trust: exact facts with the right file and page, abstention on questions the documents\n"
     "do not answer, no sentence shown under a source that does not hold it. English and Japanese separately."),
    ("bench-embed", "bench_speed",
     "Query embedding latency p50/p95 per OpenMP thread count, idle and with a CPU burner on every core."),
    ("bench-ingest", "bench_speed",
     "Ingest passages/s against the model alone on the same passages, batch size and workers (empty caches)."),
    ("chat", "chat",
     "An interactive session: ask, read the cited answer, ask a follow-up; /open N opens a cited page."),
    ("docs", "docs", "List the indexed documents: source, title, kind, chunks, tenant and when each was ingested."),
    ("remove", "docs", "Remove documents from the index (the files themselves are not touched)."),
    ("reset", "docs", "Delete the whole index (ask and search use the bundled samples again until you ingest)."),
    ("ingest", "ingest",
     "Index PDF, Markdown, HTML, text, Word, Excel, CSV, PowerPoint and EPUB files. Unchanged files are skipped."),
    ("invoke", "invoke", "Run a Lambda handler locally on an event file, against the embedded adapters."),
    ("mcp", "mcp", "Serve search_documents, ask and the documents (as resources) to MCP clients over the local index."),
    ("ingest-progress", "progress",
     "Queue depth, documents done and failed, and the rate of a bulk load (uploading a folder to the bucket's docs/\n"
     "prefix is the bulk load; this watches it)."),
    ("search", "search", "Hybrid search; prints passages with their source ids."),
    ("serve", "serve",
     "A local web page: ask, read the streamed answer, click a citation to see the cited words highlighted in the\n"
     "PDF; add documents (drag and drop) and remove them."),
    ("status", "status",
     "Documents, chunks, namespaces, metadata keys (what --filter can test) and size of the index."),
    ("trace", "trace", "Reconstruct agent turns step by step from a saved trace or from model-invocation logs."),
    ("datasets", "datasets", "Public benchmark sets: list them, fetch them."),
)
MODULES = {name: module for name, module, _ in COMMANDS}


def _flags_without_type() -> None:
    """typer 0.29's help prints `<bool>` after every flag (`--json <bool>`), which reads as if it took a value."""
    from typer.core import TyperOption

    shown_type = TyperOption.display_type_rich

    def display_type_rich(self, ctx):
        return None if self.is_flag else shown_type(self, ctx)

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_without_type()


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        print(f"citerag {version('citerag')}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="print the version and exit")] = False,
) -> None:
    """Answers with verifiable citations."""


def load_all() -> None:
    """Every command module, in the table's order (what `citerag.cli.app` is: the whole command line)."""
    for module in dict.fromkeys(m for _, m, _ in COMMANDS):
        importlib.import_module(f"citerag.cli.{module}")


def load_summaries() -> None:
    """Every command as its name and help line only, for the command list (`citerag`, `citerag --help`, completing a
    command's name): none of them runs."""
    for name, _, summary in COMMANDS:
        app.command(name, help=summary)(_listed_only)


def _listed_only() -> None:  # pragma: no cover - load() registers the real command before one is run
    raise typer.Exit(2)


def command_named(argv: Sequence[str], env: Mapping[str, str]) -> str | None:
    """The command a command line runs (its first word that is not an option), or None when it names none (the
    command list). Completing, the command is the first finished word: `citerag sea<TAB>` lists commands."""
    if env.get("_CITERAG_COMPLETE"):
        try:
            if "COMP_WORDS" in env:  # bash: the words and the one under the cursor
                words = shlex.split(env["COMP_WORDS"])[1: int(env.get("COMP_CWORD", "0"))]
            else:  # zsh, fish, PowerShell: the line up to the cursor
                line = env.get("_TYPER_COMPLETE_ARGS", "")
                words = shlex.split(line)[1:]
                if words and not line[-1:].isspace():
                    words = words[:-1]
        except ValueError:  # an unclosed quote: let the whole command line complete it
            return ""
        argv = words
    return next((a for a in argv if not a.startswith("-")), None)


def load(argv: Sequence[str], env: Mapping[str, str]) -> None:
    """Register what this command line needs on `app`: its command's module, the command list, or (a name that is
    no command: click's own message, with its suggestions) everything."""
    name = command_named(argv, env)
    if name is None:
        load_summaries()
    elif name in MODULES:
        importlib.import_module(f"citerag.cli.{MODULES[name]}")
    else:
        load_all()
