"""History: each way a memory leaves names its cause; the days equal plain SQL; agents' liveness.

Brains are real SQLite files in CLEO's consolidated layout. cleo-tui's own steps go
through the real pruner and reflector; CLEO's reflector and consolidation are
written by hand the way CLEO writes them (no journal).
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from cleo_tui.brain import Brain, open_brain
from cleo_tui.llm.proposals import REFLECTOR, create_proposal
from cleo_tui.llm.reflector import apply_reflection
from cleo_tui.memory import causes
from cleo_tui.memory.curation import evict_observation
from cleo_tui.memory.history import (
    brain_liveness,
    brain_timeline,
    evicted_with_causes,
    memory_life,
    missing_memories,
)
from cleo_tui.memory.pruner import commit_prune, prepare_pool
from cleo_tui.recall.traces import ensure_trace_tables
from tests.brain_fixtures import make_cleo_consolidated
from tests.recall_fixtures import make_hippo_store

REFLECT_AT = "2026-04-10 15:00:00"
CONSOLIDATE_AT = "2026-04-20 03:00:00"
UNKNOWN_AT = "2026-04-25 00:00:00"
EVENTS_SQL = """CREATE TABLE brain_consolidation_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, trigger TEXT NOT NULL, session_id TEXT,
    step_results_json TEXT NOT NULL, duration_ms INTEGER, succeeded INTEGER NOT NULL DEFAULT 1,
    started_at TEXT NOT NULL DEFAULT (datetime('now')))"""


def _insert(brain: Brain, rows: list[dict]) -> None:
    with brain.write() as conn:
        for row in rows:
            cols = ", ".join(f'"{k}"' for k in row)
            conn.execute(f"INSERT INTO brain_observations ({cols}) VALUES ({', '.join('?' for _ in row)})",
                         list(row.values()))


def _obs(oid: str, created: str, text: str, **extra: object) -> dict:
    return {"id": oid, "type": "discovery", "title": text[:60], "narrative": text, "created_at": created,
            "source_type": "agent", **extra}


def _prune(brain: Brain) -> int:
    """A real cleo-tui prune commit over the rows live now, at a tiny budget."""
    pool = prepare_pool(brain, "chars4")
    return commit_prune(brain, pool.preview(10))


def _reflect_apply(brain: Brain) -> int:
    """A real cleo-tui reflector apply: one pattern, one learning, O-f1 approved, O-f2 rejected."""
    proposal = create_proposal(
        brain, REFLECTOR, "ses_h", "fake", "fake-model", [{"id": "O-f1"}, {"id": "O-f2"}],
        {"patterns": [{"pattern": "Batch the writes", "context": "slow disk"}],
         "learnings": [{"insight": "Short transactions keep CLEO unblocked", "confidence": 0.8}],
         "superseded": [{"id": "O-f1", "reason": "restated"}, {"id": "O-f2", "reason": "restated"}]},
        "{}", {}, None)
    return apply_reflection(brain, proposal.id, ["O-f1"], [0], [0]).run_id


def _cleo_reflector(brain: Brain) -> None:
    """CLEO's reflector as it writes: pattern, learning, supersedes edges and the eviction, same moment."""
    with brain.write() as conn:
        conn.execute("INSERT INTO brain_patterns (id, type, pattern, context, extracted_at) "
                     "VALUES ('P-cleo0001', 'workflow', 'Run migrations in one transaction', '', ?)", (REFLECT_AT,))
        conn.execute("INSERT INTO brain_learnings (id, insight, source, confidence, created_at) "
                     "VALUES ('L-cleo0001', 'WAL avoids blocking', 'reflector-synthesized', 0.7, ?)", (REFLECT_AT,))
        for node, at in (("pattern:P-cleo0001", REFLECT_AT), ("learning:L-cleo0001", "2026-04-10 15:00:01")):
            conn.execute("INSERT INTO brain_page_edges (from_id, to_id, edge_type, weight, provenance, created_at) "
                         "VALUES (?, 'observation:O-r1', 'supersedes', 1.0, "
                         "'reflector-synthesized:session-end-reflection', ?)", (node, at))
        conn.execute("UPDATE brain_observations SET invalid_at = ?, updated_at = ? WHERE id = 'O-r1'",
                     (REFLECT_AT, REFLECT_AT))
        # An old supersedes edge to O-r2, far from its later eviction: not the reflector's doing.
        conn.execute("INSERT INTO brain_page_edges (from_id, to_id, edge_type, provenance, created_at) "
                     "VALUES ('pattern:P-cleo0001', 'observation:O-r2', 'supersedes', "
                     "'reflector-synthesized:session-end-reflection', '2026-01-01 00:00:00')")
        conn.execute("UPDATE brain_observations SET invalid_at = ? WHERE id IN ('O-r2', 'O-u1')", (UNKNOWN_AT,))


