"""The bridge view: opened from the Prune pane it marks what the preview would evict (CLEO injects it
anyway), shows hostile text literally, and regenerates the file only through CLEO, after a confirmation."""

from __future__ import annotations

import os
import stat

from textual.widgets import Static

from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.widgets.bridge_view import BridgeScreen
from cleo_tui.ui.widgets.modals import ConfirmModal, MessageModal
from tests.test_ui_prune import open_prune
from tests.ui_helpers import HOSTILE_TITLE, settle


def body(screen: BridgeScreen) -> str:
    return screen.query_one("#bridge-body", Static).content.plain  # type: ignore[union-attr]


async def test_bridge_view_from_the_prune_preview(brain, tmp_path, monkeypatch):
    with brain.write() as conn:  # the newest observation of all, so the bridge injects it
        conn.execute("INSERT INTO brain_observations(id, type, title, narrative, created_at) VALUES "
                     "('O-newest', 'discovery', ?, 'n', '2026-05-31 23:00:00')", ("\x1b[31m" + HOSTILE_TITLE,))
    record = tmp_path / "bin" / "calls.txt"
    record.parent.mkdir()
    cleo = tmp_path / "bin" / "cleo"
    cleo.write_text(f'#!/bin/sh\necho "$PWD|$*" >> "{record}"\necho "Memory bridge unchanged"\n')
    cleo.chmod(cleo.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{cleo.parent}{os.pathsep}{os.environ['PATH']}")

    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        prune = await open_prune(app, pilot)
        dropped = set(prune.preview.dropped_ids)
        await pilot.press("i")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, BridgeScreen) and screen.bridge is not None
        evicting = {i.id for i in screen.bridge.marked("evicting")}
        assert evicting and evicting <= dropped
        after = body(screen)
        assert "Recent Observations" in after and "evicting" in after and "still inject" in after
        assert "␛[31m[bold red]x[/] and [link=http://example.com]click[/link]" in after  # literal, not markup

        await pilot.press("a")  # as eviction intends: the step's rows left out, the next ones in their places
        intended = body(screen)
        assert "Not what CLEO does" in intended and "instead" in intended
        assert not any(f"[{i}]" in intended for i in evicting)
        await pilot.press("a")  # now: CLEO's rows, without the step's marks
        assert "evicting" not in body(screen).replace("evicting = this step", "")
        assert all(f"[{i}]" in body(screen) for i in evicting)

        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal) and "cleo refresh-memory" in app.screen.body
        assert not record.exists()  # nothing runs before the yes
        await pilot.press("y")
        await settle(app, pilot)
        assert isinstance(app.screen, MessageModal) and "Memory bridge unchanged" in app.screen.body
        assert record.read_text().strip().endswith("|refresh-memory")
