"""`citerag ask`: an answer with a citation (file and page) for every claim, from the local agent, a deployed
agent, or search alone."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from citerag.answerers import AGENTS, open_answerer
from citerag.cli.common import (
    IndexOpt,
    JsonOpt,
    NamespaceOpt,
    app,
    check_filter_keys,
    components,
    errors,
    one_line,
    open_index,
    out,
    parse_meta,
    shown,
    where,
    writable,
)
from citerag.errors import CiteragError


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="your question")],
    agent: Annotated[str | None, typer.Option("--agent", help="local (default; none with --filter), "
                                                               "agentcore-local (the AgentCore runtime "
                                                        "app in-process), AGENT_ID:ALIAS_ID of a deployed agent, "
                                                        "or none (search + extractive answer, no agent steps)")]
    = None,
    runtime: Annotated[str | None, typer.Option("--runtime", help="RUNTIME_ARN of a deployed AgentCore runtime "
                                                                  "(InvokeAgentRuntime)")] = None,
    bearer_token: Annotated[str | None, typer.Option("--bearer-token", envvar="CITERAG_BEARER_TOKEN",
                                                     help="with --runtime: call a JWT-protected runtime over HTTPS")]
    = None,
    session_id: Annotated[str | None, typer.Option("--session-id", help="with --runtime or agentcore-local: continue "
                                                                        "this session (up to 256 characters; a "
                                                                        "deployed runtime needs at least 33)")]
    = None,
    filter_: Annotated[list[str] | None, typer.Option("--filter", help="key=value, key>=n or JSON (answers "
                                                                       "from the filtered search)")]
    = None,
    trace: Annotated[bool, typer.Option("--trace", help="print each agent step")] = False,
    explain: Annotated[bool, typer.Option("--explain", help="say why it answered or refused: the sentences "
                                                            "weighed, what chose each, the answerability estimate")]
    = False,
    save_trace: Annotated[Path | None, typer.Option("--save-trace", help="write the events to FILE")] = None,
    session: Annotated[list[str] | None, typer.Option("--session-attr", help="key=value session attribute")] = None,
    open_n: Annotated[int | None, typer.Option(
        "--open", min=1, metavar="N",
        help="open source N (or, when nothing answers, place N to look) at its page in the system viewer")] = None,
    index: IndexOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer from the indexed documents, with a citation (file and page) for every claim."""
    from citerag.search.filters import parse_cli
    from citerag.search.query import analyze

    with errors(as_json):
        analyze(question)
        comps = None  # a deployed runtime's answer cites files this machine has not indexed
        if save_trace:
            writable(save_trace, "--save-trace")
        flt = parse_cli(filter_ or [])
        meta = parse_meta(session or [], "--session-attr")
        attrs = {k: str(v) for k, v in meta.items()}
        events: list[dict] = []
        # The local agent's filters come from --session-attr; a --filter answers from the filtered search (it
        # used to need --agent none and fail without it).
        agent = agent or ("none" if flt else "local")
        # Said, not ignored: the search-only answerer has no agent steps, and --json prints one object.
        if (trace or save_trace) and agent == "none" and not runtime:
            raise CiteragError("--trace and --save-trace record an agent's steps; --agent none (which --filter "
                               "implies) takes none: use --agent local with --session-attr for access")
        if as_json and (trace or open_n is not None):
            raise CiteragError("--json prints the answer as one object: leave out --trace and --open (the steps "
                               "are in --save-trace FILE)")
        if runtime:
            from citerag.runtimes.agentcore.client import RuntimeClient, parse_arn

            if flt:
                raise CiteragError("--filter works with --agent none; a runtime's access comes from --session-attr")
            region = parse_arn(runtime)
            rc = RuntimeClient(None if bearer_token else _agentcore_client(region))
            answer = (rc.ask_with_token(question, runtime, bearer_token, session_id=session_id) if bearer_token
                      else rc.ask(question, runtime, session_id=session_id, access=_access(meta)))
            events = rc.last_events
        elif agent in AGENTS:
            comps = open_index(index, namespace, quiet=as_json)
            if agent == "none":
                check_filter_keys(comps, flt)
            answerer = open_answerer(comps, agent, session_attributes=attrs, session_id=session_id,
                                     access=_access(meta))
            answer = answerer.ask(question, flt=flt)
            events = answerer.last_events
        else:
            from citerag.runtimes.classic import AgentClient

            agent_id, sep, alias_id = agent.partition(":")
            if not sep or not agent_id or not alias_id:
                raise CiteragError(f"--agent {agent!r}: write local, agentcore-local, none, or AGENT_ID:ALIAS_ID")
            comps = components(index, namespace)
            client = AgentClient(comps.aws_client("bedrock-agent-runtime", read_timeout=120), mask=comps.pii_mask)
            answer = client.ask(question, agent_id, alias_id, session_attributes=attrs, stream=True)
            events = client.last_events
        if save_trace:  # checked first: the answer was lost to a traceback when the folder did not exist
            from citerag.traces.tracefile import save

            save(save_trace, question=question, agent=runtime or agent, events=events)
        if as_json:
            print(json.dumps({"answer": answer.text, "answered": answer.answered,
                              "citations": answer.flat_citations(),
                              # Each cited sentence: its span in "answer" and the sources that hold it.
                              "sentences": [{"text": c.text, "start": c.start, "end": c.end,
                                             "sources": [s.source_id for s in c.sources]}
                                            for c in answer.citations],
                              "related": answer.flat_related(),
                              **({"decision": answer.decision.model_dump(mode="json") if answer.decision else None}
                                 if explain else {})}, ensure_ascii=False))
            return
        print_answer(answer)
        if explain:
            print_decision(answer.decision)
        if open_n is not None:
            from citerag.cli import opener

            opened = opener.open_numbered(answer, open_n, comps=comps)
            out.print(f"[dim]opening {shown(opened)}[/]", highlight=False)
        if trace:
            from citerag.traces.agentcore import steps_from_runtime_events
            from citerag.traces.steps import steps_from_events

            _print_steps(steps_from_runtime_events(events) if runtime or agent == "agentcore-local"
                         else steps_from_events(events))


