"""`citerag chat`: questions and follow-ups in one process, so the model and the index load once (every `ask`
reloaded them, 2-7 s), with the citations after each answer and `/open N` to read the cited page.

On a terminal the line is read with prompt_toolkit: editing, history across sessions (DATA_DIR/chat-history) and
completion of the / commands; piped input and --json read plain lines, as a script expects. A follow-up with no
subject of its own is rewritten from the previous turns (citerag.citations.followup) and shown as asked."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from citerag.answerers import open_answerer
from citerag.citations import followup
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
from citerag.documents.text import strip_controls
from citerag.errors import CiteragError

HELP = ("Ask a question. /open N opens source N at its page (or place N under \"Where to look\"), /help shows this, "
        "/quit (or Ctrl-D) leaves.")
COMMANDS = {"/open": "open source N at its page", "/help": "what the commands do", "/quit": "leave (or Ctrl-D)",
            "/exit": "leave"}
HISTORY_FILE = "chat-history"
HISTORY_MAX_BYTES = 256 * 1024  # a year of questions; older ones are dropped when the file passes this


@app.command()
def chat(
    agent: Annotated[str, typer.Option("--agent", help="local (default) or none (search + extractive answer)")]
    = "local",
    session: Annotated[list[str] | None, typer.Option("--session-attr", help="key=value session attribute")] = None,
    index: IndexOpt = None,
    namespace: NamespaceOpt = None,
    rewrite: Annotated[bool, typer.Option("--rewrite/--no-rewrite", help="rewrite a follow-up with no subject of "
                                                                         "its own from the previous turns")] = True,
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
        read = _terminal_reader(comps.settings.data_dir) if _interactive(as_json) else _plain_reader(as_json)
        resolve = _rewriter(comps) if rewrite else None
        turns: list[followup.Turn] = []
        last = None
        while True:
            line = read()
            if line is None:
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
                turn = resolve(line, turns) if resolve else followup.Turn(question=line)
                rewritten = turn.question.split() != line.split()  # not spacing: the words
                if rewritten and not as_json:
                    err.print(f"[dim](asked as: {shown(turn.question)})[/]", highlight=False)
                last = _asked(ask, turn.question, as_json)
                seconds = time.perf_counter() - started
            except CiteragError as exc:
                _say({"error": str(exc)}, f"[bold red]Error:[/] {shown(exc)}", as_json, stderr=True)
                continue
            turns = [*turns, turn.model_copy(update={"answer": last.text})][-followup.MAX_TURNS:]
            if as_json:
                print(json.dumps({"answer": last.text, "answered": last.answered, "seconds": round(seconds, 3),
                                  "citations": last.flat_citations(), "related": last.flat_related(),
                                  **({"asked_as": turn.question} if rewritten else {})},
                                 ensure_ascii=False), flush=True)
            else:
                print_answer(last)
                out.print()


def _asked(ask: Callable, question: str, as_json: bool):
    """The answer, with the model's draft shown while it is written (a model that streams: one on an
    OpenAI-compatible server): with --json each piece is a {"draft": ...} line before the answer's; on a terminal the
    draft is shown dimmed and the checked answer with its citations replaces it. A draft is never cited."""
    from citerag.citations.drafts import drafts_to

    if as_json:
        def said(piece: str | None) -> None:
            print(json.dumps({"draft": piece} if piece is not None else {"draft_reset": True}, ensure_ascii=False),
                  flush=True)

        with drafts_to(said):
            return ask(question)
    if not out.is_terminal:
        return ask(question)
    from rich.live import Live
    from rich.text import Text

    draft = Text(style="dim")
    with Live(draft, console=out, transient=True, auto_refresh=False) as live:
        def heard(piece: str | None) -> None:
            if piece is None:  # a model step starts its answer afresh (a re-prompt)
                draft.truncate(0)
            else:
                draft.append(strip_controls(piece))
            live.update(draft, refresh=True)

        with drafts_to(heard):
            return ask(question)


def _rewriter(comps) -> Callable[[str, list[followup.Turn]], followup.Turn]:
    """The configured model rewrites follow-ups; without one (the offline answerer), the rule does. A model that
    fails leaves the rule's rewrite: the question is still answered."""
    from citerag.answerers import OFFLINE

    def resolve(question: str, turns: list[followup.Turn]) -> followup.Turn:
        model = comps.chat_model
        if getattr(model, "model_id", OFFLINE) == OFFLINE:
            return followup.rewrite(question, turns)
        try:
            return followup.rewrite_with_model(model, question, turns)
        except CiteragError:
            return followup.rewrite(question, turns)

    return resolve


def _interactive(as_json: bool) -> bool:
    """A person at a terminal: both ends are a tty (a pipe or --json keeps plain lines for the script reading)."""
    return not as_json and sys.stdin.isatty() and sys.stdout.isatty()


def _plain_reader(as_json: bool) -> Callable[[], str | None]:
    def read() -> str | None:
        if not as_json:
            err.print("[bold green]>[/] ", end="")
        line = sys.stdin.readline()
        return line or None

    return read


def _terminal_reader(data_dir: Path) -> Callable[[], str | None]:
    """prompt_toolkit's line editor: arrows and Emacs keys edit, Up and Down walk the questions of this and earlier
    sessions, Tab completes a / command. Ctrl-C clears the line, Ctrl-D leaves."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.formatted_text import HTML
    from prompt_toolkit.history import FileHistory

    class Commands(Completer):
        def get_completions(self, document, complete_event):
            typed = document.text_before_cursor
            if typed.startswith("/") and " " not in typed:
                for name, meta in COMMANDS.items():
                    if name.startswith(typed):
                        yield Completion(name, start_position=-len(typed), display_meta=meta)

    session = PromptSession(history=FileHistory(str(_history_file(data_dir))), completer=Commands(),
                            complete_while_typing=True, enable_history_search=False)

    def read() -> str | None:
        while True:
            try:
                return session.prompt(HTML("<ansigreen><b>&gt;</b></ansigreen> "))
            except KeyboardInterrupt:
                continue  # a fresh line, as in a shell
            except EOFError:
                return None

    return read


def _history_file(data_dir: Path) -> Path:
    """DATA_DIR/chat-history, readable by its owner only (questions can be private), its oldest entries dropped
    once it passes HISTORY_MAX_BYTES."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / HISTORY_FILE
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    elif path.stat().st_size > HISTORY_MAX_BYTES:
        raw = path.read_bytes()
        cut = raw.find(b"\n# ", len(raw) - HISTORY_MAX_BYTES // 2)  # FileHistory's entries open with "# date"
        if cut > 0:
            path.write_bytes(raw[cut + 1:])
    return path


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
