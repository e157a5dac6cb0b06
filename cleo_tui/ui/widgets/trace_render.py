"""How traces look: table cells, result lines, the rerank chain with a bar per step.

Pure functions from the recall reader's dataclasses to rich Text (no widgets, no
database), so the Traces pane stays small and every look is testable. All trace
and memory text goes through `safe_text`: it is data, never markup.
"""

from __future__ import annotations

from rich.text import Text

from cleo_tui.brain.rows import Row
from cleo_tui.recall.reader import TraceOutcome, TraceResult, TraceSummary
from cleo_tui.recall.recorded import EntryUse, RecordedRetrieval
from cleo_tui.recall.rerank import format_chain, format_factor
from cleo_tui.recall.resolve import DELETED, EVICTED, FORGOTTEN, HIDDEN, LIVE
from cleo_tui.recall.retrievals import CleoResult
from cleo_tui.safe_text import one_line, plural, printable, shown_id
from cleo_tui.ui.widgets.cells import fit_cells

BAR_WIDTH = 14
EIGHTHS = " ▏▎▍▌▋▊▉"
OUTCOME_CLASSES = {"positive": "table--reinforced", "negative": "table--critical", "mixed": "table--high",
                   "none": "table--muted"}


def short_time(ts: str) -> str:
    """`2026-05-01T13:37:00.000Z` → `2026-05-01 13:37:00`."""
    return one_line(ts)[:19].replace("T", " ")


def outcome_summary(positive: int, negative: int) -> str:
    """`+2 −1`, `+1`, `−3`, or empty when nothing was recorded."""
    parts = ([f"+{positive}"] if positive else []) + ([f"−{negative}"] if negative else [])
    return " ".join(parts)


def trace_cells(row: Row) -> dict[str, tuple[str, str]]:
    """The trace table's cells for one listing row."""
    t: TraceSummary = row["trace"]
    return {
        "id": (str(t.id), "table--muted"),
        "time": (short_time(t.ts), ""),
        "pipeline": (t.pipeline, ""),
        "session": (t.session_id or "-", "" if t.session_id else "table--muted"),
        "tenant": (t.tenant_id, ""),
        "query": (f"{t.query_hash} {t.query_length:>4}", ""),
        "results": (str(t.result_count), ""),
        "explain": ("why" if t.explain_mode else "-", "" if t.explain_mode else "table--muted"),
        "outcome": (outcome_summary(t.positive, t.negative) or "none", OUTCOME_CLASSES[t.outcome]),
    }


def credits(outcomes: list[TraceOutcome]) -> dict[str, tuple[int, int]]:
    """memory id → (positive, negative) outcome events of this trace that credit it."""
    tally: dict[str, list[int]] = {}
    for outcome in outcomes:
        for memory_id in set(outcome.memory_ids):
            counts = tally.setdefault(memory_id, [0, 0])
            counts[0 if outcome.outcome == "positive" else 1] += 1
    return {k: (v[0], v[1]) for k, v in tally.items()}


def bar(value: float, scale: float, width: int = BAR_WIDTH) -> str:
    """A left-aligned bar of `value / scale` of `width` cells, in eighths of a cell."""
    if scale <= 0 or value <= 0:
        return " " * width
    eighths = round(min(1.0, value / scale) * width * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (EIGHTHS[part] if part else "")).ljust(width)


def chain_scale(results: list[TraceResult]) -> float:
    """The largest score any step of any result reaches: every bar of a trace shares it."""
    values = [r.score for r in results]
    for r in results:
        for step in r.steps or ():
            values += [step.score_before, step.score_after]
    return max(values, default=0.0)


# A result whose row had no id when it was recalled (a NULL id): the trace cannot say which row it was.
NO_ID_MEMORY = "a memory without an id: the trace cannot say which"


