"""Act on everything the Observations filter shows: A names the selection; evict asks again for the
protected rows; one run, undone with u; X exports what the filter shows."""

from __future__ import annotations

import html
import json
import sqlite3
from pathlib import Path

from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.panes.observations_bulk import FilterActions
from cleo_tui.ui.widgets.filter_actions import BulkScreen, ExportScreen
from cleo_tui.ui.widgets.modals import ConfirmModal
from tests.ui_helpers import posted, search_for_nothing, settle


def live_of_type(path: Path, kind: str) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT id FROM brain_observations WHERE type = ? AND invalid_at IS NULL",
                                           (kind,))}


async def test_evicting_what_the_filter_shows_asks_about_protected_rows_and_undoes_as_one_run(brain, tmp_path):
    path = Path(brain.path).resolve()
    diary = live_of_type(path, "diary")
    app = CleoApp(brain=brain)
    messages: list = []
    async with app.run_test(size=(120, 36), message_hook=messages.append) as pilot:
        await settle(app, pilot)
        pane = app.screen
        pane.filters.type = "diary"
        pane.filters.state = "live"
        pane.reload()
        await settle(app, pilot)
        await pilot.press("A")
        await settle(app, pilot)
        assert isinstance(app.screen, BulkScreen)
        plan = app.screen.plan
        assert set(plan.ids) == diary and plan.protected  # the demo's diary rows include a protected one
        assert plan.headline() == f"{len(diary)} observations selected by: type diary, live"
        assert [m.plan for m in posted(messages, FilterActions.BulkPlanned)] == [plan]  # the worker's handoff
        await pilot.press("e")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal) and "protected ones are asked about next" in app.screen.body
        assert "Recall impact of evicting every live one: " in app.screen.body
        app.screen.action_answer(True)
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal) and "Also evict the" in app.screen.body
        app.screen.action_answer(False)  # keep the protected ones
        await settle(app, pilot)
        assert live_of_type(path, "diary") == set(plan.protected)
        await pilot.press("u")
        await settle(app, pilot)
        assert live_of_type(path, "diary") == diary  # one run, undone at once


async def test_the_counts_a_bulk_step_names_are_the_rows_it_can_change_and_export_writes_what_the_filter_shows(
        brain, tmp_path):
    """With live and evicted rows shown, an eviction names only live ones and a restore only evicted ones
    (both cancelled); then X exports what the filter shows (one app for both)."""
    path = Path(brain.path).resolve()
    with sqlite3.connect(path) as conn:
        evicted = conn.execute("SELECT count(*) FROM brain_observations WHERE invalid_at IS NOT NULL").fetchone()[0]
    out = tmp_path / "diary.json"
    app = CleoApp(brain=brain)
    messages: list = []
    async with app.run_test(size=(120, 36), message_hook=messages.append) as pilot:
        await settle(app, pilot)
        pane = app.screen
        first_state = pane.filters.state
        pane.filters.state = "all"
        pane.reload()
        await settle(app, pilot)
        await pilot.press("A")
        await settle(app, pilot)
        plan = app.screen.plan
        free_live = sum(1 for i in plan.ids if plan.live[i] and i not in plan.protected)
        await pilot.press("e")
        await settle(app, pilot)
        assert app.screen.title_text == f"Evict {free_live:,} observations"
        app.screen.action_answer(False)
        await settle(app, pilot)
        await pilot.press("A")
        await settle(app, pilot)
        await pilot.press("r")
        await settle(app, pilot)
        assert app.screen.title_text == f"Restore {evicted:,} observations"
        app.screen.action_answer(False)
        await settle(app, pilot)
        assert app.screen is pane
        with sqlite3.connect(path) as conn:  # both cancelled: nothing changed
            assert conn.execute("SELECT count(*) FROM brain_observations WHERE invalid_at IS NOT NULL"
                                ).fetchone()[0] == evicted

        # X exports what the filter shows (the pane's first state filter, diary rows).
        seen = len(messages)
        pane.filters.state = first_state
        pane.filters.type = "diary"
        pane.reload()
        await settle(app, pilot)
        await pilot.press("X")
        await settle(app, pilot)
        assert isinstance(app.screen, ExportScreen)
        assert [m.plan.headline() for m in posted(messages[seen:], FilterActions.ExportCounted)] == [
            app.screen.headline]
        app.screen.dismiss(("json", str(out)))
        await settle(app, pilot)
    records = json.loads(out.read_text())
    assert [(m.count, m.path) for m in posted(messages[seen:], FilterActions.Exported)] == [(len(records), str(out))]
    with sqlite3.connect(Path(brain.path)) as conn:
        assert {r["id"] for r in records} == {r[0] for r in conn.execute(
            "SELECT id FROM brain_observations WHERE type = 'diary'")}


async def test_the_bulk_dialogs_keys_wrap_at_80x24(brain):
    """Its line of keys ran past the dialog's edge at 80 columns ("… esc cancel (each asks fi")."""
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.screen.filters.type = "diary"
        app.screen.reload()
        await settle(app, pilot)
        await pilot.press("A")
        await settle(app, pilot)
        assert isinstance(app.screen, BulkScreen)
        shown = html.unescape(app.export_screenshot()).replace("\xa0", " ")
        assert "esc cancel (each asks" in shown and "first; u undoes)" in shown


async def test_exporting_a_filter_that_shows_nothing_says_so_instead_of_offering_an_empty_file(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await search_for_nothing(app, pilot)
        await pilot.press("X")
        await settle(app, pilot)
        assert not isinstance(app.screen, ExportScreen)
        assert any("nothing to export" in n.message for n in app._notifications)


async def test_a_bulk_step_on_one_row_says_one_observation(brain):
    path = Path(brain.path).resolve()
    with sqlite3.connect(path) as conn:
        row_id = conn.execute("SELECT id FROM brain_observations WHERE invalid_at IS NULL AND type = 'diary' "
                              "ORDER BY rowid LIMIT 1").fetchone()[0]
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        pane = app.screen
        pane.filters.search = row_id
        pane.reload()
        await settle(app, pilot)
        await pilot.press("A")
        await settle(app, pilot)
        assert isinstance(app.screen, BulkScreen) and len(app.screen.plan.ids) == 1
        await pilot.press("p")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal) and app.screen.title_text == "Pin 1 observation"
