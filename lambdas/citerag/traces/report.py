"""`citerag trace`: a turn-by-turn account of what the agent saw, decided and cited, as terminal text, JSON or a
self-contained HTML page (timeline, answer with clickable citations, collapsible prompts)."""

from __future__ import annotations

import html
import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from citerag.citations.answer import Answer
from citerag.documents.text import strip_controls
from citerag.ingestion.files import page_uri
from citerag.search.passage import location
from citerag.traces.invocation_logs import iter_turn_bounds
from citerag.traces.join import answer_from_events
from citerag.traces.steps import Step, steps_from_events
from citerag.traces.wording import plural


class Turn(BaseModel):
    index: int
    session_id: str | None = None
    question: str = ""
    answer: Answer
    steps: list[Step]
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    model_ms: int = 0
    started: str | None = None
    lambda_logs: list[dict[str, Any]] = Field(default_factory=list)


def build_turns(events: list[dict[str, Any]]) -> list[Turn]:
    turns = []
    for n, (a, b) in enumerate(iter_turn_bounds(events), start=1):
        evs = events[a:b]
        if not evs:
            continue
        steps = steps_from_events(evs)
        answer = _answer(evs, steps)
        models = [s for s in steps if s.kind == "model"]
        turns.append(
            Turn(
                index=n,
                session_id=next((e["trace"].get("sessionId") for e in evs if "trace" in e), None),
                question=_question(steps),
                answer=answer,
                steps=steps,
                model_calls=len(models),
                input_tokens=sum(s.input_tokens or 0 for s in models),
                output_tokens=sum(s.output_tokens or 0 for s in models),
                model_ms=sum(s.ms or 0 for s in models),
                started=steps[0].time if steps else None,
            )
        )
    return turns


def _answer(evs: list[dict[str, Any]], steps: list[Step]) -> Answer:
    if any("chunk" in e for e in evs):
        return answer_from_events(evs)
    # From logs there is no chunk: the final text is post-processing's output, else the orchestration answer.
    final = next(
        (
            s.detail.get("parsed", {}).get("text")
            for s in reversed(steps)
            if s.prompt_type == "POST_PROCESSING" and s.kind == "model" and s.detail.get("parsed")
        ),
        None,
    )
    final = final or next((s.detail.get("text", "") for s in reversed(steps) if s.kind in ("answer", "ask-user")), "")
    return answer_from_events([*evs, {"chunk": {"bytes": final.encode()}}])


def _question(steps: list[Step]) -> str:
    for s in steps:
        if s.kind == "model" and s.prompt:
            try:
                prompt = json.loads(s.prompt)
            except (json.JSONDecodeError, TypeError):
                continue
            msgs = prompt.get("messages") or []
            if msgs:
                text = str(msgs[0].get("content", ""))
                if "<input>" in text:
                    text = text.split("<input>", 1)[1].split("</input>", 1)[0]
                return text.strip()
    return ""


def attach_lambda_logs(turns: list[Turn], lines: list[dict[str, Any]]) -> None:
    """Powertools log lines carry the agent session id (correlation_id); each goes under the tool call that ran
    just before it in that session."""
    for line in lines:
        sid = line.get("correlation_id")
        when = str(line.get("timestamp", ""))
        for turn in turns:
            if sid and turn.session_id and sid != turn.session_id:
                continue
            calls = [s for s in turn.steps if s.kind == "tool-call"]
            if not calls:
                continue
            before = [s for s in calls if (s.time or "") <= when.replace(" ", "T")] or calls[:1]
            before[-1].detail.setdefault("lambda_logs", []).append(line)
            turn.lambda_logs.append(line)
            break


def to_json(turns: list[Turn], stats: dict[str, Any]) -> str:
    return json.dumps(
        {"turns": [t.model_dump(exclude={"answer": {"trace"}}) for t in turns], "stats": stats},
        ensure_ascii=False,
        default=str,
    )


# --- terminal ------------------------------------------------------------------------------------------------


SUMMARY_AFTER = 20
NARROW_COLUMNS = 72  # below it a turn's table has no stage column


