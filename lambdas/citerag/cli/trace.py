"""`citerag trace`: agent turns step by step, from a saved trace, model-invocation logs, or AgentCore OpenTelemetry
spans (the aws/spans log group or an OTLP/JSON export)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from citerag.cli.common import JsonOpt, app, components, errors, out, plural, writable, write_text
from citerag.errors import CiteragError


@app.command()
def trace(
    source: Annotated[Path | None, typer.Argument(help="a trace saved by ask --save-trace, or a JSON export of "
                                                        "model-invocation logs")] = None,
    log_group: Annotated[str | None, typer.Option("--log-group", help="CloudWatch Logs group of Bedrock "
                                                                      "model-invocation logs")] = None,
    since: Annotated[str, typer.Option("--since", help="with --log-group: how far back, e.g. 30m, 1h, 2d")] = "1h",
    session: Annotated[str | None, typer.Option("--session", help="only this agent session id")] = None,
    with_lambda_logs: Annotated[list[str] | None, typer.Option(
        "--with-lambda-logs", help="Lambda log group(s) whose Powertools lines go under the steps that caused them")]
    = None,
    spans: Annotated[bool, typer.Option("--spans", help="with --log-group: the group holds AgentCore OpenTelemetry "
                                                        "spans (aws/spans), not model-invocation logs")] = False,
    prompts: Annotated[bool, typer.Option("--prompts", help="show full prompts and raw model output")] = False,
    html_out: Annotated[Path | None, typer.Option("--html", help="write a self-contained HTML page")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Reconstruct agent turns step by step from a saved trace or from model-invocation logs."""
    import time as _time

    from citerag.traces import agentcore as ac
    from citerag.traces import invocation_logs as il
    from citerag.traces import report as tr

    with errors(as_json):
        t0 = _time.perf_counter()
        skipped = 0
        if (source is None) == (log_group is None):
            raise CiteragError("give either a trace file or --log-group NAME")
        if html_out:
            writable(html_out, "--html")
        turns = None
        if log_group and (spans or log_group == "aws/spans"):
            found, skipped = ac.read_spans_log_group(logs_client(), log_group, il.parse_since(since), session)
            events, turns = found, ac.turns_from_spans(found, session)
        elif log_group:
            records, skipped = il.read_log_group(logs_client(), log_group, il.parse_since(since), session)
            events = il.records_to_events(records)
        else:
            try:
                events, turns, skipped = _read_file(source, session)
            except CiteragError as exc:
                raise CiteragError(str(exc) if str(source) in str(exc) else f"{source}: {exc}") from None
            except (AttributeError, TypeError, KeyError, ValueError) as exc:  # a hand-edited or foreign file
                # (ValueError covers bad base64 and pydantic's ValidationError)
                raise CiteragError(f"{source} holds events this version cannot read ({type(exc).__name__}); save "
                                   "the trace again with --save-trace") from None
        if turns is None:
            try:
                turns = tr.build_turns(events)
            except (AttributeError, TypeError, KeyError, ValueError) as exc:  # a hand-edited or foreign file
                raise CiteragError(f"{source or log_group} holds events this version cannot read "
                                   f"({type(exc).__name__}); save the trace again with --save-trace") from None
        if session:
            turns = [t for t in turns if t.session_id in (None, session)]
        if with_lambda_logs:
            lines = []
            for group in with_lambda_logs:
                lines.extend(il.read_lambda_lines(logs_client(), group, il.parse_since(since), session))
            tr.attach_lambda_logs(turns, lines)
        stats = {"turns": len(turns), "events": len(events), "skipped_lines": skipped,
                 "seconds": round(_time.perf_counter() - t0, 3)}
        if html_out:
            write_text(html_out, tr.to_html(turns, stats), "--html")
        if as_json:
            print(tr.to_json(turns, stats))
            return
        tr.print_turns(out, turns, prompts=prompts)
        note = f"; {plural(skipped, 'unreadable log line')} skipped" if skipped else ""
        out.print(f"[dim]{plural(len(turns), 'turn')} from {plural(len(events), 'event')} in {stats['seconds']} s"
                  f"{note}"
                  + (f"; HTML written to {html_out}" if html_out else "") + "[/]")


def _read_file(source: Path, session: str | None):
    """(events, turns or None, lines skipped) of a saved trace, a span export or a log export."""
    from citerag.jsonfiles import read_json
    from citerag.traces import agentcore as ac
    from citerag.traces import invocation_logs as il
    from citerag.traces.tracefile import load

    raw = read_json(source, "trace or log export")
    if isinstance(raw, dict) and str(raw.get("format") or "").startswith("citerag-trace"):
        saved = load(source)
        events = saved["events"]
        turns = None
        if any(e.get("type") in ("answer", "error") for e in events):
            turns = ac.turns_from_runtime_events(events, str(saved.get("question") or ""))
        return events, turns, 0
    found, skipped = ac.read_span_documents(raw)
    if found:
        return found, ac.turns_from_spans(found, session), skipped
    records, skipped = il.read_export(raw)
    if not records:
        raise CiteragError(f"{source} holds no model-invocation log records or OpenTelemetry spans "
                           f"({skipped} items skipped)")
    return il.records_to_events(records), None, skipped


def logs_client():
    return components(None).aws_client("logs")
