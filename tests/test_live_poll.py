"""The live-brain poll step and the cancellable write-lock wait, on real SQLite files."""

from __future__ import annotations

import json
import sqlite3

from cleo_tui.brain.connection import connect
from cleo_tui.brain.live_poll import poll_step, read_state, wait_for_write_lock
from tests.brain_fixtures import insert_observations, make_cleo_consolidated, observation


def test_poll_step_sees_new_and_deleted_rows_from_another_connection(tmp_path):
    path = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    insert_observations(path, [observation(i) for i in range(5)])
    conn = connect(path, True)
    state = read_state(conn, path)
    quiet = poll_step(conn, path, state)
    assert not quiet.changed and not quiet.noticed and quiet.new_ids == []

    insert_observations(path, [observation(i) for i in range(5, 8)])
    result = poll_step(conn, path, quiet.state)
    assert result.changed and result.deleted == 0
    assert result.new_ids == [observation(i)["id"] for i in range(5, 8)]
    assert result.state.high_water > state.high_water and result.state.rows == 8
    assert "3 new observations" in result.describe()

    other = sqlite3.connect(path, isolation_level=None)
    other.execute("DELETE FROM brain_observations WHERE id IN (?, ?)", (observation(0)["id"], observation(1)["id"]))
    other.close()
    gone = poll_step(conn, path, result.state)
    assert gone.changed and gone.new_ids == [] and gone.deleted == 2
    assert not poll_step(conn, path, gone.state).changed
    conn.close()


def test_poll_step_reads_the_sweep_gate_without_a_write(tmp_path):
    path = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    conn = connect(path, True)
    state = read_state(conn, path)
    gate = path.parent / "sentient-state.json"
    gate.write_text(json.dumps({"sweepGateActive": True, "sweepRunId": "s1"}))
    up = poll_step(conn, path, state)
    assert up.sweep_changed and not up.changed and "CLEO is sweeping" in (up.state.sweep or "")
    gate.write_text(json.dumps({"sweepGateActive": False}))
    down = poll_step(conn, path, up.state)
    assert down.sweep_changed and down.state.sweep is None
    conn.close()


def test_wait_for_write_lock_can_be_cancelled_and_says_it_waits(tmp_path):
    path = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # CLEO holds the write lock
    probe = connect(path, False)
    now = [0.0]
    told: list[str] = []

    def clock() -> float:
        now[0] += 0.5  # each probe "takes" half a second
        return now[0]

    assert not wait_for_write_lock(probe, lambda: now[0] > 3, lambda: told.append("waiting"), clock=clock)
    assert told == ["waiting"]
    holder.execute("ROLLBACK")
    assert wait_for_write_lock(probe, lambda: False, clock=clock)
    assert not probe.in_transaction
    holder.close()
    probe.close()
