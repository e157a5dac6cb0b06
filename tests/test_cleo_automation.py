"""CLEO's own automation under the user's eye (issue 28), on brains in CLEO's layout with the rows CLEO writes.

Sweeps are staged, approved and rolled back with the statements CLEO's code runs (tests/cleo_sweep.py);
consolidation's flag and hard delete likewise.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cleo_tui.brain import cleo_rules, open_brain
from cleo_tui.brain.observations import ObservationQuery, count_observations, page_observations
from cleo_tui.brain.summary import brain_summary
from cleo_tui.memory import causes
from cleo_tui.memory.cleo_marks import AT_RISK_LATER, KeepError, cleo_marks, keep_advice, keep_in_cleo
from cleo_tui.memory.curation import evict_observation, restore_observation, undo
from cleo_tui.memory.history import brain_timeline, memory_life
from cleo_tui.memory.sweeps import SweepError, list_runs, purge_ids, veto_row
from cleo_tui.recall.sweep_impact import sweep_recall_impact
from tests.brain_fixtures import add_cleo_recall_logs, insert_observations, make_cleo_consolidated, make_cleo_legacy
from tests.cleo_sweep import cleo_approve, cleo_flag_and_hard_delete, cleo_rollback, stage_sweep

NOW = "2026-06-01 09:00:00"  # conftest's CLEO_TUI_NOW
OLD, RECENT = "2026-03-01 10:00:00", "2026-05-25 10:00:00"
EVENTS_SQL = """CREATE TABLE brain_consolidation_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, trigger TEXT NOT NULL, session_id TEXT,
    step_results_json TEXT NOT NULL, duration_ms INTEGER, succeeded INTEGER NOT NULL DEFAULT 1,
    started_at TEXT NOT NULL DEFAULT (datetime('now')))"""


def _obs(oid: str, created: str = OLD, quality: float | None = 0.5, citations: int = 0, **extra: object) -> dict:
    return {"id": oid, "type": "discovery", "title": f"title of {oid}", "narrative": f"narrative of {oid}",
            "created_at": created, "source_type": "agent", "quality_score": quality, "citation_count": citations,
            **extra}


def _sql(path: Path, *statements: tuple[str, tuple]) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for sql, params in statements:
            conn.execute(sql, params)
    finally:
        conn.close()


def _add_prune_column(path: Path) -> None:
    _sql(path, ("ALTER TABLE brain_observations ADD COLUMN prune_candidate INTEGER DEFAULT 0", ()))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = make_cleo_consolidated(tmp_path / "proj" / ".cleo" / "cleo.db")
    insert_observations(path, [_obs("O-noise1", quality=0.1), _obs("O-noise2", quality=0.2),
                               _obs("O-keep", quality=0.9)])
    return path


# -- 2. History knows the sweep ---------------------------------------------------------------

def test_an_approved_sweep_is_the_cause_with_its_run_as_evidence(db):
    stage_sweep(db, "bfr-test-aaaaaa", [("brain_observations", "O-noise1"), ("brain_observations", "O-noise2")])
    conn = sqlite3.connect(db, isolation_level=None)
    result = cleo_approve(conn, "bfr-test-aaaaaa")
    # A consolidation run at the same moment must not take the eviction over.
    conn.execute(EVENTS_SQL)
    approved_at = conn.execute("SELECT approved_at FROM brain_backfill_runs").fetchone()[0]
    conn.execute("INSERT INTO brain_consolidation_events (trigger, step_results_json, duration_ms, started_at) "
                 "VALUES ('session_end', '{}', 5000, ?)", (approved_at,))
    conn.close()
    assert result["purged"] == 2
    brain = open_brain(db)
    try:
        life = memory_life(brain, "O-noise1")
        assert life is not None and life.cause is not None
        assert life.cause.cause == causes.CLEO_SWEEP
        assert life.cause.sweep is not None and life.cause.sweep.id == "bfr-test-aaaaaa"
        assert any("bfr-test-aaaaaa" in e for e in life.cause.evidence)
        assert life.to_dict()["cause"]["sweep_run"]["id"] == "bfr-test-aaaaaa"
        day = [d for d in brain_timeline(brain).days if d.evicted]
        assert day[-1].evicted == {causes.CLEO_SWEEP: 2}
        assert causes.cause_of(brain, "O-keep") is None
    finally:
        brain.close()


def test_noise_purged_without_a_matching_run_is_not_the_sweep(db):
    _sql(db, ("UPDATE brain_observations SET invalid_at = '2026-05-01T00:00:00.000Z', "
              "provenance_class = 'noise-purged' WHERE id = 'O-noise1'", ()))
    stage_sweep(db, "bfr-other-bbbbbb", [("brain_observations", "O-noise2")])
    brain = open_brain(db)
    try:
        assert causes.cause_of(brain, "O-noise1") == (causes.UNKNOWN, None)
        life = memory_life(brain, "O-noise1")
        assert life is not None and life.cause is not None
        assert any("CLEO's sweeps" in line for line in life.cause.checked)
    finally:
        brain.close()


def test_a_learning_purged_by_a_sweep_names_it_too(db):
    _sql(db, ("INSERT INTO brain_learnings (id, insight, source, confidence, created_at, quality_score) "
              "VALUES ('L-noise', 'weak', 'agent', 0.3, ?, 0.1)", (OLD,)))
    stage_sweep(db, "bfr-lrn-cccccc", [("brain_learnings", "L-noise")])
    conn = sqlite3.connect(db, isolation_level=None)
    cleo_approve(conn, "bfr-lrn-cccccc")
    conn.close()
    brain = open_brain(db)
    try:
        life = memory_life(brain, "L-noise")
        assert life is not None and life.cause is not None and life.cause.cause == causes.CLEO_SWEEP
    finally:
        brain.close()


# -- 4. Undo is never a cause ------------------------------------------------------------------

@pytest.mark.parametrize("first", ["sweep", "cleo-tui evict", "consolidation"])
def test_undoing_a_restore_keeps_the_original_cause(db, first):
    if first == "sweep":
        stage_sweep(db, "bfr-undo-dddddd", [("brain_observations", "O-noise1")])
        conn = sqlite3.connect(db, isolation_level=None)
        cleo_approve(conn, "bfr-undo-dddddd")
        conn.close()
    elif first == "consolidation":
        _sql(db, (EVENTS_SQL, ()),
             ("INSERT INTO brain_consolidation_events (trigger, step_results_json, duration_ms, started_at) "
              "VALUES ('session_end', '{}', 5000, '2026-05-01 03:00:00')", ()),
             ("UPDATE brain_observations SET invalid_at = '2026-05-01 03:00:02' WHERE id = 'O-noise1'", ()))
    brain = open_brain(db)
    try:
        if first == "cleo-tui evict":
            evict_observation(brain, "O-noise1")
        before = causes.cause_of(brain, "O-noise1")
        assert before is not None and before[0] != causes.UNKNOWN
        restore = restore_observation(brain, "O-noise1")
        undo(brain, restore)
        after = causes.cause_of(brain, "O-noise1")
        assert after == before
        life = memory_life(brain, "O-noise1")
        assert life is not None and life.cause is not None and "undo" not in life.cause.cause
        assert [d.evicted for d in brain_timeline(brain).days if d.evicted][-1] == {before[0]: 1}
    finally:
        brain.close()


# -- 1. The sweep review: runs, rows, veto, impact ----------------------------------------------

def test_runs_list_their_rows_with_current_values_and_full_text(db):
    stage_sweep(db, "bfr-list-eeeeee", [("brain_observations", "O-noise1"), ("brain_observations", "O-gone")],
                actions={"O-gone": "keep"})
    brain = open_brain(db)
    try:
        (run,) = list_runs(brain)
        assert (run.id, run.kind, run.status) == ("bfr-list-eeeeee", "noise-sweep-2440", "staged")
        first, gone = run.rows
        assert first.current is not None and first.current["quality_score"] == 0.1
        assert first.text == "narrative of O-noise1" and first.title == "title of O-noise1"
        assert gone.current is None and gone.action == "keep"
        assert purge_ids(run) == ["O-noise1"]
        assert set(run.to_dict()) == {"id", "kind", "status", "created_at", "approved_at", "rows"}
        assert set(run.to_dict()["rows"][0]) == {"id", "source_table", "source_id", "action", "new_quality_score",
                                                  "new_invalid_at", "validation_status"}
    finally:
        brain.close()


def test_a_vetoed_row_is_left_out_by_cleos_approve_and_the_veto_undoes(db):
    """CLEO's executeSweep loads only pending rows: a row set to skipped is not applied."""
    ids = stage_sweep(db, "bfr-veto-ffffff", [("brain_observations", "O-noise1"), ("brain_observations", "O-noise2")])
    brain = open_brain(db)
    try:
        run_id = veto_row(brain, ids[0])
        assert [r.validation_status for r in list_runs(brain)[0].rows] == ["skipped", "pending"]
        undo(brain, run_id)
        assert [r.validation_status for r in list_runs(brain)[0].rows] == ["pending", "pending"]
        veto_row(brain, ids[0])
    finally:
        brain.close()
    conn = sqlite3.connect(db, isolation_level=None)
    assert cleo_approve(conn, "bfr-veto-ffffff")["purged"] == 1
    rows = dict(conn.execute("SELECT id, invalid_at FROM brain_observations").fetchall())
    conn.close()
    assert rows["O-noise1"] is None and rows["O-noise2"] is not None
    brain = open_brain(db)
    try:
        with pytest.raises(SweepError, match="not staged"):
            veto_row(brain, ids[1])
        with pytest.raises(SweepError, match="no sweep candidate"):
            veto_row(brain, "bos-nope")
    finally:
        brain.close()


