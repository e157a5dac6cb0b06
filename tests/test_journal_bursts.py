"""Chunks under a slow spell of the disk: rows that turn slow mid-batch end the chunk at once.

The clock is simulated (`journal_chunks.time` replaced): each row a chunk writes costs 1 ms,
the rows of a "burst" 50 ms (a temporary trigger on the test's own connection ticks
the clock per row; the brain file is not changed). Nothing sleeps.
"""

from __future__ import annotations

import struct
import types

import pytest

from cleo_tui.brain import journal, journal_chunks
from cleo_tui.memory import curation
from cleo_tui.memory.pruner import commit_preview, prepare_pool
from tests.pruner_fixtures import held_open_by_another_process, routine_brain, simulate_time

ROW, SLOW = 0.001, 0.050
BURST = range(25, 60)  # the 25th to 59th row written in a run are slow


class Clock:
    """The simulated clock: rows advance it (`tick`), pauses too (`sleep`)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.rows = 0

    def perf_counter(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def tick(self, _rowid: int) -> None:
        self.now += SLOW if self.rows in BURST else ROW
        self.rows += 1


@pytest.fixture
def brain(tmp_path):
    brain = routine_brain(tmp_path, 160)
    yield brain
    brain.close()


@pytest.fixture
def clock(brain, monkeypatch):
    clock = Clock()
    simulate_time(monkeypatch, brain, clock.perf_counter, clock.sleep, clock.tick)
    return clock


def live(brain) -> set[str]:
    return {r[0] for r in brain.query("SELECT id FROM brain_observations WHERE invalid_at IS NULL")}


def test_a_burst_ends_the_chunk_one_row_past_its_deadline_and_the_commit_stays_exact(brain, clock):
    preview = prepare_pool(brain).preview(400)
    assert preview.drop_count > max(BURST)
    taken = set(preview.dropped_ids[1::7])  # CLEO evicted some of them meanwhile: left alone, named once
    with brain.write() as conn:
        conn.executemany("UPDATE brain_observations SET invalid_at = '2026-02-01 00:00:00' WHERE id = ?",
                         [(i,) for i in taken])
    clock.rows = 0
    result = commit_preview(brain, preview)
    stats = result.stats
    assert stats is not None and stats.cut >= 1
    assert stats.longest <= journal.CHUNK_SECONDS + SLOW + 1e-9  # not a batch of slow rows (0.5 s and more)
    assert set(result.evicted) == set(preview.dropped_ids) - taken
    assert sorted(s["id"] for s in result.skipped) == sorted(taken)  # each once, though cut batches came back
    assert stats.held == pytest.approx(clock.rows * ROW + len(BURST) * (SLOW - ROW))  # only rows cost here


def test_an_undo_cut_by_a_burst_restores_every_row_once(brain, clock):
    preview = prepare_pool(brain).preview(400)
    before = live(brain)
    run_id = commit_preview(brain, preview).run_id
    changed = preview.dropped_ids[-3]  # changed by someone else since: skipped, named once
    with brain.write() as conn:
        conn.execute("UPDATE brain_observations SET invalid_at = '2026-03-01 00:00:00' WHERE id = ?", (changed,))
    clock.rows = 0
    outcome = curation.undo_detailed(brain, run_id)
    assert outcome.stats is not None and outcome.stats.cut >= 1
    assert outcome.stats.longest <= journal.CHUNK_SECONDS + SLOW + 1e-9
    assert outcome.restored == preview.drop_count - 1
    assert [s["id"] for s in outcome.skipped] == [changed] and outcome.remaining == 1
    assert live(brain) == before - {changed}
    assert journal.pending_count(brain.conn, run_id) == 1


def unbackfilled_frames(db_path) -> int:
    """Frames in the WAL not yet copied into the database, read from SQLite's WAL-index (the -shm file).

    The index header (48 bytes, kept twice) has mxFrame at byte 16; the checkpoint
    info that follows has nBackfill first (byte 96). Native byte order.
    """
    header = (db_path.parent / (db_path.name + "-shm")).read_bytes()[:100]
    max_frame, = struct.unpack_from("=I", header, 16)
    backfilled, = struct.unpack_from("=I", header, 96)
    return max_frame - backfilled


def test_the_lock_goes_free_with_the_chunks_pages_already_checkpointed(brain, clock, monkeypatch):
    """CLEO's commit in a pause must not copy our pages: its auto-checkpoint would charge it for them.

    SQLite checkpoints in whichever connection's commit finds 1,000 frames in the WAL;
    a CLEO writer that took the lock in a pause paid for copying the last chunk's pages
    (hundreds of ms). So a pause checkpoints first and then sleeps.
    """
    path = brain.path
    left_when_free: list[int] = []

    def sleep(seconds: float) -> None:
        left_when_free.append(unbackfilled_frames(path))
        clock.sleep(seconds)

    monkeypatch.setattr(journal_chunks, "time", types.SimpleNamespace(perf_counter=clock.perf_counter, sleep=sleep))
    preview = prepare_pool(brain).preview(400)
    with held_open_by_another_process(path):  # (with nobody else there, nobody can be let in: no pause)
        result = commit_preview(brain, preview)
    assert result.stats is not None and result.stats.chunks > 2
    assert left_when_free and set(left_when_free) == {0}
