"""SVG snapshots of the Prune pane at 120×36 on the demo brain.

Deterministic: the demo is seeded, the brain is opened by a relative path, the status
line shows no timings, and every worker has finished before the picture is taken.
Update after an intended change with `pytest --snapshot-update`.
"""

from __future__ import annotations

from tests.ui_helpers import settle

SIZE = (120, 36)


async def open_prune(app, pilot) -> None:
    await settle(app, pilot)
    await pilot.press("2")
    await settle(app, pilot)


def test_prune_pane_without_fall_back(app, snap_compare):
    """A budget whose target is met: the bar shows protected | kept | dropped, the list drops in order."""
    async def run_before(pilot):
        await open_prune(app, pilot)
        screen = app.screen
        pool = screen.pool
        protected = pool.tokens_after_dropping(len(pool.droppable))
        screen.set_budget(int((protected + (pool.tokens_before - protected) / 2) / 0.8))
        screen._show_budget_text()
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_prune_pane_fell_back_protected_list(app, snap_compare):
    """A tiny budget: FELL BACK with the rows in the way; the Protected list with its reasons."""
    async def run_before(pilot):
        await open_prune(app, pilot)
        await pilot.press("b")
        app.screen.query_one("#prune-budget").value = "2k"
        await pilot.press("enter", "l")
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