def _cleo_consolidation(brain: Brain) -> None:
    with brain.write() as conn:
        conn.execute(EVENTS_SQL)
        conn.execute("INSERT INTO brain_consolidation_events (trigger, session_id, step_results_json, duration_ms, "
                     "succeeded, started_at) VALUES ('session-end', NULL, '{\"dedup\": {\"merged\": 1}}', 8000, 1, ?)",
                     (CONSOLIDATE_AT,))
        conn.execute("UPDATE brain_observations SET invalid_at = '2026-04-20 03:00:05' WHERE id = 'O-c1'")
    brain.refresh()


def _hard_delete(brain: Brain) -> None:
    """O-d1: evicted by cleo-tui, cited and recalled, then deleted by someone else."""
    evict_observation(brain, "O-d1")
    with brain.write() as conn:
        conn.execute("INSERT INTO brain_page_edges (from_id, to_id, edge_type, created_at) "
                     "VALUES ('pattern:P-cleo0001', 'observation:O-d1', 'derived_from', '2026-04-11 10:00:00')")
        ensure_trace_tables(conn)  # created with the first trace written
        conn.execute("INSERT INTO recall_traces (ts, pipeline, query_hash, query_length, result_count) "
                     "VALUES ('2026-04-12T10:00:00.000Z', 'cli', '0123456789abcdef', 5, 1)")
        conn.execute("INSERT INTO recall_trace_results (trace_id, memory_id, result_rank, score) "
                     "VALUES (last_insert_rowid(), 'O-d1', 1, 0.5)")
        conn.execute("DELETE FROM brain_observations WHERE id = 'O-d1'")
    brain.refresh()  # the trace tables are new: features are read again


@pytest.fixture
def every_cause(tmp_path: Path) -> dict:
    """A CLEO brain where rows left by every path, and the run ids of cleo-tui's steps."""
    brain = open_brain(make_cleo_consolidated(tmp_path / "proj" / ".cleo" / "cleo.db"))
    _insert(brain, [_obs(f"O-p{i:02d}", f"2026-03-0{1 + i % 5} 10:00:00", f"routine work item {i} " * 4)
                    for i in range(8)])
    prune_run = _prune(brain)
    _insert(brain, [_obs("O-f1", "2026-03-20 09:00:00", "restated step one", source_session_id="ses_h"),
                    _obs("O-f2", "2026-03-20 09:01:00", "restated step two", source_session_id="ses_h"),
                    _obs("O-r1", "2026-04-09 12:00:00", "reflected away by CLEO", source_session_id="ses_c",
                         agent="claude-code"),
                    _obs("O-r2", "2026-04-09 12:01:00", "superseded long ago, evicted later"),
                    _obs("O-c1", "2026-04-15 08:00:00", "merged by consolidation"),
                    _obs("O-u1", "2026-04-16 08:00:00", "nobody knows"),
                    _obs("O-d1", "2026-04-16 09:00:00", "hard-deleted later"),
                    _obs("O-note", "2026-04-16 10:00:00", "[Observer p2] a note", source_type="observer-compressed"),
                    _obs("O-live", "2026-04-17 10:00:00", "still here", invalid_at=None)])
    reflect_run = _reflect_apply(brain)
    _cleo_reflector(brain)
    _cleo_consolidation(brain)
    _hard_delete(brain)
    yield {"brain": brain, "prune_run": prune_run, "reflect_run": reflect_run}
    brain.close()


