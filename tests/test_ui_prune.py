"""Pilot tests of the Prune pane on a demo brain: budget, lists, commit, undo, stale, read-only, export."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from textual.widgets import Input, Static

from cleo_tui.memory.budget import budget_text, default_budget, nice_step, parse_budget, stepped
from cleo_tui.memory.cleo_effects import HIDDEN_QUALITY
from cleo_tui.memory.pruner import MAX_BUDGET, PoolEntry, build_pool
from cleo_tui.memory.tokenizers import get_tokenizer
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.panes.prune import ALL_SCOPE, PruneScreen
from cleo_tui.ui.widgets.budget_bar import BarFigures, BudgetBar, bar_cells
from cleo_tui.ui.widgets.choice_chip import ChoiceChip
from cleo_tui.ui.widgets.detail import ObservationModal
from cleo_tui.ui.widgets.list_listing import ListListing
from cleo_tui.ui.widgets.modals import ConfirmModal, MessageModal
from cleo_tui.ui.widgets.path_prompt import PathPrompt
from cleo_tui.ui.widgets.prune_chart import chart_budgets, spark
from cleo_tui.ui.widgets.prune_lists import CommitModal
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
    assert budget_text(35_000_000) == "35M" and budget_text(35_500_000) == "35500k"  # a real brain's default
    assert all(parse_budget(budget_text(b)) == b for b in (35_000_000, 35_500_000, 12_000, 7))


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

        before_edit = screen.budget
        await type_budget(screen, pilot, "9x")
        box = screen.query_one("#prune-budget", Input)
        assert box.has_class("bad-budget") and screen.budget == before_edit  # not "9", a keystroke's prefix
        assert "positive whole number" in str(screen.query_one("#prune-summary", Static).render())
        assert "positive whole number" not in str(screen.query_one("#prune-status", Static).render())  # once
        await type_budget(screen, pilot, "12k")

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
        assert isinstance(app.screen, MessageModal) and "evicted" in app.screen.body  # the commit's result
        await pilot.press("escape")
        await settle(app, pilot)

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


async def test_an_undo_after_cleo_deleted_some_rows_names_them(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_prune(app, pilot)
        ids = list(screen.preview.dropped_ids)
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        await pilot.press("escape")  # the commit's result
        gone = ids[:2]
        cleo = sqlite3.connect(brain.path)  # CLEO's consolidation hard-deletes two of them
        with cleo:
            cleo.executemany("DELETE FROM brain_observations WHERE id = ?", [(i,) for i in gone])
        cleo.close()

        await pilot.press("u")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        assert set(ids[2:]) <= live_ids(brain)
        assert isinstance(app.screen, MessageModal)
        assert f"{len(ids) - 2:,} observations restored" in app.screen.body
        assert all(i in app.screen.body for i in gone) and "Deleted since" in app.screen.body


def quality(brain, observation_id: str):
    return brain.scalar("SELECT quality_score FROM brain_observations WHERE id = ?", (observation_id,))


def notices(app) -> str:
    """The toasts raised so far (Textual keeps them on the app until they time out)."""
    return "\n".join(n.message for n in app._notifications)


async def test_an_invalid_budget_marks_the_preview_and_commit_is_refused(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_prune(app, pilot)
        live_before = live_ids(brain)
        valid = screen.budget
        for typed in ("1.2345k", "0.5", "abc", "2000000000000"):
            await type_budget(screen, pilot, typed)
            assert screen.budget == valid  # the budget from before the edit, not a keystroke's prefix
            status = str(screen.query_one("#prune-status", Static).render())
            assert screen.budget_error not in status  # said once, in the summary
            summary = str(screen.query_one("#prune-summary", Static).render())
            assert "INVALID BUDGET" in summary and screen.budget_error is not None
            # The bar and the lists say they show the last valid budget's figures, not the box's.
            assert "last valid budget" in str(screen.query_one("#prune-bar", BudgetBar).render())
            assert screen.query_one("#prune-lists").has_class("stale")
            too_large = typed == "2000000000000"  # the largest allowed budget is named only when it matters
            assert (f"{MAX_BUDGET:,}" in screen.budget_error) == too_large
            screen.table("dropped").focus()
            await pilot.press("c")
            await settle(app, pilot)
            assert app.screen is screen  # refused: no confirmation offered
            assert "Not committed" in notices(app) and screen.budget_error in notices(app)
            app.clear_notifications()
            assert live_ids(brain) == live_before
        await type_budget(screen, pilot, "2k")
        assert screen.budget_error is None
        assert "INVALID" not in str(screen.query_one("#prune-summary", Static).render())
        assert "last valid" not in str(screen.query_one("#prune-bar", BudgetBar).render())
        assert not screen.query_one("#prune-lists").has_class("stale")
        screen.table("dropped").focus()
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, CommitModal) and "at a budget of 2,000" in app.screen.body


async def test_commit_says_what_eviction_does_in_cleo_and_can_hide_from_its_search(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_prune(app, pilot)
        ids = screen.preview.dropped_ids
        before = {i: quality(brain, i) for i in ids}
        await pilot.press("c")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, CommitModal) and modal.danger
        assert "still return evicted rows" in modal.body and "tick the box below" in modal.body
        await pilot.press("h")  # opt in: also hide from CLEO's search
        await pilot.pause()
        assert modal.query_one("#commit-hide").value is True
        await pilot.press("y")
        await settle(app, pilot)
        assert not set(ids) & live_ids(brain)
        assert {quality(brain, i) for i in ids} == {HIDDEN_QUALITY}
        assert isinstance(app.screen, MessageModal) and f"{len(ids):,} observations evicted" in app.screen.body
        await pilot.press("escape")
        await settle(app, pilot)
        screen.action_undo_run()
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        assert set(ids) <= live_ids(brain)
        assert {i: quality(brain, i) for i in ids} == before  # undone exactly


async def test_a_previewed_row_changed_before_commit_is_skipped_and_named(brain, tmp_path):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_prune(app, pilot)
        ids = screen.preview.dropped_ids
        changed = ids[0]
        other = sqlite3.connect(tmp_path / ".cleo" / "cleo.db")  # CLEO editing a row meanwhile
        other.execute("UPDATE brain_observations SET narrative = narrative || ' and a good deal more text' "
                      "WHERE id = ?", (changed,))
        other.commit()
        narrative = other.execute("SELECT narrative FROM brain_observations WHERE id = ?", (changed,)).fetchone()[0]
        other.close()
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        assert changed in live_ids(brain) and not set(ids[1:]) & live_ids(brain)
        assert brain.scalar("SELECT narrative FROM brain_observations WHERE id = ?", (changed,)) == narrative
        assert isinstance(app.screen, MessageModal)
        body = app.screen.body
        assert f"{len(ids) - 1:,} observations evicted" in body and f"{changed}: text changed" in body
        assert "target of" in body


async def test_protected_tokens_are_one_figure_in_text_and_bar(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_prune(app, pilot)
        await type_budget(screen, pilot, "1k")
        preview = screen.preview
        assert preview.fell_back
        summary = str(screen.query_one("#prune-summary", Static).render())
        assert f"protected rows alone hold {preview.protected_tokens:,} tokens" in summary
        assert "one separator per line" in summary
        bar = screen.query_one("#prune-bar", BudgetBar)
        assert bar.figures.protected_tokens == preview.protected_tokens
        assert f"protected {preview.protected_tokens:,}" in str(bar.render())


async def test_write_keys_on_a_read_only_brain_say_why_and_commit_and_undo_are_disabled(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    brain = demo_brain(tmp_path, read_only=True)
    app = CleoApp(brain=brain)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(app, pilot)
            app.screen.query_one(LineTable).focus()
            await pilot.press("e")  # Observations: evict
            await settle(app, pilot)
            assert not isinstance(app.screen, ConfirmModal)
            assert "Evict: not possible, the brain is read-only (opened with --read-only)" in notices(app)
            app.clear_notifications()
            screen = await open_prune(app, pilot)
            assert screen.preview.drop_count > 0
            live_before = live_ids(brain)
            await pilot.press("c")
            await settle(app, pilot)
            assert "Commit: not possible, the brain is read-only (opened with --read-only)" in notices(app)

            # Commit and undo are disabled: no confirmation is offered, nothing is written.
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
        assert field.value == str(Path.cwd() / f"cleo-prune-{screen.budget}-chars4.json")
        field.value = "out/preview.json"
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, PathPrompt)  # said under the box, the path kept to correct
        assert "could not be written" in str(app.screen.query_one("#path-problem", Static).render())
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
        assert screen.query_one("#prune-tokenizer", ChoiceChip).value == "cl100k_base"
        first, budget = screen.pool, screen.budget
        await pilot.press("t")  # cl100k_base → chars4
        await settle(app, pilot)
        assert screen.pool is not first and screen.pool.tokenizer.name == "chars4"
        assert screen.budget == budget and screen.preview.tokenizer == "chars4"
        assert screen.pool.tokens_before != first.tokens_before

        session, count = brain.query(
            "SELECT source_session_id, COUNT(*) FROM brain_observations WHERE invalid_at IS NULL "
            "AND source_session_id IS NOT NULL GROUP BY 1 ORDER BY 2 DESC LIMIT 1")[0]
        screen.query_one("#prune-scope", ChoiceChip).value = session
        await settle(app, pilot)
        assert screen.pool.session == session and len(screen.pool) == count
        # The budget was the pane's own default: it follows the scope (the whole pool's, kept, was
        # far above a session's size and dropped nothing). One the user chose stays.
        assert screen.budget == default_budget(screen.pool.tokens_before) < budget
        screen.query_one("#prune-budget", Input).value = "1234"
        await settle(app, pilot)
        screen.query_one("#prune-scope", ChoiceChip).value = ALL_SCOPE
        await settle(app, pilot)
        assert screen.pool.session is None and screen.budget == 1234


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


def inside(widget, screen) -> bool:
    """Shown, and wholly within the screen (nothing cut off at the right or bottom edge)."""
    region = widget.region
    return widget.display and region.area > 0 and screen.region.contains_region(region)


async def test_every_control_and_the_fall_back_text_fit_at_80x24(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_prune(app, pilot)
        await type_budget(screen, pilot, "1k")
        await settle(app, pilot)
        assert screen.preview.fell_back
        for selector in ("#prune-budget", "#prune-tokenizer", "#prune-scope", "#prune-summary", "#prune-bar",
                         "#prune-lists", "#prune-dropped"):
            assert inside(screen.query_one(selector), screen), selector
        summary = screen.query_one("#prune-summary", Static)
        lines = screen.summary_text().wrap(app.console, summary.content_region.width)
        assert len(lines) <= summary.content_region.height  # the fall-back text is whole
        assert "In the way" in str(summary.render())


async def test_escape_leaves_the_budget_box_for_the_list_as_enter_does(brain):
    # the walk: b, then Esc, then a stray word went into the box and made the budget invalid
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_prune(app, pilot)
        before = screen.budget
        await pilot.press("b")
        assert app.focused is screen.query_one("#prune-budget", Input)
        await pilot.press("escape")
        assert app.focused is screen.table(screen.current_list())
        await pilot.press("w", "z")  # keys of the list now, not text of the box
        assert screen.budget == before and screen.budget_error is None


async def test_an_empty_pool_says_there_is_nothing_to_prune(tmp_path):
    """A brain just made (`cleo-tui init`) showed "Budget 1 target 1", "Tokens 0 → 0", an empty bar
    and chart: it now says there is nothing to prune yet, and the first row brings the figures."""
    from tests.pruner_fixtures import new_brain
    from tests.test_ui_live import cleo_writes, poll

    brain = new_brain(tmp_path)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        poll(app)
        screen = await open_prune(app, pilot)
        summary = str(screen.query_one("#prune-summary", Static).render())
        assert "No live observations" in summary and "Tokens" not in summary, summary
        assert screen.has_class("-empty-pool") and not screen.query_one("#prune-bar").region.area
        assert screen.query_one("#prune-budget", Input).value == ""
        await pilot.press("c")
        await settle(app, pilot)
        said = list(app._notifications)[-1].message
        assert "nothing to commit" in said.lower() and "budget" not in said, said
        cleo_writes(Path(brain.path), 3)  # folded into the pool live, as CLEO writes
        poll(app)
        await settle(app, pilot)
        assert len(screen.pool) == 3
        assert screen.budget == default_budget(screen.pool.tokens_before) and screen.query_one("#prune-bar").region.area
        assert "Tokens" in str(screen.query_one("#prune-summary", Static).render())
        with sqlite3.connect(brain.path) as conn:  # every row evicted elsewhere: the pool is empty again
            conn.execute("UPDATE brain_observations SET invalid_at = '2026-06-01 00:00:00'")
        screen.reload()
        await settle(app, pilot)
        summary = str(screen.query_one("#prune-summary", Static).render())
        assert "No live observations" in summary and "INVALID" not in summary, summary
        assert screen.query_one("#prune-budget", Input).value == "" and screen.budget is None
    brain.close()
