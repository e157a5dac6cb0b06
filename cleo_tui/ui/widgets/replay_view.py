"""The replay view: CLEO's logged `memory find` queries re-run as CLEO would, now and after a step.

Opened from the Traces pane (R). It is handed the brain and reads it in a worker through its
own read-only connection, with progress; the step is the prune preview at a budget typed
here (blank: no step), optionally hidden from CLEO's search. Nothing is written.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, Label, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.store import Brain
from cleo_tui.config import load_config
from cleo_tui.memory.pruner import BadBudget, parse_budget
from cleo_tui.memory.settings import configured_tokenizer
from cleo_tui.recall.replay import (
    DEFAULT_QUERIES,
    QueryReplay,
    ReplayReport,
    Step,
    budget_step,
    query_details,
    query_heading,
    replay,
    shown_query,
)
from cleo_tui.safe_text import one_line, printable
from cleo_tui.ui.widgets.inputs import SafeInput
from cleo_tui.ui.widgets.worker_errors import ForwardWorkerErrors

MAX_QUERIES = 100_000
PROGRESS_EVERY = 10
AGREEMENT_STYLE = {"exact": "green", "prefix": "green", "same-set": "yellow", "differs": "bold red",
                   "unreadable": "bold red"}


def _recall(value: float | None) -> str:
    return "  –  " if value is None else f"{value:.3f}"


def query_prompt(q: QueryReplay, width: int) -> Text:
    """One line per query: agreement, recall today / intended, results, the query text (as data)."""
    text = Text()
    text.append(f"{q.agreement:<10}", style=AGREEMENT_STYLE.get(q.agreement, ""))
    text.append(f" {_recall(q.cleo_today.recall)} {_recall(q.intends.recall)} {len(q.today):>3}  ")
    text.append(one_line(shown_query(q.logged.query, width), max(8, width - 30)))
    return text


def query_text(q: QueryReplay) -> Text:
    """The highlighted query in full: what CLEO logged, what the replay returns, why they differ, what it loses."""
    row = q.logged.row
    text = Text(printable(query_heading(q)) + "\n", style="bold")
    text.append(f"logged:   {one_line(', '.join(row.returned) or '(nothing)', 2000)}\n")
    text.append(f"replayed: {one_line(', '.join(q.today) or '(nothing)', 2000)}\n")
    for line in query_details(q, shown=50):
        text.append(printable(line) + "\n", style="yellow" if line.startswith(("today", "intends")) else "")
    return text


def compact_summary(report: ReplayReport) -> Text:
    """The totals in as few lines as fit a small terminal (the CLI prints the long form)."""
    if not report.logged_rows:
        return Text("CLEO has logged no retrievals in this brain: there is nothing to replay yet. CLEO logs "
                    "each `memory find`, `fetch`, hybrid search and timeline it answers; the Traces list shows "
                    "them as they come.", style="italic")
    counts = report.agreement_counts()
    today, intends = report.summary("cleo_today"), report.summary("intends")
    step = report.step
    text = Text(f"{len(report.queries):,} distinct queries of {report.logged_rows:,} logged rows, newest first "
                f"(bound {report.bound:,})")
    text.append(" · no step" if step.empty else
                f" · step: {one_line(step.label, 80)}{', hidden from CLEO' if step.hide else ''}")
    text.append(f"\nagreement with CLEO's log: {counts['exact']:,} exact · {counts['prefix']:,} prefix · "
                f"{counts['same-set']:,} reordered · ")
    text.append(f"{counts['differs']:,} differ", style="bold red" if counts["differs"] else "")
    text.append(f" · {counts['unreadable']:,} unreadable")
    text.append(f"\nlose a result: {today.affected:,} as CLEO behaves today "
                f"(recall {_recall(today.mean_recall).strip()}) · {intends.affected:,} as eviction intends "
                f"(recall {_recall(intends.mean_recall).strip()})")
    return text


def hint_text(queries: bool) -> str:
    """The view's keys (↑↓ only with queries to move between)."""
    return f"b: budget, enter replays · {'↑↓ a query · ' if queries else ''}esc closes · nothing is written"


