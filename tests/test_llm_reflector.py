"""The reflector: proposal → partial approval → apply → undo, with every row compared."""

from __future__ import annotations

import json

import pytest

from cleo_tui.brain import StaleState
from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.llm import results as r
from cleo_tui.llm.proposals import (
    ProposalError,
    discard_proposal,
    get_proposal,
    list_proposals,
    undo_proposal,
)
from cleo_tui.llm.reflector import apply_reflection, propose_reflection, run_reflector, superseded_details
from tests.fake_llm import FakeLLM, error_reply, text_reply
from tests.llm_fixtures import (
    ANTHROPIC_KEY,
    OPENAI_KEY,
    SESSION,
    brain_with_observations,
    fast_config,
    fts_consistent,
    reflection_answer,
    snapshot,
    without_restored_updated_at,
    write_project_config,
)

KEYS = {"anthropic": ("ANTHROPIC_API_KEY", ANTHROPIC_KEY), "openai": ("OPENAI_API_KEY", OPENAI_KEY)}


@pytest.fixture(params=sorted(KEYS))
def provider(request, monkeypatch):
    monkeypatch.setenv(*KEYS[request.param])
    fast_config()
    return request.param


@pytest.fixture
def brain(tmp_path):
    brain, ids = brain_with_observations(tmp_path, 8)
    brain.ids = ids  # type: ignore[attr-defined]
    with brain.write() as conn:  # an identical pattern and learning exist already: dedup raises them
        conn.execute(f"INSERT INTO {cs.PATTERNS}(id, type, pattern, context, frequency) "
                     "VALUES ('P-existing', 'workflow', 'run the tests before every commit ', 'old', 2)")
        conn.execute(f"INSERT INTO {cs.LEARNINGS}(id, insight, source, confidence, actionable) "
                     "VALUES ('L-existing', 'WAL mode avoids reader/writer blocking', 'manual', 0.5, 0)")
        conn.execute(f"UPDATE {cs.OBSERVATIONS} SET invalid_at = '2026-01-01 00:00:00' WHERE id = ?", (ids[0],))
    yield brain
    brain.close()


def _propose(brain, superseded, **answer):
    fake = FakeLLM([text_reply(reflection_answer(superseded, **answer), input_tokens=900, output_tokens=210)])
    outcome = propose_reflection(brain, SESSION, http_client=fake.http_client())
    return outcome, fake


