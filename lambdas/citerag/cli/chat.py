"""`citerag chat`: questions and follow-ups in one process, so the model and the index load once (every `ask`
reloaded them, 2-7 s), with the citations after each answer and `/open N` to read the cited page."""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated

import typer

from citerag.answerers import open_answerer
from citerag.cli.common import (
    IndexOpt,
    JsonOpt,
    NamespaceOpt,
    app,
    err,
    errors,
    open_index,
    out,
    parse_meta,
    shown,
)
from citerag.errors import CiteragError

HELP = ("Ask a question. /open N opens source N at its page (or place N under \"Where to look\"), /help shows this, "
        "/quit (or Ctrl-D) leaves.")


@app.command()
def chat(
    agent: Annotated[str, typer.Option("--agent", help="local (default) or none (search + extractive answer)")]
    = "local",
    session: Annotated[list[str] | None, typer.Option("--session-attr", help="key=value session attribute")] = None,
    index: IndexOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """An interactive session: ask, read the cited answer, ask a follow-up; /open N opens a cited page."""
    from citerag.cli import opener
    from citerag.cli.ask import print_answer

    with errors(as_json):
        if agent not in ("local", "none"):
            raise CiteragError(f"--agent {agent!r}: chat runs local or none")
        comps = open_index(index, namespace, quiet=as_json)
        ask = open_answerer(comps, agent, session_attributes={
            k: str(v) for k, v in parse_meta(session or [], "--session-attr").items()}).ask
        if not as_json:
            err.print(f"[dim]{HELP}[/]")
        last = None
        while True:
            if not as_json:
                err.print("[bold green]>[/] ", end="")
            line = sys.stdin.readline()
            if not line:
                break
            line = line.strip()  # whole: the query check says how long it is and the limit
            if not line:
                continue
            if line in ("/quit", "/exit", "/q"):
                break
            if line == "/help":
                _say({"help": HELP}, HELP, as_json, stderr=True)
                continue
            try:
                if line.startswith("/open"):
                    uri = opener.open_numbered(last, _number(line), comps=comps)
                    _say({"opened": uri}, f"[dim]opening {shown(uri)}[/]", as_json)
                    continue
                if line.startswith("/"):
                    raise CiteragError(f"unknown command {line.split()[0]!r}. {HELP}")
                started = time.perf_counter()
                last = ask(line)
                seconds = time.perf_counter() - started
            except CiteragError as exc:
                _say({"error": str(exc)}, f"[bold red]Error:[/] {shown(exc)}", as_json, stderr=True)
                continue
            if as_json:
                print(json.dumps({"answer": last.text, "answered": last.answered, "seconds": round(seconds, 3),
                                  "citations": last.flat_citations(), "related": last.flat_related()},
                                 ensure_ascii=False), flush=True)
            else:
                print_answer(last)
                out.print()


def _number(line: str) -> int:
    arg = line[len("/open"):].strip().strip("[]")
    if not arg.isdigit():
        raise CiteragError("write /open N, N being a source (or place) number from the last answer")
    return int(arg)


def _say(data: dict, text: str, as_json: bool, *, stderr: bool = False) -> None:
    if as_json:
        print(json.dumps(data, ensure_ascii=False), flush=True)
    else:
        (err if stderr else out).print(text, highlight=False)
