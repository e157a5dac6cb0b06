"""Pilot flows of the Review pane against a fake LLM server on 127.0.0.1.

The real anthropic/openai SDKs reach the fake through ANTHROPIC_BASE_URL /
OPENAI_BASE_URL; every assertion is on the brain's rows or the pane's state.
"""

from __future__ import annotations

import json

import pytest
from textual.widgets import OptionList, Static

from cleo_tui.brain import open_brain
from cleo_tui.llm.proposals import get_proposal, list_proposals
from cleo_tui.llm.reflector import propose_reflection, protection_of
from cleo_tui.memory.curation import pin_observation
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.messages import BrainChanged
from cleo_tui.ui.panes.review import ReviewScreen
from cleo_tui.ui.widgets.choice_chip import ChoiceChip
from cleo_tui.ui.widgets.detail import ObservationModal
from cleo_tui.ui.widgets.modals import ConfirmModal, MessageModal, TextViewer
from tests.fake_llm import FakeLLM, FakeLLMServer, error_reply, hang_reply, ids_in_prompt, text_reply
from tests.llm_fixtures import (
    ANTHROPIC_KEY,
    OPENAI_KEY,
    fast_config,
    notes_answer,
    reflection_answer,
    write_project_config,
)
from tests.ui_helpers import HOSTILE_TITLE, demo_brain, footer_actions, settle

NOTE_SOURCE = "observer-compressed"


