"""Outcomes: every validation case of the seed, and crediting the last recall."""

from __future__ import annotations

import json

import pytest

from cleo_tui.brain import BrainError, open_brain
from cleo_tui.recall.last_recall import credit_last_recall, recall_and_record
from cleo_tui.recall.reader import trace_outcomes
from cleo_tui.recall.traces import RecallTraceInput, TraceResultInput, record_trace_outcome, write_recall_trace
from tests.recall_fixtures import NOW, make_brain

ODD_ID = "O-'quote\"-ü"
IDS = ("O-aaa-1", ODD_ID, "L-0000bbbb")


@pytest.fixture
def brain(tmp_path):
    b = make_brain(tmp_path)
    yield b
    b.close()


@pytest.fixture
def trace_id(brain):
    data = RecallTraceInput(query="q", pipeline="api", tenant_id="acme", at=NOW,
                            results=tuple(TraceResultInput(i, 1.0 / (n + 1)) for n, i in enumerate(IDS)))
    return write_recall_trace(brain, data)


def _rows(brain):
    return [(r[0], r[1], json.loads(r[2])) for r in
            brain.query("SELECT outcome, tenant_id, memory_ids_json FROM recall_trace_outcomes ORDER BY id")]


def _skipped(capsys, brain, why: str) -> None:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and why in err, err
    assert _rows(brain) == []


def test_credits_only_ids_the_trace_returned_in_the_order_given(brain, trace_id):
    outcome_id = record_trace_outcome(brain, trace_id, "acme", "positive",
                                      ["L-0000bbbb", "O-never", ODD_ID, ODD_ID], at=NOW)
    assert outcome_id == 1
    assert _rows(brain) == [("positive", "acme", ["L-0000bbbb", ODD_ID])]
    stored = brain.scalar("SELECT ts FROM recall_trace_outcomes")
    assert stored == "2026-05-01T12:00:00.000Z"


def test_negative_outcome_is_recorded(brain, trace_id):
    assert record_trace_outcome(brain, trace_id, "acme", "negative", ["O-aaa-1"]) is not None
    assert _rows(brain) == [("negative", "acme", ["O-aaa-1"])]


def test_missing_trace_writes_nothing(brain, trace_id, capsys):
    assert record_trace_outcome(brain, trace_id + 41, "acme", "positive", ["O-aaa-1"]) is None
    _skipped(capsys, brain, "does not exist")


def test_other_tenant_writes_nothing(brain, trace_id, capsys):
    assert record_trace_outcome(brain, trace_id, "default", "positive", ["O-aaa-1"]) is None
    _skipped(capsys, brain, "another tenant")


@pytest.mark.parametrize("ids", [[], ["O-never", "P-never"], ["o-aaa-1"]])
def test_empty_intersection_writes_nothing(brain, trace_id, capsys, ids):
    assert record_trace_outcome(brain, trace_id, "acme", "positive", ids) is None
    _skipped(capsys, brain, "none of the ids")


def test_unknown_outcome_writes_nothing(brain, trace_id, capsys):
    assert record_trace_outcome(brain, trace_id, "acme", "neutral", ["O-aaa-1"]) is None
    _skipped(capsys, brain, "positive or negative")


def test_deleted_trace_is_a_dangling_id(brain, trace_id, capsys):
    with brain.write() as conn:
        conn.execute("DELETE FROM recall_traces WHERE id = ?", (trace_id,))
    assert record_trace_outcome(brain, trace_id, "acme", "positive", ["O-aaa-1"]) is None
    _skipped(capsys, brain, "does not exist")


def test_read_only_brain_fails_soft(tmp_path, capsys):
    writable = make_brain(tmp_path)
    data = RecallTraceInput(query="q", pipeline="cli", results=(TraceResultInput("O-aaa-1", 1.0),))
    tid = write_recall_trace(writable, data)
    writable.close()
    ro = open_brain(tmp_path / ".cleo" / "cleo.db", read_only=True)
    try:
        assert record_trace_outcome(ro, tid, "default", "positive", ["O-aaa-1"]) is None
        _skipped(capsys, ro, "read-only")
    finally:
        ro.close()


def test_credit_last_recall_defaults_to_everything_it_returned(brain):
    recorded = recall_and_record(brain, "database", 3, False, now=NOW)
    credit = credit_last_recall(brain, "positive", at=NOW)
    assert credit.trace_id == recorded.trace_id
    assert list(credit.memory_ids) == [r.memory_id for r in recorded.results]
    assert [o.memory_ids for o in trace_outcomes(brain, recorded.trace_id)] == [credit.memory_ids]


def test_credit_last_recall_names_its_problems(brain):
    with pytest.raises(BrainError, match="no recall to credit"):
        credit_last_recall(brain, "positive")
    recall_and_record(brain, "database", 3, False, now=NOW)
    with pytest.raises(BrainError, match="none of the ids"):
        credit_last_recall(brain, "negative", ["O-not-returned"])
    assert _rows(brain) == []
