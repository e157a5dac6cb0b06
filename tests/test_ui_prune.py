"""Pilot tests of the Prune pane on a demo brain: budget, lists, commit, undo, stale, read-only, export."""

from __future__ import annotations

import json
import sqlite3

from textual.widgets import Input, Select, Static

from cleo_tui.memory.budget import budget_text, default_budget, nice_step, stepped
from cleo_tui.memory.pruner import PoolEntry, build_pool
from cleo_tui.memory.tokenizers import get_tokenizer
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.panes.prune import PruneScreen
from cleo_tui.ui.widgets.budget_bar import BarFigures, bar_cells
from cleo_tui.ui.widgets.detail import ObservationModal
from cleo_tui.ui.widgets.list_listing import ListListing
from cleo_tui.ui.widgets.modals import ConfirmModal, MessageModal
from cleo_tui.ui.widgets.path_prompt import PathPrompt
from cleo_tui.ui.widgets.prune_chart import chart_budgets, spark
from cleo_tui.ui.widgets.table import LineTable
from tests.ui_helpers import demo_brain, settle


async def open_prune(app, pilot) -> PruneScreen:
    await settle(app, pilot)
    await pilot.press("2")
    await settle(app, pilot)
    screen = app.screen
    assert isinstance(screen, PruneScreen) and screen.pool is not None
    return screen


def listed_ids(table: LineTable) -> list[str]:
    return [table.listing.cached_row(i)["id"] for i in range(table.total)]


def live_ids(brain) -> set[str]:
    return {r[0] for r in brain.query("SELECT id FROM brain_observations WHERE invalid_at IS NULL")}


async def type_budget(screen: PruneScreen, pilot, text: str) -> None:
    await pilot.press("b")
    box = screen.query_one("#prune-budget", Input)
    box.value = ""
    await pilot.press(*text)
    await pilot.pause()


# -- pure helpers ------------------------------------------------------------------------


def test_steps_and_default_budget_are_round_numbers():
    assert nice_step(149_925, 0.01) == 1_000 and nice_step(149_925, 0.10) == 10_000
    assert nice_step(3, 0.01) == 1
    assert stepped(150_000, 1_000, 1) == 151_000 and stepped(150_500, 1_000, -1) == 150_000
    assert stepped(1, 1_000, -1) == 1
    assert default_budget(149_925) == 150_000 and default_budget(42) == 42
    assert budget_text(12_000) == "12k" and budget_text(12_345) == "12345"


def test_bar_cells_split_the_pool_and_chart_spans_past_no_drop():
    figures = BarFigures(budget=100, target=80, protected_tokens=20, kept_tokens=40, dropped_tokens=40)
    cells = bar_cells(figures, 10)
    assert cells == ["protected"] * 2 + ["kept"] * 4 + ["dropped"] * 4
    assert bar_cells(BarFigures(200, 160, 0, 100, 0), 10).count("free") == 5
    budgets = chart_budgets(800, 10)
    assert budgets[-1] >= 1000 and budgets == sorted(budgets)
    assert spark([0, 5, 10]) == " ▄█"


def test_list_listing_is_a_window_built_lazily():
    made = []
    listing = ListListing(list(range(1000)), lambda i, item: made.append(i) or {"id": str(item)}, 10, 20)
    assert listing.count() == 10
    assert listing.cached_row(0)["id"] == "10" and listing.cached_row(10) is None
    assert made == [10]  # only the row asked for was built
    assert len(listing.page(0)) == 10


# -- the pane ------------------------------------------------------------------------------


