"""SVG snapshots of the Observations pane at 120×36 on the demo brain.

Deterministic: the demo is seeded, the brain is opened by a relative path, no clock
is shown, and every worker has finished before the picture is taken.
Update after an intended change with `pytest --snapshot-update`.
"""

from __future__ import annotations

import pytest

from cleo_tui.ui.widgets.choice_chip import ChoiceChip
from tests.ui_helpers import settle

SIZE = (120, 36)


def test_observations_pane(app, snap_compare):
    async def run_before(pilot):
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_observations_evicted_filter(app, snap_compare):
    async def run_before(pilot):
        await settle(app, pilot)
        app.screen.query_one("#f-state", ChoiceChip).value = "evicted"
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_hostile_row_detail(app, snap_compare):
    async def run_before(pilot):
        await settle(app, pilot)
        app.screen.query_one("#search").value = "O-hostile"
        app.screen._apply_search()
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


WIDE_TITLE = "漢字のタイトル 😀🎉 emoji in a title"


def _add_wide_row(brain) -> None:
    """A row whose title is CJK and emoji, newest, so it sits at the top beside ASCII rows."""
    with brain.write() as conn:
        conn.execute("INSERT INTO brain_observations(id, type, title, narrative, created_at) VALUES (?, ?, ?, ?, ?)",
                     ("O-wide", "discovery", WIDE_TITLE, "wide text", "2030-01-01 00:00:00"))


@pytest.mark.parametrize("size", [(80, 24), (140, 40)], ids=["80x24", "140x40"])
def test_observations_pane_small_and_large(brain, app, snap_compare, size):
    """At 80×24 the id and title shrink and date, type and source give way; state stays. F1 is in
    the footer at both sizes; the CJK/emoji title keeps every later column in place."""
    _add_wide_row(brain)

    async def run_before(pilot):
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