def print_turns(console, turns: list[Turn], *, prompts: bool = False) -> None:
    from rich.panel import Panel
    from rich.table import Table

    if len(turns) > SUMMARY_AFTER:
        # Many turns: one line each; pick one with --session, or open --html for every detail.
        table = Table(title=plural(len(turns), "turn"), expand=True)
        for col in ("#", "session", "question", "steps", "tokens in/out", "answer"):
            table.add_column(col, overflow="ellipsis", no_wrap=True)
        for t in turns:
            table.add_row(str(t.index), _shown(t.session_id or ""), _shown(t.question[:60]), str(len(t.steps)),
                          f"{t.input_tokens}/{t.output_tokens}", t.answer.text[:60])
        console.print(table)
        return

    for t in turns:
        table = Table(show_header=True, header_style="bold", expand=True)
        # The step takes what the others leave: a stage, a token count or a time cut over lines ("pre_pr / ocessi /
        # ng", "1587/4" over "2") read as something else in an 80-column terminal. Narrower, the stage goes into
        # the step's text, which kept too little room beside it.
        staged = console.width >= NARROW_COLUMNS
        for col in ("#", "stage", "step", "tokens", "ms") if staged else ("#", "step", "tokens", "ms"):
            if col == "step":
                table.add_column(col, overflow="fold", ratio=1)
            else:
                table.add_column(col, no_wrap=True, justify="right" if col in ("#", "tokens", "ms") else "left")
        for i, s in enumerate(t.steps, start=1):
            tokens = f"{s.input_tokens}/{s.output_tokens}" if s.input_tokens is not None else ""
            text = f"[bold]{s.kind}[/] {_shown(s.title)}"
            if s.model:
                text += f" [dim]({s.model})[/]"
            for src in s.detail.get("sources") or []:
                where = location(src.get("page"), src.get("section"))
                text += (f"\n  [cyan]{_shown(src['source_id'])}[/] {_shown(src.get('title'))}"
                         f"{', ' + _shown(where) if where else ''} {_shown(src.get('uri'))}")
            for log in s.detail.get("lambda_logs", []):
                text += f"\n  [magenta]lambda[/] {_shown(log.get('level', ''))} {_shown(log.get('message', ''))}"
            if prompts and s.prompt:
                text += f"\n[dim]prompt:[/] {_shown(s.prompt[:4000])}\n[dim]raw output:[/] {_shown(s.raw or '')}"
            stage = (s.prompt_type or "").lower()
            if staged:
                table.add_row(str(i), stage, text, tokens, str(s.ms or ""))
            else:
                table.add_row(str(i), f"[dim]{stage}[/] {text}" if stage else text, tokens, str(s.ms or ""))
        cites = "\n".join(
            _shown(f"[{c.sources[0].source_id}] {c.text} -> {c.sources[0].uri}")
            + (f", {_shown(where)}" if (where := location(c.sources[0].page, c.sources[0].section)) else "")
            for c in t.answer.citations
        )
        console.print(
            Panel(
                table,
                title=f"turn {t.index}: {_shown(t.question[:80])}",
                subtitle=(
                    f"{plural(t.model_calls, 'model call')}, {t.input_tokens} in / {t.output_tokens} out tokens, "
                    f"{t.model_ms} ms in models"
                ),
            )
        )
        console.print(f"[bold]answer:[/] {_shown(t.answer.text)}")
        if cites:
            console.print(cites, highlight=False)


