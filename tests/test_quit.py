"""Quitting: the process ends at once, however long a read was under way, and never before a
write or an export the user chose is done (or its wait for CLEO's lock cancelled)."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from cleo_tui.brain.cleo_schema import OBSERVATIONS
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.widgets.table import LineTable
from tests.test_ui_duplicates import open_pane
from tests.test_ui_live import _await_waiting, live_ids
from tests.ui_helpers import settle

# A read that never ends on its own: SQLite counts for ever.
ENDLESS = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"


def _endless_read(reader, outcome: dict) -> None:
    """Run ENDLESS on `reader`, noting how it ended in `outcome`."""
    outcome["started"].set()
    try:
        reader.query(ENDLESS)
    except sqlite3.Error as exc:
        outcome["error"] = exc
    finally:
        outcome["ended"].set()


def test_stopping_a_brains_reads_ends_its_readers_queries_and_leaves_its_own_connection_alone(brain):
    reader = brain.reader()
    outcome: dict = {"started": threading.Event(), "ended": threading.Event()}
    thread = threading.Thread(target=_endless_read, args=(reader, outcome), daemon=True)
    thread.start()
    assert outcome["started"].wait(30)
    brain.stop_reads()
    thread.join(30)
    alive = thread.is_alive()
    if alive:
        reader.conn.interrupt()  # (so that a failure does not hang the run)
        thread.join()
    assert not alive, "a reader's query went on after the brain's reads were stopped"
    assert "interrupted" in str(outcome["error"])
    reader.close()

    # A reader made afterwards is stopped too (a worker that starts late at quit).
    late = brain.reader()
    try:
        late.query(ENDLESS)
    except sqlite3.OperationalError as exc:
        assert "interrupted" in str(exc)
    else:
        raise AssertionError("a late reader's query ran")
    finally:
        late.close()

    # The brain's own connection (page reads, every write) is not stopped.
    first = brain.scalar(f"SELECT id FROM {OBSERVATIONS} ORDER BY rowid LIMIT 1")
    with brain.write() as conn:
        conn.execute(f"UPDATE {OBSERVATIONS} SET title = title || '!' WHERE id = ?", (first,))
    assert brain.scalar(f"SELECT title FROM {OBSERVATIONS} WHERE id = ?", (first,)).endswith("!")


async def test_quitting_ends_a_long_read_in_a_worker_at_once(brain):
    """A pane's worker reading the whole of a large brain (History's days, the duplicate scan)
    must not keep the process alive after q: the asyncio runner waits for every worker thread."""
    app = CleoApp(brain=brain)
    outcome: dict = {"started": threading.Event(), "ended": threading.Event()}
    reader = None
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(app, pilot)
            reader = app.session.brain.reader()
            app.run_worker(lambda: _endless_read(reader, outcome), thread=True, exit_on_error=False)
            await _until(pilot, outcome["started"].is_set)
            await pilot.press("q")
        assert outcome["ended"].wait(30), "the read went on after the app quit"
        assert "interrupted" in str(outcome["error"])
    finally:
        if reader is not None:
            reader.conn.interrupt()  # (so that a failure does not hang the run's teardown)
    assert app.return_code == 0


async def test_leaving_the_duplicates_pane_for_good_cancels_its_scan(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await open_pane(app, pilot)
        screen.rescan()
        cancel = screen._cancel
        assert not cancel.is_set()
        await pilot.press("q")
    assert cancel.is_set()  # its verify stage (numpy, no SQL) checks this between batches


async def _quit_while_an_eviction_waits_for_cleo(app: CleoApp, pilot, holder: sqlite3.Connection) -> str:
    """With `holder` holding CLEO's write lock: confirm an eviction, await the wait's notice, press q:
    the app is still there. The row evicted is returned."""
    await settle(app, pilot)
    table = app.screen.query_one("#obs-table", LineTable)
    table.focus()
    target = table.current_row()["id"]
    holder.execute("BEGIN IMMEDIATE")
    await pilot.press("e", "y")
    await _await_waiting(app, pilot)
    await pilot.press("q")
    await pilot.pause()
    assert app.return_code is None, "the app quit before the eviction the user chose was written"
    return target


async def _until(pilot, done) -> None:
    """Let the app run until `done()` (bounded: about 10 s)."""
    for _ in range(200):
        if done():
            return
        await pilot.pause(0.05)
    raise AssertionError("the app did not get there")


@pytest.fixture
def holder(brain):
    """A second connection to the brain, as CLEO's: the tests take its write lock."""
    connection = sqlite3.connect(Path(brain.path).resolve(), isolation_level=None)
    yield connection
    connection.close()


def _notices(app: CleoApp) -> str:
    return " | ".join(str(n.message) for n in app._notifications)


async def test_quitting_during_a_chosen_write_finishes_it_first_and_says_so(brain, holder):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(100, 30)) as pilot:
        target = await _quit_while_an_eviction_waits_for_cleo(app, pilot, holder)
        assert "Quitting once this is done: evict " in _notices(app) and "esc cancels" in _notices(app)
        holder.execute("ROLLBACK")  # CLEO lets go: the eviction is written, then the app quits
        await _until(pilot, lambda: app.return_code is not None)
        assert app.return_code == 0
    assert target not in live_ids(Path(brain.path).resolve())


async def test_quitting_while_a_write_waits_for_cleo_then_esc_quits_and_writes_nothing(brain, holder):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(100, 30)) as pilot:
        target = await _quit_while_an_eviction_waits_for_cleo(app, pilot, holder)
        await pilot.press("escape")
        await _until(pilot, lambda: app.return_code is not None)
        assert app.return_code == 0
    holder.execute("ROLLBACK")
    assert target in live_ids(Path(brain.path).resolve())


async def test_a_chosen_write_that_fails_while_quitting_cancels_the_quit_and_says_why(brain, holder):
    """The user must read why their write failed: the app stays, with the failure's popup."""
    from cleo_tui.ui.widgets.modals import MessageModal
    path = Path(brain.path).resolve()
    app = CleoApp(brain=brain)
    async with app.run_test(size=(100, 30)) as pilot:
        await _quit_while_an_eviction_waits_for_cleo(app, pilot, holder)
        path.with_name("copy.db").write_bytes(path.read_bytes())
        path.with_name("copy.db").replace(path)  # the brain is replaced under the app: the write refuses
        holder.execute("ROLLBACK")
        await _until(pilot, lambda: isinstance(app.screen, MessageModal))
        assert app.return_code is None
        assert "failed, so cleo-tui did not quit" in _notices(app)
        assert "replaced" in app.screen.body


async def test_quitting_during_an_export_waits_for_its_file(brain, tmp_path, monkeypatch):
    """An export the user chose is written before the app quits (the export is held until the
    notice is seen, then let go)."""
    from textual.widgets import Input

    from cleo_tui.ui.panes import prune_actions
    from tests.test_ui_prune import open_prune
    go = threading.Event()
    write_export = prune_actions.write_export

    def held_export(*args, **kwargs):
        go.wait(30)
        write_export(*args, **kwargs)

    monkeypatch.setattr(prune_actions, "write_export", held_export)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await open_prune(app, pilot)
        await pilot.press("x")
        await pilot.pause()
        app.screen.query_one("#path-input", Input).value = "preview.json"
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code is None, "the app quit before the export the user chose was written"
        assert "Quitting once this is done: export to " in _notices(app)
        go.set()
        await _until(pilot, lambda: app.return_code is not None)
    assert json.loads((tmp_path / "preview.json").read_text())["budget"]
