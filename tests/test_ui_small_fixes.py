"""Issue 29 item 8, the TUI's smaller defects: one Pilot test per behaviour."""

from __future__ import annotations

from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.widgets.modals import ConfirmModal
from tests.test_ui_observations import table_of
from tests.ui_helpers import settle


async def test_evicting_a_pinned_row_asks_a_second_time_naming_the_pin(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        row_id = table_of(app).current_row()["id"]
        await pilot.press("p", "y")  # pin it (it asks first)
        await settle(app, pilot)
        await pilot.press("e")
        assert isinstance(app.screen, ConfirmModal) and "you will be asked again" in app.screen.body
        await pilot.press("y")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal) and app.screen.title_text == "Evict a protected observation"
        assert "pinned by you" in app.screen.body or "set by you" in app.screen.body
        await pilot.press("n")
        await settle(app, pilot)
        assert brain.scalar("SELECT invalid_at FROM brain_observations WHERE id = ?", (row_id,)) is None