def test_round_trip_partial_approval_apply_undo(brain, provider):
    ids = brain.ids
    before = snapshot(brain)
    outcome, fake = _propose(brain, [{"id": ids[1], "reason": "repeated by step 2"}, ids[2], ids[3], "O-invented"])
    proposal = outcome.proposal
    assert outcome.ran and outcome.problem is None and proposal.status == "pending"
    assert [s["id"] for s in proposal.superseded] == [ids[1], ids[2], ids[3]]
    assert proposal.items["dropped_ids"] == ["O-invented"]
    assert proposal.usage == {"input_tokens": 900, "output_tokens": 210}
    assert {row["id"] for row in proposal.input} == set(ids[1:])  # live rows only
    assert f"[{ids[4]}] (agent): step 4 of the work" in fake.requests[0].prompt
    assert snapshot(brain) == before  # a proposal writes nothing in CLEO's tables
    details = superseded_details(brain, proposal)
    assert (details[0]["reason"] == "repeated by step 2"
            and details[0]["row"]["narrative"].startswith("Narrative of step 1"))

    result = apply_reflection(brain, proposal.id, approved_superseded=[ids[3], ids[1]],
                              accepted_patterns=[0], accepted_learnings=[0, 1], confirm_protected=[ids[1], ids[3]])
    assert result.to_dict()["superseded_ids"] == [ids[1], ids[3]] and result.rejected_ids == [ids[2]]
    assert (result.patterns_stored, result.learnings_stored) == (0, 1)  # one of each merged
    assert (result.patterns_merged, result.learnings_merged) == (1, 1)
    after = snapshot(brain)

    # exactly what changed: two evictions, frequency and confidence raised, one new learning, edges, a node
    evicted = {row[0]: row for row in after[cs.OBSERVATIONS] if row[0] in (ids[1], ids[3])}
    assert all(row is not None for row in evicted.values())
    assert brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} WHERE invalid_at IS NOT NULL") == 3
    assert brain.scalar(f"SELECT invalid_at FROM {cs.OBSERVATIONS} WHERE id = ?", (ids[2],)) is None
    assert brain.scalar(f"SELECT frequency FROM {cs.PATTERNS} WHERE id = 'P-existing'") == 3
    assert result.pattern_ids == ["P-existing"] and result.learning_ids[0] == "L-existing"
    assert brain.scalar(f"SELECT confidence FROM {cs.LEARNINGS} WHERE id = 'L-existing'") == 0.9
    new_learning = brain.query_one(f"SELECT * FROM {cs.LEARNINGS} WHERE id = ?", (result.learning_ids[1],))
    assert (new_learning["source"], new_learning["confidence"], new_learning["actionable"]) == (
        "reflector-synthesized", 0.4, 0)
    edges = {tuple(e) for e in brain.query(f"SELECT from_id, to_id FROM {cs.EDGES} WHERE edge_type = 'supersedes'")}
    sources = ["pattern:P-existing", "learning:L-existing", f"learning:{result.learning_ids[1]}"]
    assert edges == {(s, f"observation:{o}") for s in sources for o in (ids[1], ids[3])}
    assert len(after[cs.NODES]) == 1  # only the new learning needed a node
    decided = get_proposal(brain, proposal.id)
    assert decided.status == "applied" and decided.decision["rejected_superseded"] == [ids[2]]
    assert decided.decision["accepted_patterns"] == [0] and decided.run_id == result.run_id

    undone = undo_proposal(brain, proposal.id)
    assert undone.restored == 2 + 1 + 1 + 1 + 1 + 6  # evictions, freq, conf, learning, node, edges
    restored = (ids[1], ids[3], "P-existing", "L-existing")  # their updated_at is the undo's time
    assert without_restored_updated_at(snapshot(brain), restored) == without_restored_updated_at(before, restored)
    assert get_proposal(brain, proposal.id).status == "undone"
    assert fts_consistent(brain)
    with pytest.raises(ProposalError, match="only an applied proposal"):
        undo_proposal(brain, proposal.id)


def test_stale_proposal_refused(brain, provider):
    outcome, _ = _propose(brain, [brain.ids[2]])
    with brain.write() as conn:  # CLEO edits one of the input rows meanwhile
        conn.execute(f"UPDATE {cs.OBSERVATIONS} SET narrative = 'edited', updated_at = ? WHERE id = ?",
                     (cleo_timestamp(), brain.ids[5]))
    before = snapshot(brain)
    with pytest.raises(StaleState, match="stale"):
        apply_reflection(brain, outcome.proposal.id, [brain.ids[2]], [0], [0], brain.ids)
    assert snapshot(brain) == before and get_proposal(brain, outcome.proposal.id).status == "pending"


def test_new_observations_do_not_make_a_proposal_stale(brain, provider):
    outcome, _ = _propose(brain, [brain.ids[2]])
    from tests.llm_fixtures import add_observations
    add_observations(brain, 2, prefix="O-later")
    result = apply_reflection(brain, outcome.proposal.id, [brain.ids[2]], [], [], brain.ids)
    assert result.superseded_ids == [brain.ids[2]]


def test_only_proposed_ids_can_be_approved(brain, provider):
    outcome, _ = _propose(brain, [brain.ids[2]])
    with pytest.raises(ProposalError, match="did not propose"):
        apply_reflection(brain, outcome.proposal.id, [brain.ids[4]], [], [])
    with pytest.raises(ProposalError, match="patterns"):
        apply_reflection(brain, outcome.proposal.id, [], [7], [])


