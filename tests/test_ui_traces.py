"""Pilot tests of the Traces pane: on the demo brain, on a read-only brain and on a hippo store."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from textual.widgets import Input, OptionList, Static

from cleo_tui.brain.migrations import TRACE_OUTCOMES, TRACES
from cleo_tui.recall.export import read_export
from cleo_tui.recall.reader import TraceFilter, count_traces, list_traces
from cleo_tui.recall.rerank import RerankStep
from cleo_tui.recall.retrievals import RetrievalFilter, count_retrievals
from cleo_tui.recall.traces import RecallTraceInput, TraceResultInput, write_recall_trace
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.panes.hippo_notice import HippoNoticeScreen
from cleo_tui.ui.panes.traces import TracesScreen, time_bound
from cleo_tui.ui.widgets.choice_chip import ChoiceChip
from cleo_tui.ui.widgets.detail import ObservationModal
from cleo_tui.ui.widgets.modals import ConfirmModal, HelpScreen, TextViewer
from cleo_tui.ui.widgets.table import LineTable
from cleo_tui.ui.widgets.trace_export import TraceExportPrompt
from cleo_tui.ui.widgets.trace_listing import TraceListing
from cleo_tui.ui.widgets.trace_render import bar, outcome_summary
from tests.recall_fixtures import make_brain, open_hippo
from tests.ui_helpers import HOSTILE_TITLE, demo_brain, posted, settle, settle_scrolled

SIZE = (120, 36)


def listed(brain, flt: TraceFilter = TraceFilter()) -> int:
    """Rows the pane lists for the traces' filter `flt`: the traces and CLEO's retrievals it lets in."""
    return sum(count_retrievals(brain, RetrievalFilter(trace=flt)))


def table_of(app) -> LineTable:
    return app.screen.query_one("#trace-table", LineTable)


def status_of(app) -> str:
    return str(app.screen.query_one("#trace-status", Static).render())


def steps_of(app) -> str:
    return str(app.screen.query_one("#trace-steps", Static).render())


def result_lines(app) -> list[str]:
    options = app.screen.query_one("#trace-results", OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


def screen_text(app) -> str:
    """The screenshot's text with its entities decoded (spaces are non-breaking in the SVG)."""
    return html.unescape(app.export_screenshot()).replace("\xa0", " ")


async def open_traces(app, pilot) -> TracesScreen:
    await settle(app, pilot)
    await pilot.press("4")
    await settle(app, pilot)
    assert isinstance(app.screen, TracesScreen)
    return app.screen


