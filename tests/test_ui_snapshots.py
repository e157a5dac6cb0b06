"""SVG snapshots of the Observations pane at 120×36 on the demo brain.

Deterministic: the demo is seeded, the brain is opened by a relative path, no clock
is shown, and every worker has finished before the picture is taken.
Update after an intended change with `pytest --snapshot-update`.
"""

from __future__ import annotations

from textual.widgets import Select

from tests.ui_helpers import settle

SIZE = (120, 36)


def test_observations_pane(app, snap_compare):
    async def run_before(pilot):
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_observations_evicted_filter(app, snap_compare):
    async def run_before(pilot):
        await settle(app, pilot)
        app.screen.query_one("#f-state", Select).value = "evicted"
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_hostile_row_detail(app, snap_compare):
    async def run_before(pilot):
        await settle(app, pilot)
        app.screen.query_one("#search").value = "O-hostile"
        app.screen._apply_search()
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
