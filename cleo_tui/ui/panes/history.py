"""The History pane (6): what the brain did each day, as a chart and a list, and whether its agents run.

The timeline (`brain_timeline`, ~1 s at 100k rows) and the liveness
(`brain_liveness`) are read in a worker on a reader connection of their own, so
the other panes' page reads never wait for them. Enter on a day shows the
observations created that day in the Observations pane.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Static

from cleo_tui.brain.rows import Row
from cleo_tui.memory.history import (
    CLEO_CONSOLIDATION,
    CLEO_REFLECTOR,
    CLEO_SWEEP,
    CLEO_TUI_PREFIX,
    Day,
    Liveness,
    Timeline,
    brain_timeline,
)
from cleo_tui.memory.liveness import read_liveness
from cleo_tui.safe_text import one_line, plural
from cleo_tui.ui.help import HISTORY_HELP
from cleo_tui.ui.host import LivenessRead, ShowDay, ask
from cleo_tui.ui.messages import BrainChanged
from cleo_tui.ui.widgets.chrome import HISTORY_PANE, PaneScreen
from cleo_tui.ui.widgets.history_chart import HistoryChart
from cleo_tui.ui.widgets.list_listing import ListListing
from cleo_tui.ui.widgets.table import Column, LineTable

COLUMNS = [
    Column("day", "day", 10),
    Column("added", "added", 6, right=True),
    Column("sources", "by source", None),
    Column("evicted", "evicted by cause", 21),
    Column("live", "live", 7, right=True),
    Column("tokens", "live tok", 11, right=True, min_width=8),  # 338,801,234: a million rows
    Column("notes", "notes", 5, right=True),
    Column("refl", "refl", 4, right=True),
    Column("recalls", "recalls", 7, right=True),
]
SOURCE_SHORT = {"observer-compressed": "observer"}


def cause_short(cause: str) -> str:
    """A cause id in a few letters for the table: prune, reflect, CLEO-refl, consol, unknown."""
    if cause.startswith(CLEO_TUI_PREFIX):
        return cause[len(CLEO_TUI_PREFIX):]
    return {CLEO_REFLECTOR: "CLEO-refl", CLEO_CONSOLIDATION: "consol", CLEO_SWEEP: "sweep"}.get(cause, "unknown")


def _counts(counts: dict[str, int], short: Callable[[str], str]) -> str:
    return " ".join(f"{short(k)} {n:,}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n)


def day_cells(row: Row) -> dict[str, tuple[str, str]]:
    """One day of the table (`row["day"]` is a `Day`)."""
    d: Day = row["day"]
    evicted = _counts(d.evicted, cause_short)
    quiet = "" if d.added or d.evicted_total or d.recalls or d.reflections else "table--muted"
    return {
        "day": (d.day, quiet),
        "added": (f"{d.added:,}" if d.added else "", ""),
        "sources": (_counts(d.added_by_source, lambda s: SOURCE_SHORT.get(s, s)), "table--muted"),
        "evicted": (evicted, "table--high" if d.evicted_total else ""),
        "live": (f"{d.live:,}", quiet),
        "tokens": (f"{d.live_tokens:,}", quiet),
        "notes": (f"{d.observer_notes:,}" if d.observer_notes else "", ""),
        "refl": (f"{d.reflections:,}" if d.reflections else "", ""),
        "recalls": (f"{d.recalls:,}" if d.recalls else "", ""),
    }


def _when(at: str | None) -> str:
    return one_line(at, 19) if at else "never"


def liveness_text(liveness: Liveness | None) -> Text:
    """When the observer, reflector and consolidation last ran, CLEO's dream state, the warnings."""
    if liveness is None:
        return Text("agents: reading…", style="italic")
    text = Text()
    text.append("observer ", style="bold")
    text.append(_when(liveness.observer_last_run))
    text.append("  reflector ", style="bold")
    text.append(_when(liveness.reflector_last_run))
    text.append("  consolidation ", style="bold")
    event = liveness.consolidation
    if event is not None:
        text.append(_when(event.started_at) + (" (failed)" if event.succeeded is False else ""))
    else:
        text.append({"absent": "no events table", "empty": "no run logged"}.get(liveness.consolidation_table, "-"))
    text.append("  dream ", style="bold")
    dream = liveness.dream
    if dream is None:
        text.append("no sentient-state.json")
    elif dream.error:
        text.append(one_line(dream.error, 60))
    else:
        text.append(f"sweep gate {'ACTIVE' if dream.sweep_gate_active else 'clear'}"
                    + (f", watermark {one_line(dream.dream_watermark, 24)}" if dream.dream_watermark else ""))
    for warning in liveness.warnings:
        text.append("\n⚠ " + one_line(warning, 300), style="bold yellow")
    return text


HIPPO_TEXT = Text.assemble(
    ("hippo store", "bold"), ": no CLEO agents to watch. hippo keeps no eviction time: a superseded memory "
    "leaves `live` on the day it was written, and a forgotten one has no row. The sources column counts "
    "hippo's layers.")