def memory_label(result: TraceResult) -> Text:
    """The memory's title, or why there is none (forgotten), evicted ones struck through."""
    memory = result.memory
    if not result.memory_id:
        return Text(NO_ID_MEMORY, style="italic")
    if memory.state == FORGOTTEN:
        return Text("no longer in this store", style="italic red")
    if memory.state == "unresolved":
        return Text("not resolved", style="italic")
    style = "strike dim" if memory.state == EVICTED else ""
    return Text(one_line(memory.title or memory.summary or "(no text)", 200), style=style)


def chain_text(result: TraceResult) -> Text:
    """`base 0.420 → recency ×0.95 → 0.399 → …`, or why there is no chain."""
    if result.steps_error:
        return Text(f"rerank steps unreadable: {one_line(result.steps_error, 120)}", style="italic red")
    if not result.steps:
        if result.explain_mode:  # explained, yet no step recorded: nothing moved this score
            return Text("no rerank stage changed this score", style="italic dim")
        return Text("no rerank steps (recalled without explain)", style="italic dim")
    return Text(format_chain(result.steps), style="dim")


def result_prompt(result: TraceResult, credit: tuple[int, int], title_width: int = 48) -> Text:
    """The results list's lines: rank, score, credit, state, title; then the id and the chain."""
    memory = result.memory
    text = Text()
    text.append(f"#{result.rank:<3}", style="bold")
    text.append(f"{result.score:7.3f} ")
    plus, minus = credit
    text.append(f"{'+' + str(plus) if plus else '':>3}", style="bold green")
    text.append(f"{'−' + str(minus) if minus else '':>3} ", style="bold red")
    state = memory.state if result.memory_id else "no id"
    text.append(f"{state:<10}", style={"live": "green", EVICTED: "yellow", FORGOTTEN: "red"}.get(state, ""))
    label = memory_label(result)
    label.truncate(title_width, overflow="ellipsis")
    text.append_text(label)
    text.append("\n     ")
    text.append(shown_id(result.memory_id, 40), style="bold dim")
    text.append("  ")
    text.append_text(chain_text(result))
    return text


def steps_text(result: TraceResult, scale: float, credit: tuple[int, int]) -> Text:
    """The chain of one result step by step, each with a bar on the trace's common scale."""
    memory = result.memory
    text = Text()
    text.append(f"#{result.rank} {shown_id(result.memory_id, 40)}\n", style="bold")
    if not result.memory_id:
        text.append(NO_ID_MEMORY)
    else:
        text.append(f"{memory.kind or 'unknown kind'} · {memory.state}")
    if memory.created_at:
        text.append(f" · {short_time(memory.created_at)}")
    text.append("\n")
    if result.steps:
        first = result.steps[0]
        text.append(f"{'base':<18}{first.score_before:7.3f} ")
        text.append(bar(first.score_before, scale) + "\n", style="cyan")
        for step in result.steps:
            factor = (format_factor(step.multiplier, step.score_before, step.score_after)
                      if step.multiplier is not None else "→")
            text.append(f"{fit_cells(step.stage, 12)}{factor:>6}{step.score_after:7.3f} ")
            text.append(bar(step.score_after, scale) + "\n",
                        style="green" if (step.multiplier or 1.0) >= 1.0 else "yellow")
    else:
        text.append_text(chain_text(result))
        text.append("\n")
    text.append(f"{'final':<18}{result.score:7.3f} ", style="bold")
    text.append(bar(result.score, scale) + "\n", style="bold cyan")
    plus, minus = credit
    text.append("credit   ", style="bold")
    text.append(outcome_summary(plus, minus) or ("no outcome credits it" if result.memory_id else
                                                 "none can: nothing names a memory without an id"))
    text.append("\nenter opens the memory" if result.memory_id and memory.state != FORGOTTEN else "", style="dim")
    return text


