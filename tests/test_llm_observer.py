"""The observer through both real SDKs over httpx2.MockTransport: gates, storage, failures, review."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from cleo_tui.brain import ReadOnlyBrain, open_brain
from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.journal import list_runs
from cleo_tui.llm import results as r
from cleo_tui.llm.observer import propose_observer_notes, run_observer, store_observer_notes
from cleo_tui.llm.proposals import ProposalError, get_proposal, list_proposals, undo_proposal
from cleo_tui.llm.providers import CancelToken
from tests.fake_llm import FakeLLM, error_reply, hang_reply, raw_reply, text_reply
from tests.llm_fixtures import (
    ANTHROPIC_KEY,
    OPENAI_KEY,
    SESSION,
    add_observations,
    brain_with_observations,
    fast_config,
    fts_consistent,
    notes_answer,
    snapshot,
    write_project_config,
)

PROVIDERS = {"anthropic": ("ANTHROPIC_API_KEY", ANTHROPIC_KEY, "/v1/messages"),
             "openai": ("OPENAI_API_KEY", OPENAI_KEY, "/v1/chat/completions")}


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request, monkeypatch):
    """Each test runs once per SDK; only that provider's key is set."""
    env, key, _ = PROVIDERS[request.param]
    monkeypatch.setenv(env, key)
    fast_config()
    return request.param


@pytest.fixture
def brain(tmp_path):
    brain, ids = brain_with_observations(tmp_path, 12)
    brain.ids = ids  # type: ignore[attr-defined]
    yield brain
    brain.close()


def test_run_observer_stores_notes_as_cleo_does(brain, provider):
    ids = brain.ids
    fake = FakeLLM([text_reply("```json\n" + notes_answer(ids) + "\n```", input_tokens=420, output_tokens=96)])
    result = run_observer(brain, SESSION, http_client=fake.http_client())

    assert result.problem is None and result.ran and result.stored == 3
    assert result.compressed_ids == ids[0:6]
    assert fake.requests[0].path == PROVIDERS[provider][2]
    assert fake.requests[0].headers["authorization"] == f"Bearer {PROVIDERS[provider][1]}"
    prompt = fake.requests[0].prompt
    assert f"[{ids[-1]}] " in prompt and prompt.index(ids[-1]) < prompt.index(ids[0])  # newest first
    assert "step 11 of the work — Narrative of step 11" in prompt

    note = brain.query_one(f"SELECT * FROM {cs.OBSERVATIONS} WHERE id = ?", (result.note_ids[0],))
    assert note["title"] == "[Observer p1] Chose SQLite WAL for the brain store."
    assert note["narrative"] == f"Chose SQLite WAL for the brain store. (compressed from: {', '.join(ids[0:3])})"
    assert (note["type"], note["source_type"], note["memory_tier"], note["source_session_id"]) == (
        "change", "observer-compressed", "short", SESSION)
    qualities = [brain.scalar(f"SELECT quality_score FROM {cs.OBSERVATIONS} WHERE id = ?", (i,))
                 for i in result.note_ids]
    assert qualities == [1.0, 0.8, 0.6]
    edges = brain.query(f"SELECT to_id, weight, provenance FROM {cs.EDGES} WHERE from_id = ? ORDER BY to_id",
                        (f"observation:{result.note_ids[0]}",))
    assert [tuple(e) for e in edges] == [(f"observation:{i}", 0.9, "observer-reflector") for i in ids[0:3]]
    assert brain.scalar(f"SELECT node_type FROM {cs.NODES} WHERE id = ?",
                        (f"observation:{result.note_ids[0]}",)) == "observation"
    # sources stay live
    assert brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} WHERE invalid_at IS NOT NULL") == 0

    proposal = get_proposal(brain, result.proposal_id)
    assert proposal.status == "applied" and proposal.usage == {"input_tokens": 420, "output_tokens": 96}
    assert result.usage.to_dict() == {"input_tokens": 420, "output_tokens": 96}
    assert [row["id"] for row in proposal.input] == list(reversed(ids))
    assert fts_consistent(brain)


def test_second_run_counts_only_uncompressed(brain, provider):
    fake = FakeLLM([text_reply(notes_answer(brain.ids))])
    run_observer(brain, SESSION, http_client=fake.http_client())
    again = run_observer(brain, SESSION, http_client=fake.http_client())
    assert again.problem.kind == r.UNDER_THRESHOLD and not again.ran
    assert (again.problem.details["count"], again.problem.details["threshold"]) == (6, 10)
    assert len(fake.requests) == 1


