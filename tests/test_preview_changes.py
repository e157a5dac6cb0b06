"""PreviewChanges: rows of a prepared pool that CLEO evicted or deleted since, found from its own indexes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from cleo_tui.memory.preview_changes import ChangedRows, PreviewChanges
from cleo_tui.memory.pruner import pool_rowids, prepare_pool


def cleo(path: Path, sql: str, *params: object) -> None:
    """CLEO's own connection (another connection than the app's) writes once."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(sql, params)
    conn.close()


def test_evictions_deletions_and_late_stamps_of_pool_rows_are_found(brain):
    path = Path(brain.path)
    pool = prepare_pool(brain)
    watch = PreviewChanges.of_pool(brain, pool)
    assert watch is not None and watch.check(brain) == ChangedRows()
    ids = pool.droppable.ids(4)
    cleo(path, "UPDATE brain_observations SET invalid_at = datetime('now') WHERE id = ?", ids[0])
    cleo(path, "DELETE FROM brain_observations WHERE id = ?", ids[1])
    assert watch.check(brain) == ChangedRows(evicted=1, deleted=1)
    # stamped back in time (below every stamp seen so far): the count under the mark moves
    cleo(path, "UPDATE brain_observations SET invalid_at = '2000-01-01 00:00:00' WHERE id = ?", ids[2])
    found = watch.check(brain)
    assert found.evicted == 2 and found.deleted == 1
    dropped = pool_rowids(pool, 4)
    assert watch.counts(dropped).dropped == 3
    assert "3 rows of this preview changed since (2 evicted and 1 deleted by CLEO)" in found.notice()


def test_rows_evicted_before_the_preview_and_new_rows_do_not_count(brain):
    path = Path(brain.path)
    before = {r[0] for r in brain.query("SELECT rowid FROM brain_observations WHERE invalid_at IS NOT NULL")}
    pool = prepare_pool(brain)
    watch = PreviewChanges.of_pool(brain, pool)
    assert watch is not None and before  # the demo brain has evicted rows: they are not the pool's
    cleo(path, "INSERT INTO brain_observations(id, type, title, narrative, created_at, source_type, invalid_at) "
               "VALUES ('O-new', 'change', 't', 'n', datetime('now'), 'agent', datetime('now'))")
    cleo(path, "UPDATE brain_observations SET invalid_at = NULL WHERE rowid = ?", min(before))
    assert watch.check(brain).total == 0
    assert ChangedRows().notice() == ""


def test_a_layout_without_invalid_at_still_finds_deletions(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE brain_observations(id TEXT PRIMARY KEY, type TEXT, title TEXT, narrative TEXT, "
                 "created_at TEXT)")
    conn.executemany("INSERT INTO brain_observations VALUES (?, 'change', 't', 'n', '2026-01-01 00:00:00')",
                     [(f"O-{i}",) for i in range(5)])
    conn.close()
    from cleo_tui.brain import open_brain
    brain = open_brain(path)
    try:
        rowids = [r[0] for r in brain.query("SELECT rowid FROM brain_observations")]
        watch = PreviewChanges.start(brain, rowids)
        cleo(path, "DELETE FROM brain_observations WHERE id = 'O-3'")
        assert watch.check(brain) == ChangedRows(deleted=1)
    finally:
        brain.close()