def test_discard_and_list(brain, provider):
    outcome, _ = _propose(brain, [])
    assert [p.id for p in list_proposals(brain, status="pending")] == [outcome.proposal.id]
    discard_proposal(brain, outcome.proposal.id)
    assert list_proposals(brain, status="pending") == []
    with pytest.raises(ProposalError):
        apply_reflection(brain, outcome.proposal.id, [], [0], [])


@pytest.mark.parametrize("reply, kind", [
    (error_reply(429, "slow down"), r.PROVIDER_ERROR),
    (error_reply(500, "boom"), r.PROVIDER_ERROR),
    (text_reply('{"patterns": [{"pattern": "x", "context": "y"}], "learn', stop="length"), r.UNPARSABLE),
    (text_reply('{"patterns": [], "learnings": [], "superseded": ["O-nowhere"]}'), r.NOTHING_PROPOSED),
])
def test_reflector_failures_store_nothing(brain, provider, reply, kind):
    before = snapshot(brain)
    outcome = propose_reflection(brain, SESSION, http_client=FakeLLM([reply]).http_client())
    assert outcome.problem.kind == kind and outcome.proposal is None
    assert snapshot(brain) == before and list_proposals(brain) == []
    assert KEYS[provider][1] not in json.dumps(outcome.to_dict())


def test_reflector_gates(brain, provider, tmp_path):
    write_project_config(brain, {"brain": {"reflector": {"enabled": False}}})
    assert propose_reflection(brain, SESSION, http_client=FakeLLM([]).http_client()).problem.kind == r.DISABLED
    small, _ = brain_with_observations(tmp_path / "small", 2)
    try:
        problem = propose_reflection(small, SESSION, http_client=FakeLLM([]).http_client()).problem
        assert (problem.kind, problem.details["count"], problem.details["minimum"]) == (r.TOO_FEW_ROWS, 2, 3)
    finally:
        small.close()


def test_run_reflector_applies_everything_like_cleo(brain, provider):
    fake = FakeLLM([text_reply(reflection_answer([brain.ids[1], brain.ids[2]]))])
    result = run_reflector(brain, SESSION, http_client=fake.http_client())
    assert (result.ran and result.superseded_ids == [brain.ids[1], brain.ids[2]]
            and (result.patterns_stored, result.patterns_merged) == (1, 1))
    failed = run_reflector(brain, SESSION, http_client=FakeLLM([error_reply(500, "x")]).http_client())
    assert failed.problem.kind == r.PROVIDER_ERROR and failed.problem.details["status"] == 500


def test_rows_changed_while_the_model_thinks_make_the_proposal_stale(brain, provider):
    def edit_then_answer(request):
        with brain.write() as conn:  # CLEO writes during the call
            conn.execute(f"UPDATE {cs.OBSERVATIONS} SET title = 'changed' WHERE id = ?", (brain.ids[3],))
        return text_reply(reflection_answer([brain.ids[3]]))

    outcome = propose_reflection(brain, SESSION, http_client=FakeLLM([edit_then_answer]).http_client())
    with pytest.raises(StaleState):
        apply_reflection(brain, outcome.proposal.id, [brain.ids[3]], [0], [0], brain.ids)


def test_reflector_edges_carry_cleo_provenance_and_note_edges_keep_theirs(brain, provider):
    outcome, _ = _propose(brain, [brain.ids[2]])
    apply_reflection(brain, outcome.proposal.id, [brain.ids[2]], [0, 1], [0, 1], brain.ids)
    provenances = {row[0] for row in brain.query(
        f"SELECT DISTINCT provenance FROM {cs.EDGES} WHERE from_id LIKE 'pattern:%' OR from_id LIKE 'learning:%'")}
    assert provenances == {"reflector-synthesized:session-end-reflection"}