@pytest.mark.parametrize("reply, kind, status", [
    (error_reply(429, "rate limited, slow down"), r.PROVIDER_ERROR, 429),
    (error_reply(500, "internal"), r.PROVIDER_ERROR, 500),
    (hang_reply(), r.PROVIDER_ERROR, None),
    (text_reply(""), r.UNPARSABLE, None),
    (text_reply('[{"date": "2026-11-30", "priority": 1, "observation": "cut', stop="length"), r.UNPARSABLE, None),
    (text_reply("I am sorry, I cannot help with that."), r.UNPARSABLE, None),
    (text_reply('[{"observation": 42, "source_ids": "O-1"}]'), r.NOTHING_PROPOSED, None),
    (raw_reply(200, b"<html>not json</html>"), r.PROVIDER_ERROR, None),
])
def test_failures_store_nothing_and_say_why(brain, provider, reply, kind, status):
    before = snapshot(brain)
    fake = FakeLLM([reply])
    result = run_observer(brain, SESSION, http_client=fake.http_client())
    assert result.problem.kind == kind and result.stored == 0 and result.ran
    assert result.problem.details.get("status") == status
    assert snapshot(brain) == before and list_proposals(brain) == [] and list_runs(brain.conn) == []
    assert len(fake.requests) == 1  # max_retries=0: exactly one attempt
    if kind == r.UNPARSABLE:
        assert result.problem.details["raw_text"] == (reply.text or "")
        assert result.problem.details["truncated"] == (reply.stop == "length")
    assert PROVIDERS[provider][1] not in json.dumps(result.to_dict())


def test_key_echoed_by_provider_is_redacted(brain, provider):
    key = PROVIDERS[provider][1]
    fake = FakeLLM([error_reply(401, f"invalid x-api-key {key}")])
    result = run_observer(brain, SESSION, http_client=fake.http_client())
    assert result.problem.details["status"] == 401
    assert key not in json.dumps(result.to_dict()) and "[redacted]" in result.problem.message


def test_gates_in_order(brain, provider, monkeypatch):
    fake = FakeLLM([])
    write_project_config(brain, {"brain": {"observer": {"enabled": False}}})
    assert run_observer(brain, SESSION, http_client=fake.http_client()).problem.kind == r.DISABLED

    write_project_config(brain, {"brain": {"observer": {"threshold": 13}}})
    under = run_observer(brain, SESSION, http_client=fake.http_client()).problem
    assert (under.kind, under.details["count"], under.details["threshold"]) == (r.UNDER_THRESHOLD, 12, 13)

    monkeypatch.delenv(PROVIDERS[provider][0])
    result = run_observer(brain, SESSION, threshold_override=1, provider=provider, http_client=fake.http_client())
    assert result.problem.kind == r.NO_CREDENTIAL and result.problem.details["env_vars"] == [PROVIDERS[provider][0]]
    assert fake.requests == []  # nothing sent without a key


def test_too_few_rows_falls_back_to_last_24_hours(tmp_path, provider):
    brain, ids = brain_with_observations(tmp_path, 1, session="ses_other")
    try:
        add_observations(brain, 1, session=None, prefix="O-n")
        fake = FakeLLM([text_reply(notes_answer(ids))])
        result = run_observer(brain, "ses_missing", threshold_override=1, http_client=fake.http_client())
        assert len(fake.requests) == 1  # the two rows of the last 24 hours were enough
        assert get_proposal(brain, result.proposal_id).items["scope"].startswith("last 24 hours")
    finally:
        brain.close()


def test_too_few_rows_even_after_fallback(tmp_path, provider):
    brain, _ = brain_with_observations(tmp_path, 1, session="ses_a")
    try:
        add_observations(brain, 1, session=None, prefix="O-old", age=timedelta(days=3))
        fake = FakeLLM([])
        result = run_observer(brain, "ses_a", threshold_override=0, http_client=fake.http_client())
        assert (result.problem.kind, result.problem.details["count"]) == (r.TOO_FEW_ROWS, 1)
        assert fake.requests == [] and not result.ran
    finally:
        brain.close()


def test_read_only_brain_is_not_asked(brain, provider):
    path = brain.path
    ro = open_brain(path, read_only=True)
    try:
        fake = FakeLLM([])
        result = run_observer(ro, SESSION, http_client=fake.http_client())
        assert result.problem.kind == r.READ_ONLY and fake.requests == []
    finally:
        ro.close()


