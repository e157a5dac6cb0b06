"""The three trace tables match hippo-memory's schema v40, compared through PRAGMA output.

The expected values below are hippo's v40 DDL (src/db.ts, migration 40) as
SQLite reports it: column order, types, NOT NULL, defaults, keys, foreign keys,
indexes (with the DESC on ts), WITHOUT ROWID, AUTOINCREMENT and the CHECKs.
"""

from __future__ import annotations

import sqlite3

import pytest

from cleo_tui.brain import create_brain
from cleo_tui.recall.traces import ensure_trace_tables

# PRAGMA table_info rows: (cid, name, type, notnull, dflt_value, pk)
EXPECTED_COLUMNS = {
    "recall_traces": [
        (0, "id", "INTEGER", 0, None, 1),
        (1, "ts", "TEXT", 1, None, 0),
        (2, "tenant_id", "TEXT", 1, "'default'", 0),
        (3, "session_id", "TEXT", 0, None, 0),
        (4, "pipeline", "TEXT", 1, None, 0),
        (5, "query_hash", "TEXT", 1, None, 0),
        (6, "query_length", "INTEGER", 1, None, 0),
        (7, "result_count", "INTEGER", 1, None, 0),
        (8, "explain_mode", "INTEGER", 1, "0", 0),
    ],
    "recall_trace_results": [
        (0, "trace_id", "INTEGER", 1, None, 1),
        (1, "tenant_id", "TEXT", 1, "'default'", 0),
        (2, "memory_id", "TEXT", 1, None, 0),
        (3, "result_rank", "INTEGER", 1, None, 2),
        (4, "score", "REAL", 1, None, 0),
        (5, "rerank_json", "TEXT", 0, None, 0),
    ],
    "recall_trace_outcomes": [
        (0, "id", "INTEGER", 0, None, 1),
        (1, "trace_id", "INTEGER", 1, None, 0),
        (2, "ts", "TEXT", 1, None, 0),
        (3, "tenant_id", "TEXT", 1, "'default'", 0),
        (4, "outcome", "TEXT", 1, None, 0),
        (5, "memory_ids_json", "TEXT", 1, None, 0),
    ],
}

# name → (unique, origin, partial, [(column, desc)]) for the indexes created by name (origin 'c').
EXPECTED_INDEXES = {
    "recall_traces": {"idx_recall_traces_tenant_ts": (0, "c", 0, [("tenant_id", 0), ("ts", 1)])},
    "recall_trace_results": {
        "idx_recall_trace_results_tenant_memory": (0, "c", 0, [("tenant_id", 0), ("memory_id", 0)])},
    "recall_trace_outcomes": {"idx_recall_trace_outcomes_trace": (0, "c", 0, [("trace_id", 0)])},
}

# PRAGMA foreign_key_list rows without id/seq: (table, from, to, on_update, on_delete, match)
EXPECTED_FOREIGN_KEYS = {
    "recall_traces": [],
    "recall_trace_results": [("recall_traces", "trace_id", "id", "NO ACTION", "CASCADE", "NONE")],
    "recall_trace_outcomes": [("recall_traces", "trace_id", "id", "NO ACTION", "CASCADE", "NONE")],
}


@pytest.fixture
def conn(tmp_path):
    brain = create_brain(tmp_path / "cleo.db")
    brain.close()
    connection = sqlite3.connect(tmp_path / "cleo.db", isolation_level=None)
    assert ensure_trace_tables(connection)  # what the first trace written creates
    connection.execute("PRAGMA foreign_keys = ON")
    yield connection
    connection.close()


@pytest.mark.parametrize("table", sorted(EXPECTED_COLUMNS))
def test_columns_match_hippo_v40(conn, table):
    assert [tuple(r) for r in conn.execute(f"PRAGMA table_info({table})")] == EXPECTED_COLUMNS[table]


@pytest.mark.parametrize("table", sorted(EXPECTED_INDEXES))
def test_indexes_match_hippo_v40(conn, table):
    created = {}
    for _, name, unique, origin, partial in conn.execute(f"PRAGMA index_list({table})"):
        if origin != "c":
            continue
        columns = [(r[2], r[3]) for r in conn.execute(f"PRAGMA index_xinfo({name})") if r[5]]
        created[name] = (unique, origin, partial, columns)
    assert created == EXPECTED_INDEXES[table]


@pytest.mark.parametrize("table", sorted(EXPECTED_FOREIGN_KEYS))
def test_foreign_keys_match_hippo_v40(conn, table):
    rows = [tuple(r[2:]) for r in conn.execute(f"PRAGMA foreign_key_list({table})")]
    assert rows == EXPECTED_FOREIGN_KEYS[table]


def test_results_table_is_without_rowid_and_traces_autoincrement(conn):
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("SELECT rowid FROM recall_trace_results").fetchall()
    conn.execute("INSERT INTO recall_traces (ts, pipeline, query_hash, query_length, result_count) "
                 "VALUES ('t', 'api', 'h', 1, 0)")
    conn.execute("DELETE FROM recall_traces")
    conn.execute("INSERT INTO recall_traces (ts, pipeline, query_hash, query_length, result_count) "
                 "VALUES ('t', 'api', 'h', 1, 0)")
    # AUTOINCREMENT: a deleted id is never reused.
    assert conn.execute("SELECT id FROM recall_traces").fetchone()[0] == 2
    assert conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'recall_traces'").fetchone()[0] == 2


def _trace(conn, pipeline="cli") -> int:
    return conn.execute("INSERT INTO recall_traces (ts, pipeline, query_hash, query_length, result_count) "
                        "VALUES ('t', ?, 'h', 1, 1)", (pipeline,)).lastrowid


@pytest.mark.parametrize("pipeline", ["api", "cli", "context", "mcp"])
def test_pipeline_check_accepts_hippos_four(conn, pipeline):
    assert _trace(conn, pipeline) > 0


@pytest.mark.parametrize("pipeline", ["tui", "CLI", ""])
def test_pipeline_check_refuses_others(conn, pipeline):
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        _trace(conn, pipeline)


def test_outcome_check_primary_key_and_cascade(conn):
    trace = _trace(conn)
    conn.execute("INSERT INTO recall_trace_results (trace_id, memory_id, result_rank, score) "
                 "VALUES (?, 'never-existed', 1, 0.5)", (trace,))  # no FK on memory_id
    with pytest.raises(sqlite3.IntegrityError):  # (trace_id, result_rank) is the key
        conn.execute("INSERT INTO recall_trace_results (trace_id, memory_id, result_rank, score) "
                     "VALUES (?, 'other', 1, 0.4)", (trace,))
    for outcome in ("positive", "negative"):
        conn.execute("INSERT INTO recall_trace_outcomes (trace_id, ts, outcome, memory_ids_json) "
                     "VALUES (?, 't', ?, '[]')", (trace, outcome))
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        conn.execute("INSERT INTO recall_trace_outcomes (trace_id, ts, outcome, memory_ids_json) "
                     "VALUES (?, 't', 'neutral', '[]')", (trace,))
    with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
        conn.execute("INSERT INTO recall_trace_outcomes (trace_id, ts, outcome, memory_ids_json) "
                     "VALUES (999, 't', 'positive', '[]')")
    conn.execute("DELETE FROM recall_traces WHERE id = ?", (trace,))
    assert conn.execute("SELECT count(*) FROM recall_trace_results").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM recall_trace_outcomes").fetchone()[0] == 0