def test_a_cleo_tui_prune_is_named_with_its_run(every_cause):
    brain, run = every_cause["brain"], every_cause["prune_run"]
    pruned = [r[0] for r in brain.query(
        "SELECT id FROM brain_observations WHERE id LIKE 'O-p%' AND invalid_at IS NOT NULL")]
    assert pruned, "the tiny budget must have pruned some rows"
    life = memory_life(brain, pruned[0])
    assert life is not None and life.state == "evicted"
    assert life.cause.cause == "cleo-tui:prune"
    assert (life.cause.run_id, life.cause.run_kind) == (run, "prune")
    assert any(f"run {run}" in e for e in life.cause.evidence)
    assert [s.kind for s in life.journal] == ["prune"]


def test_a_cleo_tui_reflector_apply_is_named_and_the_rejected_row_stays_live(every_cause):
    brain = every_cause["brain"]
    life = memory_life(brain, "O-f1")
    assert life.cause.cause == "cleo-tui:reflect"
    assert life.cause.run_id == every_cause["reflect_run"]
    assert memory_life(brain, "O-f2").state == "live"
    assert memory_life(brain, "O-f2").cause is None


def test_cleo_reflector_edges_written_by_hand_name_the_reflections(every_cause):
    life = memory_life(every_cause["brain"], "O-r1")
    assert life.cause.cause == "cleo-reflector"
    named = {r.node_id for r in life.cause.reflections}
    assert named == {"pattern:P-cleo0001", "learning:L-cleo0001"}
    assert all("reflector-synthesized" in (r.provenance or "") for r in life.cause.reflections)
    assert any("pattern:P-cleo0001" in e for e in life.cause.evidence)
    assert life.written.session_id == "ses_c" and life.written.agent == "claude-code"
    assert {e.other_id for e in life.edges if e.direction == "in"} == named


def test_a_supersedes_edge_far_from_the_eviction_does_not_make_it_the_reflector(every_cause):
    life = memory_life(every_cause["brain"], "O-r2")
    assert life.cause.cause == "unknown"
    assert any("none within 60 s" in c for c in life.cause.checked)


def test_a_consolidation_run_at_the_eviction_time_is_named(every_cause):
    life = memory_life(every_cause["brain"], "O-c1")
    assert life.cause.cause == "cleo-consolidation"
    event = life.cause.consolidation[0]
    assert (event.trigger, event.started_at, event.duration_ms) == ("session-end", CONSOLIDATE_AT, 8000)
    assert event.steps == {"dedup": {"merged": 1}}


def test_unknown_says_what_was_checked(every_cause):
    life = memory_life(every_cause["brain"], "O-u1")
    assert life.cause.cause == "unknown"
    checked = " | ".join(life.cause.checked)
    assert "journal" in checked and "graph" in checked and "consolidation" in checked
    assert f"no run of brain_consolidation_events was under way at {UNKNOWN_AT}" in checked


def test_a_hard_deleted_row_is_missing_and_listed_where_it_is_named(every_cause):
    life = memory_life(every_cause["brain"], "O-d1")
    assert life.state == "missing"
    assert life.cause.cause == "deleted-outside"
    assert {m.where for m in life.mentions} >= {"edge", "trace", "journal"}
    assert any("pattern:P-cleo0001 -derived_from-> observation:O-d1" in m.ref for m in life.mentions)
    assert [t.rank for t in life.traces] == [1]
    assert [s.kind for s in life.journal] == ["evict"]


def test_missing_ids_are_listed_with_what_names_them(every_cause):
    missing = {m.id: m.named_by for m in missing_memories(every_cause["brain"])}
    assert missing == {"O-d1": ("edge", "journal", "trace")}


def test_an_id_named_nowhere_has_no_life(every_cause):
    assert memory_life(every_cause["brain"], "O-never") is None


def test_node_ids_are_accepted_as_memory_ids(every_cause):
    assert memory_life(every_cause["brain"], "observation:O-r1").id == "O-r1"


def test_a_hippo_forget_shows_the_traces_that_returned_it(tmp_path):
    brain = open_brain(make_hippo_store(tmp_path / ".hippo" / "hippo.db"))
    try:
        life = memory_life(brain, "mem-gone")
        assert life.state == "forgotten" and life.cause.cause == "hippo-forget"
        assert [(t.trace_id, t.rank) for t in life.traces] == [(1, 3)]
        superseded = memory_life(brain, "mem-2")
        assert superseded.state == "superseded" and superseded.cause.cause == "hippo-supersede"
        assert "mem-1" in superseded.cause.evidence[0]
        assert memory_life(brain, "mem-1").state == "live"
        assert [(m.id, m.named_by) for m in missing_memories(brain)] == [("mem-gone", ("trace",))]
    finally:
        brain.close()