def test_a_rolled_back_run_is_listed_with_its_rows_skipped(db):
    stage_sweep(db, "bfr-roll-gggggg", [("brain_observations", "O-noise1")])
    conn = sqlite3.connect(db, isolation_level=None)
    assert cleo_rollback(conn, "bfr-roll-gggggg")
    conn.close()
    brain = open_brain(db)
    try:
        (run,) = list_runs(brain)
        assert run.status == "rolled-back" and run.rows[0].validation_status == "skipped"
        assert purge_ids(run) == []
    finally:
        brain.close()


def test_the_recall_impact_names_the_recalls_that_returned_a_purged_row(db):
    add_cleo_recall_logs(db, retrievals=[
        {"query": "noise", "entry_ids": ["O-noise1", "O-keep"], "created_at": "2026-05-01 10:00:00"},
        {"query": "noise again", "entry_ids": ["O-noise1"], "created_at": "2026-05-03 10:00:00"},
        {"query": "other", "entry_ids": ["O-keep"], "created_at": "2026-05-04 10:00:00"},
        {"query": "broken", "entry_ids": "not json", "created_at": "2026-05-05 10:00:00"}],
        usage=[{"entry_id": "O-noise2", "task_id": "T1", "used": 1, "outcome": "success"},
               {"entry_id": "O-noise1", "task_id": "T2", "used": 1, "outcome": "success"}])
    brain = open_brain(db)
    try:
        impact = sweep_recall_impact(brain, ["O-noise1", "O-noise2"])
        # counted as the Prune pane counts them: both retrievals that returned O-noise1 lose an entry a task used
        assert (impact.retrievals, impact.affected_retrievals, impact.affected_used) == (4, 2, 2)
        lost = impact.by_id()
        assert lost["O-noise1"].recalls == 2 and lost["O-noise1"].last_recalled_at == "2026-05-03 10:00:00"
        assert lost["O-noise2"].recalls == 0 and lost["O-noise2"].used == 1  # used, never returned: still named
    finally:
        brain.close()


