"""Reading traces: filters, paging, resolution of memory ids, hippo stores, and the JSONL export."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from cleo_tui.brain import BrainError
from cleo_tui.memory.curation import evict_observation
from cleo_tui.recall.export import export_traces, iter_export_records, read_export
from cleo_tui.recall.last_recall import LastRecall, read_last_recall
from cleo_tui.recall.reader import (
    TraceFilter,
    count_traces,
    get_trace,
    iter_traces,
    list_traces,
    trace_outcomes,
    trace_position,
    trace_results,
)
from cleo_tui.recall.rerank import RerankStep, format_chain
from cleo_tui.recall.traces import RecallTraceInput, TraceResultInput, record_trace_outcome, write_recall_trace
from tests.recall_fixtures import NOW, make_brain, open_hippo

ODD_ID = "O-'quote\"-ü"
STEP = (RerankStep("recency", 0.95, 0.42, 0.399),)


@pytest.fixture
def brain(tmp_path):
    b = make_brain(tmp_path)
    yield b
    b.close()


def _write(brain, n, **kw):
    data = RecallTraceInput(query=f"query {n}", at=NOW + timedelta(hours=n), **kw)
    return write_recall_trace(brain, data)


@pytest.fixture
def traces(brain):
    """Six traces over two tenants, sessions and pipelines; outcomes on two of them."""
    ids = []
    for n in range(6):
        ids.append(_write(brain, n, pipeline=("cli", "api", "context")[n % 3],
                          tenant_id="acme" if n == 5 else "default", session_id=("s1", "s2")[n % 2],
                          explain_mode=n % 2 == 0,
                          results=(TraceResultInput("O-aaa-1", 0.5, STEP), TraceResultInput(ODD_ID, 0.25, STEP))))
    record_trace_outcome(brain, ids[1], "default", "positive", ["O-aaa-1"], at=NOW)
    record_trace_outcome(brain, ids[1], "default", "negative", [ODD_ID], at=NOW)
    record_trace_outcome(brain, ids[2], "default", "negative", [ODD_ID], at=NOW)
    return ids


def _ids(rows):
    return [t.id for t in rows]


def test_list_is_newest_first_with_outcome_counts(brain, traces):
    rows = list_traces(brain)
    assert _ids(rows) == traces[::-1]
    by_id = {t.id: t for t in rows}
    assert (by_id[traces[1]].positive, by_id[traces[1]].negative, by_id[traces[1]].outcome) == (1, 1, "mixed")
    assert by_id[traces[2]].outcome == "negative" and by_id[traces[0]].outcome == "none"
    assert get_trace(brain, traces[0]).ts == "2026-05-01T12:00:00.000Z"
    assert get_trace(brain, 999) is None


@pytest.mark.parametrize("flt, expected", [
    (TraceFilter(tenant_id="acme"), [5]),
    (TraceFilter(session_id="s1"), [4, 2, 0]),
    (TraceFilter(pipeline="api"), [4, 1]),
    (TraceFilter(since="2026-05-01T14", until="2026-05-01T16"), [3, 2]),
    (TraceFilter(has_outcome=True), [2, 1]),
    (TraceFilter(has_outcome=False, tenant_id="default"), [4, 3, 0]),
    (TraceFilter(explain_mode=True), [4, 2, 0]),
    (TraceFilter(min_results=2, max_results=2, pipeline="cli"), [3, 0]),
    (TraceFilter(min_results=3), []),
])
def test_filters(brain, traces, flt, expected):
    assert _ids(list_traces(brain, flt)) == [traces[i] for i in expected]
    assert count_traces(brain, flt) == len(expected)


@pytest.mark.parametrize("flt", [TraceFilter(), TraceFilter(session_id="s1"), TraceFilter(has_outcome=False)])
def test_trace_position_is_where_the_list_has_it(brain, traces, flt):
    """The Traces pane finds the cursor's trace again by id after new traces arrived."""
    listed = _ids(list_traces(brain, flt))
    assert [trace_position(brain, flt, i) for i in listed] == list(range(len(listed)))
    assert all(trace_position(brain, flt, i) is None for i in set(traces) - set(listed))
    assert trace_position(brain, flt, 999) is None


def test_keyset_and_offset_paging_cover_everything_once(brain, traces):
    first = list_traces(brain, limit=4)
    second = list_traces(brain, before_id=first[-1].id, limit=4)
    assert _ids(first + second) == traces[::-1]
    assert _ids(list_traces(brain, offset=4, limit=4)) == _ids(second)
    assert _ids(iter_traces(brain, page=2)) == traces[::-1]


def test_keyset_paging_needs_no_sort_step(brain, traces):
    """The page query walks the primary key backwards: no temporary sort, however many traces."""
    seen: list[str] = []
    brain.conn.set_trace_callback(seen.append)
    try:
        list_traces(brain, TraceFilter(tenant_id="default", has_outcome=True), before_id=traces[-1], limit=2)
    finally:
        brain.conn.set_trace_callback(None)
    [sql] = [s for s in seen if s.lstrip().startswith("SELECT")]
    plan = " ".join(r[3] for r in brain.query("EXPLAIN QUERY PLAN " + sql))
    assert "TEMP B-TREE" not in plan and "PRIMARY KEY" in plan


