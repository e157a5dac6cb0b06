"""SVG snapshots at 80×24 of what the other snapshot files do not show at that size: the welcome
screen, the patterns (records) pane, and one of each dialog kind — the commit confirmation, the
text viewer, the export path prompt and the help (issue 29 item 3). Every pane has its 80×24
snapshot in its own file.

Deterministic: the demo is seeded and opened by a relative path; the welcome's paths are fixed.
Update after an intended change with `pytest --snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

from cleo_tui.ui.app import CleoApp
from tests.ui_helpers import settle

SIZE = (80, 24)


def test_welcome_at_80x24(tmp_path, monkeypatch, snap_compare):
    from cleo_tui.ui.panes import welcome

    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no `cleo`: cleo-tui's own brain
    monkeypatch.setattr(welcome, "fresh_demo_directory", lambda: Path("/tmp/cleo-tui-demo-0000"))
    app = CleoApp(brain=None, project=Path("/home/user/project"),
                  problem="No brain found in /home/user/project or any directory above it.")

    async def run_before(pilot):
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_commit_dialog_at_80x24(app, snap_compare):
    async def run_before(pilot):
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        await pilot.press("c")
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_records_pane_at_80x24(app, snap_compare):
    async def run_before(pilot):
        await settle(app, pilot)
        await pilot.press("t")
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_text_viewer_at_80x24(app, snap_compare):
    async def run_before(pilot):
        await settle(app, pilot)
        await pilot.press("t")
        await settle(app, pilot)
        await pilot.press("v")
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_export_path_prompt_at_80x24(app, snap_compare):
    from cleo_tui.ui.widgets.path_prompt import PathPrompt

    async def run_before(pilot):
        await settle(app, pilot)
        app.push_screen(PathPrompt("Export traces as JSONL", "Write every trace, oldest first, one JSON line "
                                   "each: query hash, results shown, outcomes (the raw query is never stored).",
                                   "/home/user/project/cleo-traces.jsonl"))
        await settle(app, pilot)
        for box in app.screen.query(Input):  # the cursor blinks every 0.5 s: on a loaded machine the
            box.cursor_blink = False         # picture could catch it either way (a flaky cell)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_help_at_80x24(app, snap_compare):
    async def run_before(pilot):
        await settle(app, pilot)
        await pilot.press("f1")
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
