"""The brain session: the open brain and everything the app knows about it.

One `BrainSession` per open brain. Panes reach it as `self.session` (PaneScreen)
or `app.session` (CleoApp); nothing else holds the brain, its tags, the pins,
the counts or the undo stack. Every write made through the session (or reported
to it with `record_write`) is announced to every open pane as a `BrainChanged`
message; recomputed tags and counts as `TagsReady` and `SummaryReady`.

Slow work runs in thread workers started on the app (so their failures become
the app's popups); the methods return at once.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TYPE_CHECKING

from cleo_tui.brain import Brain
from cleo_tui.brain.store import KIND_HIPPO
from cleo_tui.brain.summary import brain_summary
from cleo_tui.memory import curation
from cleo_tui.memory.mapping import relevance_overrides
from cleo_tui.ui.messages import CURATION, EXTERNAL, RELOAD, UNDO, BrainChanged, ChangeKind, SummaryReady, TagsReady

if TYPE_CHECKING:
    from cleo_tui.memory.tags import ObservationTags, TagTable
    from cleo_tui.ui.app import CleoApp

CurationKind = str  # one of CURATION_STEPS
CURATION_STEPS: dict[str, Callable[[Brain, str], int]] = {
    "pin": curation.pin_observation,
    "unpin": curation.unpin_observation,
    "evict": curation.evict_observation,
    "restore": curation.restore_observation,
}


class BrainSession:
    """The open `brain`, its `tags`, `overrides` (pins), `summary` (counts) and undo stack.

    `tags` is None until computed (they start after the first rows are shown, see
    `start_tags`); `summary` is None until read. Both are replaced, never mutated.
    """

    def __init__(self, app: CleoApp, brain: Brain) -> None:
        self.app = app
        self.brain = brain
        self.tags: TagTable | None = None
        self.overrides: dict[str, str] = {}
        self.summary: dict | None = None
        self.undo_stack: list[int] = []
        self._tags_started = False

    # -- what panes read -----------------------------------------------------------
    @property
    def read_only(self) -> bool:
        return self.brain.read_only

    @property
    def read_only_reason(self) -> str | None:
        return self.brain.read_only_reason if self.brain.read_only else None

    @property
    def is_hippo(self) -> bool:
        """A hippo store: no CLEO observations, so no tags; only traces."""
        return self.brain.kind == KIND_HIPPO

    def tag(self, observation_id: str) -> ObservationTags | None:
        """The tags of one observation, or None (not computed yet, or no such row)."""
        return self.tags.get(observation_id) if self.tags is not None else None

    def is_pinned(self, observation_id: str) -> bool:
        return self.overrides.get(observation_id) == "critical"

    # -- loading ----------------------------------------------------------------------
    def start(self) -> None:
        """Read the counts now; the tags start with the first rows, or after a second."""
        self.load_summary()
        self.app.set_timer(1.0, self.start_tags)

    def start_tags(self) -> None:
        """Compute the tags once (panes call this when their first rows are on screen)."""
        if not self._tags_started and not self.is_hippo:
            self._tags_started = True
            self.load_tags()

    def load_summary(self) -> None:
        """Re-read counts and pins in a worker; announces SummaryReady."""
        self.app.run_worker(self._read_summary, thread=True, exclusive=True, group="summary", exit_on_error=False)

    def _read_summary(self) -> None:
        summary, overrides = brain_summary(self.brain), relevance_overrides(self.brain)
        self.app.call_from_thread(self._set_summary, summary, overrides)

    def _set_summary(self, summary: dict, overrides: dict[str, str]) -> None:
        if self.app.session is not self:
            return  # another brain was opened meanwhile
        self.overrides, self.summary = overrides, summary
        self.app.summary = summary
        self.app.announce(SummaryReady())

    def load_tags(self) -> None:
        """Recompute the tags in a worker (on their own connection); announces TagsReady."""
        self.app.run_worker(self._read_tags, thread=True, exclusive=True, group="tags", exit_on_error=False)

    def _read_tags(self) -> None:
        from cleo_tui.memory.tags import tag_brain  # heavy: kept off the first screen's path
        reader = self.brain.reader()
        try:
            tags = tag_brain(reader)
        finally:
            reader.close()
        self.app.call_from_thread(self._set_tags, tags)

    def _set_tags(self, tags: TagTable) -> None:
        if self.app.session is not self:
            return
        self.tags = tags
        # A million tag objects would otherwise be walked by every full garbage
        # collection, which the UI thread pays for on ordinary keypresses.
        gc.freeze()
        self.app.announce(TagsReady())

    def refresh_derived(self) -> None:
        """Counts and (on a CLEO brain) tags again, after any write."""
        self.load_summary()
        if not self.is_hippo:
            self._tags_started = True
            self.load_tags()

    # -- writes ---------------------------------------------------------------------
    def curate(self, kind: CurationKind, observation_id: str) -> None:
        """Pin, unpin, evict or restore one observation in a worker (undoable with `undo`)."""
        step = CURATION_STEPS[kind]

        def write() -> None:
            run_id = step(self.brain, observation_id)
            self.app.call_from_thread(self.record_write, f"{kind} {observation_id}", run_id)

        self.app.run_worker(write, thread=True, exclusive=True, group="curation", exit_on_error=False)

    def undo(self) -> None:
        """Undo the latest run made in this session (says so when there is none)."""
        if not self.undo_stack:
            self.app.notify("Nothing to undo in this session.", severity="warning")
            return
        self.undo_run(self.undo_stack.pop())

    def undo_run(self, run_id: int) -> None:
        """Undo one curation run (any, e.g. a prune run chosen in a list) in a worker."""
        if run_id in self.undo_stack:
            self.undo_stack.remove(run_id)

        def write() -> None:
            _, restored = curation.undo(self.brain, run_id)
            self.app.call_from_thread(self._announce_change, UNDO, f"undo of run {run_id} ({restored} row(s))", None,
                                      None)

        self.app.run_worker(write, thread=True, exclusive=True, group="curation", exit_on_error=False)

    def record_write(self, what: str, run_id: int | None, source: str | None = None, notify: bool = True) -> None:
        """A write made elsewhere (a pane's own worker): remember its run for undo and announce it.

        Call on the UI thread. `source` is the pane that wrote (see BrainChanged.source).
        """
        if run_id is not None:
            self.undo_stack.append(run_id)
        self._announce_change(CURATION, what, run_id, source, notify)

    def reload(self) -> None:
        """Read the brain again (after CLEO wrote): counts, tags, every pane."""
        self.brain.refresh()
        self.refresh_derived()
        self.app.announce(BrainChanged(RELOAD, "reload"))

    def external_change(self, what: str = "") -> None:
        """Another program wrote to the brain file (for the live-brain watcher): like reload, quietly."""
        self.brain.refresh()
        self.refresh_derived()
        self.app.announce(BrainChanged(EXTERNAL, what))

    def _announce_change(self, kind: ChangeKind, what: str, run_id: int | None, source: str | None,
                         notify: bool = True) -> None:
        if notify:
            self.app.notify(f"Done: {what}." + (" u undoes it." if run_id is not None else ""))
        self.refresh_derived()
        self.app.announce(BrainChanged(kind, what, run_id, source))

    def close(self) -> None:
        self.brain.close()
