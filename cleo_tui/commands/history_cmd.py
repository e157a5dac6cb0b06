"""`cleo-tui history [ID] [--since DATE] [--json]`: one memory's life, or the brain's days."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Iterable

from cleo_tui.brain.rows import JsonObject
from cleo_tui.commands.common import AddCommand, UsageError, add_brain_options, brain_from_args, emit_json
from cleo_tui.commands.text_width import WIDTH, wrapped
from cleo_tui.memory.history import (
    MemoryLife,
    Timeline,
    brain_liveness,
    brain_timeline,
    cause_label,
    is_day,
    memory_life,
    missing_memories,
)
from cleo_tui.safe_text import one_line, plural

MISSING_LIMIT = 100_000


def register(add: AddCommand) -> None:
    history = add(
        "history", help="why a memory is gone, what the brain did each day",
        description="With ID: how the memory was written, every cleo-tui step that touched it, its edges "
                    "and, when it is gone, the cause with its evidence. Without ID: added, evicted (by cause) "
                    "and live counts for each day.")
    history.add_argument("id", nargs="?", metavar="ID", help="an observation, pattern, learning or hippo memory id")
    history.add_argument("--since", metavar="DATE", help="only days from DATE (YYYY-MM-DD) on")
    history.add_argument("--json", action="store_true", help="print JSON")
    add_brain_options(history, read_only_flag=False)
    history.set_defaults(func=cmd_history)


def _check_since(value: str | None, memory_id: str | None) -> str | None:
    if value is None:
        return None
    if memory_id is not None:
        raise UsageError("--since picks the days of the brain's timeline; it does not apply to one memory's "
                         "life. Drop --since, or drop the ID to see the days.")
    text = value.strip()
    if not is_day(text):
        raise UsageError(f"--since wants a date as YYYY-MM-DD (for example 2026-05-01), not "
                         f"{one_line(value, 40)!r}.")
    return text


def cmd_history(args: argparse.Namespace) -> int:
    since = _check_since(args.since, args.id)
    brain = brain_from_args(args, read_only=True)
    try:
        if args.id is not None:
            life = memory_life(brain, args.id)
            if life is None:
                raise UsageError(
                    f"No memory {one_line(args.id, 80)!r} in {brain.path}: no observation, pattern, learning or "
                    "hippo memory holds that id, and no edge, recall trace, outcome or cleo-tui journal entry "
                    "names it. Check the id (`cleo-tui traces` and the TUI show ids), or point --db at the "
                    "brain that holds it.")
            if args.json:
                emit_json(life.to_dict())
            else:
                print("\n".join(life_lines(life)))
            return 0
        timeline = brain_timeline(brain, since)
        missing = len(missing_memories(brain, MISSING_LIMIT))
        if args.json:
            emit_json({**timeline.to_dict(), "missing": missing})
            return 0
        warnings = brain_liveness(brain).warnings
    finally:
        brain.close()
    print("\n".join(timeline_lines(timeline, warnings, missing)))
    return 0


def _shown(value: object, width: int = 40) -> str:
    return "-" if value is None or value == "" else one_line(value, width)


def life_lines(life: MemoryLife) -> list[str]:
    """The life of one memory as text lines of at most 80 columns."""
    lines = [one_line(f"{life.id}  ({life.kind}, {life.state})", WIDTH)]
    if life.title:
        lines += wrapped(life.title)
    if life.written:
        w = life.written
        lines.append("written")
        lines += wrapped(f"at {_shown(w.at)}, type {_shown(w.type, 20)}, source {_shown(w.source_type, 30)}")
        lines += wrapped(f"session {_shown(w.session_id, 50)}, agent {_shown(w.agent, 30)}")
    if life.cause:
        cause = life.cause
        lines.append(f"gone{' at ' + one_line(cause.at, 30) if cause.at else ''}: {one_line(cause.label, 60)}")
        lines += [line for text in cause.evidence for line in wrapped("evidence: " + text)]
        lines += [line for text in cause.checked for line in wrapped("checked: " + text)]
    for mark in life.cleo_marks:
        lines += wrapped(f"CLEO: {mark.title} — {mark.when}", "")
        lines += wrapped(f"reason: {mark.reason}")
        lines += wrapped(f"rule: {mark.rule}")
    if life.keep is not None:
        lines += wrapped(("keep: " if life.keep.offered else "keep (not offered): ") + life.keep.text)
    lines += _section("cleo-tui journal", (f"run {s.run_id} {s.kind} at {s.at}: {s.summary}"
                                           + (f" (undone by run {s.undone_by})" if s.undone_by else "")
                                           for s in life.journal))
    lines += _section("edges", (f"{'->' if e.direction == 'out' else '<-'} {e.edge_type} {e.other_id}"
                                f"{' (' + e.provenance + ')' if e.provenance else ''}"
                                f"{'' if e.other_exists else ' [no row]'}" for e in life.edges))
    lines += _section("recall traces that returned it",
                      (f"trace {t.trace_id} at {t.ts}, rank {t.rank}, score {t.score:.3f} ({t.pipeline})"
                       for t in life.traces))
    if life.state in ("missing", "forgotten"):
        lines += _section("mentions", (f"{m.where}: {m.ref}" + (f" ({m.at})" if m.at else "") for m in life.mentions))
    return lines


def _section(title: str, items: Iterable[str]) -> list[str]:
    """A titled list with its count, or nothing when it is empty."""
    shown = list(items)
    return [f"{title} ({len(shown)})"] + [line for item in shown for line in wrapped(item)] if shown else []


_HEADER = (f"{'day':<10}  {'added':>7}  {'evicted':>7}  {'live':>8}  {'live tokens':>11}  {'notes':>5}  "
           f"{'refl':>5}  {'recalls':>7}")


def timeline_lines(timeline: Timeline, warnings: Iterable[str] = (), missing: int = 0) -> list[str]:
    """The brain's days as a table of at most 80 columns, then evictions by cause and warnings."""
    if not timeline.days:
        lines = ["No dated activity in this brain for these days."]
    else:
        lines = [_HEADER]
        for d in timeline.days:
            lines.append(f"{d.day:<10}  {d.added:>7,}  {d.evicted_total:>7,}  {d.live:>8,}  {d.live_tokens:>11,}  "
                         f"{d.observer_notes:>5,}  {d.reflections:>5,}  {d.recalls:>7,}")
    totals: dict[str, int] = {}
    for d in timeline.days:
        for cause, n in d.evicted.items():
            totals[cause] = totals.get(cause, 0) + n
    if totals:
        lines.append("evicted by cause:")
        lines += [line for cause, n in sorted(totals.items(), key=lambda kv: -kv[1])
                  for line in wrapped(f"{n:>7,}  {cause} — {cause_label(cause)}")]
    if missing:
        shown = plural(missing, "id") if missing < MISSING_LIMIT else f"at least {missing:,} ids"
        are = "is" if missing == 1 else "are"
        lines += wrapped(f"missing: {shown} {are} named by edges, traces, outcomes or the journal but held by no "
                         "row (deleted outside cleo-tui); `cleo-tui history ID` shows where each is named", "")
    if timeline.undated:
        undated = ", ".join(f"{k} {v:,}" for k, v in timeline.undated.items())
        lines += wrapped(f"undated rows (not a date): {undated}", "")
    lines += [line for note in timeline.notes for line in wrapped("note: " + note, "")]
    lines += [line for w in warnings for line in wrapped("warning: " + w, "")]
    return lines


