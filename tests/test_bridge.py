"""CLEO's memory bridge as cleo-tui reproduces it: selection, decay, exclusions, text, marks, degrading.

The rules are CLEO's `generateMemoryBridgeContent` (packages/core/src/memory/memory-bridge.ts);
the brains are CLEO-layout files with rows in CLEO's real columns.
"""

from __future__ import annotations

import math
import shutil
import sqlite3
import time
from datetime import UTC, datetime, timedelta

import pytest

from cleo_tui.brain import open_brain
from cleo_tui.memory.bridge import build_bridge
from cleo_tui.memory.bridge_sections import (
    AVOID,
    DECISIONS,
    FOLLOW,
    LEARNINGS,
    OBSERVATIONS,
    chars4_tokens,
    effective_confidence,
)
from cleo_tui.memory.js_values import js_date_ms, js_parse_float, js_slice, js_text, js_to_fixed
from tests.brain_fixtures import make_cleo_consolidated

NOW = datetime(2026, 6, 1, 9, 0, 0, tzinfo=UTC)


def ago(days: float) -> str:
    """A CLEO timestamp (`YYYY-MM-DD HH:MM:SS`, UTC) `days` before NOW."""
    return (NOW - timedelta(days=days)).strftime("%Y-%m-%d %H:%M:%S")