@pytest.fixture
def brain(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fast_config()
    brain = demo_brain(tmp_path, observations=120)
    yield brain
    brain.close()


@pytest.fixture
def server(monkeypatch):
    with FakeLLMServer() as fake:
        for name, value in fake.environment().items():
            monkeypatch.setenv(name, value)
        yield fake


@pytest.fixture
def keyed(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)


def notes_reply(request):
    """Three notes over the ids the observer was shown, plus one whose text is Rich markup."""
    ids = ids_in_prompt(request)
    hostile = [{"date": "2026-11-30", "priority": 2, "observation": HOSTILE_TITLE, "source_ids": ids[6:7]}]
    return text_reply(notes_answer(ids, hostile), input_tokens=321, output_tokens=54)


def reflection_reply(request):
    ids = ids_in_prompt(request)
    return text_reply(reflection_answer([{"id": ids[0], "reason": "restated by a later row"}, ids[1], ids[2]]),
                      input_tokens=900, output_tokens=210)


async def open_review(app, pilot) -> ReviewScreen:
    await settle(app, pilot)
    await pilot.press("3")
    await settle(app, pilot)
    assert isinstance(app.screen, ReviewScreen)
    return app.screen


async def run(screen: ReviewScreen, app, pilot, kind: str = "observer") -> None:
    screen.query_one("#review-kind", ChoiceChip).value = kind
    screen.proposal_table.focus()
    await pilot.press("r")
    await settle(app, pilot)


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


def live(brain, observation_id: str) -> bool:
    return brain.scalar("SELECT invalid_at FROM brain_observations WHERE id = ?", (observation_id,)) is None


def notes_stored(brain) -> list[str]:
    return [r[0] for r in brain.query("SELECT narrative FROM brain_observations WHERE source_type = ?",
                                      (NOTE_SOURCE,))]


async def focus_item(screen, pilot, key: str) -> None:
    """Put the item cursor on the item with this key (e.g. `superseded:0`)."""
    screen.item_table.focus()
    screen.item_table.cursor = next(i for i, item in enumerate(screen.items) if item.key == key)
    await pilot.pause()


async def answer(app, pilot, yes: bool) -> None:
    await settle(app, pilot)  # some questions come from a worker (the apply reads its merge targets first)
    assert isinstance(app.screen, ConfirmModal)
    await pilot.press("y" if yes else "n")
    await settle(app, pilot)


async def confirm_protected(app, pilot) -> None:
    """Answer yes to the second question about protected rows, when the apply asks it."""
    if isinstance(app.screen, ConfirmModal) and app.screen.title_text == "Evict protected observations?":
        await answer(app, pilot, yes=True)


async def test_observer_notes_reviewed_stored_in_part_and_undone(brain, server, keyed):
    server.push(notes_reply)
    before = notes_stored(brain)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_review(app, pilot)
        await run(screen, app, pilot)
        assert [r.path for r in server.requests] == ["/v1/messages"]
        proposal = screen.current
        assert proposal is not None and proposal.status == "pending" and proposal.kind == "observer"
        assert notes_stored(brain) == before  # shown before anything is stored
        head = text_of(screen, "#review-head")
        assert "claude-fake" in head and "321/54" in head and "anthropic" in head
        assert [item.key for item in screen.items] == ["note:0", "note:1", "note:2", "note:3"]

        # the hostile note is shown literally, and its sources are openable
        await focus_item(screen, pilot, "note:3")
        assert HOSTILE_TITLE in text_of(screen, "#review-item-text")
        await focus_item(screen, pilot, "note:0")
        assert "priority 1 (architectural decision)" in text_of(screen, "#review-item-text")
        sources = proposal.notes[0]["source_ids"]
        assert screen._open_ids == sources and len(sources) == 3
        await pilot.press("o")
        options = screen.query_one("#review-open", OptionList)
        assert options.has_focus
        await pilot.press("down", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, ObservationModal) and app.screen.observation_id == sources[1]
        await pilot.press("escape")
        await settle(app, pilot)

        # store some: reject note 1 and the hostile note, store the rest
        for key in ("note:1", "note:3"):
            await focus_item(screen, pilot, key)
            await pilot.press("space")
        assert screen.marks == {"note:0": True, "note:1": False, "note:2": True, "note:3": False}
        live_before = app.summary["observations"]["live"]
        await pilot.press("s")
        await answer(app, pilot, yes=True)
        stored = get_proposal(brain, proposal.id)
        assert stored.status == "applied" and stored.decision["stored"] == [0, 2]
        new = [n for n in notes_stored(brain) if n not in before]
        assert len(new) == 2 and new[0].startswith("Chose SQLite WAL") and new[1].startswith("Routine formatting")
        assert app.summary["observations"]["live"] == live_before + 2  # the app's counts were refreshed
        assert "stored 2 of 4" in text_of(screen, "#review-head")

        await pilot.press("u")
        await answer(app, pilot, yes=True)
        assert get_proposal(brain, proposal.id).status == "undone"
        assert notes_stored(brain) == before


async def test_reflector_applies_only_what_was_approved(brain, server, keyed):
    server.push(reflection_reply)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_review(app, pilot)
        await run(screen, app, pilot, "reflector")
        proposal = screen.current
        superseded = [s["id"] for s in proposal.superseded]
        assert len(superseded) == 3 and all(live(brain, i) for i in superseded)
        # nothing is approved for eviction by default; additions are
        assert [screen.marks[f"superseded:{i}"] for i in range(3)] == [False, False, False]
        assert screen.marks["pattern:0"] and screen.marks["learning:1"]

        # the superseded row in full, beside the model's claim and what still covers it
        await focus_item(screen, pilot, "superseded:0")
        narrative = brain.scalar("SELECT narrative FROM brain_observations WHERE id = ?", (superseded[0],))
        assert narrative and narrative in text_of(screen, "#review-item-text")
        side = text_of(screen, "#review-item-side")
        assert "restated by a later row" in side and "Still covered after apply by" in side
        await pilot.press("space")  # approve it (key)
        app.announce(BrainChanged("curation", "another pane wrote"))  # the proposals are reread, the marks stay
        await settle(app, pilot)
        assert screen.marks["superseded:0"] and screen.current_item().key == "superseded:0"
        side = text_of(screen, "#review-item-side")
        assert "new pattern 0" in side and "new learning 1" in side  # accepted additions will cite it

        await focus_item(screen, pilot, "pattern:1")
        await pilot.click("#review-reject")  # reject by mouse
        await pilot.pause()
        assert screen.marks["pattern:1"] is False

        await pilot.press("s")
        await answer(app, pilot, yes=True)
        await confirm_protected(app, pilot)
        applied = get_proposal(brain, proposal.id)
        assert applied.status == "applied"
        assert applied.decision["approved_superseded"] == [superseded[0]]
        assert applied.decision["accepted_patterns"] == [0] and applied.decision["accepted_learnings"] == [0, 1]
        assert not live(brain, superseded[0]) and live(brain, superseded[1]) and live(brain, superseded[2])
        assert brain.scalar("SELECT count(*) FROM brain_patterns WHERE lower(pattern) LIKE "
                            "'keep writes in one short transaction%'") == 0

        await pilot.press("u")
        await answer(app, pilot, yes=True)
        assert get_proposal(brain, proposal.id).status == "undone" and live(brain, superseded[0])


async def test_approve_all_asks_a_second_time_and_a_stale_proposal_writes_nothing(brain, server, keyed):
    server.push(reflection_reply, reflection_reply)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_review(app, pilot)
        await run(screen, app, pilot, "reflector")
        first = screen.current.id
        superseded = [s["id"] for s in screen.current.superseded]
        await pilot.press("a")
        await answer(app, pilot, yes=False)
        assert not any(screen.marks[f"superseded:{i}"] for i in range(3))
        await pilot.press("a")
        await answer(app, pilot, yes=True)
        assert all(screen.marks.values())
        assert all(live(brain, i) for i in superseded)  # approving writes nothing
        await pilot.press("s")
        await answer(app, pilot, yes=True)
        await confirm_protected(app, pilot)
        assert not any(live(brain, i) for i in superseded)

        # a second proposal whose input changes (CLEO or another pane wrote) is refused whole
        await run(screen, app, pilot, "reflector")
        second = screen.current
        assert second.status == "pending" and second.id != first
        app.session.curate("evict", second.input_ids[-1])
        await settle(app, pilot)
        assert screen.current.id == second.id  # the other pane's write reread the list, the selection stayed
        await pilot.press("a")
        await answer(app, pilot, yes=True)
        await pilot.press("s")
        await answer(app, pilot, yes=True)
        assert isinstance(app.screen, MessageModal) and "stale" in app.screen.body
        assert get_proposal(brain, second.id).status == "pending"
        assert all(live(brain, s["id"]) for s in second.superseded if s["id"] != second.input_ids[-1])
        await pilot.press("escape")
        await settle(app, pilot)
        await pilot.press("d")
        await answer(app, pilot, yes=True)
        assert get_proposal(brain, second.id).status == "discarded"
        assert "discarded" in text_of(screen, "#review-head")


async def test_429_garbage_and_cancel_are_reported_and_nothing_is_kept(brain, server, keyed):
    server.push(error_reply(429, "slow down"), text_reply("Sure! Here are my thoughts on your session: [not json"),
                hang_reply())
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_review(app, pilot)
        await run(screen, app, pilot, "reflector")
        status = text_of(screen, "#review-status")
        assert "HTTP 429" in status and "Nothing was stored" in status and ANTHROPIC_KEY not in status

        await run(screen, app, pilot)
        status = text_of(screen, "#review-status")
        assert "No proposal:" in status and "could not be used" in status and "v shows" in status
        await pilot.press("v")
        await settle(app, pilot)
        assert isinstance(app.screen, TextViewer)
        assert app.screen.text.startswith("Sure! Here are my thoughts")
        await pilot.press("escape")
        await settle(app, pilot)

        await pilot.press("r")
        while len(server.requests) < 3:  # the call is under way once the fake has received it
            await pilot.pause(0.02)
        assert screen.running and screen.query_one("#review-progress").display
        assert screen.check_action("cancel_run", ()) is True
        await pilot.press("escape")
        await settle(app, pilot)
        assert not screen.running and not screen.query_one("#review-progress").display
        assert "Cancelled" in text_of(screen, "#review-status")
        assert list_proposals(brain) == [] and screen.current is None and len(server.requests) == 3


async def test_why_it_did_not_run_and_changing_provider_and_model(brain, server, monkeypatch):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_review(app, pilot)
        assert "ANTHROPIC_API_KEY not set" in text_of(screen, "#review-provider-line")
        await run(screen, app, pilot)
        status = text_of(screen, "#review-status")
        assert "Did not run:" in status and "ANTHROPIC_API_KEY" in status and server.requests == []

        monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        screen.query_one("#review-threshold").value = "100000"
        await run(screen, app, pilot)
        status = text_of(screen, "#review-status")
        count = int(status.split("[count ")[1].split(" ")[0])
        assert count > 0 and "threshold 100000]" in status and server.requests == []

        write_project_config(brain, {"brain": {"observer": {"enabled": False}}})
        await run(screen, app, pilot)
        assert "disabled in CLEO's config" in text_of(screen, "#review-status") and server.requests == []

        # another provider and model, shown at once and used for the call
        monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
        screen.query_one("#review-provider", ChoiceChip).value = "openai"
        screen.query_one("#review-model").value = "gpt-test-model"
        await settle(app, pilot)
        line = text_of(screen, "#review-provider-line")
        assert "openai · gpt-test-model" in line and "OPENAI_API_KEY set" in line and OPENAI_KEY not in line
        server.push(reflection_reply)
        scope = screen.query_one("#review-scope", ChoiceChip)
        session = brain.scalar("SELECT source_session_id FROM brain_observations WHERE source_session_id IS NOT NULL "
                               "ORDER BY created_at DESC LIMIT 1")
        scope.value = session
        await run(screen, app, pilot, "reflector")
        assert server.requests[0].path == "/v1/chat/completions"
        assert screen.current.session_id == session
        assert server.requests[0].json["model"] == "gpt-test-model"
        assert screen.current.provider == "openai" and screen.current.model == "gpt-fake"


async def test_pending_proposal_survives_restart_and_read_only_disables_writing(brain, keyed, tmp_path):
    fake = FakeLLM([text_reply(reflection_answer(["O-not-in-input"], learnings=[]))])
    outcome = propose_reflection(brain, http_client=fake.http_client())
    assert outcome.proposal is not None
    brain.close()
    read_only = open_brain(tmp_path / ".cleo" / "cleo.db", read_only=True)
    app = CleoApp(brain=read_only)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await open_review(app, pilot)
            assert screen.current is not None and screen.current.id == outcome.proposal.id
            assert screen.current.status == "pending" and [i.key for i in screen.items] == ["pattern:0", "pattern:1"]
            assert "1 unknown id dropped" in text_of(screen, "#review-head")
            for action in ("run_llm", "apply_proposal", "approve_all", "discard_proposal", "undo_proposal"):
                assert screen.check_action(action, ()) is None
            assert "read-only" in text_of(screen, "#review-status")
            assert screen.query_one("#review-run").disabled and screen.query_one("#review-apply").disabled
            screen.proposal_table.focus()
            await pilot.press("s", "r")
            await settle(app, pilot)
            assert isinstance(app.screen, ReviewScreen) and not screen.running
            await pilot.press("v")
            await settle(app, pilot)
            assert isinstance(app.screen, TextViewer)
            assert json.loads(app.screen.text)["superseded"] == ["O-not-in-input"]
    finally:
        read_only.close()


def two_reflections(brain, monkeypatch) -> list:
    """Two pending reflector proposals, made through the real reflector before the app starts."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    fake = FakeLLM([reflection_reply, reflection_reply])
    made = [propose_reflection(brain, http_client=fake.http_client()).proposal for _ in range(2)]
    assert all(p is not None for p in made)
    return made


async def select_proposal(screen, app, pilot, proposal_id: int) -> None:
    screen.proposal_table.focus()
    screen.proposal_table.cursor = next(i for i, p in enumerate(screen.proposals) if p.id == proposal_id)
    await settle(app, pilot)
    assert screen.current.id == proposal_id


async def test_marks_belong_to_the_proposal_across_moves_and_restarts(brain, monkeypatch, tmp_path):
    first, second = two_reflections(brain, monkeypatch)
    superseded = [s["id"] for s in first.superseded]
    guard = protection_of(brain, superseded)
    evict = next(i for i in superseded if not guard[i].protected)  # protected rows: the next test
    key = f"superseded:{superseded.index(evict)}"
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_review(app, pilot)
        await select_proposal(screen, app, pilot, first.id)
        await focus_item(screen, pilot, key)
        await pilot.press("space")  # EVICT
        await focus_item(screen, pilot, "pattern:1")
        await pilot.press("space")  # reject
        await select_proposal(screen, app, pilot, second.id)
        assert screen.marks[key] is False and screen.marks["pattern:1"] is True  # the other one's own marks
        await select_proposal(screen, app, pilot, first.id)
        assert screen.marks[key] is True and screen.marks["pattern:1"] is False
    # a new app on the same file
    again = open_brain(tmp_path / ".cleo" / "cleo.db")
    app = CleoApp(brain=again)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await open_review(app, pilot)
            await select_proposal(screen, app, pilot, first.id)
            assert screen.marks[key] is True and screen.marks["pattern:1"] is False
            await pilot.press("s")
            assert isinstance(app.screen, ConfirmModal) and app.screen.danger  # an eviction: guarded
            assert "still return evicted rows" in app.screen.body  # what eviction does in CLEO
            # hiding from CLEO's search is not offered here: the text says where it is
            assert "commit with --hide-from-cleo" not in app.screen.body and "Prune pane" in app.screen.body
            await answer(app, pilot, yes=True)
    finally:
        again.close()
    applied = get_proposal(brain, first.id)
    assert applied.status == "applied" and applied.decision["approved_superseded"] == [evict]
    assert applied.decision["accepted_patterns"] == [0] and applied.decision["accepted_learnings"] == [0, 1]
    assert [i for i in superseded if not live(brain, i)] == [evict]
    assert get_proposal(brain, second.id).status == "pending"


async def test_a_protected_row_is_shown_and_asked_about_a_second_time(brain, monkeypatch):
    first, _ = two_reflections(brain, monkeypatch)
    target = first.superseded[1]["id"]
    pin_observation(brain, target)  # pinned: protected
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_review(app, pilot)
        await select_proposal(screen, app, pilot, first.id)
        await focus_item(screen, pilot, "superseded:1")
        row = screen.format_item(screen.item_table.current_row())
        assert row["text"][0].startswith("PROTECTED (") and "set by you" in row["text"][0]
        assert "PROTECTED" in text_of(screen, "#review-item-side")
        await pilot.press("space")
        await pilot.press("s")
        await answer(app, pilot, yes=True)
        assert isinstance(app.screen, ConfirmModal) and app.screen.danger
        assert target in app.screen.body and "set by you" in app.screen.body
        await answer(app, pilot, yes=False)  # not the second time: nothing written
        assert get_proposal(brain, first.id).status == "pending" and live(brain, target)
        await pilot.press("s")
        await answer(app, pilot, yes=True)
        await answer(app, pilot, yes=True)
        assert get_proposal(brain, first.id).status == "applied" and not live(brain, target)


async def test_read_only_marks_are_kept_in_memory(brain, monkeypatch, tmp_path):
    first, second = two_reflections(brain, monkeypatch)
    brain.close()
    read_only = open_brain(tmp_path / ".cleo" / "cleo.db", read_only=True)
    app = CleoApp(brain=read_only)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await open_review(app, pilot)
            await select_proposal(screen, app, pilot, first.id)
            await focus_item(screen, pilot, "pattern:0")
            await pilot.press("space")
            await select_proposal(screen, app, pilot, second.id)
            await select_proposal(screen, app, pilot, first.id)
            assert screen.marks["pattern:0"] is False
    finally:
        read_only.close()


async def test_every_control_is_reachable_at_80x24(brain, monkeypatch):
    two_reflections(brain, monkeypatch)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_review(app, pilot)
        controls = ["#review-kind", "#review-scope", "#review-provider", "#review-model", "#review-threshold",
                    "#review-run", "#review-cancel", "#review-accept", "#review-reject", "#review-approve-all",
                    "#review-apply", "#review-discard", "#review-undo", "#review-raw", "#review-proposals",
                    "#review-items"]
        for selector in controls:
            widget = screen.query_one(selector)
            region = widget.region
            assert widget.display and region.area > 0 and screen.region.contains_region(region), selector
        assert screen.query_one("#review-items").region.height >= 3  # room for a few items


def test_the_tui_never_tells_the_user_to_pass_a_cli_flag():
    from cleo_tui.llm import results as r
    from cleo_tui.llm.resolve import COMPATIBLE, Resolved
    from cleo_tui.ui.widgets.review_render import problem_text

    def problem_for(**kw) -> str:
        base = {"provider": "anthropic", "model": "m", "base_url": None, "api_key": None,
                "key_env": "ANTHROPIC_API_KEY", "provider_source": "default", "model_source": "default"}
        resolved = Resolved(**(base | kw))
        return problem_text(r.Problem(r.NO_CREDENTIAL, resolved.missing_credential(), {})).plain

    for text in (problem_for(), problem_for(provider=COMPATIBLE), problem_for(refused_host="evil.example")):
        assert "--" not in text, text
    assert "provider list above" in problem_for()
    threshold = r.Problem(r.UNDER_THRESHOLD, "3 uncompressed observations in scope (all); the observer runs at 10. "
                                             "Lower it with --threshold to run anyway.", {})
    assert "threshold field above" in problem_text(threshold).plain and "--" not in problem_text(threshold).plain


async def test_with_no_proposal_only_the_explanation_shows(brain, server, keyed):
    """An empty items table, its buttons and an empty detail split read as a broken pane: until there is a
    proposal, the right side is the explanation of what to do; the first proposal brings them back."""
    server.push(notes_reply)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_review(app, pilot)
        parts = ["#review-left", "#review-items", "#review-buttons", "#review-detail"]  # (left: an empty list)
        assert screen.current is None and "No proposal yet" in text_of(screen, "#review-head")
        assert not any(screen.query_one(part).display for part in parts)
        proposal_keys = {"toggle_item", "approve_all", "apply_proposal", "raw_answer"}
        assert not proposal_keys & footer_actions(screen) and "run_llm" in footer_actions(screen)
        await run(screen, app, pilot)
        assert screen.current is not None
        assert all(screen.query_one(part).display for part in parts)
        assert proposal_keys <= footer_actions(screen)


def test_with_no_proposal_on_a_read_only_brain_the_head_does_not_offer_r():
    from cleo_tui.ui.widgets.review_render import head_text

    assert "r runs it" in head_text(None).plain
    shown = head_text(None, read_only=True).plain
    assert "r runs it" not in shown and "read-only" in shown
