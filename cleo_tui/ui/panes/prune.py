"""The Prune pane: preview a pruning at a chosen budget, then commit it or undo a run.

This module prepares the pool and shows the preview and its lists; its bases do the rest:
`prune_live.PruneLive` folds CLEO's writes into the pool, `prune_actions.PruneActions` commits,
undoes, exports; `widgets/prune_lists.py` holds the lists' columns and cells and the dialogs.

The pool is prepared once per (tokenizer, scope, brain state) in a worker — token
counting for a cold cache can take a while, so it shows a progress bar. A budget
change is then O(log n) in the pruner plus O(visible rows) here: the lists are
windows over the pool's drop order (`ListListing`), never rebuilt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Label, ProgressBar, Static, TabbedContent, TabPane

from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.journal import Run
from cleo_tui.brain.observation_reads import live_sessions
from cleo_tui.brain.rows import Row
from cleo_tui.brain.store import Brain
from cleo_tui.memory.budget import budget_text, default_budget, nice_step, stepped
from cleo_tui.memory.preview_changes import PreviewChanges
from cleo_tui.memory.pruner import (
    CommitResult,
    PoolEntry,
    PreparedPool,
    PrunePreview,
    parse_budget,
    prepare_pool,
)
from cleo_tui.memory.settings import configured_tokenizer
from cleo_tui.memory.tokenizers import CHARS4, TOKENIZER_NAMES
from cleo_tui.recall.impact import DropImpact, RecallImpact, RecallIndex
from cleo_tui.safe_text import one_line
from cleo_tui.ui.help import PRUNE_HELP
from cleo_tui.ui.messages import EXTERNAL, BrainChanged
from cleo_tui.ui.panes.prune_live import PruneLive
from cleo_tui.ui.widgets.budget_bar import BarFigures, BudgetBar
from cleo_tui.ui.widgets.choice_chip import ChoiceChip
from cleo_tui.ui.widgets.detail import update_static
from cleo_tui.ui.widgets.list_listing import ListListing
from cleo_tui.ui.widgets.prune_chart import PruneChart
from cleo_tui.ui.widgets.prune_lists import (
    BLOCKERS_SHOWN,
    ENTRY_COLUMNS,
    LISTS,
    PROTECTED_COLUMNS,
    RUN_COLUMNS,
    BudgetInput,
    budget_problem,
    coverage_cell,
    recall_cells,
    relevance_cell,
    run_cells,
)
from cleo_tui.ui.widgets.table import LineTable

ALL_SCOPE = "\x00all"  # the scope chip's value for "every live observation" (no session id looks like it)
FINE, COARSE = 0.01, 0.10  # step sizes as shares of the pool's tokens


class PruneScreen(PruneLive):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]  # app.tcss lays 80×24 out with -narrow
    PANE = "prune"
    PANE_HELP = PRUNE_HELP
    BINDINGS = [
        Binding("b", "focus_budget", "Budget", id="prune.budget",
                tooltip="Type a budget (8000, 12k, 1.5M); ↑/↓ and page up/down step it"),
        Binding("plus,equals_sign", "step(1, 0)", "More", id="prune.up", key_display="+",
                tooltip="Raise the budget a little (1% of the pool)"),
        Binding("minus", "step(-1, 0)", "Less", id="prune.down", key_display="-",
                tooltip="Lower the budget a little (1% of the pool)"),
        Binding("right_square_bracket", "step(1, 1)", "Much more", id="prune.up_coarse", key_display="]", show=False,
                tooltip="Raise the budget a lot (10% of the pool)"),
        Binding("left_square_bracket", "step(-1, 1)", "Much less", id="prune.down_coarse", key_display="[", show=False,
                tooltip="Lower the budget a lot (10% of the pool)"),
        Binding("t", "cycle_tokenizer", "Tokenizer", id="prune.tokenizer",
                tooltip="Next tokenizer: chars4, o200k_base, cl100k_base"),
        Binding("s", "focus_scope", "Scope", id="prune.scope", tooltip="All live observations or one session"),
        Binding("l", "next_list", "Lists", id="prune.lists", tooltip="Dropped, protected, kept, runs"),
        Binding("c", "commit", "Commit", id="prune.commit",
                tooltip="Soft-evict the dropped rows (asks first; undoable)"),
        Binding("u", "undo_run", "Undo run", id="prune.undo", tooltip="Undo a prune run (the one selected in Runs)"),
        Binding("x", "export", "Export", id="prune.export", tooltip="Write this preview as JSON (the CLI's shape)"),
        Binding("r", "recompute", "Recompute", id="prune.recompute", show=False,
                tooltip="Read the brain again and prepare the pool anew"),
        Binding("i", "bridge", "What CLEO injects after this preview", id="prune.bridge", show=False,
                tooltip="CLEO's memory bridge now and after this preview (it ignores eviction)"),
    ]
    WRITE_ACTIONS = {"commit", "undo_run"}
    FOOTER_FIRST = ("focus_budget", "commit", "undo_run", "next_list", "export", "step")

    # -- messages from workers ---------------------------------------------------
    @dataclass(eq=False)
    class PoolProgress(Message):
        generation: int
        done: int
        total: int

    @dataclass(eq=False)
    class PoolReady(Message):
        generation: int
        pool: PreparedPool
        by_size: Sequence[PoolEntry]

    @dataclass(eq=False)
    class PoolWatched(Message):
        """The watch on the pool's rows for CLEO's evictions and deletions (`PreviewChanges`), after PoolReady."""

        generation: int
        changes: PreviewChanges | None

    @dataclass(eq=False)
    class PoolFailed(Message):
        generation: int
        error: str

    @dataclass(eq=False)
    class SessionsLoaded(Message):
        sessions: list[tuple[str, int]]

    def __init__(self) -> None:
        super().__init__(id="pane-prune")
        self.pool: PreparedPool | None = None
        self.folding = False  # CLEO's rows are being folded in: a row leaving a list is said gone
        self.preview: PrunePreview | None = None
        self.budget: int | None = None
        self.scope = ALL_SCOPE
        self.tokenizer = CHARS4
        self.generation = 0
        self.preparing = False
        self.pool_note = ""
        self.message = ""
        self.budget_error: str | None = None  # the budget box holds no budget: nothing may be committed
        self.result: CommitResult | None = None  # the last commit's outcome
        self.runs: list[Run] = []
        self._blockers: list[PoolEntry] = []
        self.live_rows = 0  # rows CLEO added since the preview was prepared (folded in)
        self.live_tokens = 0
        self.changes: PreviewChanges | None = None  # rows of the pool CLEO evicted or deleted since
        self._changed: tuple[object, int, str] = (None, 0, "")  # (preview, drop count, notice) last shown
        self.recall_index: RecallIndex | None = None
        self.recall_plan: tuple[PreparedPool, DropImpact] | None = None  # the drop order it was prepared for
        self.recall_problem: str | None = None  # the recorded recalls could not be read

    # -- layout -------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        self.tokenizer = configured_tokenizer(self.host.settings)  # the config file's default
        yield from self.compose_chrome_top()
        with Horizontal(id="prune-controls"):
            yield Label("Budget", classes="prune-label")
            yield BudgetInput(placeholder="e.g. 12k", id="prune-budget", compact=True,
                              tooltip="Tokens; a k or M suffix is fine. ↑/↓ step, page up/down step more")
            yield Label("Tokenizer", classes="prune-label")
            yield ChoiceChip([(name, name) for name in TOKENIZER_NAMES], value=self.tokenizer,
                             id="prune-tokenizer", tooltip="How tokens are counted")
            yield Label("Scope", classes="prune-label")
            yield ChoiceChip([("all live observations", ALL_SCOPE)], id="prune-scope",
                             tooltip="The whole live pool or one session's part")
        yield Static(id="prune-status")
        with Horizontal(id="prune-top"):
            yield Static(id="prune-summary")
            yield PruneChart(id="prune-chart")
        yield BudgetBar(id="prune-bar")
        yield ProgressBar(id="prune-progress", show_eta=False)
        with TabbedContent(id="prune-lists"):
            with TabPane("Dropped, in drop order", id="list-dropped"):
                yield LineTable(ENTRY_COLUMNS, self.format_entry, id="prune-dropped")
            with TabPane("Protected", id="list-protected"):
                yield LineTable(PROTECTED_COLUMNS, self.format_protected, id="prune-protected")
            with TabPane("Kept, next to drop first", id="list-kept"):
                yield LineTable(ENTRY_COLUMNS, self.format_entry, id="prune-kept")
            with TabPane("Runs", id="list-runs"):
                yield LineTable(RUN_COLUMNS, self.format_run, id="prune-runs")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        self.table("dropped").focus()
        self._load_sessions()
        self.reload()

    def table(self, name: str) -> LineTable:
        return self.query_one(f"#prune-{name}", LineTable)

    # -- the pool ---------------------------------------------------------------------
    def reload(self, keep_cursor: bool = False) -> None:
        """Prepare the pool again (tokenizer or scope changed, or the brain did); keeps the budget.

        `keep_cursor` is the app's reload convention; the lists keep their cursors anyway.
        """
        self.generation += 1
        self.preparing = True
        self.changes = None  # the next pool brings its own watch
        bar = self.query_one("#prune-progress", ProgressBar)
        bar.update(total=None, progress=0)
        bar.display = True
        self.update_status()
        self._prepare(self.generation, self.tokenizer, None if self.scope == ALL_SCOPE else self.scope)
        self._load_runs()

    @work(thread=True, exclusive=True, group="prune-pool", exit_on_error=False)
    def _prepare(self, generation: int, tokenizer: str, session: str | None) -> None:
        def progress(done: int, total: int) -> None:
            self.post_message(self.PoolProgress(generation, done, total))

        reader = self.session.brain.reader()  # its own connection: page reads elsewhere never wait on this
        try:
            pool = prepare_pool(reader, tokenizer, session, progress)
            by_size = pool.protected_by_size()  # the largest stand most in the way
            self.post_message(self.PoolReady(generation, pool, by_size))
            # The watch's marks are read right after the pool's rows, once the preview is on its way.
            self.post_message(self.PoolWatched(generation, PreviewChanges.of_pool(reader, pool)))
            self._post_impact(generation, reader, pool)
        except BrainError as exc:
            self.post_message(self.PoolFailed(generation, str(exc)))
            return
        finally:
            reader.close()

    def _post_impact(self, generation: int, reader: Brain, pool: PreparedPool) -> None:
        """(In a worker) read every recorded retrieval and prepare the pool's drop order for the impact."""
        index, problem = RecallIndex.load_or_problem(reader)
        plan = index.plan(pool.droppable.ids()) if index is not None else None
        self.post_message(self.ImpactReady(generation, pool, index, plan, problem))

    def on_prune_live_impact_ready(self, message: PruneLive.ImpactReady) -> None:
        if message.generation != self.generation or message.pool is not self.pool:
            return  # prepared or folded anew meanwhile: its own impact follows
        self.recall_index = message.index
        self.recall_problem = message.problem
        self.recall_plan = (message.pool, message.plan) if message.plan is not None else None
        self.table("dropped").redraw()
        self.table("kept").redraw()
        self._show_preview()

    def recall_impact(self) -> RecallImpact | None:
        """The recall impact of the preview on show (a lookup in the prepared drop order); None until ready."""
        preview, plan = self.preview, self.recall_plan
        if preview is None or plan is None or plan[0] is not preview.pool:
            return None
        return plan[1].at(preview.drop_count)

    def on_prune_screen_pool_progress(self, message: PoolProgress) -> None:
        if message.generation == self.generation:
            self.query_one("#prune-progress", ProgressBar).update(total=message.total, progress=message.done)

    def on_prune_screen_pool_ready(self, message: PoolReady) -> None:
        if message.generation != self.generation:
            return  # a newer tokenizer or scope was chosen meanwhile
        pool = message.pool
        self.preparing = False
        self.query_one("#prune-progress", ProgressBar).display = False
        self.pool = pool
        self._blockers = list(message.by_size[:BLOCKERS_SHOWN])
        stats = pool.count_stats
        # No timings here: the status line must read the same on every run (snapshots).
        self.pool_note = (f"{stats.from_cache:,} of {stats.lines:,} line counts from the cache"
                          if stats.cache_used else "")
        self.table("protected").set_listing(ListListing(message.by_size, self._entry_row))
        self.query_one("#prune-chart", PruneChart).set_pool(pool)
        self.fit_budget(pool)
        if self.budget is None or not len(pool):
            self.preview = None
            self._show_preview()
        else:
            self.set_budget(self.budget)

    def fit_budget(self, pool: PreparedPool) -> None:
        """The budget for a pool prepared or folded anew: the pane's default for its size when the user chose
        none. An empty pool has no preview: the pane's own budget is forgotten (the box empties, and the
        first row brings one), and the CSS hides the empty bar and chart."""
        self.set_class(not len(pool), "-empty-pool")
        if not len(pool):
            if self.budget_is_default:
                self.budget = None
                box = self.query_one("#prune-budget", BudgetInput)
                with self.prevent(Input.Changed):  # (not a budget typed: no "the box is empty" error)
                    box.value = ""
        elif self.budget is None:
            self.budget = default_budget(pool.tokens_before)
            self.budget_is_default = True
            self._show_budget_text()

    def on_prune_screen_pool_watched(self, message: PoolWatched) -> None:
        if message.generation == self.generation:
            self.changes = message.changes

    def on_prune_screen_pool_failed(self, message: PoolFailed) -> None:
        if message.generation != self.generation:
            return
        self.preparing = False
        self.query_one("#prune-progress", ProgressBar).display = False
        self.pool = self.preview = None
        self.pool_note = ""
        self.message = message.error
        self.table("protected").set_listing(ListListing([], self._entry_row))
        self.query_one("#prune-chart", PruneChart).set_pool(None)
        self._show_preview()

    # -- the budget: every change re-previews from the prepared pool -------------------------
    def set_budget(self, budget: int) -> None:
        """Preview at `budget`: O(log n) in the pool, O(visible rows) on screen."""
        self.budget = budget
        self.message = ""
        if self.pool is not None:
            self.preview = self.pool.preview(budget)
        self._show_preview()

    def _show_preview(self) -> None:
        preview = self.preview
        chart = self.query_one("#prune-chart", PruneChart)
        bar = self.query_one("#prune-bar", BudgetBar)
        # Its size is fixed in the CSS, so a new text needs no re-layout of the screen; on a narrow
        # terminal it is as tall as its text (no blank rows where the chart was), so it needs one.
        self.query_one("#prune-summary", Static).update(self.summary_text(), layout=self.has_class("-narrow"))
        if preview is None:
            bar.show(None)
        else:
            bar.show(BarFigures(preview.budget, preview.target, *preview.bar()),
                     stale=self.budget_error is not None)
            chart.mark(preview.budget)
        # An invalid budget in the box: the lists are the last valid budget's, and look it.
        self.query_one("#prune-lists", TabbedContent).set_class(self.budget_error is not None, "stale")
        self._sync_window(self.current_list())
        self.update_status()

    def _sync_window(self, name: str) -> None:
        """Point the dropped or kept list at the current preview's part of the drop order.

        Only the list on show is updated (a table's new size costs a layout pass);
        the other one catches up when its tab is opened.
        """
        if name not in ("dropped", "kept"):
            return
        preview = self.preview
        droppable = self.pool.droppable if preview is not None and self.pool is not None else []
        count = preview.drop_count if preview is not None else 0
        window = (ListListing(droppable, self._entry_row, 0, count) if name == "dropped"
                  else ListListing(droppable, self._entry_row, count))
        table = self.table(name)
        shown = table.listing
        if not isinstance(shown, ListListing) or (shown.items, shown.start, shown.stop) != (
                window.items, window.start, window.stop):
            # A budget change keeps the cursor's place (O(1): no search of a million-row window);
            # CLEO's rows folded in keep it on its row, and say so when the row left the list.
            table.set_listing(window, keep_cursor=True, by_index=not self.folding)

    def _label_runs_tab(self) -> None:
        # Counts of dropped/kept rows are in the summary: relabelling tabs on every budget
        # change would re-lay the tab row out each time.
        tab = self.query_one("#prune-lists", TabbedContent).get_tab("list-runs")
        tab.label = Text(f"Runs {len(self.runs):,}")

    def summary_text(self) -> Text:
        """Budget, target, tokens before → after, counts, and fell_back with what stands in the way."""
        preview = self.preview
        text = Text()
        if self.budget_error is not None:
            text.append(" INVALID BUDGET ", style="bold reverse red")
            text.append(f" {one_line(self.budget_error, 300)} Nothing can be committed until the box "
                        "holds a budget.\n")
            if preview is not None:
                text.append(f"(The figures below are for the last valid budget, {preview.budget:,}.)\n",
                            style="italic")
            return text
        if preview is None:
            if self.message:
                text.append("No preview: ", style="bold")
                text.append(one_line(self.message, 400))
            elif self.pool is not None and not len(self.pool):
                where = "in this brain" if self.scope == ALL_SCOPE else "in this session"
                text.append(f"No live observations {where}: there is nothing to prune yet. New observations "
                            "appear here as CLEO writes them.", style="italic")
            else:
                text.append("Preparing the pool…", style="italic")
            return text
        text.append("Budget ", style="bold")
        text.append(f"{preview.budget:,}")
        text.append("  target ", style="bold")
        text.append(f"{preview.target:,} (80%)")
        text.append("\nTokens ", style="bold")
        change = preview.tokens_after - preview.tokens_before
        share = f", {change / preview.tokens_before:+.0%}" if preview.tokens_before else ""
        text.append(f"{preview.tokens_before:,} → {preview.tokens_after:,} ({change:+,}{share})")
        text.append("\nDropped ", style="bold")
        text.append(f"{preview.drop_count:,}")
        text.append("  kept ", style="bold")
        text.append(f"{preview.kept:,} ({len(preview.protected):,} protected)")
        text.append("  (totals count one separator per line)", style="italic")
        text.append("\nRecall ", style="bold")
        impact = self.recall_impact()
        if impact is None and self.recall_problem is not None:
            text.append(f"unavailable: {one_line(self.recall_problem, 200)}", style="italic")
        elif impact is None:
            text.append("weighing the recorded recalls…", style="italic")
        else:  # the whole sentence where it fits on one line, else the same figures in fewer words
            sentence = impact.sentence()
            fits = len(sentence) + 7 <= self.query_one("#prune-summary", Static).content_region.width
            text.append(sentence if fits else impact.short())
        text.append("\n")
        if preview.fell_back:
            text.append(" FELL BACK ", style="bold reverse red")
            # Fell back: everything droppable is gone, so what is left is the protected rows.
            text.append(f" target not met: the protected rows alone hold {preview.protected_tokens:,} tokens, "
                        "and protected rows never drop.\n")
            text.append("In the way, largest first: ", style="bold")
            finish = self.pool.tokenizer.finish if self.pool is not None else (lambda units: units)
            text.append(" · ".join(f"{one_line(e.id, 24)} {finish(e.units):,} tok" for e in self._blockers))
            text.append(" (reasons: Protected list)", style="italic")
        elif preview.drop_count:
            text.append("Drops the first rows of the drop order; c commits (undoable).", style="italic")
        else:
            text.append("Nothing drops: the pool is within its target.", style="italic")
        return text

    def update_status(self) -> None:
        parts = [one_line(self.message, 300)] if self.message and self.pool is not None else []
        scope = "all live observations" if self.scope == ALL_SCOPE else f"session {one_line(self.scope, 40)}"
        if self.preparing:
            # (the pool's whole scan: on a brain never opened its tags take most of the time, not the counts)
            parts.append(f"reading the pool: its tags and token counts ({self.tokenizer}, {scope})…")
        elif self.pool is not None:
            parts.append(f"{len(self.pool):,} live observations · {self.pool.tokenizer.name} · {scope}")
            parts += [self.live_notice()] if self.live_rows else []
            changed = self.changed_notice()
            parts += [changed] if changed else []
            if self.pool_note:
                parts.append(self.pool_note)
        brain = self.session.brain
        if brain is not None and brain.read_only:
            parts.append(f"read-only ({brain.read_only_reason}): commit and undo are disabled")
        update_static(self.query_one("#prune-status", Static), Text(" · ".join(parts)))

    def _show_budget_text(self) -> None:
        box = self.query_one("#prune-budget", BudgetInput)
        if self.budget is not None:
            with self.prevent(Input.Changed):
                box.value = budget_text(self.budget)
            box.set_class(False, "bad-budget")
            self.budget_error = None

    @on(Input.Changed, "#prune-budget")
    def budget_typed(self, event: Input.Changed) -> None:
        problem = budget_problem(event.value)
        event.input.set_class(problem is not None, "bad-budget")
        if problem is not None:
            # The preview stays on screen but is marked invalid, and `c` refuses (issue 13.1).
            self.budget_error = problem
            self.message = ""  # the summary says it, once
            if self.settled_budget is not None and self.settled_budget != self.budget:
                # Typing "99999999999999" passed through valid budgets ("9999…" up to the largest allowed):
                # the preview goes back to the budget from before this edit, not the last keystroke's.
                self.set_budget(self.settled_budget)
            self._show_preview()
            return
        self.budget_error = None
        budget = parse_budget(event.value)
        if budget != self.budget:
            self.budget_is_default = False
            self.set_budget(budget)
        else:
            self.message = ""
            self._show_preview()

    @on(Input.Submitted, "#prune-budget")
    def budget_submitted(self, event: Input.Submitted) -> None:
        if self.budget_error is None:
            self.settled_budget = self.budget
        self.table(self.current_list()).focus()

    settled_budget: int | None = None  # the budget before the box's present edit (an invalid box returns to it)
    budget_is_default = False  # the budget is the pane's default for the pool, not one the user chose

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        if event.widget.id == "prune-budget" and self.budget_error is None:
            self.settled_budget = self.budget

    def action_focus_budget(self) -> None:
        self.query_one("#prune-budget", BudgetInput).focus()

    def action_step(self, direction: int, coarse: int) -> None:
        if self.pool is None or self.budget is None:
            return
        step = nice_step(self.pool.tokens_before, COARSE if coarse else FINE)
        self.budget = stepped(self.budget, step, direction)
        self.budget_is_default = False
        self.settled_budget = self.budget
        self._show_budget_text()
        self.set_budget(self.budget)

    # -- tokenizer and scope: these prepare the pool anew ----------------------------------
    @on(ChoiceChip.Changed, "#prune-tokenizer")
    def tokenizer_chosen(self, event: ChoiceChip.Changed) -> None:
        if event.value in TOKENIZER_NAMES and event.value != self.tokenizer:
            self.tokenizer = event.value
            self.reload()

    @on(ChoiceChip.Changed, "#prune-scope")
    def scope_chosen(self, event: ChoiceChip.Changed) -> None:
        if event.value is not None and event.value != self.scope:
            self.scope = event.value
            if self.budget_is_default:  # the whole pool's default means nothing for one session: redo it
                self.budget = None
            self.reload()

    def action_cycle_tokenizer(self) -> None:
        names = list(TOKENIZER_NAMES)
        self.query_one("#prune-tokenizer", ChoiceChip).value = names[(names.index(self.tokenizer) + 1) % len(names)]

    def action_focus_scope(self) -> None:
        self.query_one("#prune-scope", ChoiceChip).focus()

    @work(thread=True, exclusive=True, group="prune-sessions", exit_on_error=False)
    def _load_sessions(self) -> None:
        self.post_message(self.SessionsLoaded(live_sessions(self.session.brain)))

    def on_prune_screen_sessions_loaded(self, message: SessionsLoaded) -> None:
        choices = [("all live observations", ALL_SCOPE)]
        choices += [(f"{one_line(session, 30)} ({count:,})", session) for session, count in message.sessions]
        chip = self.query_one("#prune-scope", ChoiceChip)
        with self.prevent(ChoiceChip.Changed):
            chip.set_choices(choices)
            chip.value = self.scope if any(v == self.scope for _, v in choices) else ALL_SCOPE

    # -- the lists ------------------------------------------------------------------------
    def _entry_row(self, index: int, entry: PoolEntry) -> Row:
        return {"id": entry.id, "rank": index + 1, "entry": entry}

    def format_entry(self, row: Row) -> dict[str, tuple[str, str]]:
        entry: PoolEntry = row["entry"]
        return {
            "rank": (f"{row['rank']:,}", "table--muted"),
            "id": (entry.id, ""),
            "coverage": coverage_cell(entry),
            "relevance": relevance_cell(entry),
            "created": (entry.created_at[:10], ""),
            "tokens": (f"{self.pool.tokenizer.finish(entry.units):,}" if self.pool else "", ""),
            **self.recall_cells(entry.id),
            "why": (entry.relevance_reason, "table--muted"),
        }

    def recall_cells(self, entry_id: str) -> dict[str, tuple[str, str]]:
        """How often recorded retrievals returned this row, and when last ("" before the index is read)."""
        return recall_cells(self.recall_index, entry_id)

    def format_protected(self, row: Row) -> dict[str, tuple[str, str]]:
        entry: PoolEntry = row["entry"]
        return {
            "id": (entry.id, ""),
            "relevance": relevance_cell(entry),
            "tokens": (f"{self.pool.tokenizer.finish(entry.units):,}" if self.pool else "", ""),
            "reasons": ("; ".join(entry.reasons), "table--protected"),
        }

    def format_run(self, row: Row) -> dict[str, tuple[str, str]]:
        return run_cells(row["run"])

    def current_list(self) -> str:
        active = self.query_one("#prune-lists", TabbedContent).active
        return active.removeprefix("list-") if active else "dropped"

    def action_next_list(self) -> None:
        following = LISTS[(LISTS.index(self.current_list()) + 1) % len(LISTS)]
        self.query_one("#prune-lists", TabbedContent).active = f"list-{following}"
        self.table(following).focus()

    @on(TabbedContent.TabActivated, "#prune-lists")
    def list_shown(self, event: TabbedContent.TabActivated) -> None:
        self._sync_window(self.current_list())
        self.table(self.current_list()).focus()

    @on(LineTable.Selected)
    def row_opened(self, event: LineTable.Selected) -> None:
        event.stop()
        if "run" in event.row:
            self._ask_undo(event.row["run"])
        else:
            self.open_observation(event.row["id"])

    def action_recompute(self) -> None:
        self.reload()

    def on_brain_changed(self, message: BrainChanged) -> None:
        """A write (here or in another pane) changed the live pool: prepare it again.

        CLEO's writes (kind "external") are folded into the prepared pool instead (`fold_new_rows`).
        """
        if message.kind == EXTERNAL and self.pool is not None and not self.preparing:
            self.fold_new_rows()
            return
        self.live_rows = self.live_tokens = 0
        self.reload()