def test_the_whole_brain_rule_and_the_one_row_rule_agree(every_cause):
    brain = every_cause["brain"]
    listed = {oid: cause for oid, _, cause in evicted_with_causes(brain)}
    assert listed == {oid: memory_life(brain, oid).cause.cause for oid in listed}
    assert {"cleo-tui:prune", "cleo-tui:reflect", "cleo-reflector", "cleo-consolidation", "unknown"} <= set(
        listed.values())


# ---- the days ------------------------------------------------------------------------------

def _sql_day(brain: Brain, day: str) -> dict:
    """The same numbers as plain SQL, one day at a time."""
    next_day = (date.fromisoformat(day) + timedelta(days=1)).isoformat()
    content = "CASE WHEN trim(COALESCE(narrative, '')) != '' THEN narrative ELSE COALESCE(title, '') END"
    live, tokens = brain.query_one(
        f"SELECT count(*), COALESCE(sum((length({content}) + 3) / 4), 0) FROM brain_observations "
        "WHERE created_at < ? AND (invalid_at IS NULL OR invalid_at >= ?)", (next_day, next_day))
    return {
        "added": brain.scalar("SELECT count(*) FROM brain_observations WHERE substr(created_at, 1, 10) = ?", (day,)),
        "evicted": brain.scalar("SELECT count(*) FROM brain_observations WHERE substr(invalid_at, 1, 10) = ?",
                                (day,)),
        "live": live, "live_tokens": tokens,
        "observer_notes": brain.scalar("SELECT count(*) FROM brain_observations WHERE source_type = "
                                       "'observer-compressed' AND substr(created_at, 1, 10) = ?", (day,)),
        "reflections": brain.scalar("SELECT count(*) FROM brain_patterns WHERE substr(extracted_at, 1, 10) = ?",
                                    (day,)) + brain.scalar(
            "SELECT count(*) FROM brain_learnings WHERE substr(created_at, 1, 10) = ?", (day,)),
        "recalls": (brain.scalar("SELECT count(*) FROM recall_traces WHERE substr(ts, 1, 10) = ?", (day,))
                    if brain.features.has_table("recall_traces") else 0)
        + (brain.scalar("SELECT count(*) FROM brain_retrieval_log WHERE substr(created_at, 1, 10) = ?", (day,))
           if brain.features.has_table("brain_retrieval_log") else 0),  # CLEO's own retrievals count too
    }


def _assert_days_match_sql(brain: Brain) -> None:
    timeline = brain_timeline(brain)
    assert timeline.days
    for day in timeline.days:
        got = day.to_dict()
        want = _sql_day(brain, day.day)
        assert {k: got[k] if k != "evicted" else day.evicted_total for k in want} == want, day.day
        by_source = dict(brain.query(
            "SELECT COALESCE(source_type, '(none)'), count(*) FROM brain_observations "
            "WHERE substr(created_at, 1, 10) = ? GROUP BY 1", (day.day,)))
        assert day.added_by_source == by_source
    total_added = sum(d.added for d in timeline.days)
    assert total_added == brain.scalar("SELECT count(*) FROM brain_observations")
    # days are contiguous: the chart shows quiet days too
    assert [d.day for d in timeline.days] == [
        (date.fromisoformat(timeline.days[0].day) + timedelta(days=n)).isoformat() for n in range(len(timeline.days))]


def test_the_days_equal_plain_sql_counts(every_cause):
    brain = every_cause["brain"]
    _assert_days_match_sql(brain)
    evicted: dict[str, int] = {}
    for day in brain_timeline(brain).days:
        for cause, n in day.evicted.items():
            evicted[cause] = evicted.get(cause, 0) + n
    want: dict[str, int] = {}
    for _, _, cause in evicted_with_causes(brain):
        want[cause] = want.get(cause, 0) + 1
    assert evicted == want


def test_the_days_of_a_demo_brain_equal_plain_sql_counts(tmp_path):
    from cleo_tui.demo import generate_demo

    brain = open_brain(generate_demo(tmp_path, observations=600, seed=5), read_only=True)
    try:
        _assert_days_match_sql(brain)
        assert sum(d.observer_notes for d in brain_timeline(brain).days) > 0
    finally:
        brain.close()