# -- 3. At risk, and hidden from CLEO's search -----------------------------------------------------

@pytest.fixture
def marked(tmp_path: Path) -> Path:
    path = make_cleo_consolidated(tmp_path / "proj" / ".cleo" / "cleo.db")
    _add_prune_column(path)
    insert_observations(path, [
        _obs("O-flagged", quality=0.1, prune_candidate=1),   # at risk, flag set
        _obs("O-unflagged", quality=0.15),                    # at risk: flagged in the same consolidation
        _obs("O-young", created=RECENT, quality=0.1),         # at risk later
        _obs("O-cited", quality=0.1, citations=2),            # kept: cited
        _obs("O-null", quality=None),                          # NULL reads 0.5: neither
        _obs("O-hidden", quality=0.25),                        # hidden from search
        _obs("O-evicted", quality=0.1, invalid_at="2026-04-01 00:00:00"),  # at risk, evicted, not hidden
        _obs("O-fine", quality=0.6),
    ])
    return path


def test_the_marks_follow_cleos_rules(marked):
    brain = open_brain(marked)
    try:
        at_risk = {r["id"] for r in page_observations(brain, ObservationQuery(cleo_mark=cleo_rules.AT_RISK), None, 50)}
        hidden = {r["id"] for r in page_observations(brain, ObservationQuery(cleo_mark=cleo_rules.HIDDEN), None, 50)}
        assert at_risk == {"O-flagged", "O-unflagged", "O-evicted"}
        assert hidden == {"O-flagged", "O-unflagged", "O-young", "O-cited", "O-hidden"}
        rows = {r["id"]: r for r in page_observations(brain, ObservationQuery(), None, 50)}
        assert {i for i, r in rows.items() if r["cleo_at_risk"]} == at_risk
        assert {i for i, r in rows.items() if r["cleo_hidden"]} == hidden
        assert rows["O-flagged"]["cleo_flagged"] and not rows["O-unflagged"]["cleo_flagged"]
        summary = brain_summary(brain)
        assert (summary["at_risk"], summary["hidden_from_cleo_search"]) == (3, 5)
        assert count_observations(brain, ObservationQuery(state="live", cleo_mark=cleo_rules.AT_RISK)) == 2
    finally:
        brain.close()
    # What CLEO's consolidation then deletes is exactly the at-risk set.
    conn = sqlite3.connect(marked, isolation_level=None)
    assert cleo_flag_and_hard_delete(conn, NOW) == 3
    left = {r[0] for r in conn.execute("SELECT id FROM brain_observations")}
    conn.close()
    assert left.isdisjoint(at_risk) and "O-young" in left


