"""Pilot tests of CLEO's own retrievals in the Traces pane, on a brain in CLEO's layout."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Checkbox, Input, Static

from cleo_tui.brain.store import open_brain
from cleo_tui.recall.export import read_export
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.widgets.choice_chip import ChoiceChip
from cleo_tui.ui.widgets.trace_export import TraceExportPrompt
from tests.test_cleo_retrievals import EVICTED, GONE, HIDDEN, make_cleo_logged
from tests.test_ui_traces import SIZE, open_traces, result_lines, screen_text, status_of, steps_of, table_of
from tests.ui_helpers import settle


def _select_row(app, key: str) -> int:
    table = table_of(app)
    index = table.listing.index_of(key)
    assert index is not None
    table.cursor = index
    return index


async def test_cleo_retrievals_list_with_their_query_as_data_and_results_as_cleo_sees_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    brain = open_brain(make_cleo_logged(Path(".")))
    app = CleoApp(brain=brain)
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_traces(app, pilot)
            table = table_of(app)
            assert table.total == 6 and "6 CLEO's, 0 cleo-tui traces" in status_of(app)
            assert table.formatter(table.current_row())["whose"][0] == "CLEO"

            _select_row(app, "cleo:4")  # the hostile query: markup and controls shown, never applied
            await settle(app, pilot)
            head = str(screen.query_one("#trace-head", Static).render())
            assert "[bold]x[/] ␛[31mred␛]8;;http://evil␇ NUL␀here" in head
            assert "[bold]x[/]" in screen_text(app)  # literally on screen, not bold

            _select_row(app, "cleo:1")
            await settle(app, pilot)
            lines = result_lines(app)
            assert "live" in lines[0] and "used ×1 (success), not used ×1" in lines[0]
            assert lines[1].startswith("#2  live") and "learning" in lines[1]
            assert lines[2].startswith("#3  evicted") and EVICTED in lines[2] and "used ×1 (failure)" in lines[2]
            assert lines[3].startswith("#4  hidden") and HIDDEN in lines[3]
            assert lines[4].startswith("#5  deleted") and GONE in lines[4] and "no row holds" in lines[4]
            assert lines[5].startswith("#6  hidden") and "decision" in lines[5]
            await pilot.press("enter", "down", "down", "down")
            await settle(app, pilot)
            assert "hidden from CLEO's search" in steps_of(app) and "quality 0.15" in steps_of(app)
            assert "stripe webhook" in steps_of(app)  # the query, whole, beside the results

            await pilot.press("plus")  # CLEO's retrievals take no outcome: said, and no confirmation offered
            await settle(app, pilot)
            assert app.screen is screen
            assert any("CLEO's own retrieval" in n.message for n in app._notifications)

            await pilot.press("escape")
            screen.query_one("#tf-whose", ChoiceChip).value = "cleo/fetch"
            await settle(app, pilot)
            assert table.total == 1 and table.current_row()["id"] == "cleo:5"
            await pilot.press("c")
            await settle(app, pilot)
            screen.query_one("#tf-pipeline", ChoiceChip).value = "api"  # a trace's own filter: CLEO's rows leave
            await settle(app, pilot)
            assert table.total == 0
    finally:
        brain.close()


async def test_export_dialog_leaves_cleos_query_out_unless_the_box_is_ticked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    brain = open_brain(make_cleo_logged(Path(".")))
    app = CleoApp(brain=brain)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await open_traces(app, pilot)
            for name, tick in (("plain.jsonl", False), ("text.jsonl", True)):
                await pilot.press("x")
                assert isinstance(app.screen, TraceExportPrompt)
                if tick:
                    await pilot.click("#export-query-text")
                    assert app.screen.query_one("#export-query-text", Checkbox).value
                app.screen.query_one("#path-input", Input).value = name
                app.screen.query_one("#path-input", Input).focus()
                await pilot.press("enter")
                await settle(app, pilot)
            plain, text = read_export(tmp_path / "plain.jsonl"), read_export(tmp_path / "text.jsonl")
            assert len(plain) == len(text) == 6
            assert all("query" not in r and r["query_hash"] for r in plain if r["query_length"])
            assert {r["retrieval_id"]: r["query"] for r in text}[1] == "stripe webhook"
    finally:
        brain.close()
