"""Non-finite numbers in a brain: ±inf and NaN in every numeric column never crash a read path.

SQLite stores REAL `inf` and `-inf` as given (a NaN is stored as NULL, and text such
as 'NaN' stays text); everything that reads a number from a row goes through
brain/numbers.py, so such values mean "no value" rather than an internal error.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain import create_brain, open_brain
from cleo_tui.brain.numbers import finite_int_or_none, finite_or_none
from cleo_tui.brain.observations import (
    ObservationQuery,
    count_observations,
    page_observations,
)
from cleo_tui.brain.records import list_records
from cleo_tui.brain.summary import brain_summary
from cleo_tui.llm.inputs import fingerprint, reflector_selection
from cleo_tui.llm.prompts import reflector_line
from cleo_tui.memory.detail import observation_detail
from cleo_tui.memory.pruner import prepare_pool
from cleo_tui.memory.tags import tag_brain
from cleo_tui.recall.recall import recall
from tests.llm_fixtures import add_observations
from tests.reliability_fixtures import run_cli

NON_FINITE = [math.inf, -math.inf, math.nan, "NaN", "inf", "1e999"]
TABLES = (cs.OBSERVATIONS, cs.PATTERNS, cs.LEARNINGS, cs.NODES, cs.EDGES)


@given(st.one_of(st.none(), st.floats(), st.integers(), st.text(max_size=8), st.binary(max_size=4),
                 st.booleans()))
def test_finite_or_none_is_finite_or_none(value):
    number = finite_or_none(value)
    assert number is None or math.isfinite(number)
    whole = finite_int_or_none(value)
    assert whole is None or isinstance(whole, int)


def test_coercion_examples():
    assert [finite_or_none(v) for v in (math.inf, -math.inf, math.nan, "nan", "2.5", 3, None, True, b"1")] == \
        [None, None, None, None, 2.5, 3.0, None, None, None]
    assert [finite_int_or_none(v) for v in (math.inf, 7, 7.9, "12", "x")] == [None, 7, 7, 12, None]


def _numeric_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')
            if r[2].upper() in ("REAL", "INTEGER", "NUMERIC", "FLOAT", "DOUBLE") and not r[5]]


def _poison(path: Path, value: object) -> list[str]:
    """Set every numeric column of every row to `value` (where the column accepts it)."""
    conn = sqlite3.connect(path, isolation_level=None)
    poisoned = []
    try:
        for table in TABLES:
            for column in _numeric_columns(conn, table):
                try:
                    conn.execute(f'UPDATE "{table}" SET "{column}" = ?', (value,))
                    poisoned.append(f"{table}.{column}")
                except sqlite3.IntegrityError:  # NOT NULL refuses a NaN (stored as NULL)
                    pass
    finally:
        conn.close()
    return poisoned


def _brain(tmp_path: Path) -> Path:
    path = tmp_path / ".cleo" / "cleo.db"
    brain = create_brain(path)
    try:
        ids = add_observations(brain, 6, quality_score=0.5, citation_count=2)
        with brain.write() as conn:
            conn.execute(f"INSERT INTO {cs.PATTERNS}(id, type, pattern, context, frequency, quality_score) "
                         "VALUES ('P-1', 'workflow', 'run the tests before every commit', 'ci', 2, 0.6)")
            conn.execute(f"INSERT INTO {cs.LEARNINGS}(id, insight, source, confidence, actionable, quality_score) "
                         "VALUES ('L-1', 'step narrative tests matter', 'manual', 0.5, 0, 0.5)")
            conn.execute(f"INSERT INTO {cs.NODES}(id, node_type, label, quality_score) "
                         f"VALUES ('observation:{ids[0]}', 'observation', 'step', 0.5)")
            conn.execute(f"INSERT INTO {cs.EDGES}(from_id, to_id, edge_type, weight, provenance) "
                         f"VALUES ('pattern:P-1', 'observation:{ids[0]}', 'supersedes', 1.0, 'x')")
    finally:
        brain.close()
    return path


@pytest.mark.parametrize("value", NON_FINITE, ids=repr)
def test_non_finite_numbers_in_every_numeric_column_never_crash(tmp_path, value):
    path = _brain(tmp_path)
    poisoned = _poison(path, value)
    assert f"{cs.OBSERVATIONS}.quality_score" in poisoned
    assert f"{cs.OBSERVATIONS}.citation_count" in poisoned or value != value  # NOT NULL refuses NaN
    brain = open_brain(path)
    try:
        assert count_observations(brain) == 6
        rows = page_observations(brain, ObservationQuery(sort="quality"), limit=50)
        assert len(rows) == 6
        tags = tag_brain(brain)
        for row in rows:
            observation_detail(brain, row["id"], [])
            assert row["id"] in tags
        preview = prepare_pool(brain).preview(200)
        json.dumps(preview.to_json(), allow_nan=False)
        results = recall(brain, "narrative step tests", explain=True)
        assert results and all(math.isfinite(r.score) for r in results)
        selection = reflector_selection(brain, None)
        [reflector_line(r) for r in selection.rows]
        fingerprint(brain, selection.ids)
        for kind in ("pattern", "learning"):
            list_records(brain, kind)
        json.dumps(brain_summary(brain), allow_nan=False)
    finally:
        brain.close()
    db = ("--db", str(path))
    for args in (("info", "--json", *db), ("prune", "--budget", "200", "--json", *db),
                 ("prune", "--budget", "200", *db),
                 ("recall", "--why", *db, "--", "narrative step tests"), ("recall", "--json", *db, "--", "step"),
                 ("traces", *db)):
        code, out, err = run_cli(*args)
        assert code == 0, (args, out[-500:], err[-1500:])
        if "--json" in args:
            json.loads(out)


@pytest.mark.parametrize("value", [math.inf, -math.inf, "NaN"], ids=repr)
def test_non_finite_numbers_in_trace_tables_never_crash(tmp_path, value):
    path = _brain(tmp_path)
    db = ("--db", str(path))
    assert run_cli("recall", "--why", *db, "--", "narrative step")[0] == 0  # writes trace 1, explain on
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE recall_trace_results SET score = ?", (value,))
    conn.execute("UPDATE recall_traces SET query_length = ?, result_count = ?", (value, value))
    conn.execute("UPDATE recall_trace_results SET rerank_json = "
                 "'[{\"stage\":\"recency\",\"multiplier\":Infinity,\"scoreBefore\":1,\"scoreAfter\":Infinity}]' "
                 "WHERE result_rank = 1")
    conn.close()
    for args in (("traces", *db), ("traces", "--json", *db), ("traces", "--show", "1", *db),
                 ("traces", "--show", "1", "--json", *db), ("traces", "--export", str(tmp_path / "t.jsonl"), *db)):
        code, out, err = run_cli(*args)
        assert code == 0, (args, err[-1500:])
        if "--json" in args:
            json.loads(out)
