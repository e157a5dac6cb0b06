"""How chunked runs keep CLEO's writers waiting briefly: chunks bounded by time, pauses as long as
SQLite's busy handler needs, no garbage collection and no auto-checkpoint during a run."""

from __future__ import annotations

import gc

import pytest

from cleo_tui.brain import journal
from cleo_tui.memory import curation
from cleo_tui.memory.pruner import commit_preview, prepare_pool
from tests.pruner_fixtures import routine_brain


@pytest.fixture
def brain(tmp_path):
    brain = routine_brain(tmp_path, 30)
    yield brain
    brain.close()


def test_poll_gap_follows_sqlites_busy_handler():
    # sleeps of 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50 ms, then 100 ms each
    assert journal.poll_gap(0.0) == 0.001
    assert journal.poll_gap(0.060) == 0.025 and journal.poll_gap(0.127) == 0.025
    assert journal.poll_gap(0.130) == 0.050 and journal.poll_gap(0.227) == 0.050
    assert journal.poll_gap(0.300) == 0.100 and journal.poll_gap(60.0) == 0.100


def test_the_pause_outlasts_the_sleep_of_a_writer_that_waited_the_whole_chunk():
    budget = journal.ChunkBudget(seconds=0.08, pause=0.01)
    assert budget.pause_after(0.08) >= journal.poll_gap(0.08) + journal.PAUSE_MARGIN
    assert budget.pause_after(0.2) >= 0.05  # a chunk that ran long: its waiter sleeps 50 ms now
    assert journal.ChunkBudget(pause=0).pause_after(1.0) == 0  # tests that ask for no pause


def test_a_slice_sizes_batches_by_time_left_not_rows():
    pace = journal.Pace(journal.ChunkBudget(rows=10_000, seconds=1.0))
    first = pace.slice(0.0)  # a deadline long past: only the one batch every chunk gets
    assert first.take() == journal.FIRST_BATCH
    first.did(journal.FIRST_BATCH)
    assert first.take() == 0
    pace.per_item = 0.001  # 1 ms an item, as learnt
    part = journal.Slice(pace, deadline=float("inf"), cap=10_000)
    assert part.take() == int(journal.SLICE_SECONDS / 0.001)  # one slice of work
    pace.learn(10, 0.05)  # a slow spell (the disk busy): 5 ms an item, learnt at once
    assert pace.per_item == pytest.approx(0.005)
    assert part.take() == int(journal.SLICE_SECONDS / 0.005)  # so the next batch is small already
    pace.learn(10, 0.01)  # cheaper again: averaged in, not taken at once
    assert pace.per_item == pytest.approx(0.7 * 0.005 + 0.3 * 0.001)


def test_a_commit_made_of_many_short_chunks_evicts_exactly_the_preview(brain):
    preview = prepare_pool(brain).preview(300)
    commits: list[str] = []
    brain.conn.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    checkpoints: list[int] = []
    gc_during: list[bool] = []
    original = journal.update_many

    def spy(conn, *args, **kwargs):
        checkpoints.append(int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]))
        gc_during.append(gc.isenabled())
        return original(conn, *args, **kwargs)

    journal.update_many = spy  # type: ignore[assignment]
    try:
        result = commit_preview(brain, preview, budget=journal.ChunkBudget(seconds=0.0, pause=0))
    finally:
        journal.update_many = original  # type: ignore[assignment]
        brain.conn.set_trace_callback(None)
    assert sorted(result.evicted) == sorted(preview.dropped_ids) and result.evicted == preview.dropped_ids
    assert len(commits) > 2  # a chunk past its time ends after its first batch
    assert set(checkpoints) == {0} and not any(gc_during)  # no auto-checkpoint, no collection meanwhile
    assert int(brain.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]) == 1000 and gc.isenabled()
    outcome = curation.undo_detailed(brain, result.run_id, budget=journal.ChunkBudget(seconds=0.0, pause=0))
    assert outcome.restored == len(result.evicted) and outcome.complete
    assert brain.scalar("SELECT count(*) FROM brain_observations WHERE invalid_at IS NULL") == 30


