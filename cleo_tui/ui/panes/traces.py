"""The Traces pane: recall traces and CLEO's own retrievals (its brain_retrieval_log) side by side,
one trace's ranked results with their rerank chains and outcomes, or one CLEO retrieval's results
resolved to what each memory is now with the usage CLEO logged; recall from the pane, outcome
credits (undoable) and a JSONL export."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from cleo_tui.brain import Brain
from cleo_tui.brain.errors import BrainError
from cleo_tui.files import ExportExists
from cleo_tui.recall.browse import memory_text, record_outcome_undoable, trace_values
from cleo_tui.recall.export import export_retrievals
from cleo_tui.recall.last_recall import RecordedRecall, recall_and_record
from cleo_tui.recall.reader import (
    TraceFilter,
    TraceOutcome,
    TraceResult,
    TraceSummary,
    get_trace,
    trace_outcomes,
    trace_results,
)
from cleo_tui.recall.recall import DEFAULT_LIMIT, MAX_LIMIT
from cleo_tui.recall.recorded import cleo_sessions, cleo_sources, has_retrieval_log
from cleo_tui.recall.resolve import FORGOTTEN
from cleo_tui.recall.retrievals import CleoResult, OpenCleoRetrieval, RetrievalFilter, open_cleo_retrieval, trace_kind
from cleo_tui.recall.traces import PIPELINES
from cleo_tui.safe_text import one_line, plural, shown_id
from cleo_tui.ui.help import TRACES_HELP
from cleo_tui.ui.messages import BrainChanged, Written
from cleo_tui.ui.widgets.choice_chip import ChoiceChip
from cleo_tui.ui.widgets.chrome import PaneScreen
from cleo_tui.ui.widgets.filter_options import FilterChoices, FilterOptions
from cleo_tui.ui.widgets.inputs import SafeInput
from cleo_tui.ui.widgets.modals import TextViewer
from cleo_tui.ui.widgets.path_dialog import export_check
from cleo_tui.ui.widgets.table import Anchor, Column, LineTable, Located, locate
from cleo_tui.ui.widgets.trace_export import TraceExportPrompt
from cleo_tui.ui.widgets.trace_listing import RetrievalListing
from cleo_tui.ui.widgets.trace_render import (
    WHOSE_LABELS,
    chain_scale,
    cleo_heading,
    cleo_result_prompt,
    cleo_result_text,
    credits,
    result_prompt,
    retrieval_cells,
    steps_text,
    trace_heading,
)

# Whose each row is: CLEO's own retrievals (its source: find-rrf, fetch, …) beside cleo-tui's
# or hippo's traces (their pipeline). The query column holds CLEO's raw text (as data) or a
# trace's hash and length. On a narrow terminal session and query shrink first, then tenant,
# explain and source give way (the heading above the results shows them); id, time, whose,
# results and outcome stay.
COLUMNS = [
    Column("id", "id", 6, right=True),
    Column("time", "time (UTC)", 19),
    Column("whose", "whose", 8),
    Column("pipeline", "source", 9, drop=1),
    Column("session", "session", 14, min_width=8),
    Column("tenant", "tenant", 10, drop=4),
    Column("query", "query (CLEO) · hash len", None, min_width=16),
    Column("results", "results", 7, right=True),
    Column("explain", "explain", 7, drop=2),
    Column("outcome", "outcome", 8),
]
RECALL_PIPELINE = "cli"  # hippo's pipelines are api/cli/context/mcp; a person typing a query is the CLI's
EXPORT_DEFAULT = "traces.jsonl"
ANY = "any"
_NO_ID_RESULT = "This result has no id (its row's id was NULL when it was recalled): "
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}(:\d{2}){0,2})?$")


def time_bound(text: str) -> str | None:
    """A typed date or date-time as the ISO prefix the `ts` column compares with; None if unreadable."""
    text = text.strip()
    return text.replace(" ", "T") if _TIME.match(text) else None


@dataclass
class TraceFilters:
    whose: str = ANY  # "cleo", "cleo/SOURCE" or "traces"
    pipeline: str = ANY
    session: str = ANY
    tenant: str = ANY
    outcome: str = ANY  # "with", "without" or any
    since: str = ""
    until: str = ""

    def to_filter(self) -> TraceFilter:
        """The reader's filter; unreadable time bounds are left out (the status line says so)."""
        return TraceFilter(
            pipeline=None if self.pipeline == ANY else self.pipeline,
            session_id=None if self.session == ANY else self.session,
            tenant_id=None if self.tenant == ANY else self.tenant,
            has_outcome=None if self.outcome == ANY else self.outcome == "with",
            since=time_bound(self.since), until=time_bound(self.until))

    def to_retrieval_filter(self) -> RetrievalFilter:
        """Whose rows to list (CLEO's, of one source, or the traces) with the traces' filter."""
        whose, _, source = self.whose.partition("/")
        return RetrievalFilter(cleo=whose in (ANY, "cleo"), traces=whose in (ANY, "traces"),
                               source=source or None, trace=self.to_filter())

    def is_set(self) -> bool:
        return self != TraceFilters()