def trace_heading(trace: TraceSummary, outcomes: list[TraceOutcome]) -> Text:
    """One or two lines above the results: which trace, and the outcomes recorded against it."""
    text = Text()
    text.append(f"Trace {trace.id}", style="bold")
    text.append(f"  {short_time(trace.ts)} · {one_line(trace.pipeline, 12)} · "
                f"session {one_line(trace.session_id or '-', 24)} · tenant {one_line(trace.tenant_id, 16)} · "
                f"query {trace.query_hash} ({trace.query_length} chars) · {plural(trace.result_count, 'result')} · "
                f"{'explain' if trace.explain_mode else 'no explain'}")
    if outcomes:
        text.append("\noutcomes: ", style="bold")
        for i, o in enumerate(outcomes):
            if i:
                text.append(" · ")
            sign = "+" if o.outcome == "positive" else "−"
            text.append(f"{sign} {short_time(o.ts)[11:16]} ",
                        style="green" if o.outcome == "positive" else "red")
            text.append("malformed ids" if o.malformed else one_line(", ".join(o.memory_ids), 60))
    return text


# -- CLEO's own retrievals beside the traces ---------------------------------------------------

WHOSE_LABELS = {"cleo": "CLEO", "cleo-tui": "cleo-tui", "hippo": "hippo"}
STATE_STYLES = {LIVE: "green", EVICTED: "yellow", HIDDEN: "magenta", DELETED: "red"}
STATE_WORDS = {
    LIVE: "live: CLEO's find can still return it",
    EVICTED: "evicted, yet CLEO's find, fetch and timeline still return it (they ignore invalid_at)",
    HIDDEN: "live, but hidden from CLEO's search: quality_score below the 0.3 its find requires",
    DELETED: "deleted: no row holds this id any more",
}
QUERY_SHOWN = 2000  # characters of a query the detail shows; `traces --show cleo:N` prints it whole


def query_cell(query: str | None) -> str:
    """CLEO's query on one line, as data (a NULL says so)."""
    return "(NULL query)" if query is None else one_line(query) or "(empty query)"


def retrieval_cells(row: Row) -> dict[str, tuple[str, str]]:
    """The Traces table's cells for a trace or a CLEO retrieval (or a row deleted since it was listed)."""
    whose = (WHOSE_LABELS.get(row.get("kind") or "", row.get("kind") or ""), "")
    r: RecordedRetrieval | None = row.get("cleo")
    if r is not None:
        return {
            "id": (str(r.id), "table--muted"), "time": (short_time(r.created_at), ""), "whose": whose,
            "pipeline": (one_line(r.source), ""),
            "session": (one_line(r.session_id) if r.session_id else "-", "" if r.session_id else "table--muted"),
            "tenant": ("-", "table--muted"), "query": (query_cell(r.query), ""),
            "results": ("ids?" if r.malformed else str(len(r.returned)), "table--critical" if r.malformed else ""),
            "explain": ("-", "table--muted"), "outcome": ("-", "table--muted"),
        }
    if row.get("trace") is None:
        gone = str(row["id"])
        return {"id": (gone.removeprefix("cleo:"), "table--muted"), "whose": whose,
                "query": ("(deleted since listed)", "table--muted")}
    return {**trace_cells(row), "whose": whose}


def usage_summary(use: EntryUse | None) -> str:
    """`used ×2 (success, verified)`, `not used ×1`, or empty without usage rows."""
    if use is None:
        return ""
    outcomes = sorted({e.outcome for e in use.events if e.used and e.outcome and e.outcome != "unknown"})
    parts = []
    if use.used:
        parts.append(f"used ×{use.used}" + (f" ({', '.join(one_line(o, 12) for o in outcomes)})" if outcomes else ""))
    if use.not_used:
        parts.append(f"not used ×{use.not_used}")
    return ", ".join(parts)