def test_an_interrupted_undo_is_rolled_back_marks_and_all(brain):
    from cleo_tui.brain import open_brain
    result = commit_preview(brain, prepare_pool(brain).preview(300))
    with brain.write() as conn:  # the first chunk of an undo whose process died
        _run, undo_id = journal.begin_undo(conn, result.run_id, status=journal.IN_PROGRESS)
        outcome = journal.UndoOutcome(result.run_id, undo_id)
        journal.undo_some(conn, outcome, journal.Slice(journal.Pace(journal.ChunkBudget()), float("inf"), 3))
        conn.execute("UPDATE cleo_tui_runs SET owner_pid = 999999999 WHERE id = ?", (undo_id,))
    assert outcome.restored == 3
    path = brain.path
    brain.close()
    again = open_brain(path)
    try:
        assert any(f"run {undo_id} (undo)" in note for note in again.recovered)
        assert again.scalar("SELECT count(*) FROM cleo_tui_run_changes WHERE undone_by IS NOT NULL") == 0
        assert again.scalar("SELECT count(*) FROM cleo_tui_runs WHERE id = ?", (undo_id,)) == 0
        evicted = again.scalar("SELECT count(*) FROM brain_observations WHERE invalid_at IS NOT NULL")
        assert evicted == len(result.evicted)  # exactly as after the prune
        assert curation.undo_detailed(again, result.run_id).complete  # and it can be undone whole
    finally:
        again.close()


def test_an_interrupted_undo_is_rolled_back_even_when_every_chunk_runs_out_of_time(brain):
    # On a loaded machine a chunk's clock can run out in its first batch, which finds no change
    # left to revert; the marks must still be released a batch per chunk (was: none, forever).
    result = commit_preview(brain, prepare_pool(brain).preview(300))
    with brain.write() as conn:
        _run, undo_id = journal.begin_undo(conn, result.run_id, status=journal.IN_PROGRESS)
        outcome = journal.UndoOutcome(result.run_id, undo_id)
        journal.undo_some(conn, outcome, journal.Slice(journal.Pace(journal.ChunkBudget()), float("inf"), 3))
    marked = brain.scalar("SELECT count(*) FROM cleo_tui_run_changes WHERE undone_by IS NOT NULL")
    pace = journal.Pace(journal.ChunkBudget())
    chunks = 0
    with brain.write() as conn:
        while chunks <= 2 * marked + 10 and not journal.rollback_some(conn, undo_id, journal.Slice(pace, 0.0, 100)):
            chunks += 1  # every chunk's deadline (0.0) long past
    assert chunks <= 2 * marked + 10, "the rollback made no progress"
    assert brain.scalar("SELECT count(*) FROM cleo_tui_run_changes WHERE undone_by IS NOT NULL") == 0
    assert brain.scalar("SELECT count(*) FROM cleo_tui_runs WHERE id = ?", (undo_id,)) == 0


class _RowidsWritten:
    """The rowids of brain_observations each UPDATE of `brain.conn` wrote, in order."""

    def __init__(self, brain) -> None:
        self.rowids = {r[0]: r[1] for r in brain.conn.execute("SELECT id, rowid FROM brain_observations")}
        self.conn, self.original, self.written = brain.conn, brain.conn.executemany, []

    def __enter__(self) -> list[int]:
        def spy(sql, rows):
            rows = list(rows)
            if sql.startswith('UPDATE "brain_observations"'):
                self.written.extend(self.rowids[r[-1]] for r in rows)
            return self.original(sql, rows)
        self.conn.executemany = spy
        return self.written

    def __exit__(self, *exc) -> None:
        del self.conn.executemany


def test_a_whole_pool_commit_and_its_chunked_undo_write_the_rows_in_rowid_order(brain):
    # In rowid order a chunk's rows share their pages (a whole-pool commit fell back to drop order;
    # an undo taking its batches last change first went back down the file at every batch).
    preview = prepare_pool(brain).preview(300)
    with _RowidsWritten(brain) as written:
        result = commit_preview(brain, preview)
    assert len(written) == len(result.evicted) > journal.FIRST_BATCH and written == sorted(written)
    with _RowidsWritten(brain) as written:
        outcome = curation.undo_detailed(brain, result.run_id, budget=journal.ChunkBudget(seconds=10.0, pause=0))
    assert outcome.restored == len(result.evicted) and outcome.complete
    assert len(written) == len(result.evicted) and written == sorted(written)


def test_an_undo_of_a_run_that_changed_a_row_twice_goes_last_change_first(brain):
    with brain.write() as conn:
        run_id = journal.start_run(conn, "test", "twice")
        journal.update_row(conn, run_id, "brain_observations", {"id": "O-01"}, {"quality_score": 0.1})
        journal.update_row(conn, run_id, "brain_observations", {"id": "O-01"}, {"quality_score": 0.2})
    before = brain.scalar("SELECT quality_score FROM brain_observations WHERE id = 'O-00'")
    outcome = curation.undo_detailed(brain, run_id, budget=journal.ChunkBudget(seconds=10.0, pause=0))
    assert outcome.restored == 2 and outcome.complete
    assert brain.scalar("SELECT quality_score FROM brain_observations WHERE id = 'O-01'") == before
