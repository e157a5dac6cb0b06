"""Pauses only while another writer needs them (issue 33.4): a chunked run on a brain nobody else
writes takes a probe pause every `QUIET_STRETCH` of holding the lock, not after every chunk; once
another connection commits, every chunk is followed by a pause again.

The pacer is tested alone (no clock, no brain), then inside a real commit on a real brain with a
simulated clock (`journal_chunks.time` replaced: each row written costs ROW seconds, a pause
advances the clock by its length; nothing sleeps). "Another writer" is a second connection that
commits from inside a pause, so it lands exactly there.
"""

from __future__ import annotations

import sqlite3
from contextlib import ExitStack

import pytest

from cleo_tui.brain import journal
from cleo_tui.brain.journal_pacing import QUIET_STRETCH, ChunkBudget, Pacer, poll_gap
from cleo_tui.brain.other_processes import opened_elsewhere
from cleo_tui.memory.pruner import commit_preview, prepare_pool
from tests.pruner_fixtures import held_open_by_another_process, routine_brain, simulate_time

ROW = 0.004  # seconds a row costs: a 60 ms chunk writes about 15


def test_a_quiet_run_goes_straight_on_until_its_stretch_is_spent_then_probes():
    pacer = Pacer(ChunkBudget())
    assert pacer.pause_after_chunk(0.061, begin_waited=0.0) == 0  # nobody has written: straight on
    probe = pacer.pause_after_chunk(0.062, begin_waited=0.0)      # a second chunk spends the stretch
    assert probe >= poll_gap(0.123) + journal.PAUSE_MARGIN and probe == pytest.approx(0.03)
    assert pacer.after_gap(False, 0.062, probe) == 0              # nobody came in the probe: still quiet
    assert pacer.pause_after_chunk(0.06, begin_waited=0.0) == 0


def test_a_commit_by_another_connection_makes_the_next_pauses_follow_every_chunk():
    budget = ChunkBudget()
    pacer = Pacer(budget)
    pacer.pause_after_chunk(0.06, 0.0)
    rest = pacer.pause_after_chunk(0.06, 0.0)
    assert pacer.after_gap(True, 0.06, rest) == 0  # someone wrote in the probe pause: live
    assert pacer.pause_after_chunk(0.06, 0.0) == budget.pause_after(0.06) > 0
    assert pacer.after_gap(True, 0.06, 0.03) == 0
    assert pacer.pause_after_chunk(0.07, 0.0) == budget.pause_after(0.07)
    # the writer stops: it may have missed this pause, so one of its sleeps is waited out, then quiet
    assert pacer.after_gap(False, 0.07, 0.03) == pytest.approx(poll_gap(0.10) + journal.PAUSE_MARGIN)
    assert pacer.pause_after_chunk(0.06, 0.0) == 0


def test_a_begin_that_waited_for_the_lock_or_a_slow_spell_means_a_pause_now():
    pacer = Pacer(ChunkBudget())
    assert pacer.pause_after_chunk(0.06, begin_waited=0.02) > 0  # another writer held the lock
    pacer = Pacer(ChunkBudget())
    assert pacer.pause_after_chunk(0.3, begin_waited=0.0) >= 0.3  # the disk in a slow spell: as long as held


def test_a_writer_that_arrives_in_a_quiet_stretch_is_let_in_by_the_probe_within_the_bound():
    """Whenever in a stretch a writer starts waiting, it tries again inside the probe pause."""
    pacer = Pacer(ChunkBudget())
    held = [0.062, 0.063]
    assert pacer.pause_after_chunk(held[0], 0.0) == 0
    probe = pacer.pause_after_chunk(held[1], 0.0)
    stretch = sum(held)
    for started in [i / 1000 for i in range(int(stretch * 1000))]:  # the writer's first try, in the stretch
        waited = stretch - started  # when the lock goes free
        assert poll_gap(waited) + journal.PAUSE_MARGIN <= probe
        assert waited + probe < 0.25


def test_no_pauses_at_all_when_the_budget_asks_for_none():
    pacer = Pacer(ChunkBudget(pause=0))
    assert [pacer.pause_after_chunk(0.5, 1.0) for _ in range(3)] == [0, 0, 0]