def test_propose_then_store_a_subset_then_undo(brain, provider):
    before = snapshot(brain)
    invented = {"date": "2026-11-30", "priority": 2, "observation": "Made up.", "source_ids": ["O-nope", brain.ids[7]]}
    fake = FakeLLM([text_reply("Here you go:\n" + notes_answer(brain.ids, [invented]) + "\nDone.")])
    outcome = propose_observer_notes(brain, SESSION, http_client=fake.http_client())
    proposal = outcome.proposal
    assert proposal.status == "pending" and len(proposal.notes) == 4
    assert proposal.items["dropped_ids"] == ["O-nope"] and proposal.notes[3]["source_ids"] == [brain.ids[7]]
    assert snapshot(brain) == before  # proposing stores nothing in CLEO's tables

    result = store_observer_notes(brain, proposal.id, [3, 1])
    assert result.stored == 2 and result.compressed_ids == [brain.ids[3], brain.ids[4], brain.ids[7]]
    decided = get_proposal(brain, proposal.id)
    assert decided.decision["stored"] == [1, 3] and decided.decision["rejected"] == [0, 2]
    with pytest.raises(ProposalError, match="not pending"):
        store_observer_notes(brain, proposal.id, [0])

    undone = undo_proposal(brain, proposal.id)
    assert undone.restored == 2 + 3 + 2  # two notes, three edges, two nodes
    assert snapshot(brain) == before and get_proposal(brain, proposal.id).status == "undone"
    assert fts_consistent(brain)


def test_bad_indexes_and_read_only_refused(brain, provider):
    fake = FakeLLM([text_reply(notes_answer(brain.ids))])
    proposal = propose_observer_notes(brain, SESSION, http_client=fake.http_client()).proposal
    with pytest.raises(ProposalError, match="numbered 0 to 2"):
        store_observer_notes(brain, proposal.id, [5])
    ro = open_brain(brain.path, read_only=True)
    try:
        with pytest.raises(ReadOnlyBrain):
            store_observer_notes(ro, proposal.id, [0])
    finally:
        ro.close()
    assert get_proposal(brain, proposal.id).status == "pending"


def test_auto_capture_off_writes_no_graph_rows(brain, provider):
    write_project_config(brain, {"brain": {"autoCapture": False}})
    result = run_observer(brain, SESSION, http_client=FakeLLM([text_reply(notes_answer(brain.ids))]).http_client())
    assert result.stored == 3
    assert (brain.scalar(f"SELECT count(*) FROM {cs.EDGES}") == 0
            and brain.scalar(f"SELECT count(*) FROM {cs.NODES}") == 0)


def test_cancelled_before_the_call_sends_nothing(brain, provider):
    token = CancelToken()
    token.cancel()
    fake = FakeLLM([text_reply(notes_answer(brain.ids))])
    result = run_observer(brain, SESSION, http_client=fake.http_client(), cancel=token)
    assert result.problem.kind == r.CANCELLED and fake.requests == [] and list_proposals(brain) == []


def test_cancel_during_the_call_stores_nothing(brain, provider):
    token = CancelToken()
    fake = FakeLLM([lambda request: (token.cancel(), text_reply(notes_answer(brain.ids)))[1]])
    before = snapshot(brain)
    result = run_observer(brain, SESSION, http_client=fake.http_client(), cancel=token)
    assert result.problem.kind == r.CANCELLED and snapshot(brain) == before and list_proposals(brain) == []


def test_input_is_capped_at_30_newest(tmp_path, provider):
    brain, ids = brain_with_observations(tmp_path, 40)
    try:
        fake = FakeLLM([text_reply(notes_answer(ids[-6:]))])
        run_observer(brain, SESSION, http_client=fake.http_client())
        lines = [line for line in fake.requests[0].prompt.splitlines() if line.startswith("[O-t")]
        assert len(lines) == 30 and lines[0].startswith(f"[{ids[-1]}]") and lines[-1].startswith(f"[{ids[10]}]")
    finally:
        brain.close()


def test_connection_refused_is_a_provider_error(brain, provider):
    from tests.fake_llm import FakeLLMServer
    with FakeLLMServer() as gone:
        url = gone.openai_base_url if provider == "openai" else gone.anthropic_base_url
    result = run_observer(brain, SESSION, base_url=url)
    assert (result.problem.kind, result.problem.details["error"]) == (r.PROVIDER_ERROR, "connection")
    assert list_proposals(brain) == []


def test_notes_stored_from_the_kept_marks(tmp_path, monkeypatch):
    from cleo_tui.llm.observer import propose_observer_notes, store_marked_notes
    from cleo_tui.llm.proposals import marks, set_mark
    from tests.fake_llm import FakeLLM, text_reply
    from tests.llm_fixtures import ANTHROPIC_KEY, SESSION, brain_with_observations, fast_config, notes_answer

    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    fast_config()
    brain, ids = brain_with_observations(tmp_path, 12)
    try:
        fake = FakeLLM([text_reply(notes_answer(ids))])
        proposal = propose_observer_notes(brain, SESSION, http_client=fake.http_client()).proposal
        assert marks(brain, proposal.id) == {f"note:{i}": True for i in range(len(proposal.notes))}
        set_mark(brain, proposal.id, "note:1", False)
        result = store_marked_notes(brain, proposal.id)
        assert len(result.note_ids) == len(proposal.notes) - 1
        assert get_proposal(brain, proposal.id).decision["rejected"] == [1]
    finally:
        brain.close()
