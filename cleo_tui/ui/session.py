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
import threading
from collections.abc import Callable
from concurrent.futures import Future, wait
from typing import TYPE_CHECKING, Any

from cleo_tui.brain import Brain
from cleo_tui.brain.journal import UndoOutcome
from cleo_tui.brain.store import WAITING_MESSAGE
from cleo_tui.brain.summary import brain_summary
from cleo_tui.brain.sweep_gate import sweep_active
from cleo_tui.memory import cleo_marks, curation, sweeps
from cleo_tui.memory.mapping import relevance_overrides
from cleo_tui.safe_text import plural
from cleo_tui.ui.live import BrainWatcher
from cleo_tui.ui.messages import CURATION, EXTERNAL, RELOAD, UNDO, BrainChanged, ChangeKind, SummaryReady, TagsReady

if TYPE_CHECKING:
    from cleo_tui.brain.live_poll import PollResult
    from cleo_tui.memory.bulk import BulkAction
    from cleo_tui.memory.redaction import RedactionResult
    from cleo_tui.memory.secrets import Finding
    from cleo_tui.memory.tags import ObservationTags, TagTable
    from cleo_tui.ui.app import CleoApp

WAITING_NOTICE = WAITING_MESSAGE  # "waiting for CLEO's write lock…"
# Seconds after opening by which the reads over the whole brain (tags, liveness) start even if
# no pane has shown its first rows (they normally start then: before, they slow the first screen).
BACKGROUND_BY = 3.0
# A change the watcher saw while a worker held the brain is judged ours or CLEO's this often, up to
# this many times (a worker holds the brain for a read, rarely a second); then it counts as CLEO's.
OWN_CHECK_GAP_S = 0.05
OWN_CHECK_TRIES = 40
CurationKind = str  # one of CURATION_STEPS
CURATION_STEPS: dict[str, Callable[[Brain, str], int]] = {
    "pin": curation.pin_observation,
    "unpin": curation.unpin_observation,
    "evict": curation.evict_observation,
    "restore": curation.restore_observation,
    "keep-in-cleo": cleo_marks.keep_in_cleo,  # issue 28: quality raised so CLEO keeps it (undoable)
    "sweep-veto": sweeps.veto_row,  # issue 28: a staged sweep row left out of CLEO's approve (undoable)
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
        # One tags worker at a time: a thread worker runs on when cancelled, and a million
        # rows' scan started again on every write CLEO makes would never end.
        self._tags_busy = False
        self._tags_next: Callable[[], None] | None = None  # what to run when it ends
        self.watcher: BrainWatcher | None = None
        self.sweep: str | None = None  # CLEO's sweep sentence while its gate is up (writes refused)
        self.last_live: PollResult | None = None  # what the watcher last reported (new ids, deletions)
        self._own_version: int | None = None  # brain.conn's data_version: moves only for other writers
        self.unjudged: PollResult | None = None  # a change not yet told ours or CLEO's (the brain was busy)
        self._waiting_cancel: threading.Event | None = None  # set while a write waits for CLEO's lock
        self._first_rows: Future[Any] | None = None  # the first pane's rows, read ahead (read_first_rows)
        self._first_rows_taken = False

    # -- what panes read -----------------------------------------------------------
    @property
    def read_only(self) -> bool:
        return self.brain.read_only

    @property
    def read_only_reason(self) -> str | None:
        return self.brain.read_only_reason if self.brain.read_only else None

    @property
    def tagged(self) -> bool:
        """The brain's kind has observations that cleo-tui tags (not a hippo store: brain/kinds.py)."""
        return self.brain.supports("tags")

    def tag(self, observation_id: str) -> ObservationTags | None:
        """The tags of one observation, or None (not computed yet, or no such row)."""
        return self.tags.get(observation_id) if self.tags is not None else None

    def is_pinned(self, observation_id: str) -> bool:
        return self.overrides.get(observation_id) == "critical"

    # -- loading ----------------------------------------------------------------------
    def read_first_rows(self, read: Callable[[Brain], Any]) -> None:
        """Start `read(brain)` in a thread now, before the first pane is even composed.

        The pane takes its result with `take_first_rows` when mounted; read by then (as a
        rule), its first frame shows the rows. The counts wait for it: both need the
        brain's lock, and the rows come first."""
        future: Future[Any] = Future()

        def run() -> None:
            try:
                future.set_result(read(self.brain))
            except BaseException as exc:  # the pane reads again in a worker, which reports it
                future.set_exception(exc)

        self._first_rows = future
        threading.Thread(target=run, name="cleo-tui first rows", daemon=True).start()

    def take_first_rows(self) -> Future[Any] | None:
        """What `read_first_rows` started (done or not), once; None after that or if none was."""
        if self._first_rows_taken:
            return None
        self._first_rows_taken = True
        return self._first_rows

    def start(self) -> None:
        """Read the counts now; the tags start with the first rows (or by BACKGROUND_BY); watch the file."""
        self.load_summary()
        self.app.set_timer(BACKGROUND_BY, self.start_tags)
        self.start_live()

    # -- the live brain (CLEO writing meanwhile) ---------------------------------------------
    def start_live(self) -> None:
        """Start the watcher that notices CLEO's writes and sweeps (see ui/live.py)."""
        self.sweep = sweep_active(self.brain.path)
        self.app.sweep = self.sweep
        self._own_version = self._brain_version()
        if self.watcher is None:
            self.watcher = BrainWatcher(self)
            self.watcher.start()

    def stop_live(self) -> None:
        """Stop watching (another brain was opened, or the app ends)."""
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
        self.cancel_wait()

    def learn_own_version(self) -> None:
        """The session connection's data_version, if `start_live` found the brain busy (a worker
        reading the first rows): the watcher's thread waits for it before reading its starting
        state, so cleo-tui's own writes are never taken for CLEO's for want of it."""
        if self._own_version is None:
            self._own_version = self.brain.data_version(wait=True)

    def _brain_version(self) -> int | None:
        """The session connection's data_version, if its lock is free now (it moves only for other writers)."""
        return self.brain.data_version(wait=False)

    def live_changed(self, result: PollResult) -> None:
        """The watcher noticed something (UI thread): the sweep gate, or a write by another program."""
        if self.app.session is not self:
            return
        if result.sweep_changed:
            self.sweep = result.state.sweep
            self.app.sweep = self.sweep
            if self.sweep is None:
                self.app.notify("CLEO's sweep finished: writes are possible again.")
        if result.changed:
            self._judge_change(result)

    def _judge_change(self, result: PollResult, tries: int = 0) -> None:
        """Tell cleo-tui's own writes from another program's, then report the latter to every pane.

        Our connection's data_version moves only for other writers' commits. While a worker
        holds the brain it cannot be read: ask again shortly (the change may be ours) rather
        than take it for CLEO's; after OWN_CHECK_TRIES it counts as another program's.
        """
        version = self._brain_version()
        if version is None and tries < OWN_CHECK_TRIES:
            self.unjudged = result
            self.app.set_timer(OWN_CHECK_GAP_S, lambda: self._judge_change(result, tries + 1))
            return
        self.unjudged = None
        ours = (version is not None and version == self._own_version and not result.new_ids
                and not result.deleted)
        self._own_version = version
        if ours:
            return  # cleo-tui's own write, already announced by the session
        self.last_live = result
        self.external_change(result.describe(), result)

    def write_refusal(self) -> str | None:
        """Why writes are refused right now (CLEO's sweep), or None."""
        return self.sweep

    def refuse_write(self) -> bool:
        """Say so and return True when a write must not start now (CLEO is sweeping)."""
        if self.sweep:
            self.app.notify(f"CLEO is sweeping — writes paused. {self.sweep}", severity="warning",
                            markup=False)
            return True
        return False

    def wait_for_lock(self) -> bool:
        """In a write worker: wait for CLEO's write lock in short probes, saying so after ~1 s; False if cancelled.

        While it waits the header says "waiting for CLEO's write lock…" and Esc cancels
        (nothing is written then).
        """
        from cleo_tui.brain.connection import connect
        from cleo_tui.brain.live_poll import wait_for_write_lock
        cancel = threading.Event()
        self._waiting_cancel = cancel

        def waiting() -> None:
            self.app.call_from_thread(self._show_waiting, cancel)

        try:
            # A file replaced under us must not get a writer of ours (it would take the old -wal);
            # the write itself then refuses with the usual message.
            self.brain.ensure_same_file()
            probe = connect(self.brain.path, False)
        except Exception:
            return True
        try:
            # As long as the write itself would wait (30 s, or a test's shorter one).
            wait_for_write_lock(probe, cancel.is_set, waiting, give_up_after=self.brain.busy_timeout_ms() / 1000)
        finally:
            probe.close()
            self.app.call_from_thread(self._hide_waiting, cancel)
        if cancel.is_set():
            self.app.call_from_thread(self.app.notify, "Cancelled: nothing was written.", severity="warning")
            return False
        return True  # free, or waited the busy timeout: the write itself says "stayed locked"

    def _show_waiting(self, cancel: threading.Event) -> None:
        if self._waiting_cancel is cancel and not cancel.is_set():
            self.app.waiting = WAITING_NOTICE
            self.app.notify(WAITING_NOTICE + " (esc cancels)", timeout=3)

    def _hide_waiting(self, cancel: threading.Event) -> None:
        if self._waiting_cancel is cancel:
            self._waiting_cancel = None
            self.app.waiting = None

    def cancel_wait(self) -> bool:
        """Esc while a write waits for CLEO's lock: give up (nothing is written). True if one was waiting."""
        cancel = self._waiting_cancel
        if cancel is None:
            return False
        cancel.set()
        self.app.waiting = None
        return True

    def start_tags(self) -> None:
        """Compute the tags once (panes call this when their first rows are on screen)."""
        if not self._tags_started and self.tagged:
            self._tags_started = True
            self.load_tags()

    def load_summary(self) -> None:
        """Re-read counts and pins in a worker; announces SummaryReady."""
        self.app.run_worker(self._read_summary, thread=True, exclusive=True, group="summary", exit_on_error=False)

    def _read_summary(self) -> None:
        if self._first_rows is not None:
            wait([self._first_rows])
        summary, overrides = brain_summary(self.brain), relevance_overrides(self.brain)
        self.app.call_from_thread(self._set_summary, summary, overrides)

    def _set_summary(self, summary: dict, overrides: dict[str, str]) -> None:
        if self.app.session is not self:
            return  # another brain was opened meanwhile
        self.overrides, self.summary = overrides, summary
        self.app.summary = summary
        self.app.announce(SummaryReady())

    def load_tags(self) -> None:
        """Recompute the tags in a worker (on their own connection); announces TagsReady.

        A reopened brain's tags come from its last scan first (announced at once), then
        again once every row was checked against it (see memory/scan_snapshot.py)."""
        self._run_tags(self._read_tags)

    def _run_tags(self, work: Callable[[], None]) -> None:
        """Start `work` in the tags worker, or after the one running (a full load outranks a fold)."""
        if self._tags_busy:
            if self._tags_next != self._read_tags:
                self._tags_next = work
            return
        self._tags_busy = True

        def run() -> None:
            try:
                work()
            finally:
                self.app.call_from_thread(self._tags_done)

        self.app.run_worker(run, thread=True, group="tags", exit_on_error=False)

    def _tags_done(self) -> None:
        self._tags_busy = False
        work, self._tags_next = self._tags_next, None
        if work is not None and self.app.session is self:
            self._run_tags(work)

    def _read_tags(self) -> None:
        from cleo_tui.memory.tags import tag_brain  # heavy: kept off the first screen's path
        reader = self.brain.reader()
        try:
            tags = tag_brain(reader, lambda early: self.app.call_from_thread(self._set_tags, early))
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
        if self.tagged:
            self._tags_started = True
            self.load_tags()

    # -- writes ---------------------------------------------------------------------
    def curate(self, kind: CurationKind, observation_id: str) -> None:
        """Pin, unpin, evict or restore one observation in a worker (undoable with `undo`)."""
        step = CURATION_STEPS[kind]
        if self.refuse_write():
            return

        def write() -> None:
            if not self.wait_for_lock():
                return
            run_id = step(self.brain, observation_id)
            self.app.call_from_thread(self.record_write, f"{kind} {observation_id}", run_id)

        self.app.run_worker(write, thread=True, exclusive=True, group="curation", exit_on_error=False)

    def bulk(self, action: BulkAction, ids: list[str], described: str) -> None:
        """Evict, restore or pin `ids` (a filter's rows, `described`) as one run in a worker; u undoes it."""
        if self.refuse_write():
            return

        def write() -> None:
            from cleo_tui.memory.bulk import apply_bulk
            if not self.wait_for_lock():
                return
            result = apply_bulk(self.brain, action, ids, described)
            left = f"; {result.left:,} had changed and were left alone" if result.left else ""
            self.app.call_from_thread(self.record_write, f"{action} of {len(result.done):,} observation"
                                      f"{'' if len(result.done) == 1 else 's'} ({described}){left}", result.run_id)

        self.app.run_worker(write, thread=True, exclusive=True, group="curation", exit_on_error=False)

    def redact_secrets(self, findings: list[Finding]) -> None:
        """Redact the secrets of these findings' rows in a worker (cannot be undone); a dialog says what was done."""
        if self.refuse_write():
            return

        def write() -> None:
            from cleo_tui.memory.redaction import redact
            if not self.wait_for_lock():
                return
            result = redact(self.brain, findings)
            self.app.call_from_thread(self._redacted, result)

        self.app.run_worker(write, thread=True, exclusive=True, group="curation", exit_on_error=False)

    def _redacted(self, result: RedactionResult) -> None:
        self._announce_change(CURATION, f"redaction of {plural(result.secrets, 'secret')}", None, None, notify=False)
        self.app.tell("Secrets redacted", "\n".join(result.lines()))

    def undo(self) -> None:
        """Undo the latest run made in this session (says so when there is none)."""
        if not self.undo_stack:
            self.app.notify("Nothing to undo in this session.", severity="warning")
            return
        self.undo_run(self.undo_stack.pop())

    def undo_run(self, run_id: int) -> None:
        """Undo one curation run (any, e.g. a prune run chosen in a list) in a worker."""
        if self.refuse_write():
            return
        if run_id in self.undo_stack:
            self.undo_stack.remove(run_id)

        def write() -> None:
            if not self.wait_for_lock():
                return
            outcome = curation.undo_detailed(self.brain, run_id)
            self.app.call_from_thread(self._undone, outcome)

        self.app.run_worker(write, thread=True, exclusive=True, group="curation", exit_on_error=False)

    def _undone(self, outcome: UndoOutcome) -> None:
        """Announce an undo: a toast when all of it was undone, else a dialog naming the rows it could not
        restore (CLEO deleted or changed them meanwhile); a run with changes left can be undone again."""
        self._announce_change(UNDO, curation.undo_summary(outcome), None, None,
                              notify=outcome.clean)
        if outcome.remaining:
            self.undo_stack.append(outcome.run_id)
        if not outcome.clean:
            self.app.tell("Undo: some rows could not be restored", "\n".join(outcome.lines("undoing it again (u)")))

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

    def external_change(self, what: str = "", result: PollResult | None = None) -> None:
        """Another program wrote to the brain file (the live-brain watcher): counts, tags for the
        new rows only, then BrainChanged("external") to every pane. Quiet: no notification."""
        self.brain.refresh()
        self.load_summary()
        if self.tagged:
            if self.tags is not None or self._tags_busy:  # a load under way: fold after it
                self.update_tags()
            elif self._tags_started:
                self.load_tags()
        self.app.announce(BrainChanged(EXTERNAL, what))

    def update_tags(self) -> None:
        """Fold the rows above the tags' high-water mark into them in a worker (never a full re-tag)."""
        self._run_tags(self._update_tags)

    def _update_tags(self) -> None:
        from cleo_tui.memory.tags import update_tags
        tags = self.tags
        if tags is None:
            return
        reader = self.brain.reader()
        try:
            updated = update_tags(reader, tags)
        finally:
            reader.close()
        self.app.call_from_thread(self._set_tags, updated)

    def _announce_change(self, kind: ChangeKind, what: str, run_id: int | None, source: str | None,
                         notify: bool = True) -> None:
        if notify:
            self.app.notify(f"Done: {what}." + (" u undoes it." if run_id is not None else ""))
        self.refresh_derived()
        self.app.announce(BrainChanged(kind, what, run_id, source))

    def close(self) -> None:
        self.stop_live()
        self.brain.close()