def _access(meta: dict) -> dict | None:
    """--session-attr tenant=acme --session-attr groups=a,b as the AgentCore payload's access field."""
    out = {k: v for k, v in meta.items() if k in ("tenant", "groups")}
    if isinstance(out.get("groups"), str):
        out["groups"] = [out["groups"]]
    return out or None


def _agentcore_client(region: str):
    from citerag.adapters import aws

    return aws.client("bedrock-agentcore", read_timeout=900, region=region)


def print_answer(answer) -> None:
    """The answer with [n] after each cited span, then the source list numbered 1, 2, 3 in order (an answer
    marked with source ids used to list [S1] [S3], with a gap)."""
    numbers: dict[str, int] = {}
    for s in answer.sources:
        numbers.setdefault(s.source_id, len(numbers) + 1)
    text = answer.text
    if answer.citations and not any(f"[{s.source_id}]" in text for s in answer.sources):
        pieces, cursor = [], 0
        for c in answer.citations:
            marks = "".join(f"[{numbers[s.source_id]}]" for s in c.sources)
            pieces.append(text[cursor : c.end] + " " + marks)
            cursor = c.end
        text = "".join(pieces) + text[cursor:]
    else:
        text = _MARK.sub(lambda m: f"[{numbers[m.group(1)]}]" if m.group(1) in numbers else m.group(0), text)
    out.print(shown(text), highlight=False)
    if answer.sources:
        out.print()
        out.print("[bold]Sources[/]")
        for s in answer.sources:
            out.print(f" [bold cyan]\\[{numbers[s.source_id]}][/] {_place(s)}", highlight=False)
            out.print(f"      “{shown(' '.join(s.excerpt.split()))}”", highlight=False)  # cut at sentence ends
    if answer.related and not answer.answered:
        out.print()
        out.print("[bold]Where to look[/] [dim](search found these passages; the answer may be worded otherwise "
                  "there, or not be in the documents)[/]", highlight=False)
        for n, p in enumerate(answer.related, start=1):
            out.print(f" {n}. {_place(p)}", highlight=False)


def print_decision(decision) -> None:
    """Why the answer says what it says: the reason for a refusal, the answerability estimate against its threshold,
    and the sentences weighed, best first, with what chose each one."""
    out.print()
    if decision is None:
        out.print("[bold]Why[/] this answer was written by a model; it weighed no sentences here.", highlight=False)
        return
    verdict = "answered" if decision.answered else f"refused: {decision.reason or 'not answered'}"
    line = f"[bold]Why[/] {verdict}" + (f" — {shown(decision.detail)}" if decision.detail else "")
    if decision.probability is not None and decision.threshold is not None:
        line += f" (answerability {decision.probability:.2f}, threshold {decision.threshold:.2f})"
    elif decision.probability is not None:  # the rules decided; the model's estimate is said beside them
        line += f" (answerability estimate {decision.probability:.2f})"
    out.print(line, highlight=False)
    if decision.weighed:
        table = Table(show_lines=False, box=None)
        for col in ("score", "terms", "cosine", "chosen by", "sentence"):
            table.add_column(col, overflow="fold")
        for w in decision.weighed:
            table.add_row(f"{w.score:.3f}", f"{w.lexical:.2f}", f"{w.cosine:.3f}", w.chosen_by or "-",
                          shown(one_line(w.text, 160)))
        out.print(table)


def _place(p) -> str:
    """File, page or section, and title of a source, ready for rich output. A heading path already starts with the
    title it would repeat."""
    title = "" if p.section and not p.page and p.section.startswith(p.title) else f" — {shown(p.title)}"
    return f"{where(p.citation())}{title}"


_MARK = re.compile(r"\[([A-Za-z0-9_.:-]{1,64})\]")


def _print_steps(steps) -> None:
    table = Table(title="agent steps", show_lines=False)
    for col in ("#", "stage", "step", "tokens in/out", "ms"):
        table.add_column(col, overflow="fold")
    for i, st in enumerate(steps, start=1):
        tokens = f"{st.input_tokens}/{st.output_tokens}" if st.input_tokens is not None else ""
        table.add_row(str(i), (st.prompt_type or st.kind).lower(), f"[bold]{st.kind}[/] {shown(st.title)}", tokens,
                      str(st.ms) if st.ms is not None else "")
    out.print(table)
