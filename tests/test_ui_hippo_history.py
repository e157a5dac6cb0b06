"""The History pane on a hippo store: hippo's days, without what only a CLEO brain has."""

from __future__ import annotations

from pathlib import Path

from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.panes.history import HistoryScreen
from tests.recall_fixtures import open_hippo
from tests.ui_helpers import footer_actions, settle


def _status(app: CleoApp) -> str:
    return str(app.screen.query_one("#hist-status").render())


async def test_the_history_pane_shows_a_hippo_stores_days_and_offers_no_observations(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    brain = open_hippo(Path(".hippo") / "hippo.db")  # mem-2 (2026-03-01) superseded by mem-1 (2026-04-01)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await pilot.press("6")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        assert screen.timeline is not None
        assert [screen.timeline.days[0].day, screen.timeline.days[-1].day] == ["2026-03-01", "2026-04-02"]
        status = _status(app)
        assert "1 live now" in status and "observations" not in status
        liveness = str(screen.query_one("#hist-liveness").render())
        assert "hippo store" in liveness and "observer never" not in liveness  # no CLEO agents to watch
        assert "superseded" in liveness  # what hippo's days mean: it keeps no eviction time
        assert "open_day" not in footer_actions(screen)
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.screen is screen  # not the Observations pane's notice
    brain.close()


def test_the_header_counts_a_hippo_stores_memories_as_info_does(tmp_path):
    from cleo_tui.brain.summary import brain_summary
    from cleo_tui.ui.widgets.chrome import header_text

    brain = open_hippo(tmp_path / ".hippo" / "hippo.db")
    try:
        text = header_text(brain_summary(brain), str(brain.path), brain.kind_label, brain.read_only_reason).plain
    finally:
        brain.close()
    assert "1 live · 1 superseded · 1 trace" in text and "patterns" not in text and "evicted" not in text


async def test_the_traces_status_is_whole_at_80_columns(tmp_path, monkeypatch):
    """On a hippo store the read-only reason ran past the edge of the Traces pane's status at 80×24."""
    from textual.widgets import Static

    monkeypatch.chdir(tmp_path)
    brain = open_hippo(Path(".hippo") / "hippo.db")
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        status = app.screen.query_one("#trace-status", Static)
        assert str(status.render()).endswith("recall, outcomes and undo are disabled")
        lines = status.render_lines(status.region.reset_offset)
        drawn = " ".join("".join(seg.text for seg in line).strip() for line in lines)
        assert "undo are disabled" in drawn
    brain.close()