def test_a_match_is_reported_as_merged_into_the_existing_row(brain, provider):
    outcome, _ = _propose(brain, [])
    result = apply_reflection(brain, outcome.proposal.id, [], [0, 1], [0, 1])
    # pattern 0 and learning 0 match stored rows: raised, not stored again
    assert (result.patterns_stored, result.patterns_merged) == (1, 1)
    assert (result.learnings_stored, result.learnings_merged) == (1, 1)
    assert result.merged_pattern_ids == ["P-existing"] and result.merged_learning_ids == ["L-existing"]
    assert brain.scalar(f"SELECT count(*) FROM {cs.PATTERNS}") == 2
    assert result.to_dict()["merged_pattern_ids"] == ["P-existing"]


def test_stored_patterns_and_learnings_get_cleos_quality_score(brain, provider):
    long_pattern = "Keep every write in one short transaction so CLEO's concurrent writers never wait for long " * 2
    outcome, _ = _propose(brain, [], patterns=[
        {"pattern": "Short pattern", "context": "short"},
        {"pattern": long_pattern[:290], "context": "CLEO and cleo-tui write the same brain file at the same time"}],
        learnings=[{"insight": "Short insight", "confidence": 0.9},
                   {"insight": "A long insight " * 10, "confidence": 0.4}])
    result = apply_reflection(brain, outcome.proposal.id, [], [0, 1], [0, 1])
    rows = [brain.query_one(f"SELECT quality_score, memory_tier, memory_type, source_confidence, verified "
                            f"FROM {cs.PATTERNS} WHERE id = ?", (i,)) for i in result.pattern_ids]
    # CLEO: (0.4 + 0.1 workflow [+0.1 pattern > 100] [+0.1 context > 50]) × 0.7 (agent) + 0.05 (medium)
    assert [round(row[0], 6) for row in rows] == [round(0.5 * 0.7 + 0.05, 6), round(0.7 * 0.7 + 0.05, 6)]
    assert tuple(rows[0])[1:] == ("medium", "procedural", "agent", 0)
    learned = [brain.query_one(f"SELECT quality_score, memory_tier, memory_type, source_confidence "
                               f"FROM {cs.LEARNINGS} WHERE id = ?", (i,)) for i in result.learning_ids]
    # CLEO: (confidence [+0.1 actionable] [+0.1 insight > 100]) × 0.7 (agent), short tier: no bonus
    assert [round(row[0], 6) for row in learned] == [round(1.0 * 0.7, 6), round(0.5 * 0.7, 6)]
    assert tuple(learned[0])[1:] == ("short", "semantic", "agent")
    node = brain.scalar(f"SELECT quality_score FROM {cs.NODES} WHERE id = ?", (f"pattern:{result.pattern_ids[0]}",))
    assert node is None or round(node, 6) == round(rows[0][0], 6)


def test_cli_apply_names_the_rows_merged_into(brain, provider, capsys):
    from cleo_tui.cli import main

    outcome, _ = _propose(brain, [brain.ids[2]])
    project = str(brain.path.parent.parent)
    assert main(["reflect", "--project", project, "--apply", "--proposal", str(outcome.proposal.id),
                 "--confirm-protected", brain.ids[2]]) == 0
    out = capsys.readouterr().out
    assert "stored 1 new pattern, 1 new learning" in out
    assert "merged into existing pattern P-existing, learning L-existing" in out
    from cleo_tui.memory.cleo_effects import EVICTION_IN_CLEO
    assert "evicted 1:" in out and EVICTION_IN_CLEO in out  # issue 29.8: CLEO's search still returns it


