"""The live-brain watcher: a daemon thread that polls the brain file about once a second.

A plain thread rather than a Textual worker: it runs for the session's whole life,
and `app.workers.wait_for_complete()` (what tests and shutdown wait on) must not wait
for it.

The domain step is `brain.live_poll.poll_step` (on the watcher's own read-only
connection); this module only runs it on a timer and hands what it found to the
session on the UI thread (`BrainSession.live_changed`). Tests drive it
deterministically with `check_now()` (and an `interval` long enough that the
thread never fires on its own).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Protocol

from cleo_tui.brain import Brain
from cleo_tui.brain.connection import connect
from cleo_tui.brain.live_poll import PollResult, PollState, poll_step, read_state

STOP_WAIT_S = 1.0  # a poll takes milliseconds; a thread stuck handing a result to the UI is not waited for


class WatchedSession(Protocol):
    """What the watcher needs of the session it reports to (BrainSession)."""

    brain: Brain

    def learn_own_version(self) -> None: ...

    def live_changed(self, result: PollResult) -> None: ...

    def from_worker(self, callback: Callable[..., Any], *args: Any) -> Any: ...


class BrainWatcher:
    """Polls `session.brain`'s file every `interval` seconds while started; reports to the session."""

    interval: float = 1.0  # class-wide, so a test can slow every watcher down

    def __init__(self, session: WatchedSession, interval: float | None = None) -> None:
        self.session = session
        self.interval = self.interval if interval is None else interval
        self._conn: sqlite3.Connection | None = None
        self._state: PollState | None = None
        self._lock = threading.Lock()  # the thread and check_now never poll at once
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.polls = 0  # for tests: how many steps ran

    @property
    def state(self) -> PollState | None:
        return self._state

    def start(self) -> None:
        """Read the starting state and start polling in a thread worker."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="cleo-tui-live-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop polling and close the connection: wait (briefly) for the thread, so that the
        brain's last connection to close, and remove the -wal/-shm a read-only session made, is
        not left to a thread the process may not wait for (brain/side_files.py)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=STOP_WAIT_S)

    def poll(self) -> PollResult | None:
        """One step (any thread): None the first time (it reads the starting state) or when the file is gone."""
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = connect(self.session.brain.path, True)
                if self._state is None:
                    self.session.learn_own_version()  # first: a change after it is then in the state
                    self._state = read_state(self._conn, self.session.brain.path)
                    return None
                result = poll_step(self._conn, self.session.brain.path, self._state)
            except Exception:  # a failed poll is retried next time
                self._close()
                return None
            self.polls += 1
            self._state = result.state
            return result

    def check_now(self) -> PollResult | None:
        """Poll once on the UI thread and deliver what was found (tests; the reload key)."""
        result = self.poll()
        if result is not None and result.noticed:
            self.session.live_changed(result)
        return result

    def _loop(self) -> None:
        try:
            self.poll()  # the starting state
            while not self._stop.wait(self.interval):
                result = self.poll()
                if result is not None and result.noticed and not self._stop.is_set():
                    try:
                        self.session.from_worker(self.session.live_changed, result)
                    except RuntimeError:  # the app is shutting down
                        return
        finally:
            with self._lock:
                self._close()

    def _close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None