class Timeline:
    """The simulated clock, and what the run did on it: ('chunk', seconds held) and ('pause', seconds)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.events: list[tuple[str, float]] = []
        self.began = 0.0
        self.in_pause: list[object] = []  # callables run when a pause starts (another writer)

    def perf_counter(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.events.append(("pause", seconds))
        while self.in_pause:
            self.in_pause.pop(0)()  # type: ignore[operator]
        self.now += seconds

    def row(self, _rowid: int) -> None:
        self.now += ROW

    def trace(self, sql: str) -> None:
        if sql == "BEGIN IMMEDIATE":
            self.began = self.now
        elif sql == "COMMIT":
            self.events.append(("chunk", self.now - self.began))

    def stretches(self) -> list[float]:
        """Seconds the lock was held between two pauses."""
        out, held = [], 0.0
        for kind, seconds in self.events:
            if kind == "pause":
                out.append(held)
                held = 0.0
            else:
                held += seconds
        return out


@pytest.fixture
def brain(tmp_path):
    brain = routine_brain(tmp_path, 160)
    yield brain
    brain.close()


@pytest.fixture
def timeline(brain, monkeypatch):
    timeline = Timeline()
    simulate_time(monkeypatch, brain, timeline.perf_counter, timeline.sleep, timeline.row)
    brain.conn.set_trace_callback(timeline.trace)
    yield timeline
    brain.conn.set_trace_callback(None)


def test_a_commit_nobody_else_writes_pauses_only_once_per_quiet_stretch(brain, timeline):
    """CLEO has the brain open but is not writing: a probe pause each stretch, no more."""
    preview = prepare_pool(brain).preview(400)
    with held_open_by_another_process(brain.path):
        result = commit_preview(brain, preview)
    chunks = [s for kind, s in timeline.events if kind == "chunk"]
    pauses = [s for kind, s in timeline.events if kind == "pause"]
    assert result.stats is not None and len(chunks) == result.stats.chunks >= 6
    assert 0 < len(pauses) == result.stats.pauses <= len(chunks) // 2  # was: one after every chunk
    assert all(s <= QUIET_STRETCH + 2 * ROW for s in timeline.stretches())
    assert set(result.evicted) == set(preview.dropped_ids)
    assert result.stats.unneeded == 0


def test_a_commit_on_a_brain_no_other_process_has_open_takes_no_pause(brain, timeline):
    """Nobody else has the brain open, so nobody can be waiting for its lock (`other_processes`):
    the probe pauses are left out, the WAL still checkpointed where they were (issue 33.4: a quiet
    whole-pool commit took 1.6 times a bare UPDATE, a third of it in these pauses)."""
    preview = prepare_pool(brain).preview(400)
    other = sqlite3.connect(brain.path)  # a second connection of this process is no other process
    other.execute("SELECT count(*) FROM brain_observations").fetchone()
    try:
        result = commit_preview(brain, preview)
    finally:
        other.close()
    assert result.stats is not None and result.stats.chunks >= 6
    assert result.stats.pauses == 0 and "pause" not in {kind for kind, _s in timeline.events}
    assert result.stats.unneeded >= result.stats.chunks // 2 - 1
    assert set(result.evicted) == set(preview.dropped_ids)


def test_a_process_that_opens_the_brain_during_a_commit_gets_its_probe_pauses_within_a_stretch(brain, timeline):
    """CLEO starting in the middle of a commit on a brain nobody had open: from the next probe on,
    the run pauses as for any process that has the brain open, so CLEO waits at most a stretch."""
    preview = prepare_pool(brain).preview(400)
    arrival = ExitStack()
    commits = 0

    def trace(sql: str) -> None:
        nonlocal commits
        timeline.trace(sql)
        if sql == "COMMIT":
            commits += 1
            if commits == 3:  # CLEO opens the brain during the fourth chunk's write
                arrival.enter_context(held_open_by_another_process(brain.path))

    brain.conn.set_trace_callback(trace)
    with arrival:
        result = commit_preview(brain, preview)
    kinds = [kind for kind, _s in timeline.events]
    assert result.stats is not None and result.stats.unneeded >= 1 and result.stats.pauses >= 2
    assert "pause" not in kinds[:3] and "pause" in kinds[3:6]
    assert all(s <= QUIET_STRETCH + 2 * ROW for s in timeline.stretches()[1:])
    assert set(result.evicted) == set(preview.dropped_ids)


def test_a_process_holding_the_brain_open_is_seen_and_one_that_let_go_is_not(brain):
    brain.scalar("SELECT count(*) FROM brain_observations")
    assert not opened_elsewhere(str(brain.path))
    with held_open_by_another_process(brain.path):
        assert opened_elsewhere(str(brain.path))
    assert not opened_elsewhere(str(brain.path))
    assert opened_elsewhere(str(brain.path) + ".not-there")  # no WAL index to look at: perhaps


def test_a_commit_another_connection_writes_into_pauses_after_every_chunk_while_it_does(brain, timeline):
    """A second connection commits in the first pause: the chunks after it are each followed by a pause."""
    preview = prepare_pool(brain).preview(400)
    other = sqlite3.connect(brain.path, isolation_level=None, timeout=30)

    def cleo_writes() -> None:
        other.execute("INSERT INTO brain_observations(id, type, title, narrative, created_at) VALUES "
                      "('O-cleo', 'change', 'CLEO', 'written in the pause', '2026-03-01 10:00:00')")

    timeline.in_pause.append(cleo_writes)
    try:
        with held_open_by_another_process(brain.path):
            commit_preview(brain, preview)
    finally:
        other.close()
    kinds = [kind for kind, _s in timeline.events]
    first_pause = kinds.index("pause")
    after = kinds[first_pause + 1:]
    # live: the next chunk is followed by a pause at once; that pause sees nobody, so quiet again
    # (after one extra wait: the writer may have missed it), and chunks go on two by two
    assert after[:2] == ["chunk", "pause"]
    assert after[2] == "pause" and after[3:6] == ["chunk", "chunk", "pause"]
    assert brain.scalar("SELECT count(*) FROM brain_observations WHERE id = 'O-cleo'") == 1