@dataclass(frozen=True)
class OpenTrace:
    trace: TraceSummary
    results: list[TraceResult]
    outcomes: list[TraceOutcome]


class ResultsList(OptionList):
    """The open trace's results, one title line each, cut to the list's width: says when it is laid out
    at another width than the titles were cut to (`title_width`)."""

    @dataclass(eq=False)
    class WidthChanged(Message):
        pass

    cut_width = -1

    def title_width(self, prefix: int) -> int:
        """The cells a result's title may take after its `prefix` at the list's width now (remembered)."""
        self.cut_width = self.size.width
        return max(16, self.size.width - prefix)

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self.cut_width:
            self.post_message(self.WidthChanged())


class TracesScreen(PaneScreen, FilterOptions):
    PANE = "traces"
    PANE_HELP = TRACES_HELP
    ITEM_ACTIONS = frozenset({"record_good", "record_bad", "open_memory"})  # on the open trace's results
    BINDINGS = [
        Binding("r", "focus_recall", "Recall", id="traces.recall", tooltip="Type a query; recall runs with explain on"),
        Binding("plus", "record_good", "Good", id="traces.good",
                tooltip="Record a positive outcome for the selected result"),
        Binding("minus", "record_bad", "Bad", id="traces.bad",
                tooltip="Record a negative outcome for the selected result"),
        Binding("u", "undo", "Undo", id="traces.undo", tooltip="Undo the last change made in this session"),
        Binding("o", "open_memory", "Open memory", id="traces.open", tooltip="The selected result's memory in full"),
        Binding("x", "export_traces", "Export", id="traces.export", tooltip="Write the listed traces as JSONL"),
        Binding("R", "replay_cleo", "Replay", id="traces.replay", show=False,  # help and palette list it
                tooltip="Replay CLEO's logged queries with CLEO's find semantics, now and after a prune"),
        Binding("c", "clear_trace_filters", "Clear filters", id="traces.clear", show=False),
        Binding("escape", "focus_traces", "Traces", id="traces.back", show=False),
    ]
    WRITE_ACTIONS = {"focus_recall", "record_good", "record_bad", "undo"}
    FOOTER_FIRST = ("focus_recall", "open_memory", "record_good", "record_bad", "export_traces")

    @dataclass(eq=False)
    class ListingReady(Message):
        listing: RetrievalListing
        select_id: int | str | None
        keep_cursor: bool
        located: Located | None = None  # where the cursor's trace is in the new listing

    @dataclass(eq=False)
    class TraceLoaded(Message):
        opened: OpenTrace | OpenCleoRetrieval | None
        trace_id: int | str  # the row's id: a trace's number or "cleo:N"

    @dataclass(eq=False)
    class MemoryRead(Message):
        title: str
        text: str  # a result's memory in full (not an observation: those open in their own modal)

    @dataclass(eq=False)
    class Recalled(Message):
        trace_id: int
        recorded: RecordedRecall

    @dataclass(eq=False)
    class ExportTargetExists(Message):
        path: str
        flt: RetrievalFilter
        with_text: bool

    @dataclass(eq=False)
    class Exported(Message):
        count: int
        where: str  # the file written, resolved

    def __init__(self) -> None:
        super().__init__(id="pane-traces")
        self.filters = TraceFilters()
        self.opened: OpenTrace | OpenCleoRetrieval | None = None
        self.last_export: str | None = None
        self._focus_results_for: int | None = None

    # -- layout ---------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield from self.compose_chrome_top()
        read_only = self.session.brain.read_only
        with Horizontal(id="trace-bar"):
            yield SafeInput(placeholder="read-only: no recall" if read_only else "r: recall a query (explain on)",
                        id="trace-recall", compact=True, disabled=read_only)
            yield SafeInput(str(DEFAULT_LIMIT), id="trace-limit", compact=True, type="integer",
                            disabled=read_only, tooltip=f"How many results a recall returns (1–{MAX_LIMIT:,})")
            yield ChoiceChip([], prompt="everyone's", id="tf-whose",
                             tooltip="Whose retrievals: CLEO's own (by source) or the recall traces")
            yield ChoiceChip([(p, p) for p in PIPELINES], prompt="all pipelines", id="tf-pipeline", tooltip=
                             "Which path wrote the trace (CLEO's retrievals have none: choosing one hides them)")
            yield ChoiceChip([], prompt="all sessions", id="tf-session", tooltip="Session id")
            yield ChoiceChip([], prompt="all tenants", id="tf-tenant", tooltip="Tenant id")
            yield ChoiceChip([("with outcome", "with"), ("no outcome", "without")], prompt="any outcome",
                             id="tf-outcome", tooltip="Traces with or without a recorded outcome")
            yield SafeInput(placeholder="since", id="tf-since", compact=True,
                        tooltip="From this date or time (UTC), e.g. 2026-05-01 or 2026-05-01 13:00")
            yield SafeInput(placeholder="until", id="tf-until", compact=True, tooltip="Before this date or time (UTC)")
        yield Static(id="trace-status")
        yield LineTable(COLUMNS, retrieval_cells, id="trace-table")
        yield Static(id="trace-head")
        with Horizontal(id="trace-detail"):
            yield ResultsList(id="trace-results", compact=True)
            with VerticalScroll(id="trace-steps-box"):
                yield Static(id="trace-steps")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        self.table.focus()
        self.query_one("#trace-head", Static).update(Text("Select a trace or a CLEO retrieval to see its ranked "
                                                          "results.", style="italic"))
        self.load_filter_options()
        self.reload()

    @property
    def table(self) -> LineTable:
        return self.query_one("#trace-table", LineTable)

    @property
    def results_list(self) -> ResultsList:
        return self.query_one("#trace-results", ResultsList)

    # -- the trace list -----------------------------------------------------------
    def reload(self, keep_cursor: bool = False, select_id: int | str | None = None) -> None:
        self.update_status(counting=True)
        anchor = self.table.held_anchor() if keep_cursor else None
        self._build_listing(self.filters.to_retrieval_filter(), select_id, keep_cursor, anchor)

    @work(thread=True, exclusive=True, group="trace-listing", exit_on_error=False)
    def _build_listing(self, flt: RetrievalFilter, select_id: int | str | None, keep_cursor: bool,
                       anchor: Anchor | None = None) -> None:
        listing = RetrievalListing(self.session.brain, flt)
        listing.count()
        listing.page(0)
        located = locate(listing, anchor) if anchor is not None else None
        self.post_message(self.ListingReady(listing, select_id, keep_cursor, located))

    def on_traces_screen_listing_ready(self, message: ListingReady) -> None:
        table = self.table
        table.set_listing(message.listing, keep_cursor=message.keep_cursor, located=message.located)
        if message.select_id is not None:
            index = message.listing.index_of(message.select_id)
            if index is not None:
                table.cursor = index
        if table.total == 0:
            self._show(None)
        self.update_status()

    def update_status(self, counting: bool = False) -> None:
        total = self.table.total
        listing = self.table.listing
        if counting or not isinstance(listing, RetrievalListing):
            parts = ["counting…"]
        else:
            cleo, traces = listing.kinds()
            whose = WHOSE_LABELS[trace_kind(self.session.brain)]
            if has_retrieval_log(self.session.brain):
                parts = [f"{total:,} retrieval{'' if total == 1 else 's'}, newest first: {cleo:,} CLEO's, "
                         f"{traces:,} {whose} trace{'' if traces == 1 else 's'}"]
            else:  # no CLEO log here (hippo, an older CLEO): only traces, as ever
                parts = [f"{total:,} trace{'' if total == 1 else 's'}, newest first"]
        bad = [name for name, value in (("since", self.filters.since), ("until", self.filters.until))
               if value.strip() and time_bound(value) is None]
        if bad:
            parts.append(f"ignored {' and '.join(bad)}: type a date like 2026-05-01 or 2026-05-01 13:00")
        if self.last_export:
            parts.append(self.last_export)
        brain = self.session.brain
        if brain.read_only:
            parts.append(f"read-only ({brain.read_only_reason}): recall, outcomes and undo are disabled")
        self.query_one("#trace-status", Static).update(Text(" · ".join(parts)))

    # -- filters --------------------------------------------------------------------
    def read_filter_options(self, brain: Brain) -> FilterChoices:
        """The sessions, tenants and whose-retrievals choices (CLEO's sources, then the traces)."""
        sessions = sorted(set(trace_values(brain, "session_id")) | set(cleo_sessions(brain)))
        whose = [(f"CLEO: {one_line(source, 20)}", f"cleo/{source}") for source in cleo_sources(brain)]
        if whose:
            whose.insert(0, ("CLEO: any source", "cleo"))
        whose.append((f"{WHOSE_LABELS[trace_kind(brain)]} traces", "traces"))
        return {"tf-session": [(v, v) for v in sessions],
                "tf-tenant": [(v, v) for v in trace_values(brain, "tenant_id")], "tf-whose": whose}

    @on(ChoiceChip.Changed)
    def filter_changed(self, event: ChoiceChip.Changed) -> None:
        key = {"tf-pipeline": "pipeline", "tf-session": "session", "tf-tenant": "tenant",
               "tf-outcome": "outcome", "tf-whose": "whose"}.get(event.chip.id or "")
        if key is None:
            return
        value = ANY if event.value is None else event.value
        if getattr(self.filters, key) != value:
            setattr(self.filters, key, value)
            self.reload()

    @on(Input.Submitted, "#tf-since, #tf-until")
    def time_submitted(self, event: Input.Submitted) -> None:
        key = "since" if event.input.id == "tf-since" else "until"
        event.input.set_class(bool(event.value.strip()) and time_bound(event.value) is None, "bad-time")
        if getattr(self.filters, key) != event.value:
            setattr(self.filters, key, event.value)
            self.reload()
        self.table.focus()

    def action_clear_trace_filters(self) -> None:
        self.filters = TraceFilters()
        for chip in self.query(ChoiceChip):
            chip.clear()
        for input_id in ("#tf-since", "#tf-until"):
            box = self.query_one(input_id, Input)
            box.value = ""
            box.remove_class("bad-time")
        self.reload()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "focus_traces" and self.host.waiting is not None:
            return False  # Esc stops an outcome's wait for CLEO's lock first (the app's binding)
        return super().check_action(action, parameters)

    def action_focus_traces(self) -> None:
        self.table.focus()

    # -- one trace ------------------------------------------------------------------
    @on(LineTable.Highlighted)
    def trace_highlighted(self, event: LineTable.Highlighted) -> None:
        if event.row is not None:
            self._load_trace(event.row["id"])  # exclusive: a newer highlight supersedes it

    @on(LineTable.Selected)
    def trace_selected(self, event: LineTable.Selected) -> None:
        self.results_list.focus()

    @work(thread=True, exclusive=True, group="trace-detail", exit_on_error=False)
    def _load_trace(self, row_id: int | str) -> None:
        """Open the row: a trace (its number) or a CLEO retrieval ("cleo:N")."""
        brain = self.session.brain
        opened: OpenTrace | OpenCleoRetrieval | None
        if isinstance(row_id, str):
            opened = open_cleo_retrieval(brain, int(row_id.removeprefix("cleo:")))
        else:
            trace = get_trace(brain, row_id)
            opened = None if trace is None else OpenTrace(trace, trace_results(brain, row_id),
                                                          trace_outcomes(brain, row_id))
        self.post_message(self.TraceLoaded(opened, row_id))

    def on_traces_screen_trace_loaded(self, message: TraceLoaded) -> None:
        row = self.table.current_row()
        if row is None or row["id"] != message.trace_id:
            return  # the cursor moved on meanwhile
        self._show(message.opened)
        if self._focus_results_for == message.trace_id:
            self._focus_results_for = None
            self.results_list.focus()

    def _show(self, opened: OpenTrace | OpenCleoRetrieval | None) -> None:
        """Fill the heading, the results list and the steps (or detail) of the first result."""
        keep = self.results_list.highlighted if (self.opened and opened
                                                  and _opened_key(self.opened) == _opened_key(opened)) else None
        self.opened = opened
        self.show_item_parts(opened is not None, "#trace-detail")  # nothing open: no empty split
        results = self.results_list
        results.clear_options()
        head = self.query_one("#trace-head", Static)
        if opened is None:
            head.update(Text("Nothing selected." if self.table.total else
                             "No traces or CLEO retrievals match; c clears the filters." if self.filters.is_set() else
                             "No recall traces or CLEO retrievals in this brain yet"
                             + ("." if self.session.brain.read_only else ": r recalls a query and writes its trace."),
                             style="italic"))
            self.query_one("#trace-steps", Static).update("")
            return
        if isinstance(opened, OpenCleoRetrieval):
            self._show_cleo(opened, keep)
            return
        head.update(trace_heading(opened.trace, opened.outcomes))
        credit = credits(opened.outcomes)
        title_width = results.title_width(32)  # one line per title; the prefix takes 30 cells
        results.add_options(Option(result_prompt(r, credit.get(r.memory_id, (0, 0)), title_width), id=str(i))
                            for i, r in enumerate(opened.results))
        if opened.results:
            results.highlighted = min(keep or 0, len(opened.results) - 1)
        else:
            self.query_one("#trace-steps", Static).update(Text("This trace returned nothing.", style="italic"))

    def on_results_list_width_changed(self, message: ResultsList.WidthChanged) -> None:
        """The titles are cut to the list's width: cut again to its new one (a terminal resized, or the
        list shown again after nothing was open, filled before it had its width)."""
        if self.opened is not None:
            self._show(self.opened)

    def _show_cleo(self, opened: OpenCleoRetrieval, keep: int | None) -> None:
        """A CLEO retrieval: its query as data above, its ids in rank order, each as CLEO sees it now."""
        results = self.results_list
        head = self.query_one("#trace-head", Static)
        head.update(cleo_heading(opened.retrieval, max(20, head.size.width - 2)))
        title_width = results.title_width(14)  # one line per title; the prefix takes 12 cells
        results.add_options(Option(cleo_result_prompt(r, title_width), id=str(i))
                            for i, r in enumerate(opened.results))
        if opened.results:
            results.highlighted = min(keep or 0, len(opened.results) - 1)
        else:
            why = ("Its entry_ids is not a JSON list of ids: what it returned cannot be read."
                   if opened.retrieval.malformed else "This retrieval returned nothing.")
            self.query_one("#trace-steps", Static).update(Text(why, style="italic"))

    def selected_result(self) -> TraceResult | CleoResult | None:
        index = self.results_list.highlighted
        if self.opened is None or index is None or index >= len(self.opened.results):
            return None
        return self.opened.results[index]

    @on(OptionList.OptionHighlighted, "#trace-results")
    def result_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        result = self.selected_result()
        if result is None or self.opened is None:
            return
        if isinstance(result, CleoResult) and isinstance(self.opened, OpenCleoRetrieval):
            self.query_one("#trace-steps", Static).update(cleo_result_text(result, self.opened.retrieval))
            return
        if not isinstance(result, TraceResult) or not isinstance(self.opened, OpenTrace):
            return
        credit = credits(self.opened.outcomes).get(result.memory_id, (0, 0))
        self.query_one("#trace-steps", Static).update(steps_text(result, chain_scale(self.opened.results), credit))

    @on(OptionList.OptionSelected, "#trace-results")
    def result_selected(self, event: OptionList.OptionSelected) -> None:
        self.action_open_memory()

    def action_open_memory(self) -> None:
        result = self.selected_result()
        if result is None:
            self.notify("Select a result of a trace first.", severity="warning")
            return
        memory = result.memory
        if not result.memory_id:
            self.notify(_NO_ID_RESULT + "nothing to open.", severity="warning")
        elif memory.state == FORGOTTEN:
            self.notify(f"{one_line(result.memory_id, 60)} is forgotten: no row with that id exists any more.",
                        severity="warning")
        elif memory.kind == "observation":
            self.open_observation(result.memory_id)
        else:
            self._open_text(result)

    @work(thread=True, group="trace-memory", exit_on_error=False)
    def _open_text(self, result: TraceResult | CleoResult) -> None:
        memory = result.memory
        text = memory_text(self.session.brain, memory)
        title = f"{memory.kind} {shown_id(result.memory_id, 60)} ({memory.state})"
        self.post_message(self.MemoryRead(title, text))

    def on_traces_screen_memory_read(self, message: MemoryRead) -> None:
        self.app.push_screen(TextViewer(message.title, message.text))

    # -- recall -----------------------------------------------------------------------
    def action_focus_recall(self) -> None:
        self.query_one("#trace-recall", Input).focus()

    @on(Input.Submitted, "#trace-recall")
    def recall_submitted(self, event: Input.Submitted) -> None:
        query = event.value.strip()
        if not query:
            self.notify("Type a query to recall.", severity="warning")
            return
        limit = self.recall_limit()
        if limit is None:
            self.notify(f"The recall limit must be a whole number from 1 to {MAX_LIMIT:,}.", severity="error")
            return
        self._recall(query, limit)

    def recall_limit(self) -> int | None:
        """The number in the limit box, or None when it is not one from 1 to MAX_LIMIT."""
        text = self.query_one("#trace-limit", Input).value.strip()
        if not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
            return None
        return int(text)

    @work(thread=True, exclusive=True, group="trace-recall", exit_on_error=False)
    def _recall(self, query: str, limit: int) -> None:
        brain = self.session.brain
        brain.ensure_writable()
        recorded = recall_and_record(brain, query, limit, explain=True, pipeline=RECALL_PIPELINE)
        if recorded.trace_id is None:
            raise BrainError(f"The recall found {plural(len(recorded.results), 'result')}, but its trace could not be "
                             "written, so there is nothing to show here. `cleo-tui recall QUERY --why` shows "
                             "the results without a trace.")
        self.post_message(self.Recalled(recorded.trace_id, recorded))

    def on_traces_screen_recalled(self, message: Recalled) -> None:
        trace_id, recorded = message.trace_id, message.recorded
        self.query_one("#trace-recall", Input).value = ""
        if self.filters.is_set():
            self.action_clear_trace_filters()  # the new trace must be listed to open it
        if recorded.can_credit:
            self._focus_results_for = trace_id
            self.notify(f"Recalled {plural(len(recorded.results), 'result')}; trace {trace_id} written. "
                        "+ / - record an outcome.")
        elif recorded.results:  # nothing to credit: say so, and do not offer + / -
            self.notify(f"Recalled {plural(len(recorded.results), 'result')}; trace {trace_id} written. None has "
                        "an id, so no outcome can credit them.", severity="warning")
        else:
            self.notify(f"The recall matched nothing; trace {trace_id} written with no results.",
                        severity="warning")
        self.session.refresh_derived()
        self.reload(select_id=trace_id)

    # -- outcomes ----------------------------------------------------------------------
    def action_record_good(self) -> None:
        self._ask_outcome("positive")

    def action_record_bad(self) -> None:
        self._ask_outcome("negative")

    def _ask_outcome(self, outcome: str) -> None:
        if isinstance(self.opened, OpenCleoRetrieval):
            self.notify("This is CLEO's own retrieval: outcomes are recorded against cleo-tui's traces. CLEO "
                        "keeps what a task used in its brain_usage_log, shown beside each result.",
                        severity="warning")
            return
        result = self.selected_result()
        if not isinstance(result, TraceResult) or not isinstance(self.opened, OpenTrace):
            self.notify("Open a trace and select one of its results first.", severity="warning")
            return
        if not result.memory_id:
            self.notify(_NO_ID_RESULT + "an outcome names the memories it credits, so it cannot credit this one.",
                        severity="warning")
            return
        trace = self.opened.trace
        word = "good (positive)" if outcome == "positive" else "bad (negative)"
        body = (f"Record a {word} outcome on trace {trace.id} for result #{result.rank}, "
                f"{shown_id(result.memory_id, 60)}?\n\n{one_line(result.memory.title, 200)}\n\n"
                "Later recalls rank it " + ("higher" if outcome == "positive" else "lower")
                + " (the outcome stage). u undoes it.")
        self.confirm(f"Record a {outcome} outcome", body,
                         lambda: self._record(trace, outcome, result.memory_id))

    def _record(self, trace: TraceSummary, outcome: str, memory_id: str) -> None:
        self.session.write(
            f"{outcome} outcome on trace {trace.id}",
            lambda brain: record_outcome_undoable(brain, trace.id, trace.tenant_id, outcome, [memory_id]),
            lambda recorded: self._recorded(*recorded, trace.id, outcome), group="trace-outcome")

    def _recorded(self, run_id: int, credited: list[str], trace_id: int, outcome: str) -> Written:
        self.notify(f"Recorded a {outcome} outcome on trace {trace_id} for {one_line(', '.join(credited), 80)}. "
                    "u undoes it.")
        return Written(f"{outcome} outcome on trace {trace_id}", run_id, notify=False)

    def action_undo(self) -> None:
        self.session.undo()

    def on_brain_changed(self, message: BrainChanged) -> None:
        """After a write (an outcome, an undo, CLEO): reread the list and the open trace."""
        self.reload(keep_cursor=True)  # the new listing re-announces its row, which reloads the trace

    # -- export --------------------------------------------------------------------------
    def action_export_traces(self) -> None:
        if not self.table.total:
            self.notify("No trace or CLEO retrieval is listed: nothing to export.", severity="warning")
            return
        flt = self.filters.to_retrieval_filter()
        what = "every trace and CLEO retrieval" if not self.filters.is_set() else "the rows the filters list"

        def chosen(answer: tuple[str, bool] | None) -> None:
            if answer:
                self._export(answer[0], flt, answer[1])

        self.app.push_screen(TraceExportPrompt(
            "Export traces as JSONL",
            f"Write {what}, oldest first, one JSON line each: query hash and length, results shown, outcomes "
            "(a trace never stores its query; CLEO's raw query text is left out unless you tick the box).",
            str(Path.cwd() / EXPORT_DEFAULT),  # absolute: the user sees where
            export_check(self.session.brain.path)), chosen)

    def _export(self, path: str, flt: RetrievalFilter, with_text: bool, force: bool = False) -> None:
        """Write the export in a worker (quitting waits for it: the user chose it)."""
        self.session.run_export(path, partial(self._write_export, path, flt, with_text, force), "trace-export")

    def _write_export(self, path: str, flt: RetrievalFilter, with_text: bool, force: bool) -> None:
        try:
            count = export_retrievals(self.session.brain, path, flt, with_query_text=with_text, force=force)
        except ExportExists:  # an ordinary file: ask, then write over it (keeping its mode)
            self.post_message(self.ExportTargetExists(path, flt, with_text))
            return
        self.post_message(self.Exported(count, str(Path(path).expanduser().resolve())))

    def on_traces_screen_export_target_exists(self, message: ExportTargetExists) -> None:
        """The one confirm pattern before an existing file is replaced; the guard still refuses a
        brain, a SQLite file or a device when the write runs."""
        path, flt, with_text = message.path, message.flt, message.with_text
        self.confirm("Replace file", f"{one_line(path, 200)} exists. Replace it with the exported traces?",
                          lambda: self._export(path, flt, with_text, force=True), danger=True)

    def on_traces_screen_exported(self, message: Exported) -> None:
        count, where = message.count, message.where
        self.last_export = f"exported {plural(count, 'trace')} to {one_line(where, 80)}"
        self.notify(f"Exported {plural(count, 'trace')} to {one_line(where, 200)}.")
        self.update_status()

    # -- replay of CLEO's queries ------------------------------------------------------------
    def action_replay_cleo(self) -> None:
        from cleo_tui.ui.widgets.replay_view import ReplayView  # built when first opened

        self.app.push_screen(ReplayView(self.session.brain))


def _opened_key(opened: OpenTrace | OpenCleoRetrieval) -> str:
    return f"cleo:{opened.retrieval.id}" if isinstance(opened, OpenCleoRetrieval) else str(opened.trace.id)