# --- HTML ----------------------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:72rem;color:#222}
h1{font-size:1.4rem} h2{font-size:1.15rem;margin-top:2rem}
.timeline{position:relative;border-left:1px solid #ccc;margin:1rem 0}
.row{display:flex;align-items:center;font-size:.85rem;margin:2px 0}
.row .label{width:24rem;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;padding-right:.5rem}
.row .lane{flex:1;position:relative;height:14px;background:#f6f6f6}
.bar{position:absolute;height:14px;border-radius:2px}
.bar.model{background:#4a7bd0}.bar.tool-call,.bar.observation{background:#3aa17e}
.bar.reprompt,.bar.failure,.bar.guardrail{background:#d0503c}.bar.answer,.bar.ask-user{background:#a06cd5}
.bar.rationale{background:#c8b34a}
.lane.scale{background:none;border-top:1px solid #999;height:1.2rem}
.tick{position:absolute;top:2px;font-size:.75rem;color:#555;transform:translateX(-50%);white-space:nowrap}
.tick:first-child{transform:none}.tick:last-child{transform:translateX(-100%)}
details.step{border-left:4px solid #ddd;padding-left:.5rem}
details.step.reprompt,details.step.failure,details.step.guardrail{border-color:#d0503c}
details.step.answer{border-color:#a06cd5}
.answer-text a{color:#2559b5;text-decoration:none;font-weight:600}
.sources li:target{background:#fff3b0}
details{margin:.3rem 0}
pre{white-space:pre-wrap;background:#f4f4f4;padding:.5rem;font-size:.8rem;max-height:30rem;overflow:auto}
.meta{color:#666;font-size:.85rem}
"""


def to_html(turns: list[Turn], stats: dict[str, Any]) -> str:
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>citerag trace</title>",
        f"<style>{_CSS}</style></head><body><h1>citerag trace</h1>",
        f"<p class='meta subtitle'>{html.escape(_stats_line(turns, stats))}</p>",
    ]
    for t in turns:
        parts.append(f"<section class='turn' id='turn-{t.index}'><h2>Turn {t.index}: {html.escape(t.question)}</h2>")
        parts.append(
            f"<p class='meta'>session {html.escape(str(t.session_id))}; {plural(t.model_calls, 'model call')}; "
            f"{t.input_tokens} input / {t.output_tokens} output tokens; {t.model_ms} ms in models</p>"
        )
        parts.append(_answer_html(t))
        parts.append(_timeline_html(t))
        parts.append("<h3>Steps</h3>")
        for i, s in enumerate(t.steps, start=1):
            body = [
                f"<summary>{i}. <b>{html.escape(s.kind)}</b> {html.escape(s.title)}"
                f"{' — ' + str(s.input_tokens) + '/' + str(s.output_tokens) + ' tokens' if s.input_tokens else ''}"
                f"</summary>"
            ]
            if s.prompt:
                body.append(
                    f"<details class='prompt'><summary>prompt ({len(s.prompt):,} chars)</summary>"
                    f"<pre>{html.escape(_pretty(s.prompt))}</pre></details>"
                )
            if s.raw:
                body.append(
                    f"<details class='raw'><summary>raw model output</summary><pre>{html.escape(s.raw)}</pre></details>"
                )
            if s.detail:
                body.append(
                    f"<pre>{html.escape(json.dumps(s.detail, ensure_ascii=False, indent=1, default=str))}</pre>"
                )
            parts.append(f"<details class='step {html.escape(s.kind)}'>{''.join(body)}</details>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "".join(parts)


def _stats_line(turns: list[Turn], stats: dict[str, Any]) -> str:
    """`1 turn from 12 events, read in 0.02 s`: the subtitle used to print the stats as a raw dict."""
    line = plural(len(turns), "turn")
    if isinstance(stats.get("events"), int):
        line += f" from {plural(stats['events'], 'event')}"
    if stats.get("skipped_lines"):
        line += f", {plural(int(stats['skipped_lines']), 'unreadable log line')} skipped"
    if stats.get("seconds") is not None:
        line += f", read in {stats['seconds']} s"
    return line


def _answer_html(t: Turn) -> str:
    text = t.answer.text
    numbers: dict[str, int] = {}
    out, cursor = [], 0
    for c in sorted(t.answer.citations, key=lambda c: c.start):
        out.append(html.escape(text[cursor : c.end]))
        for s in c.sources:
            n = numbers.setdefault(s.source_id, len(numbers) + 1)
            out.append(f"<a class='citation' href='#t{t.index}-src-{n}'>[{n}]</a>")
        cursor = c.end
    out.append(html.escape(text[cursor:]))
    items = []
    for s in t.answer.sources:
        n = numbers.get(s.source_id)
        if n is None:
            continue
        where = location(s.page, s.section)
        items.append(
            f"<li id='t{t.index}-src-{n}' class='source'>[{n}] <a href='{html.escape(page_uri(s.uri, s.page))}'>"
            f"{html.escape(s.title or s.uri)}</a>{html.escape(', ' + where) if where else ''} "
            f"<span class='meta'>{html.escape(s.source_id)}</span>"
            f"<br><q>{html.escape(s.excerpt)}</q></li>"
        )
    return f"<h3>Answer</h3><p class='answer-text'>{''.join(out)}</p><ol class='sources'>{''.join(items)}</ol>"


def _timeline_html(t: Turn) -> str:
    spans = []
    for s in t.steps:
        end = _ts(s.time)
        ms = s.ms or 0
        start = end - ms / 1000 if end is not None else None
        spans.append((s, start, ms))
    known = [st for _, st, _ in spans if st is not None]
    if known:
        t0 = min(known)
        total = max((st - t0) * 1000 + ms for _, st, ms in spans if st is not None) or 1
    rows = []
    for i, (s, start, ms) in enumerate(spans):
        if known and start is not None:
            left, width = (start - min(known)) * 1000 / total * 100, max(ms / total * 100, 0.6)
        else:  # no clock: steps in order
            left, width = i / max(len(spans), 1) * 100, 100 / max(len(spans), 1)
        rows.append(
            f"<div class='row'><div class='label'>{html.escape(s.kind)}: {html.escape(s.title[:60])}</div>"
            f"<div class='lane'><div class='bar {html.escape(s.kind)}' style='left:{left:.2f}%;"
            f"width:{width:.2f}%' title='{ms} ms'></div></div></div>"
        )
    axis = _axis_html(total) if known else "<p class='meta'>steps in order (the events carry no times)</p>"
    return f"<h3>Timeline</h3><div class='timeline'>{''.join(rows)}{axis}</div>"


def _axis_html(total_ms: float) -> str:
    """Ticks at 0, ¼, ½, ¾ and the end of the turn, in ms or s (the timeline had bars and no scale)."""
    ticks = []
    for i in range(5):
        ms = total_ms * i / 4
        label = f"{ms / 1000:.2f} s" if total_ms >= 2000 else f"{ms:.0f} ms"
        ticks.append(f"<span class='tick' style='left:{i * 25}%'>{label}</span>")
    return f"<div class='row axis'><div class='label'>time</div><div class='lane scale'>{''.join(ticks)}</div></div>"


def _ts(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _pretty(prompt: str) -> str:
    try:
        return json.dumps(json.loads(prompt), ensure_ascii=False, indent=1)
    except (json.JSONDecodeError, TypeError):
        return prompt


def _shown(text: object) -> str:
    """Trace text (questions, document titles, model output) for rich: no control characters, markup escaped."""
    from rich.markup import escape

    return escape(strip_controls(str(text)))
