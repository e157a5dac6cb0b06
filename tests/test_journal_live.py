"""The journal with CLEO alive: undo after CLEO's reads, conflicts named, partial undo, rows CLEO
deleted, chunked commits of what the user saw, interrupted runs, the sweep gate, integer ids,
hiding from CLEO's search. Real brain files; CLEO is simulated by the SQL it runs."""

from __future__ import annotations

import json
import sqlite3

import pytest

from cleo_tui.brain import journal, open_brain
from cleo_tui.brain.sweep_gate import SweepActive, state_path, sweep_active
from cleo_tui.memory import curation
from cleo_tui.memory.cleo_effects import EVICTION_IN_CLEO, HIDDEN_QUALITY
from cleo_tui.memory.pruner import commit_preview, prepare_pool
from tests.pruner_fixtures import add_observation, new_brain

SMALL = journal.ChunkBudget(rows=3, seconds=10, pause=0)  # many chunks on a small brain


@pytest.fixture
def brain(tmp_path):
    brain = new_brain(tmp_path)
    for i in range(12):
        add_observation(brain, f"O-{i:02d}", f"routine work item {i} " * 6, created_at=f"2026-01-{i + 1:02d} 10:00:00",
                        updated_at="2026-01-01 00:00:00", citation_count=0, quality_score=0.6 if i % 2 else None)
    yield brain
    brain.close()


