"""SVG snapshots of the Review pane at 120×36 on the demo brain.

Deterministic: the demo is seeded and opened by a relative path; the proposal is
made through the real reflector and SDK (over httpx2.MockTransport) before the app
starts, and its timestamp is pinned; no toast, no progress bar is on screen.
Update after an intended change with `pytest --snapshot-update`.
"""

from __future__ import annotations

from cleo_tui.brain.migrations import PROPOSALS
from cleo_tui.llm.reflector import propose_reflection
from cleo_tui.ui.app import CleoApp
from tests.fake_llm import FakeLLM, ids_in_prompt, text_reply
from tests.llm_fixtures import ANTHROPIC_KEY, reflection_answer
from tests.ui_helpers import settle

SIZE = (120, 36)


def reflection_reply(request):
    ids = ids_in_prompt(request)
    return text_reply(reflection_answer([{"id": ids[0], "reason": "restated by a later row"}, ids[1], ids[2]]),
                      input_tokens=900, output_tokens=210)


async def open_review(app, pilot) -> None:
    await settle(app, pilot)
    await pilot.press("3")
    await settle(app, pilot)


def test_review_pending_reflection_with_an_approved_eviction(brain, monkeypatch, snap_compare):
    """A pending reflector proposal: the first superseded row approved, shown in full beside the claim."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    proposal = propose_reflection(brain, http_client=FakeLLM([reflection_reply]).http_client()).proposal
    with brain.write() as conn:  # a fixed creation time keeps the picture the same every day
        conn.execute(f"UPDATE {PROPOSALS} SET created_at = '2026-11-30 09:15:00' WHERE id = ?", (proposal.id,))
    app = CleoApp(brain=brain)

    async def run_before(pilot):
        await open_review(app, pilot)
        screen = app.screen
        screen.item_table.focus()
        await pilot.press("end", "up", "up", "space")
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_review_says_why_the_observer_did_not_run(brain, snap_compare):
    """No API key: the provider line and the status line say so; nothing was asked."""
    app = CleoApp(brain=brain)

    async def run_before(pilot):
        await open_review(app, pilot)
        await pilot.press("r")
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
