"""Every recorded retrieval in one shape: CLEO's log (hostile rows included) and the recall traces."""

from __future__ import annotations

from cleo_tui.brain.store import open_brain
from cleo_tui.recall.recorded import entry_usage, recorded_retrievals
from tests.brain_fixtures import add_cleo_recall_logs, insert_observations, make_cleo_consolidated, observation


def test_cleo_retrievals_are_read_newest_first_and_odd_rows_degrade(tmp_path):
    db = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    insert_observations(db, [observation(i) for i in range(3)])
    add_cleo_recall_logs(db, retrievals=[
        {"query": "stripe webhook", "entry_ids": ["O-test00001-1", "L-7e00641e"], "created_at": "2026-05-01 10:00:00"},
        {"query": "[bold]x\x1b[31m", "entry_ids": "not json", "created_at": "2026-05-02 10:00:00"},
        {"query": "O-test00002-2", "entry_ids": ["O-test00002-2"], "source": "fetch", "session_id": "ses_1",
         "created_at": "2026-05-03 10:00:00"},
    ], usage=[
        {"entry_id": "O-test00001-1", "task_id": "T123", "used": 1, "outcome": "positive",
         "created_at": "2026-05-01 11:00:00"},
        {"entry_id": "O-test00001-1", "task_id": "T124", "used": 1, "created_at": "2026-05-04 11:00:00"},
        {"entry_id": "O-test00002-2", "task_id": "T9", "used": 0, "created_at": "2026-05-04 11:00:00"},
    ])
    brain = open_brain(db, read_only=True)
    try:
        found = recorded_retrievals(brain)
        usage = entry_usage(brain)
    finally:
        brain.close()
    assert [(r.key, r.source, r.returned, r.malformed) for r in found] == [
        ("cleo:3", "fetch", ("O-test00002-2",), False),
        ("cleo:2", "find-rrf", (), True),
        ("cleo:1", "find-rrf", ("O-test00001-1", "L-7e00641e"), False),
    ]
    assert found[1].query == "[bold]x\x1b[31m"  # kept as data; displaying it safely is the face's job
    assert found[0].session_id == "ses_1"
    assert set(usage) == {"O-test00001-1"}  # used = 0 is not a use
    assert usage["O-test00001-1"].used == 2
    assert usage["O-test00001-1"].tasks == ("T123", "T124")
    assert usage["O-test00001-1"].last_used_at == "2026-05-04 11:00:00"


def test_traces_count_as_retrievals_of_cleo_tui(brain):
    found = recorded_retrievals(brain)
    traces = [r for r in found if r.origin == "cleo-tui"]
    assert traces, "the demo brain holds recall traces"
    assert all(r.query is None for r in traces)  # traces keep a hash, never the text
    assert any(r.returned for r in traces)
    assert [r.id for r in traces] == sorted((r.id for r in traces), reverse=True)


def test_a_brain_without_cleos_logs_has_no_cleo_retrievals(tmp_path):
    db = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    brain = open_brain(db, read_only=True)
    try:
        assert recorded_retrievals(brain) == []
        assert entry_usage(brain) == {}
    finally:
        brain.close()
