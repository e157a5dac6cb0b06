"""Single-row curation (evict, restore, pin, unpin) and undo, on a real brain file."""

from __future__ import annotations

import re

import pytest

from cleo_tui.brain import BrainError, ReadOnlyBrain, open_brain
from cleo_tui.brain.migrations import OVERRIDES
from cleo_tui.memory import curation
from cleo_tui.memory.mapping import relevance_overrides
from tests.pruner_fixtures import add_observation, new_brain, observation_rows

STAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")


@pytest.fixture
def brain(tmp_path):
    brain = new_brain(tmp_path)
    add_observation(brain, "O-1", "first", updated_at="2026-01-01 10:00:00")
    add_observation(brain, "O-2", "second")
    yield brain
    brain.close()


def _without_updated_at(rows):
    return [row[:15] + row[16:] for row in rows]  # updated_at is CLEO's 16th column


def _state(brain, obs_id):
    row = brain.query_one("SELECT invalid_at, updated_at FROM brain_observations WHERE id = ?", (obs_id,))
    return row[0], row[1]


def test_evict_sets_invalid_at_and_updated_at_in_cleo_format_and_undo_restores(brain):
    before = observation_rows(brain)
    run_id = curation.evict_observation(brain, "O-1")
    invalid_at, updated_at = _state(brain, "O-1")
    assert STAMP.match(invalid_at) and updated_at == invalid_at
    assert _state(brain, "O-2") == (None, None)
    runs = curation.list_curation_runs(brain)
    assert [(r.id, r.kind) for r in runs] == [(run_id, "evict")]
    _undo_id, restored = curation.undo(brain, run_id)
    assert restored == 1
    assert _without_updated_at(observation_rows(brain)) == _without_updated_at(before)
    assert STAMP.match(_state(brain, "O-1")[1])  # updated_at is now (CLEO's readers may have set it meanwhile)
    kinds = [r.kind for r in curation.list_curation_runs(brain)]
    assert kinds == ["undo", "evict"]
    assert curation.list_curation_runs(brain, kinds=["undo"])[0].undoes == run_id


def test_evict_refuses_missing_and_already_evicted_rows(brain):
    with pytest.raises(curation.CurationError, match="no observation O-9"):
        curation.evict_observation(brain, "O-9")
    curation.evict_observation(brain, "O-1")
    with pytest.raises(curation.CurationError, match="already evicted"):
        curation.evict_observation(brain, "O-1")
    assert issubclass(curation.CurationError, BrainError)
    assert len(curation.list_curation_runs(brain)) == 1  # the refused steps wrote nothing


def test_restore_clears_invalid_at_and_is_undoable(brain):
    curation.evict_observation(brain, "O-2")
    evicted = observation_rows(brain)
    with pytest.raises(curation.CurationError, match="not evicted"):
        curation.restore_observation(brain, "O-1")
    run_id = curation.restore_observation(brain, "O-2")
    invalid_at, updated_at = _state(brain, "O-2")
    assert invalid_at is None and STAMP.match(updated_at)
    curation.undo(brain, run_id)
    assert _without_updated_at(observation_rows(brain)) == _without_updated_at(evicted)


def test_pin_and_unpin_write_an_override_and_undo_reverses_each(brain):
    pin = curation.pin_observation(brain, "O-1")
    assert relevance_overrides(brain) == {"O-1": "critical"}
    with pytest.raises(curation.CurationError, match="already pinned"):
        curation.pin_observation(brain, "O-1")
    unpin = curation.unpin_observation(brain, "O-1")
    assert relevance_overrides(brain) == {}
    with pytest.raises(curation.CurationError, match="not pinned"):
        curation.unpin_observation(brain, "O-1")
    curation.undo(brain, unpin)
    assert relevance_overrides(brain) == {"O-1": "critical"}
    curation.undo(brain, pin)
    assert relevance_overrides(brain) == {}
    with pytest.raises(curation.CurationError, match="no observation"):
        curation.pin_observation(brain, "nope")


def test_pin_replaces_an_other_override_and_undo_puts_it_back(brain):
    with brain.write() as conn:
        conn.execute(f"INSERT INTO {OVERRIDES} VALUES ('O-2', 'low', 'test', '2026-01-01 00:00:00')")
    run_id = curation.pin_observation(brain, "O-2")
    assert relevance_overrides(brain) == {"O-2": "critical"}
    curation.undo(brain, run_id)
    assert relevance_overrides(brain) == {"O-2": "low"}


def test_undo_twice_or_unknown_run_is_refused(brain):
    run_id = curation.evict_observation(brain, "O-1")
    undo_id, _ = curation.undo(brain, run_id)
    with pytest.raises(BrainError, match="already undone"):
        curation.undo(brain, run_id)
    with pytest.raises(BrainError, match="itself an undo"):
        curation.undo(brain, undo_id)
    with pytest.raises(BrainError, match="no run 999"):
        curation.undo(brain, 999)


def test_undo_leaves_a_row_changed_since_in_an_owned_column_alone(brain):
    run_id = curation.evict_observation(brain, "O-1")
    with brain.write() as conn:  # someone else re-evicts the row afterwards
        conn.execute("UPDATE brain_observations SET invalid_at = '2030-01-01 00:00:00' WHERE id = 'O-1'")
    outcome = curation.undo_detailed(brain, run_id)
    assert outcome.restored == 0 and outcome.skipped == [{"id": "O-1", "why": "invalid_at changed since"}]
    assert _state(brain, "O-1")[0] == "2030-01-01 00:00:00"


def test_every_write_refuses_a_read_only_brain(brain):
    path = brain.path
    brain.close()
    ro = open_brain(path, read_only=True)
    try:
        for step in (curation.evict_observation, curation.restore_observation,
                     curation.pin_observation, curation.unpin_observation):
            with pytest.raises(ReadOnlyBrain):
                step(ro, "O-1")
        with pytest.raises(ReadOnlyBrain):
            curation.undo(ro, 1)
        assert curation.list_curation_runs(ro) == []
    finally:
        ro.close()


def test_an_undo_says_what_it_took_back_and_counts_in_real_plurals(brain):
    from cleo_tui.safe_text import plural

    pin = curation.pin_observation(brain, "O-1")
    assert curation.undo_summary(curation.undo_detailed(brain, pin)) == (
        f"undid run {pin} (pinned O-1): 1 relevance override restored")
    evict = curation.evict_observation(brain, "O-2")
    outcome = curation.undo_detailed(brain, evict)
    assert curation.undo_summary(outcome) == f"undid run {evict} (evicted O-2): 1 observation restored"
    assert outcome.lines("u")[0].startswith(f"Undid run {evict}: 1 observation restored")
    assert [plural(1, "row"), plural(2, "row"), plural(1_000, "entry", "entries")] == ["1 row", "2 rows",
                                                                                      "1,000 entries"]
