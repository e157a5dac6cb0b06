"""Concurrency inside cleo-tui: one thread at a time on a brain's connection, every statement under `Brain.lock`.

Why: the TUI's workers (detail, liveness, filter options) share the session's connection, and
`Brain.close` (at quit, or when another brain is opened) takes the lock before it closes the
connection. A statement run without the lock could be inside SQLite while another thread
closes the connection under it: Python's sqlite3 then reads freed memory and the process
dies of a segmentation fault (seen in the suite: a detail worker's `PRAGMA table_info` racing
`close_brains`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from cleo_tui.brain import Brain, open_brain
from cleo_tui.ui.app import CleoApp
from tests.brain_fixtures import add_cleo_recall_logs, insert_observations, make_cleo_consolidated, observation
from tests.reliability_fixtures import record
from tests.ui_helpers import settle


def _unlocked_statements(brain: Brain) -> list[str]:
    """Start recording the statements `brain`'s connection runs while the running thread does not
    hold `brain.lock` (the trace callback runs on the thread that runs the statement)."""
    unlocked: list[str] = []

    def trace(sql: str) -> None:
        if not brain.lock._is_owned():  # (RLock's own "held by this thread", as Condition uses it)
            unlocked.append(sql)

    brain.conn.set_trace_callback(trace)
    return unlocked


def _brain(tmp_path: Path) -> Path:
    path = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    rows = [observation(i) for i in range(40)]
    insert_observations(path, rows)
    add_cleo_recall_logs(path, [{"query": "module", "entry_ids": [row["id"] for row in rows[:3]]}])  # Traces' rows
    return path


def test_a_brains_table_layout_is_read_under_its_lock(tmp_path):
    brain = open_brain(_brain(tmp_path))
    unlocked = _unlocked_statements(brain)
    try:
        assert brain.features.columns("brain_observations")  # read from the file, not from memory
        assert brain.features.has_column("brain_page_edges", "from_id")
        brain.features.fts  # noqa: B018 (a property that queries)
        brain.refresh()
        assert brain.features.columns("brain_decisions")
    finally:
        brain.close()
    assert unlocked == []


def test_a_tui_session_runs_every_statement_of_its_connection_under_the_lock(tmp_path):
    brain = open_brain(_brain(tmp_path))
    unlocked = _unlocked_statements(brain)

    async def run() -> None:
        app = CleoApp(brain=brain)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(app, pilot)
            # Details of several rows, then every pane and a row of each (their own workers), and back.
            for key in ("down", "down", "end", "home", *(k for pane in "234567" for k in (pane, "down")), "1"):
                await pilot.press(key)
                await settle(app, pilot)
            assert app.current_mode == "observations"
        app.close_brains()

    asyncio.run(run())
    assert unlocked == []
    record("concurrency", "the app's workers reading the session's brain while it is closed (quit, another brain "
                          "opened): every statement of a whole TUI session, all seven panes walked, traced",
           "every statement runs under the brain's lock, which closing takes too", "passed",
           fixed="a worker read the brain's table layout (PRAGMA table_info) without the lock, so closing the "
                 "connection under it crashed the process (a segmentation fault, 3 of ~105 stress runs of the "
                 "read-only tests)")
