"""SVG snapshots of the Duplicates pane on the demo brain at 140×40 (side by side) and 80×24 (stacked).

Deterministic: the demo is seeded (its rewordings too), the brain is opened by a relative
path, and the scan has finished before the picture is taken.
Update after an intended change with `pytest --snapshot-update`.
"""

from __future__ import annotations

from cleo_tui.ui.panes.duplicates import DuplicatesScreen
from tests.ui_helpers import settle


async def open_duplicates(app, pilot) -> None:
    await settle(app, pilot)
    await pilot.press("5")
    await settle(app, pilot)
    screen = app.screen
    assert isinstance(screen, DuplicatesScreen) and screen.scan is not None
    # The planted group with a protected "User:" member.
    table = screen.table("clusters")
    table.cursor = next(i for i, c in enumerate(screen.clusters) if c.member(c.keep).content.startswith("User:"))
    await settle(app, pilot)


def test_duplicates_pane_wide(app, snap_compare):
    async def run_before(pilot):
        await open_duplicates(app, pilot)

    assert snap_compare(app, terminal_size=(140, 40), run_before=run_before)


def test_duplicates_pane_narrow(app, snap_compare):
    async def run_before(pilot):
        await open_duplicates(app, pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
