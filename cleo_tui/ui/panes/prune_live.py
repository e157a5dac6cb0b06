"""The Prune pane's live pool: CLEO's new rows folded into the prepared drop order, and the rows of
the preview CLEO evicted or deleted since, counted (`PreviewChanges`).

`PruneLive` is a base of the Prune pane (panes/prune.py), which prepares the pool and shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual import work
from textual.message import Message

from cleo_tui.brain.rows import Row
from cleo_tui.brain.store import Brain
from cleo_tui.memory.preview_changes import PreviewChanges
from cleo_tui.memory.pruner import PoolEntry, PreparedPool, pool_rowids
from cleo_tui.recall.impact import DropImpact, RecallIndex
from cleo_tui.ui.panes.prune_actions import PruneActions
from cleo_tui.ui.widgets.list_listing import ListListing
from cleo_tui.ui.widgets.prune_chart import PruneChart
from cleo_tui.ui.widgets.prune_lists import BLOCKERS_SHOWN


class PruneLive(PruneActions):
    """Folds CLEO's writes into the prepared pool; the pane (PruneScreen) prepares and shows it."""

    pool: PreparedPool | None
    generation: int
    budget: int | None
    changes: PreviewChanges | None
    recall_index: RecallIndex | None
    live_rows: int
    live_tokens: int
    folding: bool
    _changed: tuple[object, int, str]
    _blockers: list[PoolEntry]

    @dataclass(eq=False)
    class ImpactReady(Message):
        """The recorded retrievals read and the pool's drop order prepared for the recall impact."""

        generation: int
        pool: PreparedPool
        index: RecallIndex | None
        plan: DropImpact | None
        problem: str | None = None  # why the recorded recalls could not be read

    @dataclass(eq=False)
    class PoolFolded(Message):
        """CLEO's new rows folded into the prepared pool (`pool.refreshed`): rows and tokens they add."""

        generation: int
        pool: PreparedPool
        by_size: Sequence[PoolEntry]

    # -- what the pane provides -------------------------------------------------------------
    def _post_impact(self, generation: int, reader: Brain, pool: PreparedPool) -> None:
        raise NotImplementedError

    def _show_preview(self) -> None:
        raise NotImplementedError

    def fit_budget(self, pool: PreparedPool) -> None:
        raise NotImplementedError

    def _entry_row(self, index: int, entry: PoolEntry) -> Row:
        raise NotImplementedError

    # -- the live pool: CLEO's new rows folded into the drop order ------------------------
    def live_notice(self) -> str:
        """ "N new observations since this preview, +T tokens" (folded into the drop order)."""
        rows = self.live_rows
        return (f"{rows:,} new observation{'s' if rows != 1 else ''} since this preview, "
                f"{self.live_tokens:+,} tokens (in the drop order now)")

    def changed_notice(self) -> str:
        """ "N rows of this preview changed since (evicted or deleted by CLEO)…", or "" (`PreviewChanges`)."""
        preview, changes = self.preview, self.changes
        if preview is None or changes is None:
            return ""
        shown_for, drop_count, notice = self._changed
        if shown_for is not preview or drop_count != preview.drop_count:
            found = changes.counts()
            if found.total:  # which of them the preview drops: only worth reading when some changed
                found = changes.counts(pool_rowids(preview.pool, preview.drop_count))
            notice = found.notice()
            self._changed = (preview, preview.drop_count, notice)
        return notice

    def fold_new_rows(self) -> None:
        """Fold the rows CLEO added into the prepared pool in a worker (never a full prepare);
        look for rows of the pool CLEO evicted or deleted meanwhile."""
        if self.pool is not None:
            self._fold(self.generation, self.pool, self.changes, self.recall_index)

    @work(thread=True, exclusive=True, group="prune-fold", exit_on_error=False)
    def _fold(self, generation: int, pool: PreparedPool, changes: PreviewChanges | None,
              index: RecallIndex | None = None) -> None:
        reader = self.session.brain.reader()
        try:
            folded = pool.refreshed(reader)
            if changes is not None:
                changes.fold(pool, folded)
                changes.check(reader)
            by_size = folded.protected_by_size()
            self.post_message(self.PoolFolded(generation, folded, by_size))
            if index is not None:  # the retrievals known, on the new drop order at once: the line never blanks
                self.post_message(self.ImpactReady(generation, folded, index, index.plan(folded.droppable.ids())))
            self._post_impact(generation, reader, folded)  # then CLEO's new retrievals too
        finally:
            reader.close()

    def on_prune_live_pool_folded(self, message: PoolFolded) -> None:
        old = self.pool
        if message.generation != self.generation or old is None or self.preparing:
            return  # prepared anew meanwhile
        pool = message.pool
        self._changed = (None, 0, "")  # the checks may have found more: count again
        self.live_rows += len(pool) - len(old)
        self.live_tokens += pool.tokens_before - old.tokens_before
        self.pool = pool
        self._blockers = list(message.by_size[:BLOCKERS_SHOWN])
        self.table("protected").set_listing(ListListing(message.by_size, self._entry_row), keep_cursor=True)
        self.query_one("#prune-chart", PruneChart).set_pool(pool)
        self.fit_budget(pool)
        # (not set_budget: that clears the pane's message)
        self.preview = pool.preview(self.budget) if self.budget is not None and len(pool) else None
        self.folding = True
        try:
            self._show_preview()
        finally:
            self.folding = False