def test_results_resolve_live_evicted_forgotten_pattern_and_learning(brain):
    tid = _write(brain, 0, pipeline="cli", explain_mode=True, results=(
        TraceResultInput("O-aaa-1", 0.5, STEP), TraceResultInput("O-aaa-2", 0.4, STEP),
        TraceResultInput("P-0000aaaa", 0.3, STEP), TraceResultInput("L-0000bbbb", 0.2, STEP),
        TraceResultInput("O-gone", 0.1, STEP), TraceResultInput(ODD_ID, 0.05, STEP)))
    evict_observation(brain, "O-aaa-2")
    rows = trace_results(brain, tid)
    assert [(r.rank, r.memory.kind, r.memory.state) for r in rows] == [
        (1, "observation", "live"), (2, "observation", "evicted"), (3, "pattern", "live"),
        (4, "learning", "live"), (5, None, "forgotten"), (6, "observation", "live")]
    assert rows[0].memory.title == "Migrated the database schema"
    assert rows[2].memory.title == "Run database migrations in one transaction"
    assert rows[0].steps == (RerankStep("recency", 0.95, 0.42, 0.399),)
    assert format_chain(rows[0].steps) == "base 0.420 → recency ×0.95 → 0.399"


def test_hippo_store_reads_the_same_way(tmp_path):
    hippo = open_hippo(tmp_path / ".hippo" / "hippo.db")
    try:
        assert hippo.kind == "hippo" and hippo.read_only
        [trace] = list_traces(hippo)
        assert (trace.session_id, trace.result_count, trace.outcome) == ("s1", 3, "positive")
        rows = trace_results(hippo, trace.id)
        assert [(r.memory_id, r.memory.kind, r.memory.state) for r in rows] == [
            ("mem-1", "hippo", "live"), ("mem-2", "hippo", "evicted"), ("mem-gone", None, "forgotten")]
        assert rows[0].memory.title == "Use WAL mode for the hippo store"
        assert format_chain(rows[0].steps) == "base 0.420 → interference ×0.30 → 0.126"
        assert format_chain(rows[1].steps) == "base 0.200 → reranker → 0.100"
        assert rows[2].steps is None and "malformed" in rows[2].steps_error
        [outcome] = trace_outcomes(hippo, trace.id)
        assert (outcome.outcome, outcome.memory_ids) == ("positive", ("mem-1",))
        assert read_last_recall(hippo) == LastRecall(1, ("mem-1", "mem-2"))  # hippo's own meta table
    finally:
        hippo.close()


def test_malformed_outcome_ids_are_flagged_not_raised(brain, traces):
    with brain.write() as conn:
        conn.execute("INSERT INTO recall_trace_outcomes (trace_id, ts, outcome, memory_ids_json) "
                     "VALUES (?, 't', 'positive', '{oops')", (traces[0],))
    [outcome] = trace_outcomes(brain, traces[0])
    assert outcome.malformed and outcome.memory_ids == ()


def test_export_round_trip(brain, traces, tmp_path):
    path = tmp_path / "out.jsonl"
    assert export_traces(brain, path) == 6
    records = read_export(path)
    assert records == list(iter_export_records(brain))
    assert [r["trace_id"] for r in records] == traces  # oldest first
    second = records[1]
    assert second["shown"] == [{"memory_id": "O-aaa-1", "rank": 1, "score": 0.5},
                               {"memory_id": ODD_ID, "rank": 2, "score": 0.25}]
    assert second["outcomes"] == [
        {"outcome": "positive", "memory_ids": ["O-aaa-1"], "ts": "2026-05-01T12:00:00.000Z"},
        {"outcome": "negative", "memory_ids": [ODD_ID], "ts": "2026-05-01T12:00:00.000Z"}]
    assert set(second) == {"trace_id", "ts", "tenant_id", "session_id", "pipeline", "query_hash",
                           "query_length", "explain_mode", "shown", "outcomes"}
    assert "query 1" not in path.read_text(encoding="utf-8")
    assert json.dumps(ODD_ID, ensure_ascii=False) in path.read_text(encoding="utf-8")  # UTF-8, not \\u
    assert all(json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())
    assert export_traces(brain, path, TraceFilter(tenant_id="acme"), force=True) == 1  # replaces the first
    assert [r["trace_id"] for r in read_export(path)] == [traces[5]]


def test_export_refuses_a_directory_and_leaves_no_partial_file(brain, traces, tmp_path):
    with pytest.raises(BrainError, match="directory"):
        export_traces(brain, tmp_path)
    with pytest.raises(BrainError, match="Cannot write"):
        export_traces(brain, tmp_path / "missing" / "out.jsonl")
    assert not list(tmp_path.glob(".*.tmp"))