async def test_lists_every_trace_newest_first_opens_the_top_one_its_outcomes_and_results(brain):
    """One walk on one app (read only): the listing, an outcome summary with its credits and the help,
    then a result opened from the newest trace."""
    app = CleoApp(brain=brain)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_traces(app, pilot)
        table = table_of(app)
        newest = list_traces(brain, limit=1)[0]
        assert table.total == listed(brain) > count_traces(brain) > 5  # CLEO's retrievals listed beside
        assert table.current_row()["id"] == newest.id
        assert screen.opened.trace.id == newest.id
        lines = result_lines(app)
        assert len(lines) == newest.result_count
        # The demo's newest trace holds a memory that no longer exists at rank 2.
        assert "forgotten" in lines[1] and "O-forgotten-demo" in lines[1]
        # Rank 1 was recalled with explain: the chain in the list, the steps with bars on the right.
        assert "base " in lines[0] and "recency ×" in lines[0] and "diversity ×" in lines[0]
        steps = steps_of(app)
        assert "recency" in steps and "final" in steps and "█" in steps
        text = screen_text(app)
        for header in ("time (UTC)", "whose", "source", "session", "tenant", "query (CLEO)", "results",
                       "explain", "outcome"):
            assert header in text
        await pilot.press("down")
        await settle(app, pilot)
        assert screen.opened.trace.id == table.current_row()["id"] != newest.id

        # The outcome summary and the credit per result (was its own test: the same app, read only).
        traced = [t for t in list_traces(brain) if t.positive and t.negative] or \
                 [t for t in list_traces(brain) if t.positive]
        target = traced[0]
        table.cursor = next(i for i in range(table.total) if table.listing.cached_row(i)["id"] == target.id)
        await settle(app, pilot)
        cells = table.formatter(table.current_row())
        assert cells["outcome"][0] == outcome_summary(target.positive, target.negative)
        credited = screen.opened.outcomes[0].memory_ids[0]
        line = next(line for line in result_lines(app) if credited in line)
        assert "+1" in line
        assert "outcomes:" in str(app.screen.query_one("#trace-head", Static).render())
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        assert "Keys in the Traces pane" in app.screen.markdown
        assert "How recall ranks memories" in app.screen.markdown
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.screen is screen and app.focused is table

        # Opening a result shows its observation (was its own test): back on the newest trace.
        table.cursor = 0
        await settle(app, pilot)
        assert screen.opened.trace.id == newest.id
        assert screen.selected_result().memory.kind == "observation"
        await pilot.press("enter")  # into the results
        assert screen.query_one("#trace-results", OptionList).has_focus
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, ObservationModal)
        assert app.screen.observation_id == screen.opened.results[0].memory_id
        await pilot.press("escape")
        await pilot.press("down")  # rank 2 is forgotten: nothing to open, no popup
        await pilot.press("o")
        await settle(app, pilot)
        assert app.screen is screen


