"""SVG snapshots of the History pane on the demo brain, at 140×40 and at 80×24.

Deterministic: the demo is seeded, opened by a relative path, the liveness warnings count
days from the demo's own "now" (conftest sets $CLEO_TUI_NOW), and every worker has
finished before the picture is taken. Update after an intended change with `--snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cleo_tui.brain import open_brain
from cleo_tui.ui.app import CleoApp
from tests.ui_helpers import copy_demo, settle


@pytest.fixture
def app(tmp_path, monkeypatch):
    """The demo brain alone (the shared fixture's hostile row dated 2020 would stretch the chart)."""
    monkeypatch.chdir(tmp_path)
    copy_demo(tmp_path, observations=600, seed=3)
    brain = open_brain(Path(".cleo/cleo.db"))
    yield CleoApp(brain=brain)
    brain.close()


@pytest.mark.parametrize("size", [(140, 40), (80, 24)], ids=["140x40", "80x24"])
def test_history_pane(app, snap_compare, size):
    """The chart of live tokens and evictions by cause above the newest days; the agents' line."""
    async def run_before(pilot):
        await settle(app, pilot)
        await pilot.press("6")
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