def notes_text(report: ReplayReport) -> Text:
    """What differs from CLEO on this brain, and the log rows not replayed."""
    lines = [f"note: {n}" for n in report.notes]
    lines += [f"skipped: {count:,} log rows, {reason}" for reason, count in report.skipped.items()]
    return Text("\n" + printable("\n".join(lines)), style="italic") if lines else Text()


@dataclass(frozen=True)
class ReplayRequest:
    budget: int | None
    bound: int
    hide: bool


class ReplayView(ForwardWorkerErrors, ModalScreen[None]):
    """Per query: agreement with CLEO's log, recall@k after the step in both modes, lost results."""

    DEFAULT_CSS = """
    ReplayView #replay-dialog { width: 96%; height: 94%; border: thick $primary; background: $surface;
                                padding: 0 1; }
    ReplayView #replay-title { text-style: bold; width: 100%; }
    ReplayView #replay-hint { color: $text-muted; height: 1; }
    ReplayView #replay-bar { height: 1; }
    ReplayView #replay-bar Label { padding: 0 1 0 0; }
    ReplayView #replay-budget { width: 12; }
    ReplayView #replay-bound-name { margin-left: 1; }
    ReplayView #replay-bound { width: 7; }
    ReplayView #replay-hide { margin-left: 1; border: none; height: 1; padding: 0; }
    ReplayView #replay-summary { height: auto; max-height: 6; }
    ReplayView #replay-head { margin-top: 1; height: 1; }
    ReplayView #replay-queries { height: 1fr; min-height: 3; }
    ReplayView #replay-detail-box { height: 30%; min-height: 4; border-top: solid $primary; }
    """
    BINDINGS = [Binding("escape", "close", "Close", show=False),
                Binding("b", "focus_budget", "Budget", show=False),
                Binding("ctrl+r", "rerun", "Replay again", show=False)]

    @dataclass(eq=False)
    class Progressed(Message):
        generation: int
        done: int
        total: int

    @dataclass(eq=False)
    class Finished(Message):
        generation: int
        report: ReplayReport | None
        error: str | None

    def __init__(self, brain: Brain, bound: int = DEFAULT_QUERIES) -> None:
        super().__init__(classes="modal")
        self.brain = brain
        self.bound = bound
        self.report: ReplayReport | None = None
        self.generation = 0
        self.finished = 0  # the generation whose replay was last shown (or failed)
        self._cancel = threading.Event()

    def compose(self) -> ComposeResult:
        with Vertical(id="replay-dialog"):
            yield Label(Text("Replay of CLEO's logged queries (CLEO's own find semantics)"), id="replay-title")
            with Horizontal(id="replay-bar"):
                yield Label("step: prune at")
                yield SafeInput(placeholder="budget", id="replay-budget", compact=True,
                                tooltip="A token budget (e.g. 8000 or 12k): the step is the prune preview at it; "
                                        "blank: no step, only the agreement with CLEO's log")
                yield Label("queries", id="replay-bound-name")
                yield SafeInput(str(self.bound), id="replay-bound", compact=True, type="integer",
                                tooltip=f"How many distinct queries to replay, newest first (1–{MAX_QUERIES:,})")
                yield Checkbox("hide from CLEO's search", id="replay-hide", compact=True)
            yield ProgressBar(id="replay-progress", show_eta=False)
            yield Static(id="replay-summary")
            yield Label(Text("agreement  today intended  n  query (CLEO's text)", style="bold"), id="replay-head")
            yield OptionList(id="replay-queries", compact=True)
            with VerticalScroll(id="replay-detail-box"):
                yield Static(id="replay-detail")
            yield Label(Text(hint_text(True)), id="replay-hint")

    def on_mount(self) -> None:
        self.start(ReplayRequest(None, self.bound, False))

    # -- running ------------------------------------------------------------------------
    def request(self) -> ReplayRequest | None:
        """What the boxes ask for, or None (with a notice) when a box holds something unusable."""
        budget_text = self.query_one("#replay-budget", Input).value.strip()
        budget = None
        if budget_text:
            try:
                budget = parse_budget(budget_text)
            except BadBudget as exc:
                self.notify(str(exc), severity="error")
                return None
        bound_text = self.query_one("#replay-bound", Input).value.strip()
        if not bound_text.isdigit() or not 1 <= int(bound_text) <= MAX_QUERIES:
            self.notify(f"The number of queries must be a whole number from 1 to {MAX_QUERIES:,}.", severity="error")
            return None
        hide = self.query_one("#replay-hide", Checkbox).value
        if hide and budget is None:
            self.notify("Hiding from CLEO's search is part of a step: type a budget too.", severity="warning")
        return ReplayRequest(budget, int(bound_text), hide)

    def start(self, request: ReplayRequest) -> None:
        self._cancel.set()
        self._cancel = threading.Event()
        self.generation += 1
        bar = self.query_one("#replay-progress", ProgressBar)
        bar.update(total=None, progress=0)
        bar.display = True
        what = "no step" if request.budget is None else f"the prune preview at {request.budget:,} tokens"
        self.query_one("#replay-summary", Static).update(Text(f"Replaying with {what}…", style="italic"))
        self._run(self.generation, request, self._cancel)

    @work(thread=True, exclusive=True, group="replay", exit_on_error=False)
    def _run(self, generation: int, request: ReplayRequest, cancel: threading.Event) -> None:
        def progress(done: int, total: int) -> None:
            if done == total or done % PROGRESS_EVERY == 0:
                self.post_message(self.Progressed(generation, done, total))

        reader = self.brain.reader()  # its own connection: the panes' reads never wait on the replay
        try:
            step = Step()
            if request.budget is not None:
                step = budget_step(reader, request.budget, configured_tokenizer(load_config()[0]), request.hide)
            report = replay(reader, step, request.bound, progress=progress, cancelled=cancel.is_set)
        except BrainError as exc:
            self.post_message(self.Finished(generation, None, str(exc)))
            return
        finally:
            reader.close()
        self.post_message(self.Finished(generation, report, None))

    def on_replay_view_progressed(self, message: Progressed) -> None:
        if message.generation == self.generation:
            self.query_one("#replay-progress", ProgressBar).update(total=message.total or None,
                                                                   progress=message.done)

    def on_replay_view_finished(self, message: Finished) -> None:
        if message.generation != self.generation:
            return
        self.finished = message.generation
        self.query_one("#replay-progress", ProgressBar).display = False
        if message.report is None:
            self.query_one("#replay-summary", Static).update(Text(one_line(message.error, 400), style="bold red"))
            return
        self.show(message.report)

    # -- showing ---------------------------------------------------------------------------
    def show(self, report: ReplayReport) -> None:
        self.report = report
        self.query_one("#replay-summary", Static).update(compact_summary(report))
        for part in ("#replay-head", "#replay-queries", "#replay-detail-box"):  # nothing logged: the words alone
            self.query_one(part).display = bool(report.logged_rows)
        self.query_one("#replay-hint", Label).update(Text(hint_text(bool(report.logged_rows))))
        queries = self.query_one("#replay-queries", OptionList)
        queries.clear_options()
        width = max(40, queries.size.width or self.app.size.width - 10)
        queries.add_options(Option(query_prompt(q, width), id=str(i)) for i, q in enumerate(report.queries))
        if report.queries:
            queries.highlighted = 0
            queries.focus()
        else:
            detail = Text("No CLEO query to replay.", style="italic")
            detail.append_text(notes_text(report))
            self.query_one("#replay-detail", Static).update(detail)

    @on(OptionList.OptionHighlighted, "#replay-queries")
    def query_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        index = event.option_index
        if self.report is not None and 0 <= index < len(self.report.queries):
            detail = query_text(self.report.queries[index])
            detail.append_text(notes_text(self.report))
            self.query_one("#replay-detail", Static).update(detail)

    @on(Input.Submitted, "#replay-budget, #replay-bound")
    def box_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_rerun()

    def action_rerun(self) -> None:
        request = self.request()
        if request is not None:
            self.start(request)

    def action_focus_budget(self) -> None:
        self.query_one("#replay-budget", Input).focus()

    def action_close(self) -> None:
        self._cancel.set()
        self.dismiss(None)