async def test_filters_by_pipeline_outcome_session_and_time(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_traces(app, pilot)
        table = table_of(app)
        screen.query_one("#tf-pipeline", ChoiceChip).value = "api"
        await settle(app, pilot)
        assert table.total == count_traces(brain, TraceFilter(pipeline="api")) > 0
        assert all(table.listing.cached_row(i)["trace"].pipeline == "api" for i in range(table.total))

        await pilot.press("c")
        await settle(app, pilot)
        assert table.total == listed(brain)
        screen.query_one("#tf-outcome", ChoiceChip).value = "with"
        await settle(app, pilot)
        assert table.total == count_traces(brain, TraceFilter(has_outcome=True)) > 0

        await pilot.press("c")
        await settle(app, pilot)
        session = next(t.session_id for t in list_traces(brain) if t.session_id)
        screen.query_one("#tf-session", ChoiceChip).value = session
        await settle(app, pilot)
        assert table.total == listed(brain, TraceFilter(session_id=session)) > 0

        await pilot.press("c")
        await settle(app, pilot)
        middle = list_traces(brain)[len(list_traces(brain)) // 2]
        since = screen.query_one("#tf-since", Input)
        since.value = middle.ts[:16].replace("T", " ")
        since.focus()
        await pilot.press("enter")
        await settle(app, pilot)
        assert table.total == listed(brain, TraceFilter(since=middle.ts[:16])) < count_traces(brain)

        since.value = "last tuesday"
        since.focus()
        await pilot.press("enter")
        await settle(app, pilot)
        assert table.total == listed(brain)
        assert "ignored since" in status_of(app) and since.has_class("bad-time")


def test_time_bounds_accept_dates_and_times_only():
    assert time_bound("2026-05-01") == "2026-05-01"
    assert time_bound(" 2026-05-01 13:05 ") == "2026-05-01T13:05"
    assert time_bound("2026-05-01T13:05:09") == "2026-05-01T13:05:09"
    assert time_bound("May 1st") is None and time_bound("") is None


async def test_recall_opens_the_new_trace_and_an_outcome_is_recorded_and_undone(brain):
    before = brain.scalar(f"SELECT max(id) FROM {TRACES}")
    app = CleoApp(brain=brain)
    messages: list = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        screen = await open_traces(app, pilot)
        screen.query_one("#tf-pipeline", ChoiceChip).value = "mcp"  # a filter the new trace does not match
        await settle(app, pilot)
        await pilot.press("r")
        box = screen.query_one("#trace-recall", Input)
        assert box.has_focus
        box.value = "database schema migration"
        await pilot.press("enter")
        await settle(app, pilot)
        new_id = brain.scalar(f"SELECT max(id) FROM {TRACES}")
        assert new_id == before + 1
        assert [m.trace_id for m in posted(messages, TracesScreen.Recalled)] == [new_id]  # the worker's handoff
        assert brain.scalar(f"SELECT explain_mode FROM {TRACES} WHERE id = ?", (new_id,)) == 1
        assert table_of(app).current_row()["id"] == new_id
        assert screen.opened.trace.id == new_id and screen.opened.results
        assert screen.query_one("#trace-results", OptionList).has_focus
        assert screen.filters.pipeline == "any"

        await pilot.press("down")
        chosen = screen.selected_result()
        await pilot.press("plus")
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("y")
        await settle(app, pilot)
        rows = brain.query(f"SELECT outcome, memory_ids_json FROM {TRACE_OUTCOMES} WHERE trace_id = ?", (new_id,))
        assert [(r[0], r[1]) for r in rows] == [("positive", f'["{chosen.memory_id}"]')]
        assert screen.opened.trace.positive == 1
        assert any(chosen.memory_id in line and "+1" in line for line in result_lines(app))

        await pilot.press("u")
        await settle(app, pilot)
        assert brain.scalar(f"SELECT count(*) FROM {TRACE_OUTCOMES} WHERE trace_id = ?", (new_id,)) == 0
        assert screen.opened.trace.positive == 0

        await pilot.press("minus")
        await pilot.press("n")  # cancelled: nothing written
        await settle(app, pilot)
        assert brain.scalar(f"SELECT count(*) FROM {TRACE_OUTCOMES} WHERE trace_id = ?", (new_id,)) == 0


async def test_hostile_memory_titles_are_literal(brain):
    write_recall_trace(brain, RecallTraceInput("hostile", "api", (TraceResultInput("O-hostile", 0.5, (
        RerankStep("recency", 0.5, 1.0, 0.5),)),), explain_mode=True))
    app = CleoApp(brain=brain)
    async with app.run_test(size=SIZE) as pilot:
        await open_traces(app, pilot)
        assert HOSTILE_TITLE[:30] in result_lines(app)[0]
        assert "[bold red]x[/]" in screen_text(app)


async def test_read_only_brain_disables_recall_and_outcomes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    brain = demo_brain(tmp_path, read_only=True)
    app = CleoApp(brain=brain)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_traces(app, pilot)
        assert screen.query_one("#trace-recall", Input).disabled
        for action in ("record_good", "record_bad", "focus_recall", "undo"):
            assert screen.check_action(action, ()) is None
        assert screen.check_action("export_traces", ()) is True
        assert "read-only" in status_of(app) and "outcomes" in status_of(app)
        count = brain.scalar(f"SELECT count(*) FROM {TRACE_OUTCOMES}")
        await pilot.press("plus")
        await settle(app, pilot)
        assert not isinstance(app.screen, ConfirmModal)
        assert brain.scalar(f"SELECT count(*) FROM {TRACE_OUTCOMES}") == count
    brain.close()


async def test_hippo_store_starts_on_traces_and_other_panes_explain(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    brain = open_hippo(Path("hippo.db"))
    app = CleoApp(brain=brain)
    messages: list = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(app, pilot)
        assert app.current_mode == "traces" and isinstance(app.screen, TracesScreen)
        screen = app.screen
        assert table_of(app).total == 1
        lines = result_lines(app)
        assert "Use WAL mode for the hippo store" in lines[0] and "interference ×0.30" in lines[0]
        assert "evicted" in lines[1] and "reranker → 0.100" in lines[1]
        assert "forgotten" in lines[2] and "unreadable" in lines[2]
        assert "+1" in lines[0]
        assert screen.query_one("#trace-recall", Input).disabled

        await pilot.press("enter", "enter")  # open mem-1: the whole hippo memory in a viewer
        await settle(app, pilot)
        assert isinstance(app.screen, TextViewer) and "more text" in app.screen.text
        assert ["more text" in m.text for m in posted(messages, TracesScreen.MemoryRead)] == [True]
        await pilot.press("escape")

        for key, mode in (("1", "observations"), ("2", "prune"), ("3", "review")):
            await pilot.press(key)
            await settle(app, pilot)
            assert app.current_mode == mode and isinstance(app.screen, HippoNoticeScreen)
            notice = str(app.screen.query_one(".hippo-notice", Static).render())
            assert "no CLEO observations" in notice and "Traces pane (4)" in notice
        await pilot.press("4")
        await settle(app, pilot)
        assert app.screen is screen
    brain.close()


def test_trace_listing_pages_by_keyset(tmp_path):
    brain = make_brain(tmp_path)
    for i in range(230):
        write_recall_trace(brain, RecallTraceInput(f"q{i}", "cli", (TraceResultInput("O-aaa-1", 0.5),)))
    listing = TraceListing(brain, TraceFilter(), page_size=100)
    assert listing.count() == 230
    rows = listing.page(0) + listing.page(1) + listing.page(2)
    assert [r["id"] for r in rows] == [t.id for t in list_traces(brain, limit=1000)]
    assert listing.keyset_reads == 2 and listing.pages_read == 3
    assert listing.page(1) is listing.page(1) and listing.pages_read == 3  # cached
    assert listing.cached_row(229)["id"] == rows[-1]["id"] and listing.cached_row(230) is None
    jump = TraceListing(brain, TraceFilter(), page_size=100)
    assert [r["id"] for r in jump.page(2)] == [r["id"] for r in rows[200:]] and jump.keyset_reads == 0
    brain.close()


def test_bars_are_proportional_and_fit():
    assert bar(1.0, 1.0, 8) == "█" * 8
    assert bar(0.5, 1.0, 8) == "████    "
    assert bar(0.0, 1.0, 8) == " " * 8 and bar(2.0, 1.0, 4) == "████"
    assert bar(1 / 16, 1.0, 8) == "▌       "
    assert outcome_summary(2, 1) == "+2 −1" and outcome_summary(0, 0) == ""


def test_journaled_outcomes_refuse_bad_credits_and_never_reuse_an_id(tmp_path):
    from cleo_tui.brain.errors import BrainError
    from cleo_tui.memory.curation import undo
    from cleo_tui.recall.browse import memory_text, record_outcome_undoable, trace_values
    from cleo_tui.recall.resolve import resolve_memories

    brain = make_brain(tmp_path)
    trace_id = write_recall_trace(brain, RecallTraceInput("q", "api", (TraceResultInput("O-aaa-1", 0.5),),
                                                          session_id="s-1"))
    with pytest.raises(BrainError, match="none of the ids"):
        record_outcome_undoable(brain, trace_id, "default", "positive", ["O-aaa-2"])
    with pytest.raises(BrainError, match="another tenant"):
        record_outcome_undoable(brain, trace_id, "other", "positive", ["O-aaa-1"])
    assert brain.scalar(f"SELECT count(*) FROM {TRACE_OUTCOMES}") == 0
    run_id, credited = record_outcome_undoable(brain, trace_id, "default", "negative", ["O-aaa-1", "O-aaa-1"])
    assert credited == ["O-aaa-1"]
    first = brain.scalar(f"SELECT id FROM {TRACE_OUTCOMES}")
    undo(brain, run_id)
    assert brain.scalar(f"SELECT count(*) FROM {TRACE_OUTCOMES}") == 0
    record_outcome_undoable(brain, trace_id, "default", "positive", ["O-aaa-1"])
    assert brain.scalar(f"SELECT id FROM {TRACE_OUTCOMES}") == first + 1
    assert trace_values(brain, "session_id") == ["s-1"] and trace_values(brain, "tenant_id") == ["default"]
    pattern = resolve_memories(brain, ["P-0000aaaa"])["P-0000aaaa"]
    assert "Run database migrations in one transaction" in memory_text(brain, pattern)
    assert "schema changes" in memory_text(brain, pattern)
    brain.close()


async def export_to(app, pilot, path: str) -> None:
    await pilot.press("x")
    assert isinstance(app.screen, TraceExportPrompt)
    app.screen.query_one("#path-input", Input).value = path
    await pilot.press("enter")
    await settle(app, pilot)


async def test_a_recall_that_matched_nothing_does_not_suggest_crediting_and_the_limit_is_the_clis(brain):
    """One app: a recall that matches nothing (at the CLI's default limit, shown in its box), then one at a
    limit the user typed."""
    from cleo_tui.recall.recall import DEFAULT_LIMIT
    app = CleoApp(brain=brain)
    notes: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_traces(app, pilot)
        limit_box = screen.query_one("#trace-limit", Input)
        assert limit_box.value == str(DEFAULT_LIMIT) == "10"
        original = app.notify
        app.notify = lambda message, *a, **k: (notes.append(str(message)), original(message, *a, **k))[1]
        screen.notify = app.notify
        await pilot.press("r")
        screen.query_one("#trace-recall", Input).value = "zzqqxxnothingmatches"
        await pilot.press("enter")
        await settle(app, pilot)
        said = " ".join(notes)
        assert "matched nothing" in said.lower() and "outcome" not in said.lower()

        limit_box.value = "3"
        await pilot.press("r")
        screen.query_one("#trace-recall", Input).value = "invoice"
        await pilot.press("enter")
        await settle(app, pilot)
        new_id = brain.scalar(f"SELECT max(id) FROM {TRACES}")
        assert brain.scalar(f"SELECT result_count FROM {TRACES} WHERE id = ?", (new_id,)) == 3
        assert brain.scalar(f"SELECT query_length FROM {TRACES} WHERE id = ?", (new_id,)) == len("invoice")


async def test_export_asks_before_replacing_refuses_the_open_brain_and_writes_the_listed_traces(brain, tmp_path):
    """One app, three exports: onto a file that exists (cancelled, then replaced), onto the open brain
    (refused, the brain intact), then the filtered listing to a new file (and to a folder that is not there)."""
    target = tmp_path / "old.jsonl"
    target.write_text("keep me\n")
    target.chmod(0o644)
    before = Path(brain.path).read_bytes()
    observations = brain.scalar("SELECT count(*) FROM brain_observations")
    app = CleoApp(brain=brain)
    messages: list = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        screen = await open_traces(app, pilot)
        await export_to(app, pilot, "old.jsonl")
        assert isinstance(app.screen, ConfirmModal) and "old.jsonl" in app.screen.body
        assert [m.path for m in posted(messages, TracesScreen.ExportTargetExists)] == ["old.jsonl"]
        await pilot.press("escape")
        await settle(app, pilot)
        assert target.read_text() == "keep me\n"

        await export_to(app, pilot, "old.jsonl")
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("y")
        await settle(app, pilot)
        assert len(read_export(target)) == listed(brain) > count_traces(brain) > 0
        assert target.stat().st_mode & 0o777 == 0o644

        # The open brain and its side file are refused.
        for name in (str(brain.path), str(brain.path) + "-wal"):
            await export_to(app, pilot, name)
            if isinstance(app.screen, ConfirmModal):  # never offered: but if it were, say yes
                await pilot.press("y")
                await settle(app, pilot)
            assert isinstance(app.screen, TraceExportPrompt)  # said under the box, the path kept to correct
            assert "open brain" in str(app.screen.query_one("#path-problem", Static).render())
            await pilot.press("escape")
            await settle(app, pilot)
        assert app.screen is screen

        # The listed traces (filtered), and where they went.
        seen = len(messages)
        screen.query_one("#tf-pipeline", ChoiceChip).value = "cli"
        await settle(app, pilot)
        await pilot.press("x")
        assert isinstance(app.screen, TraceExportPrompt)
        app.screen.query_one("#path-input", Input).value = "out/cli.jsonl"
        (tmp_path / "out").mkdir()
        await pilot.press("enter")
        await settle(app, pilot)
        records = read_export(tmp_path / "out" / "cli.jsonl")
        assert len(records) == count_traces(brain, TraceFilter(pipeline="cli")) > 0
        assert {r["pipeline"] for r in records} == {"cli"}
        assert [(m.count, m.where) for m in posted(messages[seen:], TracesScreen.Exported)] == [
            (len(records), str((tmp_path / "out" / "cli.jsonl").resolve()))]
        # the status line names the export; a long (xdist) path is cut at the pane's width
        said = status_of(app).split(f"exported {len(records)} traces to ", 1)[1].rstrip("…")
        assert len(said) >= 10 and str((tmp_path / "out" / "cli.jsonl").resolve()).startswith(said)

        await pilot.press("x")
        app.screen.query_one("#path-input", Input).value = "no/such/dir/x.jsonl"
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, TraceExportPrompt)
        assert "Cannot write" in str(app.screen.query_one("#path-problem", Static).render())
    assert brain.scalar("SELECT count(*) FROM brain_observations") == observations
    assert Path(brain.path).read_bytes()[:16] == before[:16] == b"SQLite format 3\x00"


async def test_small_terminal_keeps_the_trace_columns_that_matter_and_help(brain):
    from tests.test_ui_observations import footer_keys_on_screen
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_traces(app, pilot)
        shown = table_of(app).shown_columns()
        assert {"id", "time", "session", "results", "outcome"} <= set(shown)
        assert "tenant" not in shown
        assert table_of(app).render_line(0).text.rstrip().endswith("outcome")
        assert "help" in footer_keys_on_screen(app)
        for box_id in ("#trace-limit", "#tf-until"):
            box = app.screen.query_one(box_id, Input)
            box.focus()  # every control is reachable: the bar scrolls to the focused one
            await settle_scrolled(app, pilot)
            assert box.region.right <= 80 and box.region.width > 0


async def test_with_nothing_to_show_the_detail_and_its_keys_wait_for_a_trace(tmp_path, monkeypatch):
    """A brain without a trace: no empty results-and-steps split, no +, - or o; the first recall brings them."""
    from tests.ui_helpers import footer_actions

    monkeypatch.chdir(tmp_path)
    brain = make_brain(tmp_path)  # (no recall yet: no trace)
    app = CleoApp(brain=brain)
    trace_keys = {"record_good", "record_bad", "open_memory"}
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_traces(app, pilot)
        assert table_of(app).total == 0
        assert "r recalls a query" in str(screen.query_one("#trace-head", Static).render())
        assert not screen.query_one("#trace-detail").display
        assert not trace_keys & footer_actions(screen)
        await pilot.press("x")  # nothing listed: nothing to export, and no file offered
        await settle(app, pilot)
        assert app.screen is screen and any("nothing to export" in n.message for n in app._notifications)
        await pilot.press("r")
        screen.query_one("#trace-recall", Input).value = "database"
        await pilot.press("enter")
        await settle(app, pilot)
        assert screen.opened is not None and screen.query_one("#trace-detail").display
        assert trace_keys <= footer_actions(screen)
        title = screen.opened.results[0].memory.title
        assert len(title) > 20 and title[:30] in result_lines(app)[0]  # filled at the list's width, not 16
    brain.close()
