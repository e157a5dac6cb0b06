"""Notice, cheaply, that another program (CLEO) wrote to the brain file.

One `poll_step` is what the TUI's watcher does about once a second on its own
read-only connection: `PRAGMA data_version` (SQLite bumps it when another
connection commits; reading it opens no lasting read transaction), and only
when it moved, the new high-water rowid, the ids of the rows above the old one
and the row count (a count that fell by more than the new rows means rows were
deleted: CLEO's consolidation hard-deletes). CLEO's sweep gate is read on every
step (a small JSON file), since it clears without a database write.

`wait_for_write_lock` waits for another process's write lock in short probes,
so a caller can give up (a person pressed Esc) instead of blocking for the
whole busy timeout.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.sweep_gate import sweep_active

NEW_IDS_MAX = 5_000  # more new rows than this in one second: the panes reload anyway


@dataclass(frozen=True)
class PollState:
    """What the last step saw: SQLite's data version, the largest observation rowid, the row count, the sweep."""

    data_version: int
    high_water: int
    rows: int
    sweep: str | None = None


@dataclass(frozen=True)
class PollResult:
    """One step's findings: `changed` (the data), the ids that arrived, how many rows vanished."""

    state: PollState
    changed: bool
    new_ids: list[str] = field(default_factory=list)
    deleted: int = 0
    sweep_changed: bool = False

    @property
    def noticed(self) -> bool:
        """Anything worth telling the session about."""
        return self.changed or self.sweep_changed

    def describe(self) -> str:
        """A short sentence: "3 new observations", "2 observations deleted"…"""
        parts = []
        if self.new_ids:
            parts.append(f"{len(self.new_ids):,} new observation{'s' if len(self.new_ids) != 1 else ''}")
        if self.deleted:
            parts.append(f"{self.deleted:,} observation{'s' if self.deleted != 1 else ''} deleted")
        return ", ".join(parts) or ("CLEO wrote to the brain" if self.changed else "")


def _has_observations(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (cs.OBSERVATIONS,)).fetchone()
    return row is not None


def _rows(conn: sqlite3.Connection) -> tuple[int, int]:
    """(largest rowid, row count) of the observations table; (0, 0) without one."""
    if not _has_observations(conn):
        return 0, 0
    high, count = conn.execute(f"SELECT coalesce(max(rowid), 0), count(*) FROM {cs.OBSERVATIONS}").fetchone()
    return int(high), int(count)


def data_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


def read_state(conn: sqlite3.Connection, brain_path: str | Path) -> PollState:
    """The state to poll against (the watcher's first step)."""
    version = data_version(conn)
    high, count = _rows(conn)
    return PollState(version, high, count, sweep_active(brain_path))


def poll_step(conn: sqlite3.Connection, brain_path: str | Path, previous: PollState) -> PollResult:
    """Did the brain change since `previous`, which rows are new, did rows vanish, did the sweep start or end?

    `conn` is the watcher's own connection (autocommit, nothing else uses it).
    """
    sweep = sweep_active(brain_path)
    sweep_changed = sweep != previous.sweep
    version = data_version(conn)
    if version == previous.data_version:
        state = PollState(previous.data_version, previous.high_water, previous.rows, sweep)
        return PollResult(state, False, sweep_changed=sweep_changed)
    high, count = _rows(conn)
    new_ids: list[str] = []
    if high > previous.high_water and _has_observations(conn):
        new_ids = [str(r[0]) for r in conn.execute(
            f"SELECT id FROM {cs.OBSERVATIONS} WHERE rowid > ? ORDER BY rowid LIMIT ?",
            (previous.high_water, NEW_IDS_MAX))]
    deleted = max(0, previous.rows + len(new_ids) - count)
    return PollResult(PollState(version, max(high, previous.high_water), count, sweep), True, new_ids, deleted,
                      sweep_changed)


def write_lock_free(conn: sqlite3.Connection, wait_ms: int = 100) -> bool:
    """Whether the write lock can be taken within `wait_ms` (taken and released at once: nothing written)."""
    conn.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return False
        raise
    conn.execute("ROLLBACK")
    return True


def wait_for_write_lock(conn: sqlite3.Connection, cancelled: Callable[[], bool],
                        on_wait: Callable[[], None] | None = None, notice_after: float = 1.0,
                        give_up_after: float = 30.0, clock: Callable[[], float] = time.monotonic) -> bool:
    """Wait, in short probes on `conn` (a writable connection of its own), until no one holds the write lock.

    Calls `on_wait` once after `notice_after` seconds of waiting. Returns False when
    `cancelled()` said so or after `give_up_after` seconds (then the caller writes
    nothing); True once the lock was free (the caller's own write may still wait a
    little, if CLEO takes the lock again first).
    """
    start = clock()
    told = False
    while not write_lock_free(conn):
        if cancelled():
            return False
        waited = clock() - start
        if waited >= give_up_after:
            return False
        if not told and waited >= notice_after and on_wait is not None:
            told = True
            on_wait()
    return not cancelled()