def test_protection_of_superseded_rows_is_what_the_tags_say(brain, tmp_path):
    from cleo_tui.brain.store import open_brain
    from cleo_tui.demo import generate_demo
    from cleo_tui.llm.reflector import protection_of
    from cleo_tui.memory.tags import tag_brain

    with brain.write() as conn:  # a pin, a completion and a shared identifier
        conn.execute("INSERT INTO cleo_tui_relevance_overrides VALUES (?, 'critical', 'pinned', '2026-01-01')",
                     (brain.ids[5],))
        conn.execute(f"UPDATE {cs.OBSERVATIONS} SET narrative = 'Task complete: T123, deployed' WHERE id = ?",
                     (brain.ids[6],))
        conn.execute(f"UPDATE {cs.OBSERVATIONS} SET narrative = narrative || ' see src/module_4.py' WHERE id = ?",
                     (brain.ids[7],))
    tags = tag_brain(brain)
    got = protection_of(brain, [*brain.ids, "O-nowhere"])
    assert "O-nowhere" not in got
    for oid in brain.ids:
        assert (got[oid].protected, list(got[oid].reasons)) == (tags[oid].protected, tags[oid].reasons), oid
    assert any("pin" in r or "critical" in r for r in got[brain.ids[5]].reasons)
    assert not got[brain.ids[0]].protected  # evicted: reasons shown, but nothing to protect

    generate_demo(tmp_path / "demo", observations=300, seed=3)
    demo = open_brain(tmp_path / "demo" / ".cleo" / "cleo.db", read_only=True)
    try:
        demo_tags = tag_brain(demo)
        sample = sorted(demo_tags)[::7]
        got = protection_of(demo, sample)
        assert any(got[i].protected for i in sample) and not all(got[i].protected for i in sample)
        for oid in sample:
            assert (got[oid].protected, list(got[oid].reasons)) == (demo_tags[oid].protected, demo_tags[oid].reasons)
    finally:
        demo.close()


def test_evicting_a_protected_row_needs_a_second_confirmation(brain, provider):
    from cleo_tui.llm.reflector import ProtectedEviction

    outcome, _ = _propose(brain, [brain.ids[2], brain.ids[3]])
    details = {d["id"]: d for d in superseded_details(brain, outcome.proposal)}
    assert details[brain.ids[2]]["protected"] and details[brain.ids[2]]["reasons"]
    before = snapshot(brain)
    with pytest.raises(ProtectedEviction, match=brain.ids[3]) as refused:
        apply_reflection(brain, outcome.proposal.id, [brain.ids[2], brain.ids[3]], [0], [], [brain.ids[2]])
    assert set(refused.value.refused) == {brain.ids[3]}
    assert snapshot(brain) == before and get_proposal(brain, outcome.proposal.id).status == "pending"
    result = apply_reflection(brain, outcome.proposal.id, [brain.ids[2], brain.ids[3]], [0], [],
                              [brain.ids[2], brain.ids[3]])
    assert result.superseded_ids == [brain.ids[2], brain.ids[3]]


def test_marks_are_kept_with_the_proposal_and_applying_writes_what_is_marked(brain, provider, tmp_path):
    from cleo_tui.brain.store import open_brain
    from cleo_tui.llm.proposals import marks, set_mark
    from cleo_tui.llm.reflector import apply_marked_reflection

    outcome, _ = _propose(brain, [brain.ids[2], brain.ids[3]])
    pid = outcome.proposal.id
    assert marks(brain, pid) == {"pattern:0": True, "pattern:1": True, "learning:0": True, "learning:1": True,
                                 "superseded:0": False, "superseded:1": False}  # superseded rows start kept
    set_mark(brain, pid, "superseded:1", True)
    set_mark(brain, pid, "pattern:0", False)
    other, _ = _propose(brain, [])
    set_mark(brain, other.proposal.id, "learning:1", False)  # visiting another proposal changes nothing here
    path = brain.path
    brain.close()  # closing the app
    reopened = open_brain(path)
    try:
        assert marks(reopened, pid)["superseded:1"] and not marks(reopened, pid)["pattern:0"]
        with pytest.raises(ProposalError, match="no item"):
            set_mark(reopened, pid, "superseded:9", True)
        result = apply_marked_reflection(reopened, pid, confirm_protected=[brain.ids[3]])
        assert result.superseded_ids == [brain.ids[3]] and result.rejected_ids == [brain.ids[2]]
        decided = get_proposal(reopened, pid).decision
        assert decided["accepted_patterns"] == [1] and decided["accepted_learnings"] == [0, 1]
        assert marks(reopened, pid)["superseded:1"] and not marks(reopened, pid)["superseded:0"]
        with pytest.raises(ProposalError, match="pending"):
            set_mark(reopened, pid, "pattern:0", True)
    finally:
        reopened.close()


