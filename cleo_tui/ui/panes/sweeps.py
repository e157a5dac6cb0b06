"""The Sweeps pane (7): CLEO's staged and past noise sweeps, each row beside what it targets, approved or
rolled back through CLEO's own command.

The runs and their rows (memory/sweeps.py) and the recall impact of approving
(recall/sweep_impact.py) are read in a worker on a reader connection of their own. Approve and
roll back run `cleo memory sweep --approve|--rollback RUN` in a worker after a confirmation, show
CLEO's answer and read the brain again; without `cleo` on PATH they show the command and write
nothing. A veto (a pending row set to `skipped`, which CLEO's approve leaves out) goes through the
session like any curation step: journalled, undone with u.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from cleo_tui.brain.rows import Row
from cleo_tui.memory.cleo_command import APPROVE, ROLLBACK, CleoAnswer, run_cleo, sweep_command
from cleo_tui.memory.sweeps import (
    PENDING,
    PURGE,
    STAGED,
    StagedRow,
    SweepRun,
    list_runs,
    purge_ids,
    what_approve_writes,
)
from cleo_tui.recall.sweep_impact import RecallImpact, sweep_recall_impact
from cleo_tui.safe_text import one_line, plural, printable
from cleo_tui.ui.help import SWEEPS_HELP
from cleo_tui.ui.messages import BrainChanged, TagsReady
from cleo_tui.ui.widgets.chrome import PaneScreen
from cleo_tui.ui.widgets.list_listing import ListListing
from cleo_tui.ui.widgets.table import Column, LineTable

SWEEPS_PANE = "sweeps"
TEXT_CHARS = 4000  # of a row's text in the detail (the Observations pane's `v` shows all of it)

RUN_COLUMNS = [
    Column("id", "run", 22, min_width=12),
    Column("status", "status", 11),
    Column("created", "created", 19, drop=2),
    Column("approved", "approved", 19, drop=1),
    Column("rows", "rows", None, min_width=10),
]
ROW_COLUMNS = [
    Column("action", "action", 7),
    Column("target", "target", 16, min_width=10),
    Column("status", "status", 8),
    Column("now", "now", 8),
    Column("quality", "qual→", 9, drop=2),
    Column("recalls", "recalls", 7, right=True),
    Column("title", "title", None, min_width=10),
    Column("id", "candidate", 20, drop=3),
]


@dataclass(frozen=True)
class RunView:
    """One run with the recall impact of approving it (its pending purges)."""

    run: SweepRun
    impact: RecallImpact


def run_cells(row: Row) -> dict[str, tuple[str, str]]:
    view: RunView = row["view"]
    run = view.run
    counts = ", ".join(f"{n} {status}" for status, n in sorted(run.counts().items()))
    return {
        "id": (one_line(run.id, 60), ""),
        "status": (one_line(run.status, 20), "table--high" if run.status == STAGED else "table--muted"),
        "created": (one_line(run.created_at or "", 19), ""),
        "approved": (one_line(run.approved_at or "", 19), ""),
        "rows": (f"{len(run.rows):,}: {counts}" if run.rows else "no rows", ""),
    }


def _now_state(row: StagedRow) -> str:
    if row.current is None:
        return "gone"
    return "evicted" if row.current.get("invalid_at") is not None else "live"


def _quality(value: object) -> str:
    try:
        return "-" if value is None else f"{float(value):.2f}"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "?"


def row_cells(row: Row) -> dict[str, tuple[str, str]]:
    staged: StagedRow = row["staged"]
    impact: RecallImpact = row["impact"]
    lost = impact.by_id().get(staged.source_id)
    now = _now_state(staged)
    quality = _quality(None if staged.current is None else staged.current.get("quality_score"))
    new = "" if staged.new_quality_score is None else f"→{staged.new_quality_score:.2f}"
    return {
        "action": (staged.action, "table--critical" if staged.action == PURGE else ""),
        "target": (staged.source_id, ""),
        "status": (staged.validation_status, "" if staged.validation_status == PENDING else "table--muted"),
        "now": (now, "table--muted" if now != "live" else ""),
        "quality": (quality + new, ""),
        "recalls": (f"{lost.recalls}" if lost and lost.recalls else "", "table--high" if lost and lost.recalls else ""),
        "title": (one_line(staged.title or staged.text, 200), ""),
        "id": (staged.id, "table--muted"),
    }


def row_detail(staged: StagedRow, impact: RecallImpact, tag: object | None) -> Text:
    """One candidate in full: action, new values beside current ones, what CLEO's approve writes,
    the recall impact, the target's tags and its whole text (shown literally)."""
    text = Text()
    text.append(f"{staged.action} ", style="bold red" if staged.action == PURGE else "bold")
    text.append(f"{one_line(staged.source_table, 40)} {one_line(staged.source_id, 80)}", style="bold")
    text.append(f"  candidate {one_line(staged.id, 60)} · {one_line(staged.validation_status, 20)}\n")
    current = staged.current
    if current is None:
        text.append("the target row is gone (deleted since the sweep staged it)\n", style="italic")
    else:
        text.append(f"  invalid_at        now {one_line(str(current.get('invalid_at')), 30)}   staged → "
                    f"{one_line(str(staged.new_invalid_at), 30)}\n")
        text.append(f"  provenance_class  now {one_line(str(current.get('provenance_class')), 30)}   staged → "
                    f"{one_line(str(staged.new_provenance_class), 30)}\n")
        text.append(f"  quality_score     now {_quality(current.get('quality_score'))}   staged → "
                    f"{_quality(staged.new_quality_score)}\n")
        text.append(f"  citations {current.get('citation_count')}, verified {current.get('verified')}, "
                    f"tier {one_line(str(current.get('memory_tier')), 12)}\n")
    writes = what_approve_writes(staged)
    text.append("  CLEO's approve writes: ", style="bold")
    text.append((", ".join(f"{k} = {v}" for k, v in writes.items()) if writes else
                 f"nothing (executeSweep applies only pending rows; this one is {staged.validation_status})") + "\n")
    lost = impact.by_id().get(staged.source_id)
    text.append("  recall impact: ", style="bold")
    if staged.validation_status != PENDING or staged.action != PURGE:
        text.append("none: CLEO's approve does not purge it\n")
    elif lost is None:
        text.append("no recorded retrieval returned it, and no task used it\n")
    else:
        text.append(f"returned by {plural(lost.recalls, 'recorded retrieval')}"
                    + (f", last {one_line(lost.last_recalled_at, 24)}" if lost.last_recalled_at else "")
                    + (f"; used by a task {lost.used}x" if lost.used else "") + "\n")
    if tag is not None:
        reasons = "; ".join(one_line(r, 80) for r in getattr(tag, "reasons", []))
        why = one_line(getattr(tag, "relevance_reason", ""), 60)
        text.append(f"  tags: relevance {getattr(tag, 'relevance', '?')} ({why}), "
                    f"coverage {getattr(tag, 'coverage', '?')} ({getattr(tag, 'citation_count', 0)}), "
                    + (f"protected: {reasons}" if getattr(tag, "protected", False) else
                       "protection being computed" if getattr(tag, "protection_pending", False) else "not protected")
                    + "\n")
    body = staged.text or staged.title
    if body:
        text.append("\n")
        text.append(printable(body[:TEXT_CHARS]))  # Text.append: data, never markup; printable: no escapes
        if len(body) > TEXT_CHARS:
            text.append(f"\n… {len(body) - TEXT_CHARS:,} more characters", style="italic")
    return text


