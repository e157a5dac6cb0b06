"""The Observations table stays virtual: a 100,000-row brain opens and jumps to the end
without reading every row."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta

import pytest

from cleo_tui.brain import open_brain
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.widgets.table import LineTable

ROWS = 100_000
START = datetime(2026, 1, 1)


@pytest.fixture(scope="module")
def big_brain_path(tmp_path_factory):
    """A legacy-shaped brain (only the columns old CLEO had), built fast with one executemany."""
    path = tmp_path_factory.mktemp("big") / "brain.db"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE brain_observations (
            id TEXT PRIMARY KEY, type TEXT NOT NULL, title TEXT NOT NULL, narrative TEXT,
            source_type TEXT NOT NULL DEFAULT 'agent', created_at TEXT NOT NULL,
            updated_at TEXT, invalid_at TEXT, quality_score REAL);
        CREATE INDEX idx_created ON brain_observations(created_at);
    """)
    conn.executemany(
        "INSERT INTO brain_observations(id, type, title, narrative, created_at) VALUES (?, ?, ?, ?, ?)",
        ((f"O-{i:07d}", "discovery", f"row {i}", f"narrative {i}",
          (START + timedelta(seconds=i)).strftime("%Y-%m-%d %H:%M:%S")) for i in range(ROWS)))
    conn.commit()
    conn.close()
    return path


async def test_hundred_thousand_rows_open_and_jump_to_end(big_brain_path):
    brain = open_brain(big_brain_path, read_only=True)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = app.screen.query_one("#obs-table", LineTable)
        assert table.total == ROWS
        assert table.current_row()["id"] == f"O-{ROWS - 1:07d}"  # newest first
        table.focus()
        await pilot.press("end")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert table.cursor == ROWS - 1
        assert table.current_row()["id"] == "O-0000000"
        listing = table.listing
        # Only a handful of 100-row pages were read, not the 1,000 pages of the whole brain.
        assert listing.pages_read <= 6
    brain.close()


async def _table_with_tags(app, pilot) -> LineTable:
    """The Observations table, focused, once the tags and every worker are done."""
    while app.session.tags is None:
        await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()
    table = app.screen.query_one("#obs-table", LineTable)
    table.focus()
    return table


async def test_drawing_rows_does_not_recompute_pool_wide_protection(app, monkeypatch):
    """Each visible row's tags are read per frame: a row's lookup must not rebuild the
    protection column of the whole pool (at 1M rows that cost 4 ms a row, 130 ms a key)."""
    from cleo_tui.memory.pool_scan import BrainScan

    computed = []
    whole_pool = BrainScan.protected

    def counting(scan):
        computed.append(1)
        return whole_pool.fget(scan)

    monkeypatch.setattr(BrainScan, "protected", property(counting))
    async with app.run_test(size=(120, 36)) as pilot:
        table = await _table_with_tags(app, pilot)
        computed.clear()
        for _ in range(5):
            await pilot.press("down")
            await pilot.pause()
        assert table.cursor == 5
        assert app.session.tag(table.current_row()["id"]) is not None
        assert len(computed) <= 1


async def test_moving_the_cursor_within_the_view_repaints_only_its_two_lines(app, monkeypatch):
    """A cursor step that does not scroll redraws the old and the new cursor line, not the table."""
    drawn: list[int] = []
    draw = LineTable.render_line

    def counting(table, y):
        drawn.append(y)
        return draw(table, y)

    async with app.run_test(size=(120, 36)) as pilot:
        table = await _table_with_tags(app, pilot)
        await pilot.pause()
        monkeypatch.setattr(LineTable, "render_line", counting)
        await pilot.press("down")
        await pilot.pause()
        assert table.cursor == 1
        assert sorted(set(drawn)) == [1, 2]  # rows 0 and 1 (line 0 is the header)
        drawn.clear()
        await pilot.press("pagedown")  # scrolls: every row line is drawn again
        await pilot.pause()
        assert len(set(drawn)) >= table.scrollable_content_region.height - 1
