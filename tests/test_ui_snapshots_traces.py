"""SVG snapshots of the Traces pane at 120×36: the demo brain and a hippo-shaped store.

Deterministic: the demo's traces come from its fixed clock, the stores are opened by a
relative path, and every worker has finished before the picture is taken. Update after
an intended change with `pytest --snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cleo_tui.ui.app import CleoApp
from tests.recall_fixtures import open_hippo
from tests.ui_helpers import demo_brain, settle

SIZE = (120, 36)


@pytest.fixture
def demo_app(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    brain = demo_brain(tmp_path)
    yield CleoApp(brain=brain)
    brain.close()


@pytest.fixture
def hippo_app(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    brain = open_hippo(Path("hippo.db"))
    yield CleoApp(brain=brain)
    brain.close()


def test_traces_pane_on_the_demo_brain(demo_app, snap_compare):
    """The newest traces; the one with an outcome opened, its second result's chain with bars."""
    async def run_before(pilot):
        app = demo_app
        await settle(app, pilot)
        await pilot.press("4")
        await settle(app, pilot)
        await pilot.press(*["down"] * 6)
        await settle(app, pilot)
        await pilot.press("enter", "down")
        await settle(app, pilot)

    assert snap_compare(demo_app, terminal_size=SIZE, run_before=run_before)


def test_traces_pane_on_a_hippo_store(hippo_app, snap_compare):
    """A hippo store opens on its traces: live, superseded (evicted) and forgotten memories."""
    async def run_before(pilot):
        await settle(hippo_app, pilot)

    assert snap_compare(hippo_app, terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (140, 40)], ids=["80x24", "140x40"])
def test_traces_pane_small_and_large(demo_app, snap_compare, size):
    """At 80×24 tenant, query hash and explain give way; id, time, results and outcome stay."""
    async def run_before(pilot):
        await settle(demo_app, pilot)
        await pilot.press("4")
        await settle(demo_app, pilot)

    assert snap_compare(demo_app, terminal_size=size, run_before=run_before)
