"""Crash recovery: a run a crash or kill left in progress is rolled back on the next writable open.

A chunked run's `status` is 'in_progress' until its last chunk commits. When its
writer is gone (`journal_owner.owner_alive`), `recover_interrupted` reverts its
changes last first (exactly: the before values, where the row still holds the run's
after values), in short chunks, and deletes the run and its change rows, so the
brain is exactly as before the step. An interrupted undo also releases the changes
it had marked. A read-only open only says so (`interrupted_notes`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from cleo_tui.brain.journal_chunks import ChunkStep, Slice, run_chunks
from cleo_tui.brain.journal_owner import owner_alive
from cleo_tui.brain.journal_pacing import ChunkBudget
from cleo_tui.brain.journal_runs import IN_BATCH, IN_PROGRESS
from cleo_tui.brain.journal_undo import changes_from_rows, reverse_batch
from cleo_tui.brain.migrations import RUN_CHANGES, RUNS


def interrupted_runs(conn: sqlite3.Connection) -> list[tuple[int, str, int | None]]:
    """(id, kind, owner pid) of runs left in progress whose writer is gone."""
    try:
        rows = conn.execute(f"SELECT id, kind, owner_pid, owner_started FROM {RUNS} WHERE status = ?",
                            (IN_PROGRESS,)).fetchall()
    except sqlite3.OperationalError:  # a brain not yet migrated to 6 (read-only): the pid alone
        rows = [(*r, None) for r in conn.execute(f"SELECT id, kind, owner_pid FROM {RUNS} WHERE status = ?",
                                                 (IN_PROGRESS,)).fetchall()]
    return [(r[0], r[1], r[2]) for r in rows if not owner_alive(r[2], r[3])]


def rollback_some(conn: sqlite3.Connection, run_id: int, part: Slice | None = None) -> bool:
    """Revert changes of an interrupted run, last first, deleting them; True when the run is gone.

    As many as `part` allows (all without it). When none is left, an interrupted
    undo releases the changes it had marked (a batch at a time too) and the run
    row goes, so the journal is exactly as before the step.
    """
    while True:
        count = part.take() if part is not None else IN_BATCH
        if not count:
            return False
        rows = conn.execute(f"SELECT seq, table_name, row_key, before_json, after_json FROM {RUN_CHANGES} "
                            "WHERE run_id = ? ORDER BY seq DESC LIMIT ?", (run_id, count)).fetchall()
        changes = changes_from_rows(rows)
        reverse_batch(conn, None, changes, exact=True)
        conn.executemany(f"DELETE FROM {RUN_CHANGES} WHERE run_id = ? AND seq = ?",
                         [(run_id, c.seq) for c in changes])
        if part is not None:
            part.did(len(changes))
        if len(changes) < count:
            break
    while True:  # the marks of an interrupted undo: many rows, released a batch at a time
        count = part.take() if part is not None else IN_BATCH
        if not count:
            return False
        released = conn.execute(f"UPDATE {RUN_CHANGES} SET undone_by = NULL WHERE rowid IN (SELECT rowid FROM "
                                f"{RUN_CHANGES} WHERE undone_by = ? LIMIT ?)", (run_id, count)).rowcount
        if part is not None:
            part.did(max(released, 1))
        if released < count:
            break
    conn.execute(f"UPDATE {RUNS} SET undone_by = NULL WHERE undone_by = ?", (run_id,))
    conn.execute(f"DELETE FROM {RUNS} WHERE id = ?", (run_id,))
    return True


def _rollback_step(run_id: int) -> ChunkStep:
    """The chunk step that rolls run `run_id` back (`rollback_some`)."""

    def step(conn: sqlite3.Connection, part: Slice, _first: bool) -> bool:
        return rollback_some(conn, run_id, part)
    return step


class BareConnection:
    """A bare writable connection as a ChunkTarget (recovery runs before the Brain exists)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.lock = threading.RLock()

    @contextmanager
    def write(self, sweep_check: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction (no sweep gate: recovery finishes what a run started)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise


def recover_interrupted(conn: sqlite3.Connection, budget: ChunkBudget | None = None) -> list[str]:
    """Roll back every run a crash left in progress, in short transactions; what was done, in words.

    Called on every writable open (store.open_brain). Each transaction reverts a
    chunk and deletes the journal rows it reverted, so a crash during recovery
    is recovered in turn on the next open; CLEO's writers wait at most a chunk.
    """
    try:
        runs = interrupted_runs(conn)
    except sqlite3.OperationalError:  # an older layout without status (not yet migrated)
        return []
    notes = []
    for run_id, kind, _pid in runs:
        run_chunks(BareConnection(conn), _rollback_step(run_id), budget)
        notes.append(f"run {run_id} ({kind}) was interrupted and has been rolled back")
    return notes


def interrupted_notes(conn: sqlite3.Connection, why: str = "the brain is open read-only") -> list[str]:
    """For an open that cannot write (`why`): runs a crash left in progress, said plainly."""
    try:
        runs = interrupted_runs(conn)
    except sqlite3.OperationalError:
        return []
    return [f"run {run_id} ({kind}) was interrupted and cannot be rolled back now: {why}. Until it is, the "
            "brain holds part of that step; any cleo-tui command rolls it back once it can write the brain"
            for run_id, kind, _pid in runs]