class SweepsScreen(PaneScreen):
    PANE = SWEEPS_PANE
    PANE_HELP = SWEEPS_HELP
    BINDINGS = [
        Binding("tab", "switch_table", "Runs/rows", id="sweeps.switch", show=False,
                tooltip="Move between the runs and the selected run's rows"),
        Binding("a", "approve", "Approve (CLEO)", id="sweeps.approve",
                tooltip="Run `cleo memory sweep --approve RUN` for the selected staged run"),
        Binding("b", "rollback", "Roll back (CLEO)", id="sweeps.rollback",
                tooltip="Run `cleo memory sweep --rollback RUN` for the selected staged run"),
        Binding("v", "veto", "Veto row", id="sweeps.veto",
                tooltip="Leave this pending row out of CLEO's approve (set to skipped; u undoes)"),
        Binding("u", "undo", "Undo", id="sweeps.undo", show=False, tooltip="Undo the last step made in this session"),
        Binding("R", "reload_sweeps", "Reload", id="sweeps.reload", tooltip="Read the runs again"),
    ]
    WRITE_ACTIONS = {"approve", "rollback", "veto", "undo"}
    ITEM_ACTIONS = frozenset({"approve", "rollback", "veto", "switch_table"})  # they act on a run

    @dataclass(eq=False)
    class Loaded(Message):
        views: list[RunView]

    @dataclass(eq=False)
    class CleoAnswered(Message):
        shown: str
        answer: CleoAnswer

    def __init__(self) -> None:
        super().__init__(id="pane-sweeps")
        self.views: list[RunView] = []
        self.run_index = 0

    def compose(self) -> ComposeResult:
        yield from self.compose_chrome_top()
        yield Static(id="sweeps-status")
        yield LineTable(RUN_COLUMNS, run_cells, id="sweeps-runs")
        yield LineTable(ROW_COLUMNS, row_cells, id="sweeps-rows")
        with VerticalScroll(id="sweeps-detail-box"):
            yield Static(id="sweeps-detail")
        yield from self.compose_footer()

    DEFAULT_CSS = """
    #sweeps-status { height: auto; max-height: 3; color: $text-muted; background: $surface; padding: 0 1; }
    #sweeps-runs { height: 5; }
    #sweeps-rows { height: 1fr; min-height: 4; border-top: solid $primary; }
    #sweeps-detail-box { height: 1fr; min-height: 4; border-top: solid $primary; padding: 0 1; }
    """

    def on_mount(self) -> None:
        self.query_one("#sweeps-runs", LineTable).focus()
        self.reload()

    def reload(self) -> None:
        self.query_one("#sweeps-status", Static).update(Text("reading CLEO's sweep runs…"))
        self._load()

    @work(thread=True, exclusive=True, group="sweeps", exit_on_error=False)
    def _load(self) -> None:
        reader = self.session.brain.reader()
        try:
            views = [RunView(run, sweep_recall_impact(reader, purge_ids(run))) for run in list_runs(reader)]
        finally:
            reader.close()
        self.post_message(self.Loaded(views))

    def on_sweeps_screen_loaded(self, message: Loaded) -> None:
        self.views = message.views
        runs = self.query_one("#sweeps-runs", LineTable)
        runs.set_listing(ListListing(self.views, lambda _i, v: {"id": v.run.id, "view": v}), keep_cursor=True)
        self.show_run(min(runs.cursor, max(0, len(self.views) - 1)))

    def current_view(self) -> RunView | None:
        return self.views[self.run_index] if 0 <= self.run_index < len(self.views) else None

    def show_run(self, index: int) -> None:
        self.run_index = index
        view = self.current_view()
        rows = self.query_one("#sweeps-rows", LineTable)
        items = [] if view is None else view.run.rows
        impact = view.impact if view is not None else RecallImpact(0, 0, 0)
        rows.set_listing(ListListing(items, lambda _i, r: {"id": r.id, "staged": r, "impact": impact}),
                         keep_cursor=True)
        self.show_item_parts(bool(self.views), "#sweeps-runs", "#sweeps-rows", "#sweeps-detail-box")
        self.update_status()
        self.show_row(rows.current_row())

    def update_status(self) -> None:
        status = self.query_one("#sweeps-status", Static)
        view = self.current_view()
        if view is None:
            status.update(Text("No sweep runs in this brain. `cleo memory sweep` stages one; it appears here "
                               "for review before `--approve`."))
            return
        run, impact = view.run, view.impact
        parts = [f"{plural(len(self.views), 'run')}", f"run {one_line(run.id, 40)} {run.status}"]
        if run.status == STAGED:
            parts.append(f"approving purges {plural(len(purge_ids(run)), 'row')}; {impact.affected_retrievals:,} of "
                         f"{impact.retrievals:,} recorded retrievals returned one, "
                         f"{impact.affected_used:,} of them used by a task")
            command = sweep_command(self.session.brain.path, APPROVE, run.id)
            parts.append("a approves, b rolls back (through CLEO)" if command.runnable
                         else f"cleo cannot run here ({command.why_not}): a shows the command")
        elif run.approved_at:
            parts.append(f"approved {one_line(run.approved_at, 30)} by {one_line(run.approved_by or '?', 30)}")
        status.update(Text(" · ".join(parts)))

    def show_row(self, row: Row | None) -> None:
        detail = self.query_one("#sweeps-detail", Static)
        if row is None:
            detail.update(Text("No row selected." if self.views else "", style="italic"))
            return
        staged: StagedRow = row["staged"]
        tag = self.session.tag(staged.source_id) if self.session.tags is not None else None
        detail.update(row_detail(staged, row["impact"], tag))

    @on(LineTable.Highlighted)
    def highlighted(self, event: LineTable.Highlighted) -> None:
        if event.table.id == "sweeps-runs":
            if event.table.cursor != self.run_index:
                self.show_run(event.table.cursor)
        else:
            self.show_row(event.row)

    @on(LineTable.Selected)
    def selected(self, event: LineTable.Selected) -> None:
        if event.table.id == "sweeps-runs":
            self.query_one("#sweeps-rows", LineTable).focus()

    def action_switch_table(self) -> None:
        runs = self.query_one("#sweeps-runs", LineTable)
        (self.query_one("#sweeps-rows", LineTable) if runs.has_focus else runs).focus()

    # -- through CLEO -----------------------------------------------------------------
    def _staged_run(self) -> SweepRun | None:
        view = self.current_view()
        if view is None:
            self.notify("No sweep run is selected.", severity="warning")
            return None
        if view.run.status != STAGED:
            self.notify(f"Run {one_line(view.run.id, 40)} is {view.run.status}: CLEO approves or rolls back only a "
                        "staged run.", severity="warning", markup=False)
            return None
        return view.run

    def _through_cleo(self, action: str) -> None:
        run = self._staged_run()
        if run is None:
            return
        command = sweep_command(self.session.brain.path, action, run.id)
        if not command.runnable:
            self.tell(f"{action.title()}: run it yourself",
                           f"Not run ({command.why_not}); nothing was written. The command is:\n\n{command.shown}")
            return
        view = self.current_view()
        impact = "" if view is None else (f" {plural(view.impact.affected_retrievals, 'recorded retrieval')} "
                                          "returned a row it purges.")
        what = (f"purges {plural(len(purge_ids(run)), 'row')} (invalid_at set, provenance noise-purged).{impact}"
                if action == APPROVE else "discards the run: its pending rows become skipped; nothing else changes.")
        self.confirm(f"{action.title()} sweep run",
                          f"Run CLEO's own command?\n\n{command.shown}\n\nIt {what}",
                          lambda: self._run(action, run.id), danger=action == APPROVE)

    @work(thread=True, exclusive=True, group="sweeps-cleo", exit_on_error=False)
    def _run(self, action: str, run_id: str) -> None:
        command = sweep_command(self.session.brain.path, action, run_id)
        self.post_message(self.CleoAnswered(command.shown, run_cleo(command)))

    def on_sweeps_screen_cleo_answered(self, message: CleoAnswered) -> None:
        answer = message.answer
        self.tell("CLEO answered" if answer.ok else "CLEO's command failed",
                       f"$ {message.shown}\n\n{answer.text()}", error=not answer.ok)
        self.session.reload()  # what CLEO wrote: counts, tags, every pane (BrainChanged reloads this one)

    def action_approve(self) -> None:
        self._through_cleo(APPROVE)

    def action_rollback(self) -> None:
        self._through_cleo(ROLLBACK)

    def action_veto(self) -> None:
        row = self.query_one("#sweeps-rows", LineTable).current_row()
        run = self._staged_run()
        if row is None or run is None:
            return
        staged: StagedRow = row["staged"]
        if staged.validation_status != PENDING:
            self.notify(f"{staged.id} is {staged.validation_status}, not pending.", severity="warning", markup=False)
            return
        self.confirm("Veto sweep row", f"Leave {staged.source_id} out of CLEO's approve of run {run.id}?\n\n"
                          "Its candidate becomes skipped; CLEO's executeSweep applies only pending rows. "
                          "u undoes it.", lambda: self.session.curate("sweep-veto", staged.id))

    def action_undo(self) -> None:
        self.session.undo()

    def action_reload_sweeps(self) -> None:
        self.reload()

    def on_brain_changed(self, message: BrainChanged) -> None:
        self.reload()

    def on_tags_ready(self, message: TagsReady) -> None:
        """The tags arrived: the detail's tags line can be drawn."""
        self.show_row(self.query_one("#sweeps-rows", LineTable).current_row())