async def test_budget_changes_update_the_lists_and_rows_open(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_prune(app, pilot)
        pool = screen.pool
        dropped, kept = screen.table("dropped"), screen.table("kept")
        assert screen.budget == default_budget(pool.tokens_before)
        assert listed_ids(dropped) == screen.preview.dropped_ids

        await type_budget(screen, pilot, f"{pool.tokens_before * 2}")
        assert dropped.total == 0
        protected = pool.tokens_after_dropping(len(pool.droppable))
        middle = int((protected + (pool.tokens_before - protected) / 2) / 0.8)
        await type_budget(screen, pilot, f"{middle}")
        assert screen.budget == middle and screen.preview.budget == middle
        assert 0 < dropped.total == screen.preview.drop_count < len(pool.droppable)
        assert not screen.preview.fell_back
        assert listed_ids(dropped) == [e.id for e in pool.droppable[:dropped.total]]
        await pilot.press("enter", "l", "l")  # leave the budget box; on to the Kept list
        assert screen.current_list() == "kept" and app.focused is kept
        assert listed_ids(kept) == [e.id for e in pool.droppable[dropped.total:]]
        await pilot.press("l", "l")  # back to Dropped
        summary = str(screen.query_one("#prune-summary", Static).render())
        assert f"target {screen.preview.target:,}" in summary

        await type_budget(screen, pilot, "1k")
        assert screen.budget == 1000 and screen.preview.fell_back
        summary = str(screen.query_one("#prune-summary", Static).render())
        assert "FELL BACK" in summary and "In the way" in summary
        biggest = max(pool.protected, key=lambda e: e.units)
        assert biggest.id in summary

        dropped.focus()
        step = nice_step(pool.tokens_before, 0.01)
        await pilot.press("plus")
        assert screen.budget == 1000 + step
        await pilot.press("right_square_bracket")
        assert screen.budget == stepped(1000 + step, nice_step(pool.tokens_before, 0.10), 1)
        await pilot.press("minus")
        assert screen.query_one("#prune-budget", Input).value == budget_text(screen.budget)
        await settle(app, pilot)
        assert screen.pool is pool  # budget changes never prepare the pool again

        await type_budget(screen, pilot, "9x")
        box = screen.query_one("#prune-budget", Input)
        assert box.has_class("bad-budget") and screen.budget == 9  # the last budget that parsed
        assert "positive whole number" in str(screen.query_one("#prune-status", Static).render())

        first = screen.preview.dropped_ids[0]
        dropped.focus()
        await pilot.press("home", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, ObservationModal) and app.screen.observation_id == first


async def test_commit_evicts_and_undo_restores(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_prune(app, pilot)
        ids = set(screen.preview.dropped_ids)
        assert ids and ids <= live_ids(brain)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        assert f"Soft-evict {len(ids):,} observations" in app.screen.body and "undone" in app.screen.body
        await pilot.press("y")
        await settle(app, pilot)
        assert not ids & live_ids(brain)
        assert screen.runs and screen.runs[0].kind == "prune"
        assert set(screen.runs[0].params["ids"]) == ids
        assert screen.preview.drop_count == 0  # the pool was prepared again without those rows

        await pilot.press("l", "l", "l")  # to Runs
        assert screen.current_list() == "runs"
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal) and f"run {screen.runs[0].id}" in app.screen.body
        await pilot.press("y")
        await settle(app, pilot)
        assert ids <= live_ids(brain)
        assert screen.runs[0].undone_by is not None
        assert screen.preview.drop_count == len(ids)


async def test_a_changed_pool_commits_exactly_the_previewed_rows_still_unchanged(brain, tmp_path):
    """Issue 15 item 3: no refusal; CLEO's new row stays live, a previewed row CLEO edited is skipped."""
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_prune(app, pilot)
        live_before = live_ids(brain)
        dropped = [e.id for e in screen.preview.dropped]
        assert len(dropped) >= 2
        edited = dropped[0]
        other = sqlite3.connect(tmp_path / ".cleo" / "cleo.db")  # CLEO writing meanwhile
        other.execute("INSERT INTO brain_observations(id, type, title, narrative, created_at) "
                      "VALUES ('O-late', 'discovery', 'late', 'written by CLEO meanwhile', '2026-06-01 00:00:00')")
        other.execute("UPDATE brain_observations SET narrative = narrative || ' Edited by CLEO after the "
                      "preview, with a good deal more text than before.' WHERE id = ?", (edited,))
        other.commit()
        other.close()
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        evicted = set(dropped) - {edited}
        assert live_ids(brain) == (live_before - evicted) | {"O-late"}
        assert not isinstance(app.screen, ConfirmModal)  # no "the pool changed" refusal
        assert brain.scalar("SELECT count(*) FROM cleo_tui_runs WHERE kind = 'prune'") == 1
        assert any(e.id == "O-late" for e in screen.pool.droppable + screen.pool.protected)  # prepared again


async def test_read_only_brain_disables_commit_and_undo(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    brain = demo_brain(tmp_path, read_only=True)
    app = CleoApp(brain=brain)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await open_prune(app, pilot)
            assert screen.preview.drop_count > 0
            live_before = live_ids(brain)
            assert screen.check_action("commit", ()) is None and screen.check_action("undo_run", ()) is None
            await pilot.press("c")
            await pilot.press("u")
            await settle(app, pilot)
            assert app.screen is screen  # no confirmation was offered
            assert live_ids(brain) == live_before
            status = str(screen.query_one("#prune-status", Static).render())
            assert "read-only" in status and "commit and undo are disabled" in status
    finally:
        brain.close()


async def test_export_writes_the_cli_json(brain, tmp_path):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_prune(app, pilot)
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, PathPrompt)
        field = app.screen.query_one("#path-input", Input)
        assert field.value == f"cleo-prune-{screen.budget}-chars4.json"
        field.value = "out/preview.json"
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, MessageModal) and "could not be written" in app.screen.body
        await pilot.press("escape")

        (tmp_path / "out").mkdir()
        await pilot.press("x")
        await pilot.pause()
        app.screen.query_one("#path-input", Input).value = "out/preview.json"
        await pilot.press("enter")
        await settle(app, pilot)
        document = json.loads((tmp_path / "out" / "preview.json").read_text())
        assert document == json.loads(json.dumps(screen.preview.to_json()))
        assert set(document) >= {"budget", "target", "tokenizer", "tokens_before", "tokens_after", "fell_back",
                                 "dropped", "protected", "kept", "run_id"}
        status = str(screen.query_one("#prune-status", Static).render())
        assert str(tmp_path / "out" / "preview.json") in status