def liveness_lines(liveness: JsonObject) -> list[str]:
    """`info`'s lines about the agents, from `Liveness.to_dict()`."""
    event = liveness.get("consolidation_last")
    if event:
        consolidation = (f"run {event.get('id')} ({_shown(event.get('trigger'), 20)}) at "
                         f"{_shown(event.get('started_at'), 30)}"
                         + ("" if event.get("succeeded") is not False else ", failed"))
    else:
        consolidation = {"absent": "no brain_consolidation_events table",
                         "empty": "brain_consolidation_events holds no run"}.get(
                             str(liveness.get("consolidation_table")), "-")
    lines = [info_field("observer", f"last note {_shown(liveness.get('observer_last_run'))}"),
             info_field("reflector", f"last output {_shown(liveness.get('reflector_last_run'))}"),
             one_line(info_field("consolidation", consolidation), WIDTH)]
    dream = liveness.get("dream_state")
    if dream:
        state = dream.get("error") or (f"sweep gate {'active' if dream.get('sweep_gate_active') else 'clear'}, "
                                       f"dream watermark {_shown(dream.get('dream_watermark'))}")
        lines.append(one_line(info_field("dream state", state), WIDTH))
    for warning in liveness.get("warnings", []):
        lines += textwrap.wrap(one_line(warning), WIDTH, initial_indent=info_field("warning", ""),
                               subsequent_indent=" " * INFO_LABEL)
    return lines


INFO_LABEL = len("consolidation: ")  # the widest of `info`'s labels, so its values line up


def info_field(label: str, value: str) -> str:
    """One line of `info`: the label, then its value at the column every value starts at."""
    return f"{label + ':':<{INFO_LABEL}}{value}"
