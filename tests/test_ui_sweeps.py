"""The Sweeps pane (7) and the Observations pane's CLEO marks, driven as a user would.

The brain is a real SQLite file in CLEO's consolidated layout with a sweep staged as CLEO stages it;
approving runs a stand-in `cleo` on PATH that records its arguments and runs CLEO's approve SQL.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from textual.widgets import Static

from cleo_tui.brain import open_brain
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.panes.observations import ObservationsScreen
from cleo_tui.ui.panes.sweeps import SweepsScreen
from cleo_tui.ui.widgets.modals import MessageModal
from cleo_tui.ui.widgets.table import LineTable
from tests.brain_fixtures import insert_observations, make_cleo_consolidated
from tests.cleo_sweep import add_sweep_tables, logged_calls, stage_sweep, write_stand_in_cleo
from tests.ui_helpers import footer_actions, settle

RUN = "bfr-mq1abc-x1y2z3"


@pytest.fixture
def brain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    db = make_cleo_consolidated(Path("proj/.cleo/cleo.db"))
    insert_observations(db, [
        {"id": f"O-{n}", "type": "discovery", "title": f"row {n} [bold]x[/]", "narrative": f"narrative {n} \x1b[31m",
         "created_at": "2026-03-01 10:00:00", "source_type": "agent", "quality_score": q, "citation_count": 0}
        for n, q in ((1, 0.1), (2, 0.25), (3, 0.9))])
    stage_sweep(db, RUN, [("brain_observations", "O-1"), ("brain_observations", "O-2")])
    opened = open_brain(db)
    yield opened
    opened.close()


@pytest.mark.parametrize("size", [(80, 24), (140, 40)])
async def test_veto_then_approve_through_cleo_purges_the_rest(brain, size, monkeypatch, tmp_path):
    log = write_stand_in_cleo(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    app = CleoApp(brain=brain)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        await pilot.press("7")
        await settle(app, pilot)
        pane = app.screen
        assert isinstance(pane, SweepsScreen)
        status = str(pane.query_one("#sweeps-status", Static).render())
        assert RUN in status and "approving purges 2 rows" in status
        detail = str(pane.query_one("#sweeps-detail", Static).render())
        assert "narrative 1 \x1b[31m" not in detail and "narrative 1" in detail  # literal, escape shown visibly
        await pilot.press("enter", "v", "y")  # into the rows; veto the first
        await settle(app, pilot)
        rows = pane.query_one("#sweeps-rows", LineTable)
        assert rows.current_row() is not None and rows.current_row()["staged"].validation_status == "skipped"
        await pilot.press("a")
        await settle(app, pilot)
        await pilot.press("y")
        await settle(app, pilot)
        assert isinstance(app.screen, MessageModal)
        assert logged_calls(log) == [["memory", "sweep", "--approve", RUN]]
        await pilot.press("escape")
        await settle(app, pilot)
        assert pane.views[0].run.status == "approved"
        assert brain.scalar("SELECT count(*) FROM brain_observations WHERE invalid_at IS NOT NULL") == 1
        assert app.session.summary is not None and app.session.summary["observations"]["evicted"] == 1


async def test_without_cleo_the_pane_shows_the_command_and_writes_nothing(brain, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("7")
        await settle(app, pilot)
        await pilot.press("a")
        await settle(app, pilot)
        assert isinstance(app.screen, MessageModal)
        body = str(app.screen.query_one(".dialog-body", Static).render())
        assert f"cleo memory sweep --approve {RUN}" in body and "not on PATH" in body
    assert brain.scalar("SELECT count(*) FROM brain_observations WHERE invalid_at IS NOT NULL") == 0


async def test_the_cleo_marks_filter_and_state_column(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        pane = app.screen
        assert isinstance(pane, ObservationsScreen)
        await pilot.press("c")  # at risk: CLEO's next consolidation deletes it
        await settle(app, pilot)
        table = pane.query_one("#obs-table", LineTable)
        assert [table.listing.cached_row(i)["id"] for i in range(table.total)] == ["O-1"]
        assert pane.format_row(table.current_row())["state"] == ("⚠live", "table--critical")
        await pilot.press("c")  # hidden from CLEO's search
        await settle(app, pilot)
        assert sorted(table.listing.cached_row(i)["id"] for i in range(table.total)) == ["O-1", "O-2"]
        header = str(app.screen.query_one("#brain-header", Static).render())
        assert "⚠ 1 at risk" in header and "2 hidden" in header


async def test_with_no_sweep_run_only_the_explanation_shows(tmp_path, monkeypatch):
    """Empty run and row tables and an empty detail read as a broken pane; with no run, the pane says what
    a sweep is and offers no key that acts on one. A run CLEO stages meanwhile brings them back (R)."""
    monkeypatch.chdir(tmp_path)
    db = make_cleo_consolidated(Path("proj/.cleo/cleo.db"))
    insert_observations(db, [{"id": "O-1", "type": "discovery", "title": "row", "narrative": "n",
                              "created_at": "2026-03-01 10:00:00", "source_type": "agent"}])
    conn = sqlite3.connect(db)
    add_sweep_tables(conn)  # (CLEO's tables, no run yet)
    conn.commit()
    conn.close()
    brain = open_brain(db)
    app = CleoApp(brain=brain)
    parts = ["#sweeps-runs", "#sweeps-rows", "#sweeps-detail-box"]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("7")
        await settle(app, pilot)
        pane = app.screen
        assert isinstance(pane, SweepsScreen)
        assert "No sweep runs" in str(pane.query_one("#sweeps-status", Static).render())
        assert not any(pane.query_one(part).display for part in parts)
        assert not {"approve", "rollback", "veto"} & footer_actions(pane)
        stage_sweep(db, RUN, [("brain_observations", "O-1")])
        await pilot.press("R")
        await settle(app, pilot)
        assert len(pane.views) == 1, pane.views
        assert all(pane.query_one(part).display for part in parts)
        assert {"approve", "rollback", "veto"} <= footer_actions(pane)
    brain.close()
