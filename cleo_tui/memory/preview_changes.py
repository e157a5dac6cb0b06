"""Rows of a prepared prune pool that CLEO evicted or deleted since the preview, found cheaply.

A pool is prepared from live rows; while it is on screen CLEO may soft-evict some
of them (set `invalid_at`) or hard-delete them (its consolidation). A commit
already leaves such rows alone and lists them; `PreviewChanges` lets the pane say
so beforehand, on every liveness poll that saw a change, without reading the pool
again:

- evictions: a range read on CLEO's own index over `invalid_at` (rows stamped
  after the highest stamp seen so far), plus a count of the rows at or below that
  stamp (an index range too); only when that count moved (a back-dated eviction,
  a restore) are all evicted rows read again. Every hit is matched against the
  pool's rowids, so rows evicted before the preview never count;
- deletions: the table's row count less the rows above the high-water rowid
  (both cheap); only when that moved are the rowids read to name the rows gone.

A brain without `invalid_at` (an old layout) has no evictions to find. Counts are
of the pool's rows (dropped or kept); `dropped` says how many of them the shown
preview drops.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.store import Brain
from cleo_tui.memory.distinct import distinct_values
from cleo_tui.memory.pruner import PreparedPool, pool_rowids

OBS = cs.OBSERVATIONS


@dataclass(frozen=True)
class ChangedRows:
    """How many rows of the pool changed under the preview, and of them how many it drops."""

    evicted: int = 0
    deleted: int = 0
    dropped: int = 0  # of evicted + deleted, rows in the preview's dropped list

    @property
    def total(self) -> int:
        return self.evicted + self.deleted

    def notice(self) -> str:
        """ "N rows of this preview changed since (evicted or deleted by CLEO)", or "" when none did."""
        if not self.total:
            return ""
        parts = [f"{n:,} {what}" for n, what in ((self.evicted, "evicted"), (self.deleted, "deleted")) if n]
        dropped = f"; {self.dropped:,} of them in the dropped list, a commit leaves them alone" \
            if self.dropped else ""
        return (f"{self.total:,} row{'s' if self.total != 1 else ''} of this preview changed since "
                f"({' and '.join(parts)} by CLEO){dropped}")


class PreviewChanges:
    """Watches the rows (by rowid) of one prepared pool; `check` finds those evicted or deleted since.

    Make it right after the pool is read (`start`): its marks are the brain's state
    then. Thread-safe: a check in one worker waits for another's to end.
    """

    def __init__(self, rowids: np.ndarray) -> None:
        self.rowids = distinct_values(np.asarray(rowids, dtype=np.int64))  # sorted
        self.evicted = np.zeros(0, dtype=np.int64)  # rowids of the pool found evicted
        self.deleted = np.zeros(0, dtype=np.int64)
        self._lock = threading.Lock()
        self._stamps = True       # the brain has invalid_at
        self._mark: object = None  # the highest invalid_at seen (any type; SQLite orders them)
        self._at_or_below = 0      # evicted rows with invalid_at <= _mark then
        self._high = 0             # the table's highest rowid then
        self._old_rows = 0         # rows with rowid <= _high then

    @classmethod
    def of_pool(cls, brain: Brain, pool: PreparedPool) -> PreviewChanges | None:
        """A watch on every row of `pool`, read from `brain` (None: no rowids to watch, or the read failed).

        Without a watch nothing is lost but the notice: a commit still leaves changed rows alone.
        """
        rowids = pool_rowids(pool)
        if rowids is None:
            return None
        try:
            return cls.start(brain, rowids)
        except sqlite3.Error:
            return None

    def fold(self, old: PreparedPool, new: PreparedPool) -> None:
        """Watch the rows `new` holds above `old`'s high water too (CLEO's rows folded in)."""
        rowids = pool_rowids(new)
        if rowids is not None:
            self.include(rowids[rowids > old.high_water])

    @classmethod
    def start(cls, brain: Brain, rowids: np.ndarray) -> PreviewChanges:
        """A watch on these rowids of `brain`'s observations, marks read now (one read transaction)."""
        watch = cls(rowids)
        watch._stamps = brain.features.has_column(OBS, "invalid_at")
        with brain.lock, _snapshot(brain.conn) as conn:
            if watch._stamps:
                watch._read_all_evicted(conn)
            watch._high = int(conn.execute(f"SELECT COALESCE(MAX(rowid), 0) FROM {OBS}").fetchone()[0])
            watch._old_rows = _old_rows(conn, watch._high)
        return watch

    def include(self, rowids: np.ndarray) -> None:
        """Watch these rows too (CLEO's new rows folded into the pool)."""
        with self._lock:
            self.rowids = np.union1d(self.rowids, np.asarray(rowids, dtype=np.int64))

    def check(self, brain: Brain) -> ChangedRows:
        """Find the pool's rows evicted or deleted since `start` (cheap unless something moved).

        A read that fails (the file gone, busy) finds nothing new; the next check tries again.
        """
        with self._lock:
            try:
                with brain.lock, _snapshot(brain.conn) as conn:
                    if self._stamps:
                        self._find_evicted(conn)
                    self._find_deleted(conn)
            except sqlite3.Error:
                pass
        return self.counts()

    def counts(self, dropped_rowids: np.ndarray | None = None) -> ChangedRows:
        """What the checks so far found; `dropped_rowids` (the preview's dropped rows) to count those too."""
        with self._lock:
            evicted, deleted = self.evicted, self.deleted
        gone = np.union1d(evicted, deleted)
        dropped = 0 if dropped_rowids is None or not len(gone) else \
            int(np.isin(np.asarray(dropped_rowids, dtype=np.int64), gone).sum())
        return ChangedRows(len(np.setdiff1d(evicted, deleted)), len(deleted), dropped)

    # -- evictions -----------------------------------------------------------------------
    def _read_all_evicted(self, conn: sqlite3.Connection) -> None:
        """Every evicted row (a covering read of the invalid_at index): the marks, and pool rows among them."""
        rows = conn.execute(f"SELECT rowid FROM {OBS} WHERE invalid_at IS NOT NULL").fetchall()
        self._note_evicted(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))
        self._mark = conn.execute(f"SELECT MAX(invalid_at) FROM {OBS}").fetchone()[0]
        self._at_or_below = self._count_at_or_below(conn)

    def _count_at_or_below(self, conn: sqlite3.Connection) -> int:
        if self._mark is None:
            return 0
        return int(conn.execute(f"SELECT count(*) FROM {OBS} WHERE invalid_at IS NOT NULL AND invalid_at <= ?",
                                (self._mark,)).fetchone()[0])

    def _find_evicted(self, conn: sqlite3.Connection) -> None:
        if self._count_at_or_below(conn) != self._at_or_below:
            self._read_all_evicted(conn)  # stamped back in time, or restored: read them all again
            return
        where, params = ("invalid_at IS NOT NULL", ()) if self._mark is None else ("invalid_at > ?", (self._mark,))
        rows = conn.execute(f"SELECT rowid, invalid_at FROM {OBS} WHERE {where}", params).fetchall()
        if not rows:
            return
        self._note_evicted(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))
        self._mark = conn.execute(f"SELECT MAX(invalid_at) FROM {OBS}").fetchone()[0]
        self._at_or_below = self._count_at_or_below(conn)

    def _note_evicted(self, rowids: np.ndarray) -> None:
        found = np.intersect1d(self.rowids, rowids)
        self.evicted = np.union1d(self.evicted, found)

    # -- deletions -----------------------------------------------------------------------
    def _find_deleted(self, conn: sqlite3.Connection) -> None:
        old = _old_rows(conn, self._high)
        if old == self._old_rows:
            return
        # Without a WHERE SQLite reads the rowids off its smallest index, not the table's pages.
        rows = conn.execute(f"SELECT rowid FROM {OBS}").fetchall()
        present = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        self.deleted = np.union1d(self.deleted, np.setdiff1d(self.rowids[self.rowids <= self._high], present))
        self._old_rows = old


def _old_rows(conn: sqlite3.Connection, high: int) -> int:
    """Rows with rowid <= high: the table's count (SQLite walks its smallest index) less the few above."""
    total = int(conn.execute(f"SELECT count(*) FROM {OBS}").fetchone()[0])
    return total - int(conn.execute(f"SELECT count(*) FROM {OBS} WHERE rowid > ?", (high,)).fetchone()[0])


@contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One read transaction on an autocommit connection, so the counts and reads agree."""
    opened = not conn.in_transaction
    if opened:
        conn.execute("BEGIN")
    try:
        yield conn
    finally:
        if opened and conn.in_transaction:
            conn.execute("COMMIT")