async def test_tokenizer_and_scope_prepare_a_new_pool(brain):
    app = CleoApp(brain=brain)
    app.settings["tokenizer"] = "cl100k_base"  # the config file's default tokenizer
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_prune(app, pilot)
        assert screen.pool.tokenizer.name == "cl100k_base"
        assert screen.query_one("#prune-tokenizer", Select).value == "cl100k_base"
        first, budget = screen.pool, screen.budget
        await pilot.press("t")  # cl100k_base → chars4
        await settle(app, pilot)
        assert screen.pool is not first and screen.pool.tokenizer.name == "chars4"
        assert screen.budget == budget and screen.preview.tokenizer == "chars4"
        assert screen.pool.tokens_before != first.tokens_before

        session, count = brain.query(
            "SELECT source_session_id, COUNT(*) FROM brain_observations WHERE invalid_at IS NULL "
            "AND source_session_id IS NOT NULL GROUP BY 1 ORDER BY 2 DESC LIMIT 1")[0]
        screen.query_one("#prune-scope", Select).value = session
        await settle(app, pilot)
        assert screen.pool.session == session and len(screen.pool) == count


def test_per_budget_work_is_bounded_by_visible_rows():
    """At 100,000 rows a budget change builds only the rows on screen (ListListing windows)."""
    tokenizer = get_tokenizer("chars4")
    entries = [PoolEntry(f"O-{i}", i, f"2026-01-01 00:{i % 60:02d}:00", "uncited", 0, "medium", "the default", 40)
               for i in range(100_000)]
    pool = build_pool(entries, tokenizer)
    made = []
    preview = pool.preview(pool.tokens_before // 2)
    listing = ListListing(pool.droppable, lambda i, e: made.append(i) or {"id": e.id}, 0, preview.drop_count)
    assert listing.count() == preview.drop_count > 40_000
    rows = [listing.cached_row(i) for i in range(30)]
    assert len(made) == 30 and rows[0]["id"] == pool.droppable[0].id
