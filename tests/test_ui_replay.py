"""The replay view (R in the Traces pane): it replays CLEO's logged queries in a worker and lists
them with their agreement; a budget typed in it adds the prune step, whose losses it shows."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import OptionList, Static

from cleo_tui.brain import open_brain
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.panes.traces import TracesScreen
from cleo_tui.ui.widgets.replay_view import ReplayView
from tests.brain_fixtures import add_cleo_recall_logs
from tests.replay_fixtures import cleo_brain, observations
from tests.ui_helpers import settle


@pytest.fixture
def brain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    path = cleo_brain(Path("proj/.cleo/cleo.db"))
    observations(path, {f"O-{i:02d}": f"release checklist item {i} " + "detail " * (i % 5) for i in range(12)})
    add_cleo_recall_logs(path, [
        {"query": "release checklist", "entry_ids": ["O-00", "O-05", "O-10", "O-01", "O-06", "O-11", "O-02",
                                                       "O-07", "O-03", "O-08"]},
        {"query": "\x1b[2J[bold]checklist", "entry_ids": ["O-gone"]},
    ])
    brain = open_brain(path)
    yield brain
    brain.close()


async def _wait_for_report(app, pilot, view: ReplayView, generation: int) -> None:
    for _ in range(200):
        await pilot.pause(0.05)
        if view.finished == generation:
            break
    await settle(app, pilot)


async def open_replay(app, pilot) -> ReplayView:
    """The Traces pane's replay, its first report shown."""
    await settle(app, pilot)
    await pilot.press("4")
    await settle(app, pilot)
    assert isinstance(app.screen, TracesScreen)
    await pilot.press("R")
    view = app.screen
    assert isinstance(view, ReplayView)
    await _wait_for_report(app, pilot, view, 1)
    return view


async def test_r_replays_cleos_queries_and_a_budget_shows_the_losses(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        view = await open_replay(app, pilot)
        assert view.report is not None
        assert [q.agreement for q in view.report.queries] == ["differs", "exact"]
        listed = view.query_one("#replay-queries", OptionList)
        assert listed.option_count == 2
        first = str(listed.get_option_at_index(0).prompt)
        assert "\\x1b[2J[bold]checklist" in first  # CLEO's text as data, never markup or a terminal code
        summary = str(view.query_one("#replay-summary", Static).render())
        assert "1 exact" in summary and "1 differ" in summary and "no step" in summary

        await pilot.press("b")
        for key in "10":
            await pilot.press(key)
        await pilot.press("enter")
        await _wait_for_report(app, pilot, view, 2)
        report = view.report
        assert report is not None and not report.step.empty
        checklist = report.queries[1]
        assert checklist.cleo_today.recall == 1.0 and checklist.intends.lost  # CLEO ignores invalid_at
        await pilot.press("down")
        await settle(app, pilot)
        detail = str(view.query_one("#replay-detail", Static).render())
        assert "intends: loses" in detail and "evicted by this step" in detail
        await pilot.press("escape")
        await settle(app, pilot)
        assert isinstance(app.screen, TracesScreen)


async def test_the_replay_bar_names_each_box_at_80_columns(brain):
    """The bar read "step: prune at budget 200 [X] hide…": the number of queries had no name, so
    200 read as the budget."""
    from textual.widgets import Checkbox, Input, Label

    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        view = await open_replay(app, pilot)
        bar = view.query_one("#replay-bar")
        names = {str(label.render()).strip(): label.region for label in bar.query(Label)}
        bound = view.query_one("#replay-bound", Input).region
        assert "queries" in names and names["queries"].right <= bound.x, names
        hide = view.query_one("#replay-hide", Checkbox).region
        assert hide.right <= bar.region.right and hide.width >= len("hide from CLEO's search") + 3, (hide, bar.region)


async def test_a_brain_without_logged_retrievals_says_so_instead_of_a_table_of_zeros(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = cleo_brain(Path("quiet/.cleo/cleo.db"))
    observations(path, {"O-01": "nothing recalled yet"})
    quiet = open_brain(path)
    app = CleoApp(brain=quiet)
    async with app.run_test(size=(80, 24)) as pilot:
        view = await open_replay(app, pilot)
        summary = str(view.query_one("#replay-summary", Static).render())
        assert "CLEO has logged no retrievals in this brain" in summary and "agreement with" not in summary
        assert not view.query_one("#replay-queries", OptionList).display
        assert not view.query_one("#replay-head").display and not view.query_one("#replay-detail-box").display
        assert "a query" not in str(view.query_one("#replay-hint").render())  # (no query to move to)
    quiet.close()
