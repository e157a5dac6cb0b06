"""The trace writer: hippo's contract, privacy of the query, fail-soft, and the meta lockstep."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_tui.brain import open_brain
from cleo_tui.recall.last_recall import read_last_recall, recall_and_record, save_last_recall
from cleo_tui.recall.rerank import RerankStep
from cleo_tui.recall.traces import (
    RecallTraceInput,
    TraceResultInput,
    ensure_trace_tables,
    query_hash,
    utf16_length,
    write_recall_trace,
    write_recall_trace_at_root,
)
from tests.recall_fixtures import NOW, make_brain

STEPS = (RerankStep("recency", 0.9, 0.5, 0.45, "12 days old"), RerankStep("reranker", None, 0.45, 0.3, "x"))


@pytest.fixture
def brain(tmp_path):
    b = make_brain(tmp_path)
    yield b
    b.close()


def _data(query="what about the database?", explain=True, pipeline="cli", results=None, **kw):
    results = results if results is not None else (
        TraceResultInput("O-aaa-1", 0.9, STEPS), TraceResultInput("P-0000aaaa", 0.4, STEPS))
    return RecallTraceInput(query=query, pipeline=pipeline, results=tuple(results), explain_mode=explain,
                            at=NOW, **kw)


def _count(brain, table: str) -> int:
    """Rows in a trace table; 0 when the table was never created (no trace written yet)."""
    return brain.scalar(f"SELECT count(*) FROM {table}") if brain.features.has_table(table) else 0


def _one_stderr_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cleo-tui: "), err
    return err


def test_hash_and_length_follow_hippo():
    assert query_hash("hello") == hashlib.sha256(b"hello").hexdigest()[:16]
    assert utf16_length("héllo 😀") == 8  # the emoji is two UTF-16 code units, as in JavaScript
    assert utf16_length("\ud800") == 1 and len(query_hash("\ud800")) == 16  # lone surrogate: no crash


def test_trace_and_results_are_written_as_hippo_does(brain):
    trace_id = write_recall_trace(brain, _data(session_id="ses_1"))
    row = brain.query_one("SELECT * FROM recall_traces WHERE id = ?", (trace_id,))
    assert dict(row) == {"id": trace_id, "ts": "2026-05-01T12:00:00.000Z", "tenant_id": "default",
                         "session_id": "ses_1", "pipeline": "cli", "query_hash": query_hash(
                             "what about the database?"), "query_length": 24, "result_count": 2,
                         "explain_mode": 1}
    rows = brain.query("SELECT memory_id, result_rank, score, rerank_json, tenant_id FROM recall_trace_results "
                       "WHERE trace_id = ? ORDER BY result_rank", (trace_id,))
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == [("O-aaa-1", 1, 0.9, "default"),
                                                        ("P-0000aaaa", 2, 0.4, "default")]
    steps = json.loads(rows[0][3])
    # hippo's shape, camelCase, no note; a replacing stage has no multiplier key.
    assert steps == [{"stage": "recency", "multiplier": 0.9, "scoreBefore": 0.5, "scoreAfter": 0.45},
                     {"stage": "reranker", "scoreBefore": 0.45, "scoreAfter": 0.3}]
    assert "days old" not in rows[0][3]


def test_rerank_json_is_null_without_explain(brain):
    trace_id = write_recall_trace(brain, _data(explain=False))
    assert brain.scalar("SELECT explain_mode FROM recall_traces WHERE id = ?", (trace_id,)) == 0
    assert brain.query("SELECT rerank_json FROM recall_trace_results WHERE trace_id = ?", (trace_id,)) != []
    assert all(r[0] is None for r in brain.query(
        "SELECT rerank_json FROM recall_trace_results WHERE trace_id = ?", (trace_id,)))


def test_bad_pipeline_fails_soft(brain, capsys):
    assert write_recall_trace(brain, _data(pipeline="tui")) is None
    assert "pipeline" in _one_stderr_line(capsys)
    assert _count(brain, "recall_traces") == 0


def test_trace_and_results_commit_together(brain, capsys):
    bad = (TraceResultInput("O-aaa-1", 0.9), TraceResultInput("O-aaa-2", float("nan")))  # NaN → NULL score
    assert write_recall_trace(brain, _data(results=bad)) is None
    _one_stderr_line(capsys)
    assert _count(brain, "recall_traces") == 0
    assert _count(brain, "recall_trace_results") == 0


def test_read_only_brain_fails_soft_and_recall_still_answers(tmp_path, capsys):
    make_brain(tmp_path).close()
    ro = open_brain(tmp_path / ".cleo" / "cleo.db", read_only=True)
    try:
        recorded = recall_and_record(ro, "database schema", 3, True, now=NOW)
        assert recorded.results and recorded.trace_id is None
        assert "read-only" in _one_stderr_line(capsys)
        assert _count(ro, "recall_traces") == 0
    finally:
        ro.close()


def test_locked_database_fails_soft(brain, tmp_path, capsys):
    other = sqlite3.connect(brain.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        brain.conn.execute("PRAGMA busy_timeout = 20")
        assert write_recall_trace(brain, _data()) is None
        assert "locked" in _one_stderr_line(capsys)
        assert write_recall_trace_at_root(tmp_path, _data(), busy_timeout_ms=20) is None
        assert "locked" in _one_stderr_line(capsys)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert _count(brain, "recall_traces") == 0


def test_at_root_opens_a_project_or_a_file_and_fails_soft_elsewhere(brain, tmp_path, capsys):
    first = write_recall_trace_at_root(tmp_path, _data())
    second = write_recall_trace_at_root(brain.path, _data())
    assert first and second == first + 1
    assert brain.scalar("SELECT count(*) FROM recall_traces") == 2
    assert write_recall_trace_at_root(tmp_path / "nowhere", _data()) is None
    _one_stderr_line(capsys)


def test_bare_connection_inside_a_callers_transaction_uses_a_savepoint(brain):
    conn = sqlite3.connect(brain.path, isolation_level=None)
    try:
        assert write_recall_trace(conn, _data()) == 1  # autocommit connection: own transaction
        conn.execute("BEGIN")
        assert write_recall_trace(conn, _data()) == 2
        conn.execute("ROLLBACK")  # the caller's rollback takes the trace with it
        assert conn.execute("SELECT count(*) FROM recall_traces").fetchone()[0] == 1
    finally:
        conn.close()


def _bytes_of(db_path) -> bytes:
    data = b""
    for suffix in ("", "-wal", "-shm", "-journal"):
        candidate = db_path.with_name(db_path.name + suffix)
        if candidate.exists():
            data += candidate.read_bytes()
    return data


def test_raw_query_never_reaches_the_database_file(tmp_path):
    query = "Quasar nebula 😀 backup"  # each word is in the brain, the phrase is not
    brain = make_brain(tmp_path)
    with brain.write() as conn:
        conn.execute("INSERT INTO brain_observations (id, type, title, narrative) VALUES "
                     "('O-q-1', 'discovery', 'quasar notes', 'the nebula backup 😀 went fine')")
    recorded = recall_and_record(brain, query, 5, True)
    assert recorded.results and recorded.trace_id
    forms = [query.encode("utf-8"), query.encode("utf-16-le"), query.encode("utf-16-be"),
             query.lower().encode("utf-8")]
    wal_bytes = _bytes_of(brain.path)
    assert b"O-q-1" in wal_bytes  # the scan sees what was written (WAL included)
    assert not any(form in wal_bytes for form in forms)
    brain.close()
    closed_bytes = _bytes_of(brain.path)
    assert b"O-q-1" in closed_bytes
    assert not any(form in closed_bytes for form in forms)


def test_meta_keys_advance_together(brain):
    recorded = recall_and_record(brain, "database schema", 4, False, now=NOW)
    last = read_last_recall(brain)
    assert last.trace_id == recorded.trace_id
    returned = [r[0] for r in brain.query("SELECT memory_id FROM recall_trace_results WHERE trace_id = ? "
                                          "ORDER BY result_rank", (recorded.trace_id,))]
    assert list(last.retrieval_ids) == returned == [r.memory_id for r in recorded.results]


def test_zero_result_recall_writes_a_trace_but_keeps_the_last_recall(brain):
    first = recall_and_record(brain, "database", 2, False, now=NOW)
    empty = recall_and_record(brain, "zzzyyyxxx", 2, False, now=NOW)
    assert empty.results == [] and empty.trace_id == first.trace_id + 1
    assert brain.scalar("SELECT result_count FROM recall_traces WHERE id = ?", (empty.trace_id,)) == 0
    assert read_last_recall(brain).trace_id == first.trace_id


def test_a_failed_meta_write_changes_neither_key(brain, capsys):
    first = recall_and_record(brain, "database", 2, False, now=NOW)
    with brain.write() as conn:  # make the second of the two key writes fail
        conn.execute("CREATE TRIGGER no_trace_id BEFORE UPDATE ON cleo_tui_meta WHEN NEW.key = 'last_trace_id' "
                     "BEGIN SELECT RAISE(ABORT, 'refused'); END")
    second = recall_and_record(brain, "backup restoring", 2, False, now=NOW)
    assert second.trace_id == first.trace_id + 1
    assert "refused" in _one_stderr_line(capsys)
    last = read_last_recall(brain)
    assert last.trace_id == first.trace_id
    assert list(last.retrieval_ids) == [r.memory_id for r in first.results]
    with pytest.raises(sqlite3.IntegrityError):
        save_last_recall(brain, 99, ["x"])
    assert read_last_recall(brain) == last


def test_a_failed_trace_still_advances_both_keys_together(brain, capsys):
    with brain.write() as conn:
        ensure_trace_tables(conn)
        conn.execute("CREATE TRIGGER no_traces BEFORE INSERT ON recall_traces "
                     "BEGIN SELECT RAISE(ABORT, 'no traces'); END")
    recorded = recall_and_record(brain, "database", 2, False, now=NOW)
    assert recorded.trace_id is None and recorded.results
    _one_stderr_line(capsys)
    last = read_last_recall(brain)
    assert last.trace_id is None and list(last.retrieval_ids) == [r.memory_id for r in recorded.results]
    assert brain.scalar("SELECT value FROM cleo_tui_meta WHERE key = 'last_trace_id'") == ""


WORDS = ["database", "schema", "backup", "login", "ünïcode", "nothing-matches", "transaction"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from(["recall", "break-meta", "break-traces", "heal"]),
                                st.sampled_from(WORDS)), min_size=1, max_size=8))
def test_lockstep_holds_whatever_fails(tmp_path_factory, steps):
    """After any sequence of recalls and failures, last_trace_id names a trace that returned
    exactly last_retrieval_ids (or is empty, with the ids of a recall whose trace failed)."""
    brain = make_brain(tmp_path_factory.mktemp("lockstep"))
    triggers = {
        "break-meta": "CREATE TRIGGER IF NOT EXISTS bm BEFORE UPDATE ON cleo_tui_meta "
                      "WHEN NEW.key = 'last_trace_id' BEGIN SELECT RAISE(ABORT, 'meta'); END",
        "break-traces": "CREATE TRIGGER IF NOT EXISTS bt BEFORE INSERT ON recall_traces "
                        "BEGIN SELECT RAISE(ABORT, 'traces'); END",
    }
    try:
        for action, word in steps:
            if action == "recall":
                recall_and_record(brain, word, 3, False, now=NOW)
            else:
                with brain.write() as conn:
                    if action == "heal":
                        conn.execute("DROP TRIGGER IF EXISTS bm")
                        conn.execute("DROP TRIGGER IF EXISTS bt")
                    else:
                        ensure_trace_tables(conn)
                        conn.execute(triggers[action])
            last = read_last_recall(brain)
            if last.trace_id is not None:
                returned = [r[0] for r in brain.query(
                    "SELECT memory_id FROM recall_trace_results WHERE trace_id = ? ORDER BY result_rank",
                    (last.trace_id,))]
                assert returned == list(last.retrieval_ids)
    finally:
        brain.close()


TRACE_TABLES = ("recall_traces", "recall_trace_results", "recall_trace_outcomes")


def _tables(path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


def test_trace_tables_appear_with_the_first_trace_not_with_a_write(tmp_path):
    from cleo_tui.brain import create_brain, journal
    from cleo_tui.recall.reader import has_traces, list_traces

    path = tmp_path / ".cleo" / "cleo.db"
    create_brain(path).close()
    brain = open_brain(path)  # a writable open runs cleo-tui's migrations
    try:
        with brain.write() as conn:  # a curation step, as `prune --apply` makes
            journal.start_run(conn, "prune", "a run")
        assert not set(TRACE_TABLES) & _tables(path)
        assert not has_traces(brain) and list_traces(brain) == []  # readers of a brain that has none
        trace_id = write_recall_trace(brain, _data())
        assert trace_id == 1 and set(TRACE_TABLES) <= _tables(path)
        assert has_traces(brain) and [t.id for t in list_traces(brain)] == [1]  # the same Brain sees them
    finally:
        brain.close()
