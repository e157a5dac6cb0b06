"""The Observations pane: a virtual table of every observation, filters, detail, curation."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, Static

from cleo_tui.brain import Brain, cleo_rules
from cleo_tui.brain.listing import ObservationListing
from cleo_tui.brain.numbers import quality_text
from cleo_tui.brain.observations import distinct_values
from cleo_tui.brain.rows import Row
from cleo_tui.memory import recall_protection
from cleo_tui.memory.detail import ObservationDetail
from cleo_tui.memory.mapping import derive_relevance
from cleo_tui.memory.selection import has_id
from cleo_tui.safe_text import one_line, plural
from cleo_tui.ui.help import OBSERVATIONS_HELP
from cleo_tui.ui.host import FirstRowsShown, ask
from cleo_tui.ui.messages import EXTERNAL, BrainChanged, TagsProgress, TagsReady
from cleo_tui.ui.panes.observations_bulk import FilterActions
from cleo_tui.ui.panes.observations_listing import ANY, SORTS, Filters, build_listing, state_cell
from cleo_tui.ui.session import BACKGROUND_BY
from cleo_tui.ui.textual_compat import updates_held
from cleo_tui.ui.widgets.choice_chip import ChoiceChip
from cleo_tui.ui.widgets.chrome import PaneScreen
from cleo_tui.ui.widgets.detail import DetailView, load_detail
from cleo_tui.ui.widgets.filter_options import FilterChoices, FilterOptions
from cleo_tui.ui.widgets.inputs import SearchInput
from cleo_tui.ui.widgets.table import Anchor, Column, LineTable, Located, locate

if TYPE_CHECKING:  # numpy loads with the tags, after the first screen
    from cleo_tui.memory.tags import TagTable
    from cleo_tui.recall.impact import RecallIndex

# On a narrow terminal the id and title shrink first, then date, type and source give way
# (the detail below shows them); state, relevance, coverage and protection always stay.
COLUMNS = [
    Column("id", "id", 14, min_width=12, middle=True),
    Column("date", "date", 10, drop=3),
    Column("type", "type", 8, drop=4),
    Column("title", "title", None, min_width=24),  # 80 columns: tier, quality go
    Column("relevance", "relev.", 8),
    Column("coverage", "coverage", 9),
    Column("protection", "protection", 12),
    Column("tier", "tier", 6, drop=1),
    Column("quality", "qual", 4, right=True, drop=2),
    Column("source", "source", 8, drop=5),
    Column("state", "state", 8),  # live / evicted, and CLEO's marks: ⚠ at risk, "hidden" from its search
]
FILTER_OF_CHIP = {"f-state": "state", "f-type": "type", "f-coverage": "coverage", "f-protected": "protected",
                  "f-tier": "tier", "f-session": "session", "f-cleo": "cleo"}  # each chip's field of Filters
COVERAGE_SHORT = {"reinforced": "reinf."}


_NO_ID = "This row has no id (NULL or empty in the brain): CLEO and cleo-tui find a row by its id"


def protection_kind(reason: str) -> str:
    """The short name of a protection reason ("unique identifier: x appears…" → "unique identifier";
    "recalled 2026-11-28 (query '…')" → "recalled")."""
    return recall_protection.kind_of(reason) or reason.split(":", 1)[0]



class ObservationsScreen(FilterActions, PaneScreen, FilterOptions):
    PANE = "observations"
    PANE_HELP = OBSERVATIONS_HELP
    ITEM_ACTIONS = frozenset({"pin", "evict", "restore", "view_text"})  # the highlighted row's
    # Rows are the usual case: assumed from the start, so the first screen's first highlight redraws
    # no footer (it is the first key's frame); only an empty list takes the row keys away.
    has_item = True
    BINDINGS = [
        Binding("slash", "focus_search", "Search", id="obs.search",
                tooltip="Full-text search (FTS5 where the brain has it)"),
        Binding("s", "cycle_sort", "Sort", id="obs.sort", tooltip="Sort by date, quality or coverage"),
        Binding("p", "pin", "Pin", id="obs.pin", tooltip="Pin or unpin: a relevance override that protects the row"),
        Binding("e", "evict", "Evict", id="obs.evict", tooltip="Soft-evict this observation (undoable)"),
        Binding("r", "restore", "Restore", id="obs.restore", tooltip="Restore an evicted observation (undoable)"),
        Binding("u", "undo", "Undo", id="obs.undo", tooltip="Undo the last curation step made here"),
        Binding("v", "view_text", "Full text", id="obs.view", tooltip="Open the whole narrative"),
        Binding("t", "records", "Patterns…", id="obs.records", tooltip="Browse patterns, learnings and decisions"),
        Binding("x", "clear_filters", "Clear filters", id="obs.clear", show=False),
        Binding("A", "act_on_filter", "All shown…", id="obs.bulk", show=False,
                tooltip="Evict, restore or pin every observation the filter shows, as one undoable run"),
        Binding("X", "export_shown", "Export", id="obs.export", show=False,
                tooltip="Export what the filter shows as JSON, JSONL or Markdown"),
        Binding("n", "jump_new", "New rows", id="obs.jump_new",
                tooltip="Jump to the newest rows (the \"N new\" mark: CLEO wrote them meanwhile)"),
        Binding("c", "cycle_cleo_marks", "CLEO marks", id="obs.cleo_marks",
                tooltip="Show only rows CLEO's next consolidation deletes, then rows its search cannot find, then all"),
        Binding("K", "keep_in_cleo", "Keep in CLEO", id="obs.keep_cleo", show=False,
                tooltip="Raise the quality so CLEO's consolidation and search keep it (undoable), when that lasts"),
    ]
    WRITE_ACTIONS = {"pin", "evict", "restore", "undo", "keep_in_cleo"}
    FOOTER_FIRST = ("focus_search", "evict", "restore", "pin", "undo", "view_text", "records", "jump_new")
    AUTO_FOCUS = "#obs-table"  # as on_mount does: not the tabs first (each focus change restyles)

    @dataclass(eq=False)
    class DetailLoaded(Message):
        detail: ObservationDetail | None
        observation_id: str

    @dataclass(eq=False)
    class ListingReady(Message):
        listing: ObservationListing
        keep_cursor: bool
        located: Located | None = None  # where the cursor's row is in the new listing (see reload)
        by_index: bool = False  # keep the cursor's index, not its row (following the newest rows)
        quiet: bool = False  # a write of this app's: a row that left the list gives way silently

    def __init__(self) -> None:
        super().__init__(id="pane-observations")
        self.filters = Filters()
        self.sort_index = 0
        self._search_timer: Timer | None = None
        self._detail_timer: Timer | None = None
        self._progress_waiting = False  # a progress redraw waits for keys to settle
        self.new_count = 0  # rows CLEO wrote that arrived above a cursor not at the top
        self._recalls: RecallIndex | None = None  # every recorded retrieval, for an evict's recall impact
        self._recalls_problem: str | None = None
        self._recalls_loading = self._recalls_stale = False

    # -- layout ---------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield from self.compose_chrome_top()
        yield Horizontal(*self.filter_widgets(), id="filter-bar")  # (its choices are read once rows show)
        yield Static(id="status-line")
        yield LineTable(COLUMNS, self.format_row, id="obs-table")
        yield DetailView(id="detail")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        self.query_one("#obs-table", LineTable).focus()
        self.reload()
        self.set_timer(BACKGROUND_BY, self.load_filter_options_once)  # by then if no rows are ever drawn

    @staticmethod
    def filter_widgets() -> list[Widget]:
        """The search input and the seven filters, blank (only they change the filters they show)."""
        return [
            SearchInput(placeholder="/ search", id="search", compact=True),
            ChoiceChip([("live", "live"), ("evicted", "evicted")], prompt="all states", id="f-state",
                       tooltip="State: live or soft-evicted"),
            ChoiceChip([], prompt="all types", id="f-type", tooltip="Observation type"),
            ChoiceChip([(c, c) for c in ("reinforced", "cited", "uncited")], prompt="any coverage",
                       id="f-coverage", tooltip="How many reflections cite it"),
            ChoiceChip([("protected", "yes"), ("unprotected", "no")], prompt="protected?",
                       id="f-protected", tooltip="Protected rows never drop in a prune"),
            ChoiceChip([], prompt="all tiers", id="f-tier", tooltip="Memory tier"),
            ChoiceChip([], prompt="all sessions", id="f-session", tooltip="CLEO session"),
            ChoiceChip([("CLEO deletes", cleo_rules.AT_RISK), ("CLEO can't find", cleo_rules.HIDDEN)],
                       prompt="CLEO marks", id="f-cleo",
                       tooltip="At risk: CLEO's next consolidation deletes it. Hidden: CLEO's search never returns it"),
        ]

    @property
    def table(self) -> LineTable:
        return self.query_one("#obs-table", LineTable)

    # -- rows -----------------------------------------------------------------
    def format_row(self, row: Row) -> dict[str, tuple[str, str]]:
        session = self.session
        tag = session.tag(row["id"])
        if tag is not None:
            relevance = tag.relevance
        else:
            relevance = derive_relevance(row, session.overrides.get(row["id"]))[0]
        if session.tags is None:
            coverage, protection = ("…", ""), ("…", "")
        elif tag is None:
            coverage, protection = ("", ""), ("", "")
        else:
            coverage = (f"{COVERAGE_SHORT.get(tag.coverage, tag.coverage)} {tag.citation_count}"
                        if tag.citation_count else "uncited",
                        "table--reinforced" if tag.coverage == "reinforced" else
                        "table--cited" if tag.coverage == "cited" else "table--muted")
            protection = (("◆ " + protection_kind(tag.reasons[0])) if tag.protected and tag.reasons
                          else "◆" if tag.protected else "…" if tag.protection_pending else "", "table--protected")
        evicted = row.get("invalid_at") is not None
        quality = row.get("quality_score")
        return {
            "id": (str(row.get("id") or ""), ""),
            "date": (str(row.get("created_at") or "")[:10], ""),
            "type": (str(row.get("type") or ""), ""),
            "title": (str(row.get("title") or row.get("narrative_preview") or ""), "table--evicted" if evicted else ""),
            "relevance": (relevance, {"critical": "table--critical", "high": "table--high",
                                      "low": "table--low"}.get(relevance, "")),
            "coverage": coverage,
            "protection": protection,
            "tier": (str(row.get("memory_tier") or ""), ""),
            "quality": (quality_text(quality, compact=True), ""),
            "source": (str(row.get("source_type") or ""), ""),
            "state": state_cell(row),
        }

    # -- building the listing ---------------------------------------------------
    def reload(self, keep_cursor: bool = False, by_index: bool = False, quiet: bool = False) -> None:
        """Build the listing again; `keep_cursor` keeps the cursor and the view on the same row (found by its
        id in the worker), or on the same index with `by_index`; see LineTable.set_listing for `quiet`."""
        ahead = self.session.take_first_rows()  # read ahead for the default filters (see first_listing)
        if ahead is not None and (self.filters, self.sort_index, self.session.tags) != (Filters(), 0, None):
            ahead = None
        if ahead is not None and ahead.done() and ahead.exception() is None:
            self.on_observations_screen_listing_ready(self.ListingReady(ahead.result(), keep_cursor))
            return
        self.update_status(counting=True)
        anchor = self.table.held_anchor() if keep_cursor and not by_index else None
        self._build_listing(replace(self.filters), self.sort_index, self.session.tags, keep_cursor, anchor, ahead,
                            (by_index, quiet))

    @work(thread=True, exclusive=True, group="obs-listing", exit_on_error=False)
    def _build_listing(self, filters: Filters, sort_index: int, tags: TagTable | None, keep_cursor: bool,
                       anchor: Anchor | None = None, ahead: Future[ObservationListing] | None = None,
                       how: tuple[bool, bool] = (False, False)) -> None:
        listing = None
        if ahead is not None and ahead.exception() is None:  # waits for the read started ahead
            listing = ahead.result()
        if listing is None:
            listing = build_listing(self.session.brain, filters, sort_index, tags)
        located = None if anchor is None else locate(listing, anchor)
        self.post_message(self.ListingReady(listing, keep_cursor, located, *how))

    def on_observations_screen_listing_ready(self, message: ListingReady) -> None:
        self.table.set_listing(message.listing, keep_cursor=message.keep_cursor, by_index=message.by_index,
                               located=message.located, quiet=message.quiet)
        self.update_status()
        self.call_after_refresh(self.first_rows_drawn)

    def first_rows_drawn(self) -> None:
        """Rows are on screen: now the filters' choices, and the app's reads over the whole brain."""
        if self.frame_held and self.is_current:  # not yet: they go out with the first frame let through
            if not updates_held(self.app):
                self.refresh()
            self.set_timer(1 / 60, lambda: self.call_after_refresh(self.first_rows_drawn))
            return
        self.load_filter_options_once()
        ask(self, FirstRowsShown())

    # -- the live brain: CLEO's new rows -------------------------------------------------
    @property
    def following(self) -> bool:
        """Sorted newest first with the cursor on the first row: new rows just appear on top."""
        table = self.table
        return SORTS[self.sort_index][:2] == ("date", True) and table.cursor == 0 and int(table.scroll_offset.y) == 0

    def live_change(self) -> None:
        """CLEO wrote: follow at the top, else keep the cursor on its row and count the new ones."""
        live = self.session.last_live
        new = len(live.new_ids) if live is not None else 0
        if self.following or self.table.cursor_anchor() is None:
            self.new_count = 0
            self.reload(keep_cursor=True, by_index=True)
            return
        self.new_count += new
        self.reload(keep_cursor=True)  # the cursor and the view stay on its row, wherever it went

    def action_jump_new(self) -> None:
        """To the newest rows: sorted by date, newest first, cursor on top."""
        self.new_count = 0
        self.sort_index = 0
        self.table.cursor = 0
        self.reload()

    @on(LineTable.Highlighted)
    def _top_reached(self, event: LineTable.Highlighted) -> None:
        if self.new_count and self.following:
            self.new_count = 0
            self.update_status()

    def update_status(self, counting: bool = False) -> None:
        table = self.table
        parts = []
        parts.append("counting…" if counting else plural(table.total, "observation"))
        parts.append(f"sorted by {SORTS[self.sort_index][2]}")
        if self.filters.day:
            parts.append(f"created on {self.filters.day} (x clears)")
        if self.filters.cleo != ANY:
            parts.append("CLEO's next consolidation deletes these" if self.filters.cleo == cleo_rules.AT_RISK
                         else "CLEO's search never returns these")
        if not self.session.protection_known:
            percent = self.session.tags_percent
            # (all rows read is not yet done: the scan is then saved and loaded)
            done = "" if percent is None else f" {min(percent, 99)}%"
            parts.append(f"tags: computing…{done}" if self.session.tags is None else f"protection: computing…{done}")
        if self.new_count:
            parts.append(f"{self.new_count:,} new (n jumps there)")
        brain = self.session.brain
        if brain.read_only:
            parts.append(f"read-only ({brain.read_only_reason}): pin, evict, restore and undo are disabled")
        # (one line of fixed size: its text never changes the layout, so none is done)
        self.query_one("#status-line", Static).update(Text(" · ".join(parts)), layout=False)

    def on_tags_progress(self, message: TagsProgress) -> None:
        """A first scan got further: the status line says how far (once keys settle; the
        percents reached meanwhile make one redraw)."""
        if not self._progress_waiting:
            self._progress_waiting = True
            self.when_keys_settled(self._show_progress)

    def _show_progress(self) -> None:
        self._progress_waiting = False
        self.update_status()

    def on_tags_ready(self, message: TagsReady) -> None:
        """The tags (coverage, protection) were (re)computed: redraw, or rebuild when they filter or sort."""
        if self._recalls is None and not self._recalls_loading:
            self.want_recalls()  # after the first screen and its tags: what an evict would cost recall
        needs_rebuild = (self.filters.coverage != ANY or self.filters.protected != ANY
                         or SORTS[self.sort_index][0] == "coverage")
        if needs_rebuild:
            self.reload(keep_cursor=True)
        else:
            self.table.redraw()
            self.update_status()

    # -- filters ----------------------------------------------------------------
    def read_filter_options(self, brain: Brain) -> FilterChoices:
        """The types, tiers and sessions the brain holds."""
        return {name: [(v, v) for v in distinct_values(brain, column)]
                for name, column in (("f-type", "type"), ("f-tier", "memory_tier"), ("f-session", "source_session_id"))}

    @on(ChoiceChip.Changed)
    def filter_changed(self, event: ChoiceChip.Changed) -> None:
        key = FILTER_OF_CHIP.get(event.chip.id or "")
        if key is None:
            return
        blank = event.value is None
        value = ("all" if key == "state" else ANY) if blank else event.value
        if getattr(self.filters, key) == value:
            return  # (cleared with the other filters: `x`, a day from History)
        setattr(self.filters, key, value)
        if key == "protected" and not blank and not self.session.protection_known:
            self.notify("Filtering by protection waits for it: it is still being computed.")
        self.reload()
        if self.focused is event.chip:  # chosen by the user (mouse or keys): the keys go back to the rows
            self.call_after_refresh(self.table.focus)

    @on(Input.Changed, "#search")
    def search_typed(self, event: Input.Changed) -> None:
        if self._search_timer is not None:
            self._search_timer.stop()
        self._search_timer = self.set_timer(0.3, self._apply_search)

    @on(Input.Submitted, "#search")
    def search_submitted(self, event: Input.Submitted) -> None:
        if self._search_timer is not None:
            self._search_timer.stop()
        self._apply_search()
        self.table.focus()

    def _apply_search(self) -> None:
        text = self.query_one("#search", Input).value
        if text != self.filters.search:
            self.filters.search = text
            self.reload()

    def action_focus_search(self) -> None:
        self.query_one("#search", Input).focus()

    def action_cycle_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(SORTS)
        if SORTS[self.sort_index][0] == "coverage" and self.session.tags is None:
            self.notify("Sorting by coverage waits for the tags, which are still being computed.")
        self.reload()

    def action_clear_filters(self) -> None:
        if self.filters == Filters() and not self.query_one("#search", Input).value:
            return  # nothing to clear: the list and the cursor stay (`x` of a stray word)
        self.filters = Filters()
        self._clear_filter_bar()
        self.reload()

    def show_day(self, day: str) -> None:
        """Only the observations created on `day` (YYYY-MM-DD), every other filter cleared."""
        self.filters = Filters(day=day)
        self._clear_filter_bar()
        self.reload()

    def _clear_filter_bar(self) -> None:
        """Every filter widget blank."""
        for chip in self.query(ChoiceChip):
            chip.clear()
        self.query_one("#search", Input).value = ""

    # -- detail -------------------------------------------------------------------
    @property
    def detail_view(self) -> DetailView:
        return self.query_one("#detail", DetailView)

    @property
    def detail(self) -> ObservationDetail | None:
        return self.detail_view.detail

    @on(LineTable.Highlighted)
    def row_highlighted(self, event: LineTable.Highlighted) -> None:
        if self._detail_timer is not None:
            self._detail_timer.stop()
        if event.row is None and event.gone is None:
            self.detail_view.show(None, None, self._none_why())
            self.show_item_parts(self.table.total > 0)  # no row listed: e, r, p and v leave the footer
            return
        self.show_item_parts(True)
        observation_id = event.row["id"] if event.row is not None else str(event.gone)
        self._detail_timer = self.set_timer(0.08, lambda: self._load_detail(observation_id))

    def _none_why(self) -> str:
        """Why no observation is shown: none in the brain, none under the filters, or none chosen."""
        summary = self.session.summary
        if self.table.total or summary is None:  # (the counts not read yet: nothing to say more)
            return "No observation selected."
        counts = summary.get("observations") or {}
        if not counts.get("live") and not counts.get("evicted"):
            return ("This brain holds no observations yet: CLEO writes them as the agent works. "
                    "`cleo-tui demo DIR` writes a demo brain to explore.")
        return "No observation matches these filters."

    @on(LineTable.Selected)
    def row_selected(self, event: LineTable.Selected) -> None:
        self.detail_view.enter()

    @work(thread=True, exclusive=True, group="obs-detail", exit_on_error=False)
    def _load_detail(self, observation_id: str) -> None:
        self.post_message(self.DetailLoaded(load_detail(self.session, observation_id), observation_id))

    def on_observations_screen_detail_loaded(self, message: DetailLoaded) -> None:
        detail = message.detail
        tag = self.session.tag(message.observation_id)
        self.detail_view.show(detail, tag)
        gone = self.table.gone
        if gone is not None and gone.row_id == message.observation_id:
            self.detail_view.query_one(".detail-meta", Static).update(gone_notice(message.observation_id, detail))
        elif detail is None and not message.observation_id:
            self.detail_view.query_one(".detail-meta", Static).update(Text(
                f"{_NO_ID}, so it cannot be shown in full, changed or evicted. A prune keeps it.", style="bold"))
        elif detail is None:
            self.detail_view.query_one(".detail-meta", Static).update(Text(
                f"{one_line(message.observation_id, 80)} is gone: it was deleted from the brain since this "
                "list was read (CLEO's consolidation deletes old, uncited rows).", style="bold"))

    def action_view_text(self) -> None:
        self.detail_view.view_full_text()

    def action_records(self) -> None:
        from cleo_tui.ui.panes.records import RecordsScreen
        self.app.push_screen(RecordsScreen())

    # -- curation -------------------------------------------------------------------
    def _selected_row(self) -> Row | None:
        """The row a curation key acts on, or None (said why): none selected, or one without an id."""
        row = self.table.current_row()
        gone = self.table.gone
        if row is None:
            self.notify("No observation is selected." if gone is None else
                        f"{one_line(gone.row_id, 80)} left this list: nothing is selected; move the cursor to "
                        "choose a row.", severity="warning", markup=False)
        elif not has_id(row):
            self.notify(f"{_NO_ID}, so cleo-tui cannot change it.", severity="warning", markup=False)
            return None
        return row

    def action_pin(self) -> None:
        row = self._selected_row()
        if row is None:
            return
        pinned = self.session.is_pinned(row["id"])
        verb = "Unpin" if pinned else "Pin"
        body = (f"{verb} {row['id']}?\n\n" + (
            "Its relevance goes back to what the brain's data says, and it may lose its protection."
            if pinned else "Its relevance becomes critical, which protects it from pruning.")
            + " You can undo this with u.")
        self.confirm(f"{verb} observation", body,
                          lambda: self.session.curate("unpin" if pinned else "pin", row["id"]))

    def action_evict(self) -> None:
        row = self._selected_row()
        if row is None:
            return
        if row.get("invalid_at") is not None:
            self.notify(f"{row['id']} is already evicted; r restores it.", severity="warning")
            return
        reasons = self._protection_reasons(row["id"])
        why = one_line("; ".join(reasons), 300)
        guard = f"\n\nIt is protected ({why}): you will be asked again." if reasons else \
            "" if self.session.protection_known else "\n\nIts protection is not known yet (still being computed)."
        self.confirm("Evict observation",
                         f"Soft-evict {row['id']}?\n\n{one_line(row.get('title'), 200)}\n\n"
                         f"Recall impact: {self.recall_impact_text(str(row['id']))}\n\n"
                         "It stays in the brain with invalid_at set; undo (u) or restore (r) brings it back."
                         f"{guard}",
                         lambda: self._confirm_protected_evict(row["id"], reasons), danger=True)

    def _protection_reasons(self, observation_id: str) -> list[str]:
        """Why the row is protected (a pin counts even before the tags are computed); empty when it is not."""
        tag = self.session.tag(observation_id)
        reasons = list(tag.reasons) if tag is not None and tag.protected else []
        pinned = self.session.overrides.get(observation_id)
        if pinned and not any("set by you" in r or "pinned" in r for r in reasons):
            reasons.insert(0, f"pinned by you (relevance {pinned})")
        return reasons

    def _confirm_protected_evict(self, observation_id: str, reasons: list[str]) -> None:
        """A protected row asks a second time, naming why it is protected (as a duplicate merge does)."""
        if not reasons:
            self.session.curate("evict", observation_id)
            return
        self.confirm("Evict a protected observation",
                          f"{one_line(observation_id, 60)} is protected: {one_line('; '.join(reasons), 400)}.\n\n"
                          "The pruner never drops it. Evict it anyway? Cancel writes nothing.",
                          lambda: self.session.curate("evict", observation_id), danger=True)

    # -- the recall impact of an evict: the recorded recalls, read in a worker ahead of time ----------
    @dataclass(eq=False)
    class RecallsLoaded(Message):
        index: RecallIndex | None
        problem: str | None

    def recall_impact_text(self, observation_id: str) -> str:
        """The recall impact of evicting one row, from the recalls read last (a lookup: no brain read here)."""
        if self._recalls is not None:
            return self._recalls.impact([observation_id]).confirmation()
        if self._recalls_problem is not None:
            return f"unavailable: {self._recalls_problem}"
        return "the recorded recalls are still being read (see the Prune pane)"

    def want_recalls(self) -> None:
        """Read the recorded recalls again (once the tags are shown, after a write), one read at a time."""
        self._recalls_stale = True
        if not self._recalls_loading:
            self._recalls_loading, self._recalls_stale = True, False
            self._load_recalls()

    @work(thread=True, group="obs-recalls", exit_on_error=False)
    def _load_recalls(self) -> None:
        from cleo_tui.recall.impact import RecallIndex  # (numpy: not on the first screen's path)

        reader = self.session.brain.reader()  # its own connection: page reads never wait on it
        try:
            self.post_message(self.RecallsLoaded(*RecallIndex.load_or_problem(reader)))
        finally:
            reader.close()

    def on_observations_screen_recalls_loaded(self, message: RecallsLoaded) -> None:
        self._recalls, self._recalls_problem = message.index, message.problem
        self._recalls_loading = False
        if self._recalls_stale:
            self.want_recalls()

    def action_restore(self) -> None:
        row = self._selected_row()
        if row is None:
            return
        if row.get("invalid_at") is None:
            self.notify(f"{row['id']} is live; there is nothing to restore.", severity="warning")
            return
        self.confirm("Restore observation", f"Make {row['id']} live again? Undo (u) evicts it again.",
                         lambda: self.session.curate("restore", row["id"]))

    def action_undo(self) -> None:
        self.session.undo()

    def action_cycle_cleo_marks(self) -> None:
        """any → at risk → hidden from CLEO's search → any (the "CLEO marks" filter, reachable at any width)."""
        order = [ANY, cleo_rules.AT_RISK, cleo_rules.HIDDEN]
        self.filters.cleo = order[(order.index(self.filters.cleo) + 1) % len(order)]
        for chip in self.query("#f-cleo").results(ChoiceChip):
            with chip.prevent(ChoiceChip.Changed):
                chip.value = None if self.filters.cleo == ANY else self.filters.cleo
        self.reload()

    def action_keep_in_cleo(self) -> None:
        """Raise the row's quality to CLEO's keep value, when CLEO's rules say it lasts (memory/cleo_marks.py)."""
        row = self._selected_row()
        if row is None:
            return
        detail = self.detail
        life = getattr(detail, "life", None)
        keep = getattr(life, "keep", None)
        if life is None or getattr(life, "id", None) != row["id"]:
            self.notify("The detail is still being read; try again in a moment.", severity="warning")
            return
        if keep is None:
            self.notify(f"CLEO's rules leave {row['id']} alone: nothing to keep.", severity="information")
            return
        if not keep.offered:
            self.tell("Keep in CLEO: not offered", keep.text)
            return
        self.confirm("Keep in CLEO", f"{row['id']}: {keep.text}",
                          lambda: self.session.curate("keep-in-cleo", row["id"]))

    def on_brain_changed(self, message: BrainChanged) -> None:
        """After a write (here, in another pane, or by CLEO): reread the rows around the cursor and the detail."""
        if message.kind == EXTERNAL:
            self.live_change()
            return
        self.reload(keep_cursor=True, quiet=True)
        self.want_recalls()


def gone_notice(observation_id: str, detail: ObservationDetail | None) -> Text:
    """What the detail says when the highlighted observation left the list: why, as far as the brain tells."""
    if detail is None:
        why = "it was deleted from the brain (CLEO's consolidation deletes old, uncited rows)"
    elif detail.row.get("invalid_at") is not None:
        why = f"it was evicted (at {one_line(detail.row.get('invalid_at'), 40)})"
    else:
        why = "it no longer matches the filters or the search"
    return Text(f"{one_line(observation_id, 80)} is gone from this list: {why}. Nothing is selected; "
                "move the cursor to choose another row.", style="bold")
