"""The brain session: the open brain and everything the app knows about it.

One `BrainSession` per open brain. Panes reach it as `self.session` (PaneScreen)
or `app.session` (CleoApp); nothing else holds the brain, its tags, the pins,
the counts or the undo stack. It is a model: it drives no widget. Panes subscribe
(`subscribe`) and receive what it announces: every write made through the session
(`write`, `curate`, `bulk`, `undo`…) as a `BrainChanged` message, recomputed tags
and counts as `TagsReady` and `SummaryReady`. The app listens (`listener`) for the
same and for the rest of its news (`Notice`, `Report`, `LiveState`: CLEO's sweep,
the wait for its lock) and shows them.

Slow work runs in thread workers started on the app (so their failures become
the app's popups); the methods return at once. Not being a message pump, the session
cannot be posted a message: its workers hand results to the UI thread through the app's
`call_from_thread` (see `from_worker`). Panes' and widgets' workers post typed messages
to themselves instead (docs/architecture.md, "Workers").
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from cleo_tui.brain import Brain
from cleo_tui.brain.journal import UndoOutcome
from cleo_tui.brain.rows import JsonObject
from cleo_tui.brain.store import WAITING_MESSAGE
from cleo_tui.brain.summary import brain_summary
from cleo_tui.brain.sweep_gate import sweep_active
from cleo_tui.memory import cleo_marks, curation, sweeps
from cleo_tui.memory.mapping import relevance_overrides
from cleo_tui.memory.pool_scan.in_subprocess import ScanAhead, ScanProcess
from cleo_tui.safe_text import one_line, plural
from cleo_tui.ui.live import BrainWatcher
from cleo_tui.ui.messages import (
    CURATION,
    EXTERNAL,
    RELOAD,
    UNDO,
    BrainChanged,
    ChangeKind,
    ChosenEnded,
    LiveState,
    Notice,
    Report,
    SessionMessage,
    SessionNews,
    SummaryReady,
    TagsProgress,
    TagsReady,
    Written,
)

if TYPE_CHECKING:
    from textual.message_pump import MessagePump
    from textual.timer import Timer
    from textual.worker import Worker

    from cleo_tui.brain.live_poll import PollResult
    from cleo_tui.memory.bulk import BulkAction, BulkResult
    from cleo_tui.memory.redaction import RedactionResult
    from cleo_tui.memory.secrets import Finding
    from cleo_tui.memory.tags import ObservationTags, TagTable

WAITING_NOTICE = WAITING_MESSAGE  # "waiting for CLEO's write lock…"
# Seconds after opening by which the reads over the whole brain (tags, liveness) start even if
# no pane has shown its first rows (they normally start then: before, they slow the first screen).
BACKGROUND_BY = 3.0
# A change the watcher saw while a worker held the brain is judged ours or CLEO's this often, up to
# this many times (a worker holds the brain for a read, rarely a second); then it counts as CLEO's.
OWN_CHECK_GAP_S = 0.05
OWN_CHECK_TRIES = 40
CurationKind = Literal["pin", "unpin", "evict", "restore", "keep-in-cleo", "sweep-veto"]  # CURATION_STEPS' keys
CURATION_STEPS: dict[CurationKind, Callable[[Brain, str], int]] = {
    "pin": curation.pin_observation,
    "unpin": curation.unpin_observation,
    "evict": curation.evict_observation,
    "restore": curation.restore_observation,
    "keep-in-cleo": cleo_marks.keep_in_cleo,  # issue 28: quality raised so CLEO keeps it (undoable)
    "sweep-veto": sweeps.veto_row,  # issue 28: a staged sweep row left out of CLEO's approve (undoable)
}

T = TypeVar("T")


class Runner(Protocol):
    """Where the session runs its work: the app's workers, timers and UI thread (Textual's App)."""

    def run_worker(self, work: Callable[[], Any], *, thread: bool = ..., group: str = ...,
                   exclusive: bool = ..., exit_on_error: bool = ...) -> Worker[Any]: ...

    def set_timer(self, delay: float, callback: Callable[[], Any]) -> Timer: ...

    def call_from_thread(self, callback: Callable[..., Any], *args: Any) -> Any: ...


Listener = Callable[["BrainSession", SessionNews], None]


class BrainSession:
    """The open `brain`, its `tags`, `overrides` (pins), `summary` (counts) and undo stack.

    `tags` is None until computed (they start after the first rows are shown, see
    `start_tags`); `summary` is None until read. Both are replaced, never mutated.
    """

    def __init__(self, runner: Runner, brain: Brain, listener: Listener | None = None,
                 first_scan: ScanProcess | None = None) -> None:
        self.runner = runner
        self.listener = listener  # the app: shows the session's news (counts, sweep, notices)
        self.brain = brain
        self.current = True  # False once another brain was opened: late results are dropped
        self.subscribers: list[MessagePump] = []  # the panes receiving the session's messages
        self.waiting: str | None = None  # "waiting for CLEO's write lock…" while a write waits
        self.tags: TagTable | None = None
        self.tags_percent: int | None = None  # how far a whole scan for the tags got (rows read), while it runs
        self.overrides: dict[str, str] = {}
        self.summary: JsonObject | None = None
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
        self.chosen: list[str] = []  # the writes and exports the user chose that are under way (`run_chosen`)
        self._ended = threading.Event()  # the session ended: a first scan still running is given up
        self._first_rows: Future[Any] | None = None  # the first pane's rows, read ahead (read_first_rows)
        self._first_rows_taken = False
        # A large brain's first scan process: started before the app (`first_scan`), else with the first screen.
        self._scan_ahead = ScanAhead(self._ended, first_scan)

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

    @property
    def protection_known(self) -> bool:
        """Whether the tags are computed with every row's protection (not only a first scan's first look);
        True for a kind that has no tags (nothing to wait for)."""
        return not self.tagged or (self.tags is not None and not self.tags.protection_pending)

    def tag(self, observation_id: str | None) -> ObservationTags | None:
        """The tags of one observation, or None (not computed yet, or no such row). A NULL id is
        the scan's empty one."""
        if self.tags is None:
            return None
        return self.tags.get("" if observation_id is None else observation_id)

    def is_pinned(self, observation_id: str) -> bool:
        return self.overrides.get(observation_id) == "critical"

    # -- who hears the session ---------------------------------------------------------
    def subscribe(self, pane: MessagePump) -> None:
        """`pane` now receives the session's messages (BrainChanged, TagsReady…)."""
        if pane not in self.subscribers:
            self.subscribers.append(pane)

    def unsubscribe(self, pane: MessagePump) -> None:
        if pane in self.subscribers:
            self.subscribers.remove(pane)

    def announce(self, message: SessionMessage) -> None:
        """Deliver a copy of `message` to every subscribed pane, and tell the listener."""
        for pane in list(self.subscribers):
            pane.post_message(replace(message))
        self._tell(message)

    def _tell(self, news: SessionNews) -> None:
        if self.listener is not None:
            self.listener(self, news)

    def notify(self, text: str, severity: Notice.Severity = "information", timeout: float | None = None) -> None:
        """A short notice for the user (the app shows it as a toast)."""
        self._tell(Notice(text, severity, timeout))

    def from_worker(self, callback: Callable[..., Any], *args: Any) -> Any:
        """Run `callback(*args)` on the UI thread from a worker, and wait for it.

        The session's worker-to-UI style (a model, it receives no messages; panes and widgets
        post typed messages instead): the result is applied before the worker ends, so whoever
        waits for the workers (tests, shutdown) sees it applied."""
        return self.runner.call_from_thread(callback, *args)

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
        """Read the counts now; the tags start with the first rows (or by BACKGROUND_BY) — a large brain's
        first scan process already now, beside the first screen; watch the file."""
        self.load_summary()
        if self.tagged and not self._scan_ahead.has_process:
            self._scan_ahead.expect()
            self.runner.run_worker(partial(self._scan_ahead.start, self.brain.reader), thread=True,
                                   group="scan ahead", exit_on_error=False)
        self.runner.set_timer(BACKGROUND_BY, self.start_tags)
        self.start_live()

    # -- the live brain (CLEO writing meanwhile) ---------------------------------------------
    def start_live(self) -> None:
        """Start the watcher that notices CLEO's writes and sweeps (see ui/live.py)."""
        self.sweep = sweep_active(self.brain.path)
        self._tell(LiveState())
        self._own_version = self._brain_version()
        if self.watcher is None:
            self.watcher = BrainWatcher(self)
            self.watcher.start()

    def stop_reads(self) -> None:
        """End the long reads of the brain's readers at once (the app ends; see Brain.stop_reads)."""
        self.brain.stop_reads()

    def stop_live(self) -> None:
        """Stop watching and give up a first scan still running (another brain was opened, or the app ends)."""
        self._ended.set()
        self._scan_ahead.end()
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
        if not self.current:
            return
        if result.sweep_changed:
            self.sweep = result.state.sweep
            self._tell(LiveState())
            if self.sweep is None:
                self.notify("CLEO's sweep finished: writes are possible again.")
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
            self.runner.set_timer(OWN_CHECK_GAP_S, lambda: self._judge_change(result, tries + 1))
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
            self.notify(f"CLEO is sweeping — writes paused. {self.sweep}", severity="warning")
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
            self.from_worker(self._show_waiting, cancel)

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
            self.from_worker(self._hide_waiting, cancel)
        if cancel.is_set():
            self.from_worker(self.notify, "Cancelled: nothing was written.", "warning")
            return False
        return True  # free, or waited the busy timeout: the write itself says "stayed locked"

    def _show_waiting(self, cancel: threading.Event) -> None:
        if self._waiting_cancel is cancel and not cancel.is_set():
            self.waiting = WAITING_NOTICE
            self._tell(LiveState())
            self.notify(WAITING_NOTICE + " (esc cancels)", timeout=3)

    def _hide_waiting(self, cancel: threading.Event) -> None:
        if self._waiting_cancel is cancel:
            self._waiting_cancel = None
            self.waiting = None
            self._tell(LiveState())

    def cancel_wait(self) -> bool:
        """Esc while a write waits for CLEO's lock: give up (nothing is written). True if one was waiting."""
        cancel = self._waiting_cancel
        if cancel is None:
            return False
        cancel.set()
        self.waiting = None
        self._tell(LiveState())
        return True

    def start_tags(self) -> None:
        """Compute the tags once (panes call this when their first rows are on screen)."""
        if not self._tags_started and self.tagged:
            self._tags_started = True
            self.load_tags()

    def load_summary(self) -> None:
        """Re-read counts and pins in a worker; announces SummaryReady."""
        self.runner.run_worker(self._read_summary, thread=True, exclusive=True, group="summary", exit_on_error=False)

    def _read_summary(self) -> None:
        if self._first_rows is not None:
            wait([self._first_rows])
        summary, overrides = brain_summary(self.brain), relevance_overrides(self.brain)
        self.from_worker(self._set_summary, summary, overrides)

    def _set_summary(self, summary: JsonObject, overrides: dict[str, str]) -> None:
        if not self.current:
            return  # another brain was opened meanwhile
        self.overrides, self.summary = overrides, summary
        self.announce(SummaryReady())

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
                self.from_worker(self._tags_done)

        self.runner.run_worker(run, thread=True, group="tags", exit_on_error=False)

    def _tags_done(self) -> None:
        self._tags_busy = False
        work, self._tags_next = self._tags_next, None
        if work is not None and self.current:
            self._run_tags(work)

    def _read_tags(self) -> None:
        from cleo_tui.memory.tags import ScanCancelled, tag_brain  # heavy: kept off the first screen's path
        started = self._scan_ahead.take()
        reader = self.brain.reader()
        try:
            tags = tag_brain(reader, lambda early: self.from_worker(self._set_tags, early.ready()), self._ended,
                             self._scan_progress, started)
        except ScanCancelled:
            return  # the session ended during a first scan: nobody waits for its tags
        finally:
            reader.close()
        self.from_worker(self._set_tags, tags.ready())

    def _scan_progress(self, done: int, total: int) -> None:
        """From the tags worker (or the thread following a scan process): a whole percent more read
        is told to the panes. Only a progress display: once the app stops, it is not told."""
        percent = min(100, done * 100 // total) if total else 0
        if percent != self.tags_percent:
            self.tags_percent = percent
            with contextlib.suppress(RuntimeError):  # (the app no longer runs)
                self.runner.call_from_thread(self._tell_progress)

    def _tell_progress(self) -> None:
        if self.current and not self.protection_known:
            self.announce(TagsProgress())

    def _set_tags(self, tags: TagTable) -> None:
        if not self.current or (tags.protection_pending and self.protection_known):
            return  # (a first look is never shown over tags that know protection)
        self.tags = tags
        if not tags.protection_pending:
            self.tags_percent = None
        self.announce(TagsReady())

    def refresh_derived(self) -> None:
        """Counts and (on a CLEO brain) tags again, after any write."""
        self.load_summary()
        if self.tagged:
            self._tags_started = True
            self.load_tags()

    # -- writes ---------------------------------------------------------------------
    def write(self, label: str, step: Callable[[Brain], T], done: Callable[[T], Written | None] | None = None,
              *, source: str | None = None, group: str = "curation") -> bool:
        """The one write path: `step(brain)` in a worker, after the sweep gate and CLEO's write lock.

        Refused (False, said) while CLEO sweeps; in the worker it waits for CLEO's lock in short
        probes (the header says so, esc cancels and nothing is written), then runs `step`. Back on
        the UI thread `done(result)` says what was written (a `Written`, or None when nothing was
        or the pane says it itself): its run is kept for undo (u) and every pane hears
        `BrainChanged`. Without `done`, `step` returns the run id and `label` is what it did.
        A failure of `step` is the app's popup (the worker's error), and nothing is announced.
        """
        if self.refuse_write():
            return False
        report = done if done is not None else (lambda run_id: Written(label, run_id))

        def run() -> None:
            if not self.wait_for_lock():
                return
            result = step(self.brain)
            self.from_worker(self._written, report, result, source)

        self.run_chosen(label, run, group)
        return True

    def run_chosen(self, label: str, work: Callable[[], None], group: str) -> None:
        """Run `work`, which the user chose (a write, an export), in a worker; listed in `chosen`
        until it ends (then ChosenEnded is told), so that quitting waits for it.

        Never exclusive: a second choice must not cancel the first before its thread started
        (Textual then drops it unrun)."""
        self.chosen.append(label)

        def run() -> None:
            done = False
            try:
                work()
                done = True
            finally:
                with contextlib.suppress(RuntimeError):  # (the app no longer runs)
                    self.from_worker(self._chosen_ended, label, not done)

        self.runner.run_worker(run, thread=True, group=group, exit_on_error=False)

    def run_export(self, path: str | Path, work: Callable[[], None], group: str) -> None:
        """`run_chosen` for an export the user chose to write to `path` (named by it)."""
        self.run_chosen(f"export to {one_line(str(path), 80)}", work, group)

    def _chosen_ended(self, label: str, failed: bool) -> None:
        self.chosen.remove(label)
        self._tell(ChosenEnded(label, failed))

    def _written(self, report: Callable[[T], Written | None], result: T, source: str | None) -> None:
        written = report(result)
        if written is None:
            return
        if written.kind == UNDO:
            self._announce_change(UNDO, written.what, None, source, written.notify)
            return
        self.record_write(written.what, written.run_id, source, written.notify)

    def curate(self, kind: CurationKind, observation_id: str) -> None:
        """Pin, unpin, evict or restore one observation in a worker (undoable with `undo`)."""
        step = CURATION_STEPS[kind]
        self.write(f"{kind} {observation_id}", lambda brain: step(brain, observation_id))

    def bulk(self, action: BulkAction, ids: list[str], described: str) -> None:
        """Evict, restore or pin `ids` (a filter's rows, `described`) as one run in a worker; u undoes it."""
        from cleo_tui.memory.bulk import apply_bulk

        def done(result: BulkResult) -> Written:
            left = f"; {result.left:,} had changed and were left alone" if result.left else ""
            return Written(f"{action} of {len(result.done):,} observation"
                           f"{'' if len(result.done) == 1 else 's'} ({described}){left}", result.run_id)

        self.write(f"{action} of {described}", lambda brain: apply_bulk(brain, action, ids, described), done)

    def redact_secrets(self, findings: list[Finding]) -> None:
        """Redact the secrets of these findings' rows in a worker (cannot be undone); a dialog says what was done."""
        from cleo_tui.memory.redaction import redact
        self.write("redaction", lambda brain: redact(brain, findings), self._redacted)

    def _redacted(self, result: RedactionResult) -> Written:
        self._tell(Report("Secrets redacted", "\n".join(result.lines())))
        return Written(f"redaction of {plural(result.secrets, 'secret')}", None, notify=False)

    def undo(self) -> None:
        """Undo the latest run made in this session (says so when there is none)."""
        if not self.undo_stack:
            self.notify("Nothing to undo in this session.", severity="warning")
            return
        self.undo_run(self.undo_stack.pop())

    def undo_run(self, run_id: int) -> None:
        """Undo one curation run (any, e.g. a prune run chosen in a list) in a worker."""
        if self.sweep:
            self.refuse_write()
            return
        if run_id in self.undo_stack:
            self.undo_stack.remove(run_id)
        self.write(f"undo of run {run_id}", lambda brain: curation.undo_detailed(brain, run_id), self._undone)

    def _undone(self, outcome: UndoOutcome) -> Written:
        """Announce an undo: a toast when all of it was undone, else a dialog naming the rows it could not
        restore (CLEO deleted or changed them meanwhile); a run with changes left can be undone again."""
        if outcome.remaining:
            self.undo_stack.append(outcome.run_id)
        if not outcome.clean:
            self._tell(Report("Undo: some rows could not be restored",
                              "\n".join(outcome.lines("undoing it again (u)"))))
        return Written(curation.undo_summary(outcome), None, notify=outcome.clean, kind=UNDO)

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
        self.announce(BrainChanged(RELOAD, "reload"))

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
        self.announce(BrainChanged(EXTERNAL, what))

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
        self.from_worker(self._set_tags, updated.ready())

    def _announce_change(self, kind: ChangeKind, what: str, run_id: int | None, source: str | None,
                         notify: bool = True) -> None:
        if notify:
            self.notify(f"Done: {what}." + (" u undoes it." if run_id is not None else ""))
        self.refresh_derived()
        self.announce(BrainChanged(kind, what, run_id, source))

    def close(self) -> None:
        self.stop_live()
        self.brain.close()
