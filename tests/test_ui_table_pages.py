"""Page keys in the Line-API table: the view moves a page and the cursor keeps its line on screen."""

from __future__ import annotations

from textual.app import App, ComposeResult

from cleo_tui.ui.widgets.list_listing import ListListing
from cleo_tui.ui.widgets.table import Column, LineTable


class OneTable(App[None]):
    def compose(self) -> ComposeResult:
        table = LineTable([Column("id", "id", None)], lambda row: {"id": (row["id"], "")}, id="t")
        yield table

    def on_mount(self) -> None:
        table = self.query_one(LineTable)
        table.set_listing(ListListing(list(range(100)), lambda i, n: {"id": f"id{n}"}))
        table.focus()


async def test_page_down_and_up_move_the_view_a_whole_page():
    # The walk's defect: after Home, PageDown moved the cursor a page down but the view only one
    # row, so the first row was hidden and the cursor sat on the last line.
    app = OneTable()
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(LineTable)
        await pilot.pause()
        rows = table.scrollable_content_region.height - 1  # (the header's line)
        await pilot.press("pagedown")
        await pilot.pause()
        assert (table.cursor, int(table.scroll_offset.y)) == (rows, rows)
        await pilot.press("down", "pagedown")
        await pilot.pause()
        assert (table.cursor, int(table.scroll_offset.y)) == (2 * rows + 1, 2 * rows)
        await pilot.press("pageup", "pageup")
        await pilot.pause()
        assert (table.cursor, int(table.scroll_offset.y)) == (1, 0)
        await pilot.press("pageup")
        await pilot.pause()
        assert (table.cursor, int(table.scroll_offset.y)) == (0, 0)
        await pilot.press("end", "pageup")
        await pilot.pause()
        bottom = 100 - rows  # the view's top at the end
        assert (table.cursor, int(table.scroll_offset.y)) == (99 - rows, bottom - rows)
        await pilot.press("pagedown", "pagedown")  # the last page: the cursor goes to the last row
        await pilot.pause()
        assert (table.cursor, int(table.scroll_offset.y)) == (99, bottom)