class HistoryScreen(PaneScreen):
    PANE = HISTORY_PANE
    PANE_HELP = HISTORY_HELP
    ITEM_ACTIONS = frozenset({"open_day"})  # a day to open
    BINDINGS = [
        Binding("enter", "open_day", "Day's observations", id="hist.open_day",
                tooltip="Show the observations created that day in the Observations pane"),
        Binding("R", "reload_history", "Reload", id="hist.reload", tooltip="Read the days and the agents again"),
    ]

    @dataclass(eq=False)
    class Loaded(Message):
        timeline: Timeline
        liveness: Liveness | None  # None: a hippo store (no CLEO agents)

    def __init__(self) -> None:
        super().__init__(id="pane-history")
        self.timeline: Timeline | None = None
        self.liveness: Liveness | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_chrome_top()
        yield Static(id="hist-status")
        yield HistoryChart(id="hist-chart")
        yield Static(liveness_text(None), id="hist-liveness")
        yield LineTable(COLUMNS, day_cells, id="hist-table")
        yield from self.compose_footer()

    DEFAULT_CSS = """
    #hist-status { height: auto; max-height: 2; color: $text-muted; background: $surface; padding: 0 1; }
    #hist-chart { margin: 0 0 0 1; }
    #hist-liveness { height: auto; max-height: 4; padding: 0 1; border-top: solid $primary; background: $surface; }
    #hist-table { height: 1fr; min-height: 4; }
    """

    def on_mount(self) -> None:
        self.table.focus()
        self.reload()

    @property
    def table(self) -> LineTable:
        return self.query_one("#hist-table", LineTable)

    @property
    def chart(self) -> HistoryChart:
        return self.query_one("#hist-chart", HistoryChart)

    def reload(self) -> None:
        self.query_one("#hist-status", Static).update(Text("reading the brain's days…"))
        self._load()

    @property
    def has_observations(self) -> bool:
        """False on a hippo store: no Observations pane to open a day in, no CLEO agents to watch."""
        return self.session.brain.supports("observations")

    @work(thread=True, exclusive=True, group="history", exit_on_error=False)
    def _load(self) -> None:
        brain = self.session.brain
        reader = brain.reader()
        try:
            timeline = brain_timeline(reader)
        finally:
            reader.close()
        self.post_message(self.Loaded(timeline, read_liveness(brain) if self.has_observations else None))

    def on_history_screen_loaded(self, message: Loaded) -> None:
        self.timeline, self.liveness = message.timeline, message.liveness
        days = message.timeline.days
        newest_first = list(reversed(days))
        self.table.set_listing(ListListing(newest_first, lambda _i, d: {"id": d.day, "day": d}), keep_cursor=True)
        tall = self.size.height >= 34
        self.chart.set_days(days, 6 if tall else 3, 2 if tall else 1)
        self.show_item_parts(bool(days), "#hist-chart", "#hist-table")  # (none: the status line says so, once)
        if message.liveness is None:
            self.query_one("#hist-liveness", Static).update(HIPPO_TEXT)
        else:
            self.query_one("#hist-liveness", Static).update(liveness_text(message.liveness))
            ask(self, LivenessRead(message.liveness))
        self.update_status()

    def update_status(self) -> None:
        timeline = self.timeline
        if timeline is None:
            return
        days = timeline.days
        if not days:
            self.query_one("#hist-status", Static).update(Text(
                "No dated activity in this brain yet: its days appear here as observations are written."))
            return
        evicted = sum(d.evicted_total for d in days)
        parts = [f"{plural(len(days), 'day')} {days[0].day} → {days[-1].day}", f"{sum(d.added for d in days):,} added",
                 f"{evicted:,} evicted", f"{days[-1].live:,} live now"]
        if self.has_observations:
            parts.append("enter: that day's observations")
        if timeline.undated:
            parts.append("undated: " + ", ".join(f"{k} {v:,}" for k, v in timeline.undated.items()))
        self.query_one("#hist-status", Static).update(Text(" · ".join(parts)))

    @on(LineTable.Selected)
    def day_selected(self, event: LineTable.Selected) -> None:
        self.open_day(event.row["id"])

    def action_open_day(self) -> None:
        row = self.table.current_row()
        if row is None:
            self.notify("No day is selected.", severity="warning")
            return
        self.open_day(row["id"])

    def open_day(self, day: str) -> None:
        """Switch to the Observations pane, showing the observations created on `day` (none on a hippo store)."""
        if self.has_observations:
            ask(self, ShowDay(day))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "open_day" and self.host.has_session and not self.has_observations:
            return False
        return super().check_action(action, parameters)

    def action_reload_history(self) -> None:
        self.reload()

    def on_brain_changed(self, message: BrainChanged) -> None:
        self.reload()