def test_since_keeps_the_state_built_before_it(every_cause):
    brain = every_cause["brain"]
    whole = {d.day: d for d in brain_timeline(brain).days}
    since = brain_timeline(brain, since="2026-04-16")
    assert since.days[0].day == "2026-04-16"
    assert since.days[0].live == whole["2026-04-16"].live > since.days[0].added


def test_undated_rows_are_counted_apart(every_cause):
    brain = every_cause["brain"]
    _insert(brain, [_obs("O-bad", "not a date", "odd clock")])
    timeline = brain_timeline(brain)
    assert timeline.undated == {"added": 1}
    assert sum(d.added for d in timeline.days) == brain.scalar("SELECT count(*) FROM brain_observations") - 1


def test_a_hippo_store_has_days_too(tmp_path):
    brain = open_brain(make_hippo_store(tmp_path / "hippo.db"))
    try:
        days = {d.day: d for d in brain_timeline(brain).days}
        assert days["2026-03-01"].added == 1 and days["2026-04-01"].added == 1
        assert days["2026-04-02"].recalls == 1
        assert days["2026-04-02"].live == 1  # mem-2 is superseded
    finally:
        brain.close()


# ---- liveness ------------------------------------------------------------------------------

NOW = datetime(2026, 5, 20, 12, 0, tzinfo=UTC)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def test_a_quiet_observer_gets_a_plain_warning(tmp_path):
    brain = open_brain(make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db"))
    try:
        note_at = NOW - timedelta(days=12)
        _insert(brain, [_obs("O-note", _stamp(note_at), "[Observer p2] x", source_type="observer-compressed")])
        _insert(brain, [_obs(f"O-{i}", _stamp(note_at + timedelta(minutes=45 * (i + 1))), f"work {i}")
                        for i in range(340)])
        with brain.write() as conn:
            conn.execute("INSERT INTO brain_learnings (id, insight, source, confidence, created_at) "
                         "VALUES ('L-1', 'x', 'reflector-synthesized', 0.7, ?)", (_stamp(NOW - timedelta(hours=1)),))
        live = brain_liveness(brain, now=NOW)
        assert live.observer_last_run == _stamp(note_at)
        assert "observer: no observer note in 12 days while 340 observations arrived" in live.warnings
        assert live.reflector_last_run == _stamp(NOW - timedelta(hours=1))
        assert not any(w.startswith("reflector") for w in live.warnings)
        assert live.consolidation_table == "absent" and live.consolidation is None
    finally:
        brain.close()


def test_an_idle_agent_is_not_a_dead_observer(tmp_path):
    """Rows that stopped arriving soon after the last note: the agent is idle, no warning."""
    brain = open_brain(make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db"))
    try:
        note_at = NOW - timedelta(days=40)
        _insert(brain, [_obs("O-note", _stamp(note_at), "[Observer p2] x", source_type="observer-compressed")])
        _insert(brain, [_obs(f"O-{i}", _stamp(note_at + timedelta(minutes=i + 1)), f"work {i}") for i in range(30)])
        assert not any(w.startswith("observer") for w in brain_liveness(brain, now=NOW).warnings)
    finally:
        brain.close()


def test_consolidation_and_dream_state_are_read(every_cause):
    brain = every_cause["brain"]
    _insert(brain, [_obs("O-late", "2026-05-01 10:00:00", "arrived after the last consolidation")])
    state = Path(brain.path).parent / "sentient-state.json"
    state.write_text(json.dumps({"sweepGateActive": True, "sweepRunId": "sw-9", "killSwitch": False,
                                 "dreamWatermark": "2026-04-19T00:00:00Z", "cycles": 3}))
    live = brain_liveness(brain, now=NOW)
    assert live.consolidation.started_at == CONSOLIDATE_AT and live.consolidation_table == "present"
    assert live.dream.sweep_gate_active is True and live.dream.dream_watermark == "2026-04-19T00:00:00Z"
    assert live.dream.other == {"cycles": 3}
    assert any("sweep gate is active (run sw-9)" in w for w in live.warnings)
    assert any(w.startswith("consolidation: no run in 30 days") for w in live.warnings)
    state.write_text("{not json")
    broken = brain_liveness(brain, now=NOW)
    assert broken.dream.error and broken.dream.error.startswith("not valid JSON")
    assert set(broken.to_dict()) >= {"observer_last_run", "reflector_last_run", "consolidation_last",
                                     "dream_state", "warnings"}


def test_an_empty_consolidation_log_is_said(tmp_path):
    brain = open_brain(make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db"))
    try:
        with brain.write() as conn:
            conn.execute(EVENTS_SQL)
        brain.refresh()
        _insert(brain, [_obs("O-1", "2026-05-01 10:00:00", "x")])
        live = brain_liveness(brain, now=NOW)
        assert live.consolidation_table == "empty"
        assert any("brain_consolidation_events holds no run" in w for w in live.warnings)
    finally:
        brain.close()


def test_a_consolidation_log_with_few_columns_still_names_its_runs(tmp_path):
    brain = open_brain(make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db"))
    try:
        _insert(brain, [_obs("O-1", "2026-05-01 10:00:00", "x", invalid_at="2026-05-02 00:05:00")])
        with brain.write() as conn:
            conn.execute("CREATE TABLE brain_consolidation_events (started_at TEXT)")
            conn.execute("INSERT INTO brain_consolidation_events VALUES ('2026-05-02 00:00:00')")
        brain.refresh()
        assert causes.cause_of(brain, "O-1") == ("cleo-consolidation", None)
    finally:
        brain.close()


def test_a_read_only_cleo_brain_without_cleo_tui_tables(tmp_path):
    """A CLEO brain opened --read-only has no journal: the rule falls through to CLEO's own causes."""
    import sqlite3

    db = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("INSERT INTO brain_observations (id, type, title, narrative, created_at, invalid_at) VALUES "
                 "('O-1', 'change', 't', 'n', '2026-04-01 10:00:00', ?), "
                 "('O-2', 'change', 't', 'n', '2026-04-01 11:00:00', NULL)", (REFLECT_AT,))
    conn.execute("INSERT INTO brain_page_edges (from_id, to_id, edge_type, created_at) "
                 "VALUES ('learning:L-1', 'observation:O-1', 'supersedes', ?)", (REFLECT_AT,))
    conn.close()
    brain = open_brain(db, read_only=True)
    try:
        assert not brain.features.has_table("cleo_tui_runs")
        life = memory_life(brain, "O-1")
        assert life.cause.cause == "cleo-reflector" and life.journal == []
        assert [(d.day, d.evicted) for d in brain_timeline(brain).days if d.evicted] == [
            ("2026-04-10", {"cleo-reflector": 1})]
        assert brain_timeline(brain).days[-1].live == 1
    finally:
        brain.close()


def test_a_legacy_brain_without_newer_columns(tmp_path):
    from tests.brain_fixtures import insert_observations, make_cleo_legacy, observation

    db = make_cleo_legacy(tmp_path / ".cleo" / "brain.db")
    insert_observations(db, [observation(i) for i in range(30)])
    brain = open_brain(db, read_only=True)
    try:
        _assert_days_match_sql(brain)
        evicted = [oid for oid, _, _ in evicted_with_causes(brain)]
        assert evicted and all(memory_life(brain, oid).cause.cause == "unknown" for oid in evicted)
        assert brain_liveness(brain).observer_last_run is None
    finally:
        brain.close()


def test_the_journal_is_looked_up_by_its_row_index_not_scanned_per_row(every_cause):
    """A prune of 50,000 rows writes 50,000 journal rows: matching each evicted row must be an index lookup."""
    brain = every_cause["brain"]
    sql = causes.cause_sql(brain)
    plan = " | ".join(r[3] for r in brain.query(
        f"EXPLAIN QUERY PLAN {sql.with_clause()}SELECT {sql.case} FROM brain_observations o{sql.joins} "
        "WHERE o.invalid_at IS NOT NULL"))
    assert "idx_cleo_tui_run_changes_row (table_name=? AND row_key=?)" in plan, plan
    assert "idx_brain_edges_to" in plan, plan  # not every supersedes edge for every row
    assert not any(step.startswith("SCAN")
                   and not step.startswith(("SCAN o", "SCAN ev", "SCAN brain_consolidation_events"))
                   for step in plan.split(" | ")), plan