def cleo_reads(path, ids=None):
    """What CLEO's `memory find`/`fetch` run on every hit, evicted rows included (own connection)."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    where = "" if ids is None else f" WHERE id IN ({','.join('?' * len(ids))})"
    conn.execute("UPDATE brain_observations SET citation_count = citation_count + 1, "
                 f"updated_at = '2030-05-05 05:05:05'{where}", list(ids or []))
    conn.close()


def other_writer(path, sql, params=()):
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    conn.execute(sql, params)
    conn.close()


def live(brain):
    return {r[0] for r in brain.query("SELECT id FROM brain_observations WHERE invalid_at IS NULL")}


def test_undo_of_a_prune_restores_every_row_after_cleo_read_them(brain):
    preview = prepare_pool(brain).preview(300)
    result = commit_preview(brain, preview, budget=SMALL)
    assert len(result.evicted) == preview.drop_count > 3
    cleo_reads(brain.path)
    outcome = curation.undo_detailed(brain, result.run_id, budget=SMALL)
    assert outcome.restored == preview.drop_count and outcome.skipped == [] and outcome.complete
    assert len(live(brain)) == 12
    rows = brain.query("SELECT citation_count, updated_at FROM brain_observations WHERE id IN "
                       f"({','.join('?' * len(result.evicted))})", result.evicted)
    assert all(r[0] == 1 for r in rows)  # CLEO's count kept
    assert all(r[1] not in ("2030-05-05 05:05:05", "2026-01-01 00:00:00") for r in rows)  # now, not back
    assert journal.get_run(brain.conn, result.run_id).undone_by == outcome.undo_id


@pytest.mark.parametrize("step", ["evict", "restore", "pin"])
def test_every_single_row_step_survives_cleo_reads(brain, step):
    if step == "restore":
        curation.evict_observation(brain, "O-03")
    run_id = {"evict": curation.evict_observation, "restore": curation.restore_observation,
              "pin": curation.pin_observation}[step](brain, "O-03")
    cleo_reads(brain.path)
    outcome = curation.undo_detailed(brain, run_id)
    assert outcome.restored >= 1 and outcome.skipped == [] and outcome.complete
    invalid = brain.scalar("SELECT invalid_at FROM brain_observations WHERE id = 'O-03'")
    assert (invalid is None) == (step != "restore")
    assert brain.scalar("SELECT count(*) FROM cleo_tui_relevance_overrides") == 0


def test_a_row_changed_in_an_owned_column_is_named_and_a_second_undo_gets_it(brain):
    result = commit_preview(brain, prepare_pool(brain).preview(300))
    victim = result.evicted[0]
    other_writer(brain.path, "UPDATE brain_observations SET invalid_at = '2031-01-01 00:00:00' WHERE id = ?", (victim,))
    cleo_reads(brain.path)
    outcome = curation.undo_detailed(brain, result.run_id)
    assert [s["id"] for s in outcome.skipped] == [victim] and "invalid_at" in outcome.skipped[0]["why"]
    assert outcome.restored == len(result.evicted) - 1 and outcome.remaining == 1 and not outcome.complete
    assert journal.get_run(brain.conn, result.run_id).undone_by is None  # not wholly undone
    # whoever changed it puts the run's state back: the second undo restores what is left
    run_value = json.loads(brain.scalar("SELECT after_json FROM cleo_tui_run_changes WHERE run_id = ? "
                                        "AND row_key = ?", (result.run_id, json.dumps({"id": victim}))))
    other_writer(brain.path, "UPDATE brain_observations SET invalid_at = ? WHERE id = ?",
                 (run_value["invalid_at"], victim))
    second = curation.undo_detailed(brain, result.run_id)
    assert second.restored == 1 and second.complete and len(live(brain)) == 12
    with pytest.raises(Exception, match="already undone"):
        curation.undo_detailed(brain, result.run_id)


def test_undo_after_cleo_deleted_rows_restores_the_rest_and_names_them(brain, capsys):
    from cleo_tui.cli import main
    result = commit_preview(brain, prepare_pool(brain).preview(300))
    gone = result.evicted[:2]
    other_writer(brain.path, "DELETE FROM brain_observations WHERE id IN (?, ?)", gone)
    assert main(["prune", "--db", str(brain.path), "--undo", str(result.run_id), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert sorted(m["id"] for m in data["missing"]) == sorted(gone)
    assert data["restored"] == len(result.evicted) - 2 and data["complete"] is True
    assert len(live(brain)) == 10


def test_commit_evicts_what_the_user_saw_while_another_connection_writes(brain):
    preview = prepare_pool(brain).preview(300)
    dropped = preview.dropped_ids
    edited, evicted_by_cleo, deleted = dropped[0], dropped[1], dropped[2]
    other_writer(brain.path, "UPDATE brain_observations SET narrative = narrative || ' and more text' WHERE id = ?",
                 (edited,))
    other_writer(brain.path, "UPDATE brain_observations SET invalid_at = '2026-02-02 00:00:00' WHERE id = ?",
                 (evicted_by_cleo,))
    other_writer(brain.path, "DELETE FROM brain_observations WHERE id = ?", (deleted,))
    for i in range(3):
        other_writer(brain.path, "INSERT INTO brain_observations(id, type, title, narrative, created_at) VALUES "
                                 "(?, 'change', 'new', ?, '2026-03-01 10:00:00')", (f"O-new{i}", "fresh row " * 30))
    cleo_reads(brain.path)
    result = commit_preview(brain, preview, budget=SMALL)
    assert sorted(result.evicted) == sorted(dropped[3:])
    assert {s["id"]: s["why"] for s in result.skipped} == {
        edited: "text changed since the preview",
        evicted_by_cleo: "evicted since the preview (by CLEO or another run)",
        deleted: "deleted since the preview"}
    assert live(brain) >= {"O-new0", "O-new1", "O-new2", edited}
    assert result.new_rows == 3 and result.new_tokens > 0
    assert result.tokens_now == prepare_pool(brain).tokens_before  # the pool as it is now
    assert result.within_target is (result.tokens_now <= preview.target)
    text = "\n".join(result.lines())
    assert "3 new rows since the preview" in text and f"{result.tokens_now:,} tokens" in text
    assert edited in text
    run = journal.get_run(brain.conn, result.run_id)
    assert run.status == journal.DONE and run.params["ids"] == dropped


def test_an_interrupted_chunked_run_is_rolled_back_on_the_next_open(brain):
    path = brain.path
    before = [tuple(r) for r in brain.query("SELECT * FROM brain_observations ORDER BY id")]
    with brain.write() as conn:  # the first chunks of a run whose process died
        run_id = journal.start_run(conn, "prune", "pruning", {}, status=journal.IN_PROGRESS)
        curation.evict_rows(brain, conn, run_id, ["O-00", "O-01"], "2026-06-06 06:06:06")
        conn.execute("UPDATE cleo_tui_runs SET owner_pid = 2147483000 WHERE id = ?", (run_id,))
    with brain.write() as conn:
        curation.evict_rows(brain, conn, run_id, ["O-02"], "2026-06-06 06:06:06")
    brain.close()
    looking = open_brain(path, read_only=True)  # `info`, a preview: reads only, says so
    assert "cannot be rolled back now: the brain is read-only (opened with --read-only)" in looking.recovered[0]
    looking.close()
    reopened = open_brain(path)
    try:
        assert reopened.recovered and "has been rolled back" in reopened.recovered[0]
        assert [tuple(r) for r in reopened.query("SELECT * FROM brain_observations ORDER BY id")] == before
        assert reopened.scalar("SELECT count(*) FROM cleo_tui_runs") == 0
        assert reopened.scalar("SELECT count(*) FROM cleo_tui_run_changes") == 0
    finally:
        reopened.close()


def _interrupted_run(brain) -> int:
    """A run whose process died after its first chunk (O-00 evicted); the brain is closed."""
    with brain.write() as conn:
        run_id = journal.start_run(conn, "prune", "pruning", {}, status=journal.IN_PROGRESS)
        curation.evict_rows(brain, conn, run_id, ["O-00"], "2026-06-06 06:06:06")
        conn.execute("UPDATE cleo_tui_runs SET owner_pid = 2147483000 WHERE id = ?", (run_id,))
    brain.close()
    return run_id


def test_info_rolls_an_interrupted_run_back_as_the_readme_says(brain, capsys):
    """Issue 29.9: `info` said the run "is rolled back the next time the brain is opened for
    writing" and left it half-done; the README says any command rolls it back."""
    from cleo_tui.cli import main
    before = [tuple(r) for r in brain.query("SELECT * FROM brain_observations ORDER BY id")]
    path = str(brain.path)
    run_id = _interrupted_run(brain)
    assert main(["info", "--db", path]) == 0
    out = capsys.readouterr().out
    assert f"run {run_id} (prune) was interrupted and has been rolled back" in out and "recovered:" in out
    conn = sqlite3.connect(path)
    assert [tuple(r) for r in conn.execute("SELECT * FROM brain_observations ORDER BY id")] == before
    assert conn.execute("SELECT count(*) FROM cleo_tui_runs").fetchone()[0] == 0
    conn.close()
    assert main(["info", "--db", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["recovered"] == []


def test_a_preview_rolls_an_interrupted_run_back_then_reads_only(brain, capsys):
    from cleo_tui.cli import main
    path = str(brain.path)
    _interrupted_run(brain)
    assert main(["prune", "--db", path, "--budget", "100000"]) == 0
    assert sqlite3.connect(path).execute("SELECT count(*) FROM cleo_tui_runs").fetchone()[0] == 0


def test_info_on_a_read_only_brain_says_plainly_it_cannot_roll_back(brain, capsys):
    from cleo_tui.cli import main
    from tests.test_reliability_files import unwritable
    path = brain.path
    run_id = _interrupted_run(brain)
    with unwritable(path):
        assert main(["info", "--db", str(path), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["recovered"]
    assert len(notes) == 1 and f"run {run_id} (prune) was interrupted" in notes[0]
    assert "cannot be rolled back" in notes[0] and "not writable" in notes[0]
    assert "next time" not in notes[0]
    assert sqlite3.connect(path).execute("SELECT count(*) FROM cleo_tui_runs").fetchone()[0] == 1


def test_a_run_whose_pid_was_reused_is_rolled_back(brain):
    """Issue 29.15: pid 1 is alive, but it is not the process that started the run."""
    with brain.write() as conn:
        journal.start_run(conn, "prune", "pruning", {}, status=journal.IN_PROGRESS)
    started = brain.scalar("SELECT owner_started FROM cleo_tui_runs")
    assert started  # the owner's start time is recorded beside its pid
    conn = sqlite3.connect(brain.path, isolation_level=None)
    conn.execute("UPDATE cleo_tui_runs SET owner_pid = 1")  # pid 1 lives, but started at another time
    conn.close()
    other = open_brain(brain.path)
    try:
        assert other.recovered and other.scalar("SELECT count(*) FROM cleo_tui_runs") == 0
    finally:
        other.close()


def test_a_run_of_a_live_process_with_its_start_time_is_left_alone(brain, tmp_path):
    import subprocess
    import sys
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        with brain.write() as conn:
            journal.start_run(conn, "prune", "still writing", {}, status=journal.IN_PROGRESS)
            conn.execute("UPDATE cleo_tui_runs SET owner_pid = ?, owner_started = ?",
                         (child.pid, journal.process_start(child.pid)))
        other = open_brain(brain.path)
        try:
            assert other.recovered == [] and other.scalar("SELECT count(*) FROM cleo_tui_runs") == 1
        finally:
            other.close()
    finally:
        child.communicate(b"")


def test_a_run_of_a_live_process_is_not_recovered(brain):
    """A run written before owners had a start time (migration 6) is told by its pid alone."""
    with brain.write() as conn:
        journal.start_run(conn, "prune", "still writing", {}, status=journal.IN_PROGRESS)
    conn = sqlite3.connect(brain.path, isolation_level=None)
    conn.execute("UPDATE cleo_tui_runs SET owner_pid = 1, owner_started = NULL")  # pid 1 is alive
    conn.close()
    other = open_brain(brain.path)
    try:
        assert other.recovered == [] and other.scalar("SELECT count(*) FROM cleo_tui_runs") == 1
    finally:
        other.close()


def test_the_sweep_gate_refuses_every_write_and_says_cleo_is_sweeping(brain, capsys):
    from cleo_tui.cli import main
    state = state_path(brain.path)
    state.write_text(json.dumps({"sweepGateActive": True, "sweepRunId": "sw-1", "killSwitch": False}))
    assert "CLEO is sweeping" in sweep_active(brain.path)
    with pytest.raises(SweepActive, match="CLEO is sweeping this brain \\(sweep run sw-1\\)"):
        curation.evict_observation(brain, "O-01")
    with pytest.raises(SweepActive):
        curation.pin_observation(brain, "O-01")
    assert main(["prune", "--db", str(brain.path), "--budget", "300", "--apply", "--yes"]) == 2
    assert "CLEO is sweeping" in capsys.readouterr().err
    assert len(live(brain)) == 12
    state.write_text(json.dumps({"sweepGateActive": False}))
    assert sweep_active(brain.path) is None
    run_id = curation.evict_observation(brain, "O-01")
    state.write_text(json.dumps({"sweepGateActive": True}))
    with pytest.raises(SweepActive):
        curation.undo(brain, run_id)


def _integer_id_brain(tmp_path):
    path = tmp_path / "int.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE brain_observations (id PRIMARY KEY, type TEXT, title TEXT, narrative TEXT, "
                 "created_at TEXT, updated_at TEXT, invalid_at TEXT, quality_score REAL, source_type TEXT, "
                 "source_session_id TEXT, citation_count INTEGER DEFAULT 0)")
    for i in range(10):
        conn.execute("INSERT INTO brain_observations(id, type, title, narrative, created_at) VALUES "
                     "(?, 'change', ?, ?, ?)",
                     (100 + i, f"t{i}", f"integer id row {i} " * 8, f"2026-01-0{i % 9 + 1} 10:00:00"))
    conn.close()
    return path


def test_integer_ids_are_evicted_as_reported_and_undone(tmp_path):
    brain = open_brain(_integer_id_brain(tmp_path))
    try:
        assert brain.scalar("SELECT typeof(id) FROM brain_observations LIMIT 1") == "integer"
        preview = prepare_pool(brain).preview(150)
        result = commit_preview(brain, preview)
        assert result.evicted == preview.dropped_ids and result.skipped == []
        still_live = {str(r[0]) for r in brain.query("SELECT id FROM brain_observations WHERE invalid_at IS NULL")}
        assert not still_live & set(result.evicted)
        outcome = curation.undo_detailed(brain, result.run_id)
        assert outcome.restored == len(result.evicted) and outcome.complete
        assert brain.scalar("SELECT count(*) FROM brain_observations WHERE invalid_at IS NULL") == 10
    finally:
        brain.close()


def test_hide_from_cleo_sets_quality_below_its_search_threshold_and_undo_restores_it(brain):
    before = {r[0]: r[1] for r in brain.query("SELECT id, quality_score FROM brain_observations")}
    result = commit_preview(brain, prepare_pool(brain).preview(300), hide_from_cleo=True)
    cleo_search = "SELECT id FROM brain_observations WHERE (quality_score IS NULL OR quality_score >= 0.3)"
    found = {r[0] for r in brain.query(cleo_search)}
    assert not found & set(result.evicted) and result.hidden_from_cleo
    assert HIDDEN_QUALITY < 0.3 and not HIDDEN_QUALITY < 0.2  # below search, not in the hard sweeper's reach
    cleo_reads(brain.path)
    assert curation.undo_detailed(brain, result.run_id).complete
    assert {r[0]: r[1] for r in brain.query("SELECT id, quality_score FROM brain_observations")} == before
    assert "still return evicted rows" in EVICTION_IN_CLEO


def test_reflector_apply_undo_survives_cleo_reads(brain):
    from cleo_tui.llm.inputs import fingerprint
    from cleo_tui.llm.proposals import REFLECTOR, create_proposal, undo_proposal
    from cleo_tui.llm.reflector import apply_reflection
    ids = [f"O-{i:02d}" for i in range(6)]
    proposal = create_proposal(brain, REFLECTOR, None, "anthropic", "fake-model", [{"id": i} for i in ids],
                               {"patterns": [{"pattern": "Run tests before commits", "context": "CI"}],
                                "learnings": [{"insight": "WAL avoids blocking", "confidence": 0.9}],
                                "superseded": [{"id": i, "reason": "covered"} for i in ids[:3]],
                                "dropped_ids": [], "scope": "test"}, "{}", {}, fingerprint(brain, ids))
    proposal_id = getattr(proposal, "id", proposal)
    apply_reflection(brain, proposal_id, ids[:3], [0], [0])
    cleo_reads(brain.path)
    conn = sqlite3.connect(brain.path, isolation_level=None)
    for table in ("brain_patterns", "brain_learnings"):
        conn.execute(f"UPDATE {table} SET citation_count = coalesce(citation_count, 0) + 1, updated_at = 'x'")
    conn.close()
    undo_proposal(brain, proposal_id)
    assert brain.scalar("SELECT count(*) FROM brain_patterns") == 0
    assert brain.scalar("SELECT count(*) FROM brain_learnings") == 0
    assert len(live(brain)) == 12


def test_an_undo_that_skipped_a_changed_row_does_not_advise_a_retry_that_cannot_succeed(brain):
    """Issue 29.8: "`cmd` tries them again" after a skip, though a retry finds the row as changed."""
    run_id = curation.evict_observation(brain, "O-01")
    conn = sqlite3.connect(brain.path, isolation_level=None)  # CLEO re-dates the eviction meanwhile
    conn.execute("UPDATE brain_observations SET invalid_at = '2031-01-01 00:00:00' WHERE id = 'O-01'")
    conn.close()
    outcome = curation.undo_detailed(brain, run_id)
    assert outcome.remaining == 1 and len(outcome.skipped) == 1
    text = " ".join(outcome.lines("`cleo-tui prune --undo 1`"))
    assert "tries them again" not in text
    assert "only once" in text and "`cleo-tui prune --undo 1`" in text
    again = curation.undo_detailed(brain, run_id)  # and indeed: a retry changes nothing
    assert again.restored == 0 and len(again.skipped) == 1