def cleo_heading(r: RecordedRetrieval, width: int = 120) -> Text:
    """Two lines above the results, each cut to `width`: which CLEO retrieval, then its query as
    data (a long one cut visibly; the panel beside the results shows more of it)."""
    tokens = "" if r.tokens_used is None else f" · {r.tokens_used:,} tokens"
    bad = " · entry_ids unreadable (not a JSON list)" if r.malformed else ""
    first = (f"CLEO retrieval cleo:{r.id} · {one_line(r.source, 12)} · {short_time(r.created_at)} · "
             f"{plural(len(r.returned), 'result')}{tokens}{bad} · session {one_line(r.session_id or '-', 30)}")
    text = Text(one_line(first, width), style="bold")
    text.append("\nquery ", style="bold")
    line = query_cell(r.query)
    size = r.query_bytes if r.query_cut and r.query_bytes else len(r.query or "")
    unit = "bytes" if r.query_cut and r.query_bytes else "characters"
    room = max(10, width - 6)
    if len(line) > room or r.query_cut:
        note = f" ({size:,} {unit}; more beside)"
        text.append(one_line(line, max(8, room - len(note))))
        text.append(note, style="italic dim")
    else:
        text.append(line)
    return text


def cleo_result_prompt(result: CleoResult, title_width: int = 48) -> Text:
    """A CLEO result's two lines: rank, state, title; then the id, its usage and its kind."""
    text = Text()
    text.append(f"#{result.rank:<3}", style="bold")
    text.append(f"{result.state:<8}", style=STATE_STYLES.get(result.state, ""))
    if result.state == DELETED:
        label = Text("no row holds this id any more", style="italic red")
    else:
        label = Text(one_line(result.memory.title or result.memory.summary or "(no text)", 200),
                     style="strike dim" if result.state == EVICTED else "")
    label.truncate(title_width, overflow="ellipsis")
    text.append_text(label)
    second = Text("\n     ")
    second.append(shown_id(result.memory_id, 40), style="bold dim")
    usage = usage_summary(result.use)
    if usage:  # before the kind: on a narrow pane the usage is what must stay
        second.append(f"  {usage}", style="bold green" if result.use and result.use.used else "dim")
    second.append(f"  {result.memory.kind or 'unknown kind'}", style="dim")
    second.truncate(title_width + 13, overflow="ellipsis")  # as wide as the line above: never wraps
    return text + second


def cleo_result_text(result: CleoResult, retrieval: RecordedRetrieval) -> Text:
    """The detail of one CLEO result: what the memory is now, the usage log's rows, then the query."""
    memory = result.memory
    text = Text()
    text.append(f"#{result.rank} {shown_id(result.memory_id, 40)}\n", style="bold")
    text.append(f"{memory.kind or 'unknown kind'} · ")
    text.append(result.state, style=STATE_STYLES.get(result.state, ""))
    if memory.created_at:
        text.append(f" · {short_time(memory.created_at)}")
    if memory.quality is not None:
        text.append(f" · quality {memory.quality:.2f}")
    text.append(f"\n{STATE_WORDS.get(result.state, '')}\n", style="italic")
    text.append("usage    ", style="bold")
    if result.use is None:
        text.append("no brain_usage_log row names it\n", style="dim")
    else:
        text.append("\n")
        for e in result.use.events:
            text.append(f"  {short_time(e.created_at or '')}  {one_line(e.task_id or 'no task', 16)}  "
                        f"{'used' if e.used else 'not used'}"
                        + (f"  {one_line(e.outcome, 12)}" if e.outcome else "") + "\n")
    text.append("enter opens the memory\n" if result.state != DELETED else "", style="dim")
    text.append("\nquery (CLEO's raw text, as data)\n", style="bold")
    query = retrieval.query
    if query is None:
        text.append("(NULL)", style="italic")
    else:
        text.append(printable(query[:QUERY_SHOWN]))
        total = retrieval.query_bytes if retrieval.query_cut else len(query)
        if len(query) > QUERY_SHOWN or retrieval.query_cut:
            text.append(f"\n… the first {QUERY_SHOWN:,} characters of {total:,}"
                        f"{' bytes' if retrieval.query_cut else ''}; `cleo-tui traces --show cleo:{retrieval.id}` "
                        "prints it whole", style="italic dim")
    return text
