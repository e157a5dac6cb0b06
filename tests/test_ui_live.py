"""The live brain in the TUI: CLEO (a real second process) writes while Pilot drives the app.

The watcher's thread is slowed to an hour (`BrainWatcher.interval`) and each poll is
driven from the test with `check_now()`, so nothing waits on wall-clock time.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.live import BrainWatcher
from cleo_tui.ui.widgets.chrome import SWEEP_MARK, BrainHeader
from cleo_tui.ui.widgets.detail import ObservationModal
from cleo_tui.ui.widgets.modals import ConfirmModal
from cleo_tui.ui.widgets.table import LineTable
from tests.ui_helpers import settle

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _slow_watcher(monkeypatch):
    monkeypatch.setattr(BrainWatcher, "interval", 3600.0)


def cleo_writes(path: Path, rows: int) -> None:
    """CLEO's stand-in (tests/cleo_writer.py) writes `rows` observations in its own process, to the end."""
    proc = subprocess.run([sys.executable, "-m", "tests.cleo_writer", str(path), str(rows)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0 and f"done {rows}" in proc.stdout, proc.stdout + proc.stderr


def poll(app: CleoApp):
    """One watcher step on the UI thread (the first call may only read the starting state)."""
    watcher = app.session.watcher
    assert watcher is not None
    return watcher.check_now()


def status(app: CleoApp) -> str:
    return str(app.screen.query_one("#status-line").render())


def screen_text(app: CleoApp) -> str:
    return "\n".join(s.text for s in app.screen._compositor.render_strips())


async def scrolled_table(app: CleoApp, pilot, *keys: str) -> LineTable:
    """The Observations table, focused, after the watcher's first read and `keys` pressed."""
    await settle(app, pilot)
    poll(app)
    table = app.screen.query_one("#obs-table", LineTable)
    table.focus()
    await pilot.press(*keys)
    await settle(app, pilot)
    return table


async def at_a_row_and_its_neighbour(app: CleoApp, pilot) -> tuple[LineTable, str, str]:
    """The Observations table scrolled to a row in its middle: (table, that row's id, the next row's id)."""
    table = await scrolled_table(app, pilot, "pagedown", "down", "down")
    return table, table.current_row()["id"], table.listing.cached_row(table.cursor + 1)["id"]


def cleo_deletes(path: Path, observation_id: str) -> None:
    """CLEO's consolidation deleting one row (another connection, as another process would)."""
    with sqlite3.connect(path, isolation_level=None) as conn:
        conn.execute("DELETE FROM brain_observations WHERE id = ?", (observation_id,))


def live_ids(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT id FROM brain_observations WHERE invalid_at IS NULL")}


@pytest.mark.parametrize("size", [(140, 40), (80, 24)])
async def test_new_rows_appear_at_the_top_when_following(brain, size):
    path = Path(brain.path).resolve()
    app = CleoApp(brain=brain)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        poll(app)  # the starting state (if the thread has not read it yet)
        table = app.screen.query_one("#obs-table", LineTable)
        before = table.total
        cleo_writes(path, 4)
        result = poll(app)
        assert result is not None and len(result.new_ids) == 4
        await settle(app, pilot)
        assert table.total == before + 4
        assert table.cursor == 0 and table.current_row()["id"].startswith("O-cleo")
        assert "new (n jumps there)" not in status(app)
        assert app.session.tags is not None and all(i in app.session.tags for i in result.new_ids)
        assert app.session.summary["observations"]["live"] == len(live_ids(path))


async def test_not_at_the_top_a_new_mark_keeps_the_cursor_and_n_jumps(brain):
    path = Path(brain.path).resolve()
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        poll(app)
        table = app.screen.query_one("#obs-table", LineTable)
        table.focus()
        for _ in range(5):
            await pilot.press("down")
        await settle(app, pilot)
        here = table.current_row()["id"]
        cleo_writes(path, 3)
        poll(app)
        await settle(app, pilot)
        assert "3 new (n jumps there)" in status(app)
        assert table.current_row()["id"] == here and table.cursor == 8  # the same row, 3 rows lower
        await pilot.press("n")
        await settle(app, pilot)
        assert table.cursor == 0 and table.current_row()["id"].startswith("O-cleo")
        assert "new (n jumps there)" not in status(app)


async def watched_prune_pane(app, pilot):
    """The Prune pane, opened once the watcher has read the brain's starting state."""
    await settle(app, pilot)
    poll(app)
    await pilot.press("2")
    await settle(app, pilot)
    return app.screen


async def test_a_prune_preview_folds_cleos_rows_and_the_commit_evicts_what_was_shown(brain):
    path = Path(brain.path).resolve()
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        pane = await watched_prune_pane(app, pilot)
        first = pane.pool
        cleo_writes(path, 5)
        poll(app)
        await settle(app, pilot)
        assert pane.pool is not first and len(pane.pool) == len(first) + 5
        shown = str(pane.query_one("#prune-status").render())
        assert "5 new observations since this preview, +" in shown
        assert pane.live_tokens > 0
        preview = pane.preview
        dropped = set(preview.dropped_ids)
        live_before = live_ids(path)
        await pilot.press("c")
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("y")
        await settle(app, pilot)
        evicted = live_before - live_ids(path)
        assert evicted == dropped  # exactly the rows of the preview on screen


async def test_a_prune_preview_says_which_of_its_rows_cleo_evicted_or_deleted(brain):
    path = Path(brain.path).resolve()
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await watched_prune_pane(app, pilot)
        evicted, deleted = pane.preview.dropped_ids[:2]
        conn = sqlite3.connect(path, isolation_level=None)  # CLEO's own connection: evicts one, deletes one
        conn.execute("UPDATE brain_observations SET invalid_at = datetime('now') WHERE id = ?", (evicted,))
        conn.execute("DELETE FROM brain_observations WHERE id = ?", (deleted,))
        conn.close()
        poll(app)
        await settle(app, pilot)
        shown = str(pane.query_one("#prune-status").render())
        assert "2 rows of this preview changed since (1 evicted and 1 deleted by CLEO)" in shown
        assert "2 of them in the dropped list" in shown  # a commit leaves them alone (test_pruner)
        status = pane.query_one("#prune-status")
        assert status.content_size.height * status.content_size.width >= len(shown)  # wrapped, not cut off


async def test_the_sweep_gate_shows_in_the_header_and_refuses_writes(brain):
    path = Path(brain.path).resolve()
    gate = path.parent / "sentient-state.json"
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        poll(app)
        gate.write_text(json.dumps({"sweepGateActive": True, "sweepRunId": "sw-1"}))
        poll(app)
        await settle(app, pilot)
        header = str(app.screen.query_one(BrainHeader).render())
        assert SWEEP_MARK in header
        table = app.screen.query_one("#obs-table", LineTable)
        table.focus()
        target = table.current_row()["id"]
        await pilot.press("e")
        await settle(app, pilot)
        assert not isinstance(app.screen, ConfirmModal)  # refused before asking
        assert any("CLEO is sweeping" in n.message for n in app._notifications)
        assert target in live_ids(path)
        gate.write_text(json.dumps({"sweepGateActive": False}))
        poll(app)
        await settle(app, pilot)
        assert SWEEP_MARK not in str(app.screen.query_one(BrainHeader).render())


async def test_rows_deleted_under_the_app_are_skipped_and_said_gone(brain):
    path = Path(brain.path).resolve()
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        poll(app)
        pane = app.screen
        table = pane.query_one("#obs-table", LineTable)
        gone = [table.listing.cached_row(i)["id"] for i in range(3)]
        before = table.total
        conn = sqlite3.connect(path, isolation_level=None)  # CLEO's consolidation hard-deletes
        conn.execute(f"DELETE FROM brain_observations WHERE id IN ({','.join('?' * len(gone))})", gone)
        conn.close()
        result = poll(app)
        assert result is not None and result.deleted == 3
        await settle(app, pilot)
        assert app.session.last_live is result
        assert table.total == before - 3
        assert not {table.listing.cached_row(i)["id"] for i in range(10)} & set(gone)
        app.open_observation(gone[0])
        await settle(app, pilot)
        assert isinstance(app.screen, ObservationModal)
        assert "is not in this brain" in screen_text(app)
        await pilot.press("escape")
        await settle(app, pilot)
        pane.post_message(pane.DetailLoaded(None, gone[1]))  # a detail read after the row went
        await settle(app, pilot)
        assert "is gone" in screen_text(app)


async def evict_first_row(app: CleoApp, pilot) -> None:
    """cleo-tui's own write, after the watcher has read the starting state: the first row evicted."""
    await settle(app, pilot)
    poll(app)
    app.screen.query_one("#obs-table", LineTable).focus()
    await pilot.press("e", "y")
    await settle(app, pilot)


async def test_own_writes_are_not_reported_as_cleos(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        await evict_first_row(app, pilot)
        result = poll(app)
        assert result is not None and result.changed  # the file did change...
        assert app.session.last_live is None  # ...but by cleo-tui itself: no external change


async def test_own_writes_are_not_reported_when_a_worker_held_the_brain_as_the_session_started(brain,
                                                                                               monkeypatch):
    """Issue 29.17: under load the session's start found the brain busy (the first rows being read),
    so it never learned its own data_version, and its first own write was taken for CLEO's.
    The race made certain: the brain is held while the session starts watching."""
    from cleo_tui.ui.session import BrainSession
    start_live = BrainSession.start_live

    def start_while_held(self) -> None:
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with self.brain.lock:
                held.set()
                release.wait()
        worker = threading.Thread(target=hold)
        worker.start()
        held.wait()
        try:
            start_live(self)
        finally:
            release.set()
            worker.join()
    monkeypatch.setattr(BrainSession, "start_live", start_while_held)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        await evict_first_row(app, pilot)
        result = poll(app)
        assert result is not None and result.changed
        assert app.session.last_live is None


async def test_own_writes_are_not_reported_while_a_worker_holds_the_brain(brain):
    """The watcher's report can come while a worker reads the brain (the tags after a write): the
    session cannot read its own connection then, and must not take the write for CLEO's."""
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        await evict_first_row(app, pilot)
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with app.session.brain.lock:
                held.set()
                release.wait()
        worker = threading.Thread(target=hold)
        worker.start()
        held.wait()
        try:
            result = poll(app)
        finally:
            release.set()
            worker.join()
        assert result is not None and result.changed
        assert app.session.unjudged is result  # not yet told: the brain was busy
        for _ in range(100):  # the session asks its connection again once the lock is free: await it, bounded
            if app.session.unjudged is None:
                break
            await pilot.pause(0.02)
        assert app.session.unjudged is None
        assert app.session.last_live is None


async def test_waiting_for_cleos_write_lock_is_shown_and_esc_cancels_in_observations_prune_and_traces(brain):
    """One app, three writes that wait for CLEO's lock, each cancelled with Esc: an eviction in the
    Observations pane, a prune commit, a trace outcome (it goes through the session's one write path,
    issue 30). Nothing is written, even after the lock is freed."""
    from cleo_tui.brain.migrations import TRACE_OUTCOMES
    from cleo_tui.ui.panes.prune import PruneScreen
    from cleo_tui.ui.panes.traces import TracesScreen
    path = Path(brain.path).resolve()
    outcomes_before = brain.scalar(f"SELECT count(*) FROM {TRACE_OUTCOMES}")
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one("#obs-table", LineTable)
        table.focus()
        target = table.current_row()["id"]
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # CLEO holds the write lock
        try:
            await pilot.press("e", "y")
            for _ in range(200):  # the notice comes after ~1 s of waiting: await it, bounded
                if app.waiting:
                    break
                await pilot.pause(0.05)
            assert app.waiting == "waiting for CLEO's write lock…"
            assert "waiting for CLEO's write lock" in str(app.screen.query_one(BrainHeader).render())
            await pilot.press("escape")
            await settle(app, pilot)
            assert app.waiting is None
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        await settle(app, pilot)
        assert target in live_ids(path)  # cancelled: nothing written, even after the lock freed

        # A prune commit waits for CLEO's lock too.
        await pilot.press("2")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, PruneScreen) and screen.preview is not None and screen.preview.drop_count
        before = live_ids(path)
        await _confirm_then_cancel_while_cleo_holds_the_lock(app, pilot, path, "c")
        assert live_ids(path) == before  # cancelled: nothing evicted, even after the lock freed
        assert not screen.runs or screen.runs[0].kind != "prune"

        # And a trace outcome.
        await pilot.press("4")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, TracesScreen) and screen.selected_result() is not None
        await _confirm_then_cancel_while_cleo_holds_the_lock(app, pilot, path, "plus")
        assert not screen.session.undo_stack  # no run recorded
    assert brain.scalar(f"SELECT count(*) FROM {TRACE_OUTCOMES}") == outcomes_before  # cancelled: nothing written


async def _await_waiting(app: CleoApp, pilot) -> None:
    """The notice comes after ~1 s of waiting: await it, bounded."""
    for _ in range(200):
        if app.waiting:
            break
        await pilot.pause(0.05)
    assert app.waiting == "waiting for CLEO's write lock…"
    assert "waiting for CLEO's write lock" in str(app.screen.query_one(BrainHeader).render())


async def _confirm_then_cancel_while_cleo_holds_the_lock(app, pilot, path: Path, key: str) -> None:
    """With CLEO holding the write lock: `key` and y confirm a write, the header says it waits,
    Esc cancels it; then the lock is freed and the app settles."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # CLEO holds the write lock
    try:
        await pilot.press(key)
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("y")
        await _await_waiting(app, pilot)
        await pilot.press("escape")
        await pilot.pause()
        assert app.waiting is None
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    await settle(app, pilot)


async def test_a_review_apply_waits_for_cleos_lock_says_so_and_esc_cancels(brain, monkeypatch):
    from cleo_tui.llm.proposals import get_proposal
    from tests.test_ui_review import open_review, select_proposal, two_reflections
    first, _second = two_reflections(brain, monkeypatch)
    path = Path(brain.path).resolve()
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await open_review(app, pilot)
        await select_proposal(screen, app, pilot, first.id)
        await _confirm_then_cancel_while_cleo_holds_the_lock(app, pilot, path, "s")
    assert get_proposal(brain, first.id).status == "pending"  # nothing applied


async def test_a_duplicates_merge_waits_for_cleos_lock_says_so_and_esc_cancels(tmp_path, monkeypatch):
    from cleo_tui.brain import open_brain
    from cleo_tui.ui.panes.duplicates import DuplicatesScreen
    from tests.test_ui_duplicates import move_to_cluster, plant
    monkeypatch.chdir(tmp_path)
    plant(tmp_path)
    path = (tmp_path / ".cleo" / "cleo.db").resolve()
    before = live_ids(path)
    app = CleoApp(brain=open_brain(path))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("5")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, DuplicatesScreen) and screen.clusters
        move_to_cluster(screen, "O-uv0")
        await pilot.pause()
        await _confirm_then_cancel_while_cleo_holds_the_lock(app, pilot, path, "m")
        assert live_ids(path) == before  # cancelled: nothing evicted, even after the lock freed
        assert not screen.session.undo_stack  # and no run recorded
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM brain_page_edges WHERE edge_type = 'supersedes'").fetchone()[0] == 0


async def test_the_cursor_and_view_stay_on_their_row_while_cleo_writes_and_its_loss_is_said(brain):
    """Scrolled down, newest first: CLEO inserts rows on top and deletes one above the cursor; the
    cursor, the detail and the row's line in the view stay on the same observation. When CLEO deletes
    that row, the app says so, selects nothing, and `e` evicts nothing."""
    from tests.brain_fixtures import insert_observations
    path = Path(brain.path).resolve()
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        table = await scrolled_table(app, pilot, "pagedown", "pagedown", "down", "down")
        pane = app.screen
        here = table.current_row()["id"]
        top = int(table.scroll_offset.y)
        line = table.cursor - top
        assert top > 0 and pane.detail.row["id"] == here
        above = table.listing.cached_row(3)["id"]
        insert_observations(path, [{"id": f"O-new{i}", "type": "change", "title": f"new {i}",
                                    "narrative": "n", "created_at": "2099-01-01 00:00:0" + str(i)} for i in range(4)])
        with sqlite3.connect(path, isolation_level=None) as conn:
            conn.execute("DELETE FROM brain_observations WHERE id = ?", (above,))
        poll(app)
        await settle(app, pilot)
        assert table.current_row()["id"] == here and pane.detail.row["id"] == here
        assert table.cursor - int(table.scroll_offset.y) == line and int(table.scroll_offset.y) == top + 3
        assert table.cursor == top + line + 3  # four rows arrived above it, one went
        cleo_deletes(path, here)
        before = live_ids(path)
        poll(app)
        await settle(app, pilot)
        assert table.current_row() is None and table.gone is not None and table.gone.row_id == here
        assert any(here in n.message and "left this list" in n.message for n in app._notifications)
        assert f"{here} is gone from this list: it was deleted" in screen_text(app)
        await pilot.press("e")
        await settle(app, pilot)
        assert not isinstance(app.screen, ConfirmModal) and live_ids(path) == before
        assert any(f"{here} left this list: nothing is selected" in n.message for n in app._notifications)
        await pilot.press("down")  # the row that took its place is selected again
        await settle(app, pilot)
        assert table.current_row() is not None and table.cursor == top + line + 3


async def test_after_its_row_is_deleted_the_view_stays_on_its_rows_while_cleo_writes(brain):
    """The cursor's row deleted by CLEO: nothing is selected, and as CLEO goes on writing above, the rows
    in view stay where they are (they scrolled down under the user, the count of new ones growing);
    down then selects the row that took the deleted one's place."""
    from tests.brain_fixtures import insert_observations
    path = Path(brain.path).resolve()
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        table, here, following = await at_a_row_and_its_neighbour(app, pilot)
        cleo_deletes(path, here)
        poll(app)
        await settle(app, pilot)
        assert table.gone is not None and table.gone.row_id == here
        top = int(table.scroll_offset.y)
        in_view = [table.listing.cached_row(i)["id"] for i in range(top, top + 5)]
        insert_observations(path, [{"id": f"O-later{i}", "type": "change", "title": f"later {i}",
                                    "narrative": "n", "created_at": "2099-02-01 00:00:0" + str(i)} for i in range(4)])
        poll(app)
        await settle(app, pilot)
        now = int(table.scroll_offset.y)
        assert now == top + 4 and [table.listing.cached_row(i)["id"] for i in range(now, now + 5)] == in_view
        assert table.gone is not None and table.current_row() is None  # still nothing selected
        await pilot.press("down")
        await settle(app, pilot)
        assert table.current_row()["id"] == following


async def test_a_row_deleted_while_cleo_writes_above_leaves_the_cursor_on_its_neighbour(brain):
    """CLEO deletes the cursor's row and writes rows above it in the same moment (one poll): nothing is
    selected, the view stays on its rows, and down selects the row that took the deleted one's place, not
    one of those above it (the place was kept by index, off by the rows written)."""
    from tests.brain_fixtures import insert_observations
    path = Path(brain.path).resolve()
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        table, here, following = await at_a_row_and_its_neighbour(app, pilot)
        line = table.cursor - int(table.scroll_offset.y)
        cleo_deletes(path, here)
        insert_observations(path, [{"id": f"O-same{i}", "type": "change", "title": f"same {i}",
                                    "narrative": "n", "created_at": "2099-03-01 00:00:0" + str(i)} for i in range(3)])
        poll(app)
        await settle(app, pilot)
        assert table.gone is not None and table.gone.row_id == here and table.current_row() is None
        assert table.listing.cached_row(table.cursor)["id"] == following
        assert table.cursor - int(table.scroll_offset.y) == line  # on the deleted row's line
        await pilot.press("down")
        await settle(app, pilot)
        assert table.current_row()["id"] == following


async def test_cleos_first_retrieval_opens_in_an_empty_traces_pane_at_the_lists_width(tmp_path, monkeypatch):
    """The Traces pane had nothing open (its detail hidden); CLEO logged a find: the retrieval opened
    with its title cut to 16 cells ("The deploy scri…"), filled before the detail had its width."""
    from textual.widgets import OptionList

    from cleo_tui.brain import open_brain
    from cleo_tui.ui.panes.traces import TracesScreen
    from tests.brain_fixtures import add_cleo_recall_logs, insert_observations, make_cleo_consolidated

    monkeypatch.chdir(tmp_path)
    db = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    title = "The deploy script runs from the root of the repository"
    insert_observations(db, [{"id": "O-0", "type": "discovery", "title": title, "narrative": title,
                              "created_at": "2026-03-01 10:00:00", "source_type": "agent"}])
    brain = open_brain(db)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        poll(app)
        await pilot.press("4")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, TracesScreen) and not screen.query_one("#trace-detail").display
        add_cleo_recall_logs(db, [{"query": "deploy script", "entry_ids": ["O-0"],
                                   "created_at": "2026-05-01 10:00:00"}])
        poll(app)
        app.session.reload()  # (a second reading in the same moment, as a real terminal's app may make)
        await settle(app, pilot)
        results = screen.query_one("#trace-results", OptionList)
        assert results.option_count == 1 and title[:36] in str(results.get_option_at_index(0).prompt)
    brain.close()
