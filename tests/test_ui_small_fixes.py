"""Issue 29 item 8, the TUI's smaller defects: one Pilot test per behaviour."""

from __future__ import annotations

from pathlib import Path

from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.widgets.modals import ConfirmModal
from tests.test_ui_observations import table_of
from tests.ui_helpers import settle


async def test_evicting_a_pinned_row_asks_a_second_time_naming_the_pin(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        row_id = table_of(app).current_row()["id"]
        await pilot.press("p", "y")  # pin it (it asks first)
        await settle(app, pilot)
        await pilot.press("e")
        assert isinstance(app.screen, ConfirmModal) and "you will be asked again" in app.screen.body
        await pilot.press("y")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal) and app.screen.title_text == "Evict a protected observation"
        assert "pinned by you" in app.screen.body or "set by you" in app.screen.body
        await pilot.press("n")
        await settle(app, pilot)
        assert brain.scalar("SELECT invalid_at FROM brain_observations WHERE id = ?", (row_id,)) is None


async def test_the_export_dialogs_default_path_is_absolute(brain, tmp_path):
    from pathlib import Path

    from textual.widgets import Input

    from cleo_tui.ui.widgets.path_prompt import PathPrompt
    from cleo_tui.ui.widgets.trace_export import TraceExportPrompt

    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for pane in ("2", "4"):
            await pilot.press(pane)
            await settle(app, pilot)
            await pilot.press("x")
            await settle(app, pilot)
            assert isinstance(app.screen, PathPrompt | TraceExportPrompt)  # Traces asks about CLEO's query text too
            shown = Path(app.screen.query_one("#path-input", Input).value)
            assert shown.is_absolute() and shown.parent == Path.cwd() == tmp_path
            await pilot.press("escape")


async def test_a_hippo_store_hides_the_write_keys_and_still_says_why_when_one_is_pressed(tmp_path, monkeypatch):
    from pathlib import Path

    from cleo_tui.ui.widgets.footer import CleoFooter
    from tests.recall_fixtures import open_hippo

    monkeypatch.chdir(tmp_path)
    brain = open_hippo(Path("hippo.db"))
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(app, pilot)
        shown = {k.action for k in app.screen.query_one(CleoFooter).keys}
        assert not shown & app.screen.WRITE_ACTIONS and "export_traces" in shown
        await pilot.press("plus")
        await settle(app, pilot)
        assert any("read-only" in n.message for n in app._notifications)
    brain.close()


async def test_an_export_path_that_cannot_be_written_is_said_in_the_dialog_and_the_typed_path_stays(
        brain, tmp_path):
    """A directory typed as the export file closed the dialog with "…is a directory; give a file name
    such as traces.jsonl" (in Observations too) and the path was gone; Prune asked to "replace" it.
    Each export dialog now says why under the box and keeps what was typed."""
    from textual.widgets import Input, Static

    from cleo_tui.ui.widgets.filter_actions import ExportScreen
    from cleo_tui.ui.widgets.path_prompt import PathPrompt
    from cleo_tui.ui.widgets.trace_export import TraceExportPrompt

    folder = tmp_path / "exports"
    folder.mkdir()
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for pane, key, dialog in (("1", "X", ExportScreen), ("2", "x", PathPrompt), ("4", "x", TraceExportPrompt)):
            await pilot.press(pane)
            await settle(app, pilot)
            await pilot.press(key)
            await settle(app, pilot)
            assert isinstance(app.screen, dialog)
            box = app.screen.query_one(Input)
            for typed, said in ((str(folder), "is a directory; give the name of a file in it"),
                                (str(tmp_path / "nowhere" / "x.json"), "its folder does not exist"),
                                (str(Path(brain.path)), "is the open brain")):
                box.value = typed
                await pilot.press("enter")
                await settle(app, pilot)
                assert isinstance(app.screen, dialog), (pane, typed)
                problem = str(app.screen.query_one("#path-problem", Static).render())
                assert said in problem and box.value == typed, (pane, problem)
            box.value = str(folder / "fine.out")
            await pilot.press("enter")
            await settle(app, pilot)
            assert not isinstance(app.screen, dialog)
            assert not isinstance(app.screen, ConfirmModal), pane  # a new file: nothing to replace
            assert (folder / "fine.out").is_file(), pane
            (folder / "fine.out").unlink()