def test_the_detail_says_the_reason_the_rule_and_when(marked):
    brain = open_brain(marked)
    try:
        (risk, hidden) = cleo_marks(brain, "O-unflagged")
        assert risk.mark == cleo_rules.AT_RISK and "runPruneSweep" in risk.rule and "correlateOutcomes" in risk.rule
        assert "0.15 < 0.2" in risk.reason and "prune_candidate not set yet" in risk.reason
        assert "next consolidation" in risk.when
        assert hidden.mark == cleo_rules.HIDDEN and "searchBrain" in hidden.rule
        (later, _hidden) = cleo_marks(brain, "O-young")
        assert later.mark == AT_RISK_LATER and "2026-06-24" in later.when
        assert cleo_marks(brain, "O-fine") == [] and cleo_marks(brain, "O-null") == []
        life = memory_life(brain, "O-flagged")
        assert life is not None and [m["mark"] for m in life.to_dict()["cleo_marks"]] == ["at-risk", "hidden"]
        assert life.keep is not None and "CLEO never reads cleo-tui's pins" in life.keep.text
    finally:
        brain.close()


def test_keep_in_cleo_survives_cleos_consolidation_and_undoes(marked):
    brain = open_brain(marked)
    try:
        advice = keep_advice(brain, "O-flagged")
        assert advice.offered
        run_id = keep_in_cleo(brain, "O-flagged")
        assert cleo_marks(brain, "O-flagged") == []
    finally:
        brain.close()
    conn = sqlite3.connect(marked, isolation_level=None)
    cleo_flag_and_hard_delete(conn, NOW)
    assert conn.execute("SELECT quality_score FROM brain_observations WHERE id = 'O-flagged'").fetchone() == (0.5,)
    conn.close()
    brain = open_brain(marked)
    try:
        undo(brain, run_id)
        assert brain.scalar("SELECT quality_score FROM brain_observations WHERE id = 'O-flagged'") == 0.1
    finally:
        brain.close()