def test_cli_undo_names_the_rows_changed_or_deleted_since(brain, provider, capsys):
    """`reflect --undo` says which rows it left alone, like `prune --undo` (issue 20)."""
    import sqlite3

    from cleo_tui.cli import main

    ids = brain.ids
    outcome, _ = _propose(brain, [ids[1], ids[3]])
    project = str(brain.path.parent.parent)
    assert main(["reflect", "--project", project, "--apply", "--proposal", str(outcome.proposal.id),
                 "--approve", f"{ids[1]},{ids[3]}", "--confirm-protected", f"{ids[1]},{ids[3]}"]) == 0
    capsys.readouterr()
    other = sqlite3.connect(brain.path)  # CLEO, meanwhile: restores one row, deletes the other
    other.execute(f"UPDATE {cs.OBSERVATIONS} SET invalid_at = NULL WHERE id = ?", (ids[1],))
    other.execute(f"DELETE FROM {cs.OBSERVATIONS} WHERE id = ?", (ids[3],))
    other.commit()
    other.close()
    assert main(["reflect", "--project", project, "--undo", str(outcome.proposal.id)]) == 0
    out = capsys.readouterr().out
    assert "Changed since by someone else, left as they are:" in out and ids[1] in out
    assert "Deleted since" in out and ids[3] in out
    assert f"reflect --undo {outcome.proposal.id}" in out  # the skipped change can be tried again
    assert get_proposal(brain, outcome.proposal.id).status == "applied"


def test_the_apply_dialog_says_merge_into_when_a_pattern_only_raises_a_stored_ones_frequency(brain, monkeypatch):
    from cleo_tui.llm.reflector import merge_targets
    from cleo_tui.ui.panes.review_decide import apply_body

    monkeypatch.setenv(*KEYS["anthropic"])
    fast_config()
    outcome, _ = _propose(brain, [brain.ids[2]])
    proposal = outcome.proposal
    patterns, learnings = list(range(len(proposal.patterns))), list(range(len(proposal.learnings)))
    merges = merge_targets(brain, proposal, patterns, learnings)
    assert "P-existing" in merges[0].values() and "L-existing" in merges[1].values()
    body = apply_body(proposal, patterns, learnings, merges, [brain.ids[2]], 0)
    assert "merge into P-existing (its frequency + 1)" in body and "merge into L-existing" in body
    merged_only = apply_body(proposal, [i for i, v in merges[0].items() if v == "P-existing"], [],
                             ({i: v for i, v in merges[0].items() if v == "P-existing"}, {}), [], 0)
    assert "store" not in merged_only and "merge into P-existing" in merged_only  # nothing new is stored
    assert "(s)" not in body and "1 observations" not in body


def test_one_pattern_and_one_learning_are_said_in_the_singular(brain, monkeypatch):
    """"Apply proposal 1 (1 of 1 patterns, …" and the decision's "1/1 patterns"."""
    from cleo_tui.llm.review_reads import decision_text
    from cleo_tui.ui.panes.review_decide import apply_body

    monkeypatch.setenv(*KEYS["anthropic"])
    fast_config()
    outcome, _ = _propose(brain, [], patterns=[{"pattern": "Run the tests first", "context": "CI"}],
                          learnings=[{"insight": "WAL avoids blocking", "confidence": 0.9}])
    body = apply_body(outcome.proposal, [0], [0], ({}, {}), [], 0)
    assert body.startswith(f"Apply proposal {outcome.proposal.id} (1 of 1 pattern, 1 of 1 learning accepted)")
    apply_reflection(brain, outcome.proposal.id, [], [0], [0])
    assert decision_text(get_proposal(brain, outcome.proposal.id)) == "1 of 1 pattern, 1 of 1 learning, evicted 0 of 0"