@pytest.fixture(autouse=True)
def utc_machine(monkeypatch):
    """CLEO reads a date-time without a zone as local time (V8); these tests run on a UTC machine."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """One CLEO `cleo.db` per module (creating its tables costs more than the tests); each test copies it."""
    return make_cleo_consolidated(tmp_path_factory.mktemp("template") / "cleo.db")


@pytest.fixture
def db(tmp_path, template):
    target = tmp_path / ".cleo" / "cleo.db"
    target.parent.mkdir()
    shutil.copyfile(template, target)
    return target


def insert(db, table, rows):
    conn = sqlite3.connect(db)
    for row in rows:
        conn.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
                     list(row.values()))
    conn.commit()
    conn.close()


def bridge_of(db, evicting=frozenset()):
    brain = open_brain(db, read_only=True)
    try:
        return build_bridge(brain, NOW, evicting)
    finally:
        brain.close()


def obs(ident, title, days, type_="discovery", **more):
    return {"id": ident, "type": type_, "title": title, "narrative": "n", "created_at": ago(days), **more}


def learning(ident, insight, confidence, created_days, updated_days=None):
    row = {"id": ident, "insight": insight, "source": "s", "confidence": confidence, "created_at": ago(created_days)}
    if updated_days is not None:
        row["updated_at"] = ago(updated_days)
    return row


def pattern(ident, text, type_, days):
    return {"id": ident, "type": type_, "pattern": text, "context": "c", "extracted_at": ago(days)}


def decision(ident, text, days):
    return {"id": ident, "type": "technical", "decision": text, "rationale": "r", "confidence": "high",
            "created_at": ago(days)}


# -- observations ---------------------------------------------------------------------------------

def test_observations_newest_ten_without_changes_and_noise_titles(db):
    rows = [obs(f"O-{i:02d}", f"finding number {i}", i) for i in range(12)]
    rows += [obs("O-change", "a change", 0.1, type_="change"),
             obs("O-file", "File changed: src/a.py", 0.1), obs("O-file-lower", "file changed: src/b.py", 0.1),
             obs("O-start", "Task start: T1", 0.1), obs("O-done", "Task complete: T1", 0.1),
             obs("O-hook", "[hook] session start", 0.1), obs("O-hookish", "a [hook] later in the title", 0.2)]
    insert(db, "brain_observations", rows)
    bridge = bridge_of(db)
    ids = bridge.ids(OBSERVATIONS)
    # LIKE is case-insensitive for ASCII in SQLite, so "file changed:" goes too; "[hook]" only at the start
    assert ids == ["O-00", "O-hookish"] + [f"O-{i:02d}" for i in range(1, 9)]
    assert bridge.section(OBSERVATIONS).items[0].line == f"- [O-00] {ago(0)[:10]}: finding number 0"


def test_evicted_and_hidden_rows_are_injected_and_marked(db):
    insert(db, "brain_observations", [
        obs("O-live", "still live", 1),
        obs("O-evicted", "evicted by cleo-tui", 2, invalid_at=ago(1)),
        obs("O-hidden", "hidden from CLEO's search", 3, invalid_at=ago(1), quality_score=0.2)])
    bridge = bridge_of(db)
    marks = {i.id: i.marks for i in bridge.section(OBSERVATIONS).items}
    assert marks == {"O-live": [], "O-evicted": ["evicted"], "O-hidden": ["evicted", "hidden"]}
    assert bridge.to_json()["marks"]["evicted_injected"] == ["O-evicted", "O-hidden"]
    assert bridge.summary_lines() == [
        "2 injected rows are evicted: CLEO's bridge ignores invalid_at, so the agent still reads them.",
        "1 injected row is hidden from CLEO's search (quality below 0.3); the bridge injects it anyway."]


def test_a_pending_step_changes_the_marks_not_the_selection(db):
    insert(db, "brain_observations", [obs(f"O-{i}", f"finding {i}", i) for i in range(4)])
    insert(db, "brain_patterns", [pattern("P-1", "Always run the full test suite first", "workflow", 1)])
    before = bridge_of(db)
    after = bridge_of(db, evicting={"O-1", "O-3", "O-not-injected"})
    assert after.text == before.text
    assert [i.id for i in after.marked("evicting")] == ["O-1", "O-3"]
    assert after.evicting_count == 3
    assert any("still inject" in line for line in after.summary_lines())


def test_one_row_and_one_evicted_row_are_said_in_the_singular(db):
    """"the same 1 rows", "1 rows the step evicts"."""
    insert(db, "brain_observations", [obs("O-1", "finding 1", 1)])
    after = bridge_of(db, evicting={"O-1"})
    assert after.after_line() == ("After this step CLEO injects the same row (its bridge ignores invalid_at): it is "
                                  "the row the step evicts, and CLEO will still inject it.")
    after = bridge_of(db, evicting={"O-9"})
    assert after.after_line() == ("After this step CLEO injects the same row (its bridge ignores invalid_at); it "
                                  "is not the row the step evicts.")
    insert(db, "brain_observations", [obs("O-2", "finding 2", 2)])
    after = bridge_of(db, evicting={"O-1", "O-9"})
    assert after.after_line() == ("After this step CLEO injects the same 2 rows (its bridge ignores invalid_at): 1 "
                                  "of them is among the 2 rows the step evicts, and CLEO will still inject it.")


# -- learnings --------------------------------------------------------------------------------------

def test_learning_decay_halves_every_ninety_days_from_updated_at():
    now_ms = NOW.timestamp() * 1000
    assert effective_confidence(0.9, ago(0), None, now_ms) == pytest.approx(0.9)
    assert effective_confidence(0.9, ago(90), None, now_ms) == pytest.approx(0.45)
    assert effective_confidence(0.9, ago(180), None, now_ms) == pytest.approx(0.225)
    assert effective_confidence(0.8, ago(400), ago(45), now_ms) == pytest.approx(0.8 * 0.5 ** 0.5)
    assert effective_confidence(0.8, ago(-30), None, now_ms) == pytest.approx(0.8)  # a future date: age 0
    assert math.isnan(effective_confidence(0.8, "not a date", None, now_ms))
    assert effective_confidence("0.7 (agent)", ago(0), "", now_ms) == pytest.approx(0.7)  # parseFloat; '' falls back


def test_learnings_kept_at_point_six_after_decay_strongest_first(db):
    insert(db, "brain_learnings", [
        learning("L-old", "Old but once certain about the cache", 0.95, 120),  # 0.95 × 0.5^(4/3) ≈ 0.377
        learning("L-touched", "Old but updated recently about retries", 0.9, 300, updated_days=10),
        learning("L-fresh", "Fresh and fairly sure about timeouts", 0.7, 1),
        learning("L-low", "Fresh but unsure about the deploy", 0.55, 0),
        learning("L-done", "Completed: T12 shipped the exporter", 0.99, 0),
        learning("L-half", "Exactly five eighths sure about rounding", 0.625, 0)])
    bridge = bridge_of(db)
    items = bridge.section(LEARNINGS).items
    assert [i.id for i in items] == ["L-touched", "L-fresh", "L-half"]
    assert items[0].line == (f"- [L-touched] Old but updated recently about retries (confidence: "
                             f"{js_to_fixed(0.9 * 0.5 ** (10 / 90), 2)})")
    assert items[2].line.endswith("(confidence: 0.63)")  # toFixed rounds the half up; Python's format says 0.62
    assert items[0].detail["age_from"] == "updated_at"


def test_only_the_first_twenty_four_by_raw_confidence_are_considered(db):
    # CLEO fetches 3 × 8 candidates by raw confidence before decaying: 24 stale certainties hide a fresh one
    insert(db, "brain_learnings", [learning(f"L-stale{i:02d}", f"Stale certainty number {i}", 1.0, 400)
                                   for i in range(24)] + [learning("L-fresh", "Fresh and sure", 0.8, 0)])
    assert bridge_of(db).ids(LEARNINGS) == []
    insert(db, "brain_learnings", [learning("L-fresh2", "Fresh and certain", 1.0, 0)])
    assert bridge_of(db).ids(LEARNINGS) == ["L-fresh2"]


def test_at_most_eight_learnings(db):
    insert(db, "brain_learnings", [learning(f"L-{i:02d}", f"Learning {i} about the build", 0.9 - i / 100, 0)
                                   for i in range(12)])
    assert bridge_of(db).ids(LEARNINGS) == [f"L-{i:02d}" for i in range(8)]


# -- patterns and decisions ---------------------------------------------------------------------------

def test_patterns_split_by_type_with_clEOs_noise_filters(db):
    insert(db, "brain_patterns", [
        pattern("P-ok", "Run migrations before the API tests", "workflow", 3),
        pattern("P-win", "Small pull requests get merged the same day", "success", 1),
        pattern("P-fast", "Cache the dependency install between CI runs", "optimization", 2),
        pattern("P-short", "Too short to count", "workflow", 0),  # 18 characters: LENGTH must exceed 20
        pattern("P-label", "Recurring label: backend appears in many tasks", "workflow", 0),
        pattern("P-test", "Test pattern for the test suite only please", "success", 0),
        pattern("P-probe", "audit probe: does the bridge see this line", "success", 0),
        pattern("P-other", "An observation of some other type entirely", "decision", 0),
        pattern("P-fail", "Floats for money keep reintroducing rounding bugs", "failure", 1),
        pattern("P-block", "The staging database is shared and often locked", "blocker", 2)])
    bridge = bridge_of(db)
    assert bridge.ids(FOLLOW) == ["P-win", "P-fast", "P-ok"]
    assert bridge.ids(AVOID) == ["P-fail", "P-block"]
    assert bridge.section(FOLLOW).items[0].line == "- [P-win] Small pull requests get merged the same day (success)"
    assert bridge.section(AVOID).items[0].line == "- [P-fail] AVOID: Floats for money keep reintroducing rounding bugs"
    assert bridge.to_json()["patterns"] == ["P-win", "P-fast", "P-ok", "P-fail", "P-block"]


def test_five_newest_decisions_cut_at_three_hundred(db):
    insert(db, "brain_decisions", [decision(f"D{i:03d}", f"Decision {i} " + "x" * 400, i) for i in range(7)])
    bridge = bridge_of(db)
    items = bridge.section(DECISIONS).items
    assert [i.id for i in items] == ["D000", "D001", "D002", "D003", "D004"]
    assert items[0].line == f"- [D000] {('Decision 0 ' + 'x' * 400)[:300]} ({ago(0)[:10]})"
    assert items[0].tokens == chars4_tokens(items[0].line)


def test_the_document_and_its_tokens(db):
    insert(db, "brain_decisions", [decision("D001", "Use Postgres", 1)])
    insert(db, "brain_observations", [obs("O-1", "found it", 1)])
    bridge = bridge_of(db)
    assert bridge.text == "\n".join([
        "# CLEO Memory Bridge", "", "> Auto-generated at 2026-06-01T09:00:00",
        "> Do not edit manually. Regenerate with `cleo refresh-memory`.", "",
        "## Recent Decisions", "", f"- [D001] Use Postgres ({ago(1)[:10]})", "",
        "## Recent Observations", "", f"- [O-1] {ago(1)[:10]}: found it", ""])
    assert bridge.tokens == -(-len(bridge.text) // 4)
    assert bridge.to_json()["tokens"] == bridge.tokens


# -- hostile text, odd values, missing tables ----------------------------------------------------------

def test_hostile_text_is_kept_as_data_and_cut_in_utf16_units(db):
    hostile = "\x1b[31m[bold]red[/bold] \x1b]8;;http://x\x07link"
    insert(db, "brain_observations", [obs("O-hostile", hostile, 1), obs("O-emoji", "a" * 199 + "😀 tail", 2)])
    bridge = bridge_of(db)
    lines = {i.id: i.line for i in bridge.section(OBSERVATIONS).items}
    assert lines["O-hostile"].endswith(hostile)
    # 199 units, then half of the emoji's surrogate pair: Node writes that half as U+FFFD
    assert lines["O-emoji"].endswith(": " + "a" * 199 + "\ufffd")


def test_a_text_value_node_cannot_slice_stops_the_generator(db):
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA ignore_check_constraints = 1")
    conn.execute("CREATE TABLE d2 AS SELECT * FROM brain_decisions")  # the same columns, without NOT NULL
    conn.execute("DROP TABLE brain_decisions")
    conn.execute("ALTER TABLE d2 RENAME TO brain_decisions")
    conn.execute("INSERT INTO brain_decisions (id, type, decision, confidence, created_at) "
                 "VALUES ('D-null', 't', NULL, 'high', ?)", (ago(0),))
    conn.commit()
    conn.close()
    bridge = bridge_of(db)
    item = bridge.section(DECISIONS).items[0]
    assert item.problem and "NULL" in item.problem
    assert bridge.failure and "D-null" in bridge.failure
    assert bridge.to_json()["failure"] == bridge.failure


def test_missing_tables_and_columns_leave_their_sections_empty_with_the_reason(db):
    insert(db, "brain_learnings", [learning("L-1", "Fresh and sure about it", 0.9, 0)])
    insert(db, "brain_observations", [obs("O-1", "found it", 1)])
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE brain_decisions")
    conn.execute("ALTER TABLE brain_learnings DROP COLUMN updated_at")  # older CLEO: its query fails
    conn.commit()
    conn.close()
    bridge = bridge_of(db)
    assert bridge.section(DECISIONS).items == () and "no brain_decisions table" in bridge.section(DECISIONS).note
    assert bridge.section(LEARNINGS).items == () and "updated_at" in bridge.section(LEARNINGS).note
    assert bridge.ids(OBSERVATIONS) == ["O-1"]


# -- the handoff --------------------------------------------------------------------------------------

SESSIONS_SQL = ("CREATE TABLE sessions_cleo (id TEXT PRIMARY KEY, name TEXT, status TEXT, scope_json TEXT, "
                "handoff_json TEXT, started_at TEXT, ended_at TEXT, debrief_json TEXT)")


def with_sessions(db, rows):
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE sessions")
    conn.execute(SESSIONS_SQL.replace("sessions_cleo", "sessions"))
    for row in rows:
        conn.execute(f"INSERT INTO sessions ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
                     list(row.values()))
    conn.commit()
    conn.close()


def test_the_last_ended_session_with_a_handoff(db):
    with_sessions(db, [
        {"id": "ses_old", "status": "ended", "ended_at": "2026-05-01T10:00:00.000Z",
         "handoff_json": '{"lastTask": "T1", "tasksCompleted": [], "nextSuggested": [], "openBlockers": []}'},
        {"id": "ses_broken", "status": "ended", "ended_at": "2026-05-20T10:00:00.000Z", "handoff_json": "{not json",
         "debrief_json": '{"handoff": {"lastTask": "T7", "tasksCompleted": ["T5", null, 6], "nextSuggested": '
                         '["T8"], "openBlockers": [], "note": "[bold]careful[/]"}}'},
        {"id": "ses_active", "status": "active", "ended_at": None, "handoff_json": '{"lastTask": "T9"}'}])
    handoff = bridge_of(db).handoff
    assert handoff.state == "found" and handoff.session_id == "ses_broken"
    assert list(handoff.lines) == ["## Last Session", "", "- **Session**: ses_broken", "- **Last focused task**: T7",
                                   "- **Completed**: T5, , 6", "- **Next suggested**: T8",
                                   "- **Note**: [bold]careful[/]", ""]
    assert bridge_of(db).text.split("\n")[5] == "## Last Session"


def test_a_handoff_without_its_lists_stops_the_generator(db):
    with_sessions(db, [{"id": "ses_1", "status": "ended", "ended_at": "2026-05-01 10:00:00",
                        "handoff_json": '{"lastTask": "T1"}'}])
    bridge = bridge_of(db)
    assert bridge.handoff.problem and "tasksCompleted" in bridge.handoff.problem
    assert bridge.failure and "handoff" in bridge.failure


def test_no_sessions_table_or_columns_is_said(db):
    assert "sessions" in bridge_of(db).handoff.note  # the fixture's sessions table lacks CLEO's columns
    assert bridge_of(db).handoff.state == "none"
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE sessions")
    conn.commit()
    conn.close()
    assert bridge_of(db).handoff.state == "unknown"


# -- JavaScript's value rules ----------------------------------------------------------------------------

def test_javascript_value_rules():
    assert js_to_fixed(0.625, 2) == "0.63" and js_to_fixed(0.615, 2) == "0.61"  # 0.615 is 0.61499… in binary
    assert js_to_fixed(1.005, 2) == "1.00" and js_to_fixed(0.6, 2) == "0.60"
    assert js_parse_float("0.8abc") == 0.8 and math.isnan(js_parse_float("abc")) and math.isnan(js_parse_float(None))
    assert js_text(None) == "null" and js_text(3.0) == "3" and js_text(b"\x01\x02") == "1,2"
    assert js_date_ms("2026-06-01") == NOW.replace(hour=0).timestamp() * 1000
    assert js_date_ms("2026-06-01T09:00:00.000Z") == NOW.timestamp() * 1000
    assert js_date_ms("2026-06-01T11:00:00+02:00") == NOW.timestamp() * 1000
    assert js_date_ms(None) == 0 and math.isnan(js_date_ms("June 1st")) and math.isnan(js_date_ms("2026-02-30"))
    assert js_slice("ab😀c", 3) == "ab\ufffd" and js_slice("ab😀c", 4) == "ab😀"
    with pytest.raises(Exception, match="NULL"):
        js_slice(None, 3, "title")


def test_a_date_time_without_a_zone_is_local_time_as_node_reads_it(monkeypatch):
    monkeypatch.setenv("TZ", "Europe/Paris")  # UTC+2 in June
    time.tzset()
    assert js_date_ms("2026-06-01 11:00:00") == NOW.timestamp() * 1000
    assert js_date_ms("2026-06-01") == NOW.replace(hour=0).timestamp() * 1000  # a date alone stays UTC


def test_the_file_on_disk_is_compared_without_its_stamp_and_another_tokenizer_counts_too(db):
    from cleo_tui.memory.tokenizers import get_tokenizer

    insert(db, "brain_observations", [obs("O-1", "found it", 1)])
    bridge = bridge_of(db)
    assert not bridge.on_disk.exists
    stored = bridge.text.replace("2026-06-01T09:00:00", "2026-05-30T08:00:00")  # CLEO wrote it earlier
    (db.parent / "memory-bridge.md").write_text(stored)
    again = bridge_of(db)
    assert again.on_disk.exists and again.on_disk.matches and again.on_disk.written_at == "2026-05-30T08:00:00"
    insert(db, "brain_observations", [obs("O-2", "found another", 0.5)])
    assert bridge_of(db).on_disk.matches is False
    brain = open_brain(db, read_only=True)
    counted = build_bridge(brain, NOW, count_tokens=get_tokenizer("o200k_base").count_text, tokenizer_name="o200k_base")
    brain.close()
    assert counted.to_json()["tokenizer"] == "o200k_base" and 0 < counted.tokenizer_tokens < counted.tokens * 2
    assert all(i.tokenizer_tokens for i in counted.items)


def test_injected_counts_from_cleo_tuis_clock(db, monkeypatch):
    from cleo_tui.memory.bridge import injected

    insert(db, "brain_learnings", [learning("L-1", "Sure about it ninety days before the clock", 0.9, 0)])
    brain = open_brain(db, read_only=True)
    try:
        assert injected(brain).ids(LEARNINGS) == ["L-1"]  # CLEO_TUI_NOW is NOW (tests/conftest.py)
        monkeypatch.setenv("CLEO_TUI_NOW", (NOW + timedelta(days=90)).isoformat())
        later = injected(brain, {"L-1"})
        assert later.ids(LEARNINGS) == [] and later.generated_at == "2026-08-30T09:00:00"
    finally:
        brain.close()


def test_as_eviction_intends_leaves_evicted_rows_out_and_takes_the_next(db):
    insert(db, "brain_observations", [obs(f"O-{i:02d}", f"finding {i}", i) for i in range(13)]
           + [obs("O-gone", "evicted already", 0.5, invalid_at=ago(0))])
    insert(db, "brain_learnings", [learning("L-1", "Fresh and sure about it", 0.9, 0),
                                   learning("L-2", "Fresh and fairly sure too", 0.8, 0)])
    brain = open_brain(db, read_only=True)
    try:
        bridge = build_bridge(brain, NOW, {"O-01", "L-1"}, with_intended=True)
    finally:
        brain.close()
    assert bridge.ids(OBSERVATIONS)[:3] == ["O-00", "O-gone", "O-01"]  # CLEO: evicted or not
    intended = bridge.intended
    assert intended is not None and intended.honours_eviction
    assert intended.ids(OBSERVATIONS) == ["O-00"] + [f"O-{i:02d}" for i in range(2, 11)]
    assert intended.ids(LEARNINGS) == ["L-2"]
    brief = bridge.to_json()["as_eviction_intends"]
    assert brief["left_out"] == ["L-1", "O-gone", "O-01"] and brief["instead"] == ["O-09", "O-10"]


def test_an_old_brain_db_reads_its_handoff_from_tasks_db_beside_it(tmp_path):
    from tests.brain_fixtures import make_cleo_legacy

    db = make_cleo_legacy(tmp_path / ".cleo" / "brain.db")
    tasks = sqlite3.connect(tmp_path / ".cleo" / "tasks.db")
    tasks.execute(SESSIONS_SQL.replace("sessions_cleo", "sessions"))
    tasks.execute("INSERT INTO sessions (id, status, ended_at, handoff_json) VALUES ('ses_legacy', 'ended', "
                  "'2026-05-01 10:00:00', '{\"tasksCompleted\": [], \"nextSuggested\": [], \"openBlockers\": []}')")
    tasks.commit()
    tasks.close()
    handoff = bridge_of(db).handoff
    assert (handoff.state, handoff.session_id, handoff.note) == ("found", "ses_legacy", "from tasks.db's sessions")
    assert handoff.lines == ("## Last Session", "", "- **Session**: ses_legacy", "")