def test_keep_is_not_offered_when_cleo_would_lower_the_quality_again(marked):
    _sql(marked, ("UPDATE brain_observations SET verified = 1 WHERE id = 'O-hidden'", ()),
         ("INSERT INTO brain_page_edges (from_id, to_id, edge_type, weight, provenance, created_at) VALUES "
          "('observation:O-fine', 'observation:O-hidden', 'contradicts', 0.8, 'consolidation:contradiction', ?)",
          (OLD,)))
    add_cleo_recall_logs(marked, usage=[{"entry_id": "O-flagged", "task_id": "T1", "used": 1,
                                          "outcome": "failure"}])
    brain = open_brain(marked)
    try:
        contradicted = keep_advice(brain, "O-hidden")
        assert not contradicted.offered and "detectContradictions" in contradicted.text
        failed = keep_advice(brain, "O-flagged")
        assert not failed.offered and "correlateOutcomes" in failed.text
        with pytest.raises(KeepError, match="Nothing was written"):
            keep_in_cleo(brain, "O-hidden")
        assert brain.scalar("SELECT quality_score FROM brain_observations WHERE id = 'O-hidden'") == 0.25
    finally:
        brain.close()


def test_a_legacy_brain_without_the_columns_marks_nothing(tmp_path):
    path = make_cleo_legacy(tmp_path / "brain.db")
    insert_observations(path, [_obs("O-old", quality=0.1)])
    brain = open_brain(path)
    try:
        rows = page_observations(brain, ObservationQuery(), None, 10)
        assert rows[0]["cleo_flagged"] == 0  # no prune_candidate column yet: CLEO adds it at run time
        assert rows[0]["cleo_at_risk"] == 1  # ... and flags it in the same consolidation
        assert count_observations(brain, ObservationQuery(cleo_mark=cleo_rules.AT_RISK)) == 1
    finally:
        brain.close()
    # Without citation_count CLEO's DELETE fails (and CLEO catches it): nothing is at risk.
    _sql(path, ("DROP INDEX IF EXISTS idx_brain_observations_citation_count", ()),
         ("ALTER TABLE brain_observations DROP COLUMN citation_count", ()))
    brain = open_brain(path)
    try:
        assert brain_summary(brain)["at_risk"] == 0 and cleo_marks(brain, "O-old")[0].mark == cleo_rules.HIDDEN
    finally:
        brain.close()


def test_the_day_chart_draws_a_sweep_in_its_own_colour():
    from cleo_tui.memory.history import Day
    from cleo_tui.ui.widgets.history_chart import LEGEND, SWEEP, cause_style, chart_rows

    days = [Day("2026-05-30", added=5, live=5, live_tokens=100),
            Day("2026-05-31", live=2, live_tokens=40, evicted={causes.CLEO_SWEEP: 3})]
    rows = chart_rows(days, 40)
    assert cause_style(causes.CLEO_SWEEP) == SWEEP
    assert SWEEP in {c.style for r in rows.evictions for c in r}
    assert LEGEND[SWEEP] in "".join(c.char for c in rows.title)
