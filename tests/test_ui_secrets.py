"""The secrets view: S lists what a scan found, masked; r asks, y redacts; the list is then empty."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from textual.widgets import DataTable, Static

from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.widgets.modals import ConfirmModal, MessageModal
from cleo_tui.ui.widgets.secrets_view import SecretsScreen
from tests.ui_helpers import settle

KEY = "AKIAQ3EGRQWKXN7VTSJM"


def plant(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        row_id = conn.execute("SELECT id FROM brain_observations ORDER BY rowid LIMIT 1").fetchone()[0]
        conn.execute("UPDATE brain_observations SET narrative = narrative || ' AWS_ACCESS_KEY_ID=' || ? WHERE id = ?",
                     (KEY, row_id))
    return row_id


async def open_secrets(app, pilot) -> SecretsScreen:
    await settle(app, pilot)
    await pilot.press("S")
    await settle(app, pilot)
    assert isinstance(app.screen, SecretsScreen)
    return app.screen


async def test_the_secrets_view_lists_masked_findings_and_redacts_after_a_confirmation(brain):
    path = Path(brain.path).resolve()
    row_id = plant(path)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_secrets(app, pilot)
        table = screen.query_one(DataTable)
        cells = [str(c) for c in table.get_row_at(0)]
        assert cells[:4] == ["brain_observations", row_id, "narrative", "aws-access-key"]
        assert KEY not in " ".join(str(c) for c in table.get_row_at(0))
        assert "1 possible secret" in str(screen.query_one("#secrets-status", Static).render())
        assert "r redact all" in str(screen.query_one("#secrets-keys", Static).render())
        await pilot.press("r")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal)
        assert "CANNOT be undone" in app.screen.body
        app.screen.action_answer(True)
        await settle(app, pilot)
        assert isinstance(app.screen, MessageModal)
    with sqlite3.connect(path) as conn:
        narrative = conn.execute("SELECT narrative FROM brain_observations WHERE id = ?", (row_id,)).fetchone()[0]
    assert KEY not in narrative and "[redacted:aws-access-key]" in narrative


async def test_a_brain_without_secrets_says_so_without_an_empty_table_or_a_redact_key(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_secrets(app, pilot)
        assert screen.scan is not None
        assert "No secrets found" in str(screen.query_one("#secrets-status", Static).render())
        assert not screen.query_one(DataTable).display
        keys = str(screen.query_one("#secrets-keys", Static).render())
        assert "redact" not in keys and "esc close" in keys
