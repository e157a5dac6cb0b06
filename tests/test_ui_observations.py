"""Pilot tests of the Observations pane on a demo brain: filter, search, detail, curation."""

from __future__ import annotations

import sqlite3

from textual.widgets import Input, Static

from cleo_tui.brain.observations import ObservationQuery, count_observations
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.widgets.choice_chip import ChoiceChip
from cleo_tui.ui.widgets.modals import ConfirmModal, HelpScreen, MessageModal
from cleo_tui.ui.widgets.table import LineTable
from tests.ui_helpers import HOSTILE_TITLE, demo_brain, search_for_nothing, settle, settle_past_failure, settle_scrolled


def table_of(app) -> LineTable:
    return app.screen.query_one("#obs-table", LineTable)


def screen_text(app) -> str:
    """What a terminal would show, as plain text."""
    return app.export_screenshot()


def row_where(brain, sql_where: str) -> str:
    return brain.scalar(f"SELECT id FROM brain_observations WHERE {sql_where} ORDER BY created_at DESC LIMIT 1")


async def move_to(app, pilot, observation_id: str) -> None:
    """Put the cursor on one observation by searching its id."""
    app.screen.query_one("#search", Input).value = observation_id
    app.screen._apply_search()
    await settle(app, pilot)
    assert table_of(app).current_row()["id"] == observation_id


async def test_opens_with_every_row_then_filters_by_tags_shows_details_literally_and_a_citing_reflection(brain):
    """One walk on one app (nothing written): the first rows and the header; the coverage and protected
    filters; a cited row's detail; the hostile row shown literally; enter, enter opens a citing reflection."""
    from cleo_tui.ui.help import OBSERVATIONS_HELP
    from cleo_tui.ui.widgets.modals import TextViewer
    cited = brain.scalar(
        "SELECT substr(to_id, 13) FROM brain_page_edges WHERE from_id LIKE 'pattern:%' "
        "AND to_id LIKE 'observation:%' AND substr(to_id, 13) IN (SELECT id FROM brain_observations) LIMIT 1")
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        total = count_observations(brain)
        assert table_of(app).total == total
        header = str(app.screen.query_one("#brain-header", Static).render())
        live = count_observations(brain, ObservationQuery(state="live"))
        assert f"{live:,} live" in header and "cleo-tui brain" in header
        assert app.session.tags is not None and len(app.session.tags) == total

        # The coverage and protected filters use the tags.
        app.screen.query_one("#f-protected", ChoiceChip).value = "yes"
        await settle(app, pilot)
        protected = sum(1 for t in app.session.tags.values() if t.protected)
        assert 0 < table_of(app).total == protected
        app.screen.query_one("#f-protected", ChoiceChip).clear()
        app.screen.query_one("#f-coverage", ChoiceChip).value = "reinforced"
        await settle(app, pilot)
        reinforced = sum(1 for t in app.session.tags.values() if t.coverage == "reinforced")
        assert 0 < table_of(app).total == reinforced
        app.screen.query_one("#f-coverage", ChoiceChip).clear()
        await settle(app, pilot)
        assert table_of(app).total == total

        # The detail shows the narrative, the tags and the reflections that cite the row.
        await move_to(app, pilot, cited)
        await pilot.press("escape")  # leave the search box
        assert app.screen.detail.row["id"] == cited
        detail_text = str(app.screen.query_one("#detail .detail-meta", Static).render())
        assert cited in detail_text and "relevance" in detail_text and "coverage" in detail_text
        assert any(r.node_id.startswith("pattern:") for r in app.screen.detail.citing)

        # Hostile text is shown literally.
        await move_to(app, pilot, "O-hostile")
        svg = screen_text(app)
        assert "[bold red]x[/]" in svg.replace("&#160;", " ")
        narrative = str(app.screen.query_one("#detail .detail-narrative", Static).render())
        assert "\x1b" not in narrative and "\x07" not in narrative and "\x00" not in narrative
        assert "␛[31mred" in narrative and "␛]52;c;aGk=" in narrative
        assert HOSTILE_TITLE in str(app.screen.query_one("#detail .detail-meta", Static).render())

        # Enter, then enter, opens a reflection that cites the row, as the help says.
        assert any("enter" in key and "reflection" in what for key, what in OBSERVATIONS_HELP.rows)
        await move_to(app, pilot, cited)
        table_of(app).focus()
        await pilot.press("enter")
        await settle(app, pilot)
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, TextViewer)
        pane = app.screen_stack[-2]
        assert app.screen.title_text.startswith(pane.detail.citing[0].node_id)


async def test_state_filter_and_search(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        app.screen.query_one("#f-state", ChoiceChip).value = "evicted"
        await settle(app, pilot)
        evicted = count_observations(brain, ObservationQuery(state="evicted"))
        assert 0 < evicted < count_observations(brain)
        assert table_of(app).total == evicted
        assert table_of(app).current_row()["invalid_at"] is not None

        app.screen.query_one("#f-state", ChoiceChip).clear()
        await pilot.press("slash")
        await pilot.press(*"retry", "enter")
        await settle(app, pilot)
        expected = count_observations(brain, ObservationQuery(search="retry"))
        assert 0 < expected < count_observations(brain)
        assert table_of(app).total == expected
        row = table_of(app).current_row()
        assert "retry" in (str(row["title"]) + str(row["narrative_preview"])).lower()


async def test_escape_leaves_the_search_with_what_was_typed_applied(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("slash", *"retry")
        assert isinstance(app.focused, Input)
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.focused is table_of(app)
        assert table_of(app).total == count_observations(brain, ObservationQuery(search="retry"))


async def test_pin_evict_and_undo(brain):
    target = row_where(brain, "invalid_at IS NULL AND source_type = 'agent' AND type = 'diary'")
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await move_to(app, pilot, target)
        table_of(app).focus()

        await pilot.press("p")
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("y")
        await settle(app, pilot)
        assert brain.scalar("SELECT relevance FROM cleo_tui_relevance_overrides WHERE observation_id = ?",
                            (target,)) == "critical"
        assert app.session.tags[target].protected

        await pilot.press("e")
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("y")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal)  # pinned, so protected: it asks a second time
        await pilot.press("y")
        await settle(app, pilot)
        assert brain.scalar("SELECT invalid_at FROM brain_observations WHERE id = ?", (target,)) is not None

        await pilot.press("u")  # undo the eviction
        await settle(app, pilot)
        assert brain.scalar("SELECT invalid_at FROM brain_observations WHERE id = ?", (target,)) is None
        await pilot.press("u")  # undo the pin
        await settle(app, pilot)
        assert brain.scalar("SELECT count(*) FROM cleo_tui_relevance_overrides WHERE observation_id = ?",
                            (target,)) == 0


async def test_cancelled_confirmation_writes_nothing(brain):
    target = row_where(brain, "invalid_at IS NULL")
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await move_to(app, pilot, target)
        table_of(app).focus()
        await pilot.press("e", "n")
        await settle(app, pilot)
        assert brain.scalar("SELECT invalid_at FROM brain_observations WHERE id = ?", (target,)) is None


async def test_read_only_brain_disables_curation(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    brain = demo_brain(tmp_path, read_only=True)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        table_of(app).focus()
        await pilot.press("p", "e")
        await settle(app, pilot)
        assert not isinstance(app.screen, ConfirmModal)
        assert brain.scalar("SELECT count(*) FROM cleo_tui_relevance_overrides") == 0
        status = str(app.screen.query_one("#status-line", Static).render())
        assert "read-only (opened with --read-only)" in status and "disabled" in status
    brain.close()


async def test_help_screen_explains_tags_and_opens_from_lines_rendered_in_the_background(brain, monkeypatch):
    import gc

    from cleo_tui import collector
    from cleo_tui.ui.widgets.help_view import HelpText, help_text_width
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        monkeypatch.setattr(collector._holders, "froze", True)  # as a large brain's tags leave it (issue 33)
        frozen = gc.get_freeze_count()
        app.prepare_help()  # what the app does a few seconds after its first rows
        for _ in range(400):  # a thread renders it: await it, bounded
            if app.help_render.cached(app.help_text(), help_text_width(120)) is not None:
                break
            await pilot.pause(0.02)
        renders = app.help_render.renders
        assert renders == 1
        for _ in range(400):  # (the thread freezes once its lines are kept)
            if gc.get_freeze_count() > frozen:
                break
            await pilot.pause(0.02)
        assert gc.get_freeze_count() > frozen and gc.isenabled()  # the help is left out of collections
        for _ in range(2):
            await pilot.press("f1")
            assert isinstance(app.screen, HelpScreen)
            await pilot.pause()
            assert app.screen.query_one(HelpText).ready  # drawn at once from the kept lines
            assert app.help_render.renders == renders
            assert "unique identifier" in app.screen.markdown and "reinforced" in app.screen.markdown
            assert "unique identifier" in screen_text(app) or "Panes" in screen_text(app)
            await pilot.press("escape")
            assert not isinstance(app.screen, HelpScreen)


async def test_worker_failure_becomes_popup(brain):
    target = row_where(brain, "invalid_at IS NULL")
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await move_to(app, pilot, target)
        # Another writer evicts the row while the user looks at it.
        with brain.write() as conn:
            conn.execute("UPDATE brain_observations SET invalid_at = '2026-01-01 00:00:00' WHERE id = ?", (target,))
        app.session.curate("evict", target)
        await settle_past_failure(app, pilot)
        assert isinstance(app.screen, MessageModal)
        assert "already" in app.screen.body


async def test_pane_switching_by_key_and_placeholders(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        table_of(app).focus()
        for key, mode in (("2", "prune"), ("3", "review"), ("4", "traces"), ("1", "observations")):
            await pilot.press(key)
            await settle(app, pilot)
            assert app.current_mode == mode


async def test_screen_worker_failure_becomes_popup(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        # Another process renames the observations table under the open app: the pane's
        # worker fails, and the user gets a popup with the message instead of nothing.
        other = sqlite3.connect(brain.path)
        other.execute("ALTER TABLE brain_observations RENAME TO brain_observations_moved")
        other.close()
        app.screen.query_one("#search", Input).value = "retry"
        app.screen._apply_search()
        await settle_past_failure(app, pilot)
        assert isinstance(app.screen, MessageModal)
        assert "no such table: brain_observations" in app.screen.body


async def test_welcome_screen_creates_an_empty_brain(tmp_path):
    from textual.widgets import Button

    from cleo_tui.ui.panes.welcome import WelcomeScreen

    app = CleoApp(brain=None, project=tmp_path, problem="No brain found in the test directory.")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, WelcomeScreen)
        assert "No brain found" in str(app.screen.query_one("#welcome-problem", Static).render())
        app.screen.query_one("#empty", Button).press()
        await settle(app, pilot)
        assert (tmp_path / ".cleo-tui" / "brain.db").is_file()  # init's rule: no .git, so never .cleo/
        assert not (tmp_path / ".cleo").exists()
        assert app.current_mode == "observations" and app.session.brain.kind == "cleo-tui"
        assert table_of(app).total == 0
        app.session.brain.close()


async def test_welcome_screen_opening_a_bad_file_explains_itself(tmp_path):
    from cleo_tui.ui.panes.welcome import WelcomeScreen

    not_a_brain = tmp_path / "notes.txt"
    not_a_brain.write_text("hello")
    app = CleoApp(brain=None, project=tmp_path, problem="No brain found.")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        app.screen.query_one("#open-path", Input).value = str(not_a_brain)
        await pilot.click("#open")
        await settle(app, pilot)
        assert isinstance(app.screen, MessageModal) and "not a SQLite database" in app.screen.body
        await pilot.press("escape")
        assert isinstance(app.screen, WelcomeScreen)


def test_header_gives_the_path_way_before_the_counts():
    from cleo_tui.ui.widgets.chrome import header_text

    summary = {"observations": {"live": 1919, "evicted": 81}, "patterns": 19, "learnings": 22, "traces": 13}
    text = header_text(summary, "/a/very/long/project/path/somewhere/.cleo/cleo.db", "cleo-tui brain",
                       "opened with --read-only", 120).plain
    assert len(text) <= 120
    assert text.endswith("13 traces  READ-ONLY") and "…" in text and ".cleo/cleo.db" in text
    wide = header_text(summary, "/p/.cleo/cleo.db", "cleo-tui brain", "opened with --read-only", 200).plain
    assert wide == (" cleo-tui  /p/.cleo/cleo.db  cleo-tui brain  1,919 live · 81 evicted · 19 patterns · "
                    "22 learnings · 13 traces  READ-ONLY (opened with --read-only)")
    one = {**summary, "patterns": 1, "learnings": 1, "traces": 1}
    assert "· 1 pattern · 1 learning · 1 trace" in header_text(one, "/p/.cleo/cleo.db", "cleo-tui brain", None,
                                                                200).plain  # ("1 traces" after the first recall)


def footer_keys_on_screen(app) -> list[str]:
    """The actions of the footer keys a user can see (the footer draws only those that fit whole)."""
    from cleo_tui.ui.widgets.footer import CleoFooter
    return [key.action for key in app.screen.query_one(CleoFooter).shown]


async def test_small_terminal_keeps_state_relevance_coverage_protection_and_help(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        shown = table_of(app).shown_columns()
        assert {"id", "title", "state", "relevance", "coverage", "protection"} <= set(shown)
        assert not {"source", "type", "date", "tier", "quality"} & set(shown)  # these give way to the title
        widths = dict(zip([c.key for c in table_of(app).columns], table_of(app)._widths(), strict=True))
        assert widths["title"] >= 24  # a readable title
        ids = [table_of(app).render_line(y).text.split(" ")[0] for y in range(1, 6)]
        assert len(set(ids)) == len(ids)  # ids cut in the middle: their distinct tails stay
        header = table_of(app).render_line(0).text
        assert header.rstrip().endswith("state")  # the last column is whole, not clipped
        assert "help" in footer_keys_on_screen(app)
        last_filter = app.screen.query_one("#f-session", ChoiceChip)
        last_filter.focus()  # every filter is reachable: the bar scrolls to the focused one
        await settle_scrolled(app, pilot)
        assert last_filter.region.right <= 80 and last_filter.region.width > 0


async def test_wide_terminal_shows_every_column(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        assert table_of(app).shown_columns() == [c.key for c in table_of(app).columns]
        assert "help" in footer_keys_on_screen(app)


async def test_records_detail_follows_the_visible_tab(brain):
    from textual.widgets import DataTable, TabbedContent
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("t")
        await settle(app, pilot)
        screen = app.screen

        def detail() -> str:
            return str(screen.query_one("#record-detail", Static).render())

        def highlighted(kind: str) -> str:
            table = screen.query_one(f"#table-{kind}", DataTable)
            return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

        assert detail().startswith(highlighted("pattern"))
        screen.query_one("#records-tabs", TabbedContent).active = "records-learning"
        await settle(app, pilot)
        assert detail().startswith(highlighted("learning"))
        screen.query_one("#table-learning", DataTable).focus()
        await pilot.press("down")
        await settle(app, pilot)
        assert detail().startswith(highlighted("learning")) and highlighted("learning").endswith(
            str(screen.query_one("#table-learning", DataTable).get_row_at(1)[0]))
        screen.query_one("#records-tabs", TabbedContent).active = "records-decision"
        await settle(app, pilot)
        assert detail().startswith(highlighted("decision"))
        screen.query_one("#records-tabs", TabbedContent).active = "records-pattern"
        await settle(app, pilot)
        assert detail().startswith(highlighted("pattern"))


def test_detail_history_counts_what_it_lists_and_marks_missing_edge_targets(brain):
    from cleo_tui.memory.detail import observation_detail
    from cleo_tui.ui.widgets.detail import render_graph
    target = row_where(brain, "invalid_at IS NULL")
    other = brain.scalar("SELECT id FROM brain_observations WHERE id != ? LIMIT 1", (target,))
    with brain.write() as conn:
        conn.execute("DELETE FROM brain_page_edges WHERE from_id = ? OR to_id = ?",
                     (f"observation:{target}", f"observation:{target}"))
        for from_id, edge_type in (("observation:O-gone", "supersedes"), (f"observation:{other}", "supersedes"),
                                   ("pattern:P-gone", "derived_from")):
            conn.execute("INSERT INTO brain_page_edges(from_id, to_id, edge_type, weight, created_at) "
                         "VALUES (?, ?, ?, 1.0, '2026-05-01 00:00:00')", (from_id, f"observation:{target}", edge_type))
    detail = observation_detail(brain, target)
    text = render_graph(detail).plain
    history = text[text.index("History"):]
    assert history.startswith("History (2)")  # no run, two supersede lines: it counts what it lists
    assert "superseded by observation:O-gone" in history and "no such observation" in history
    graph = text[: text.index("History")]
    gone_lines = [line for line in graph.splitlines() if "O-gone" in line or "P-gone" in line]
    assert len(gone_lines) == 2 and all("no such" in line for line in gone_lines)
    assert not any("no such" in line for line in graph.splitlines() if other in line)


def test_quality_is_rounded_the_same_in_the_table_and_the_detail(brain):
    from cleo_tui.brain.numbers import quality_text
    from cleo_tui.memory.detail import observation_detail
    from cleo_tui.ui.widgets.detail import render_meta
    target = row_where(brain, "invalid_at IS NULL")
    with brain.write() as conn:
        conn.execute("UPDATE brain_observations SET quality_score = 0.45499999999999996 WHERE id = ?", (target,))
    meta = render_meta(observation_detail(brain, target), None).plain
    assert "quality 0.45 " in meta + " " and "0.4549" not in meta
    assert quality_text(0.45499999999999996, compact=True) == ".45" and quality_text(1) == "1.00"
    assert quality_text(1.0, compact=True) == "1.0" and quality_text(None) == "" and quality_text(float("nan")) == ""


async def test_a_filter_chosen_with_the_mouse_gives_the_keys_back_to_the_table_and_focus_shows(brain):
    from textual.widgets import OptionList

    from cleo_tui.ui.widgets.choice_chip import ChoiceMenu
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        pane, table = app.screen, table_of(app)
        chip = pane.query_one("#f-state", ChoiceChip)
        await pilot.click(chip)
        await pilot.pause()
        assert isinstance(app.screen, ChoiceMenu)
        menu = app.screen.query_one(OptionList)
        assert menu.region.y == chip.region.bottom  # right under the chip
        await pilot.click(menu, offset=(2, 2))  # under its border: "all states", then "live"
        await settle(app, pilot)
        assert chip.value == "live" and app.screen is pane
        assert app.focused is table  # the keys go to the rows again
        await pilot.press("j")
        assert table.cursor == 1
        # Focus is visible on every focusable widget of the pane: each looks different focused.
        for widget in [w for w in app.screen.focus_chain if w.region.area]:
            app.set_focus(None)
            await pilot.pause()
            unfocused = app.export_screenshot()
            widget.focus()
            await pilot.pause()
            assert app.export_screenshot() != unfocused, widget
        # ...and clearly so on the filter bar (a 5% tint was all Textual's compact widgets showed).
        for widget, painted in ((chip, chip), (app.screen.query_one("#search"),) * 2):
            app.set_focus(None)
            await pilot.pause()
            unfocused = painted.styles.background
            widget.focus()
            await pilot.pause()
            assert painted.styles.background != unfocused, widget


async def test_clear_filters_with_none_set_leaves_the_list_and_the_cursor_as_they_are(brain):
    """`x` is the one letter of a stray word ("zzx") that acts on the table: with no filter set it has
    nothing to clear, and the user keeps their place; with one set it clears it."""
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("pagedown", "pagedown", "down")
        await settle(app, pilot)
        table = table_of(app)
        listing, cursor, row = table.listing, table.cursor, table.current_row()["id"]
        assert cursor > 0
        await pilot.press(*"zzx")
        await settle(app, pilot)
        assert table.listing is listing and table.cursor == cursor and table.current_row()["id"] == row

        app.screen.query_one("#f-state", ChoiceChip).value = "evicted"
        await settle(app, pilot)
        assert table.total < count_observations(brain)
        await pilot.press("x")
        await settle(app, pilot)
        assert table.total == count_observations(brain)
        assert app.screen.query_one("#f-state", ChoiceChip).is_blank()


async def test_a_long_narrative_shows_its_start_and_v_opens_all_of_it(brain):
    from textual.widgets import TextArea

    from cleo_tui.ui.widgets.detail import NARRATIVE_INLINE
    from cleo_tui.ui.widgets.modals import TextViewer

    narrative = "".join(f"line {k:05d} of a long session log. " for k in range(450))  # 15,300 characters
    with brain.write() as conn:
        conn.execute("INSERT INTO brain_observations(id, type, title, narrative, created_at) VALUES (?, ?, ?, ?, ?)",
                     ("O-long", "discovery", "A long log", narrative, "2026-06-01 00:00:00"))
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await move_to(app, pilot, "O-long")
        shown = str(app.screen.query_one("#detail .detail-narrative", Static).render())
        assert shown.startswith(narrative[:NARRATIVE_INLINE]) and narrative[NARRATIVE_INLINE:][:40] not in shown
        assert f"{len(narrative) - NARRATIVE_INLINE:,} more characters — press v to read all of it" in shown
        table_of(app).focus()
        await pilot.press("v")
        await settle(app, pilot)
        assert isinstance(app.screen, TextViewer)
        assert app.screen.query_one("#viewer", TextArea).text.replace("\n", "") == narrative


async def test_the_detail_text_keeps_its_width_whether_or_not_it_overflows(brain):
    """The detail's scroll bar is always there: moving from a row whose detail fits onto one that
    overflows neither rewraps the text under the user's eyes nor lays the screen out twice more
    (the bar appearing took two more layout passes and frames)."""
    narrative = "".join(f"line {k:05d} of a long session log. " for k in range(200))
    with brain.write() as conn:
        conn.execute("INSERT INTO brain_observations(id, type, title, narrative, created_at) VALUES (?, ?, ?, ?, ?)",
                     ("O-long", "discovery", "A long log", narrative, "2026-06-01 00:00:00"))
        conn.execute("INSERT INTO brain_observations(id, type, title, narrative, created_at) VALUES (?, ?, ?, ?, ?)",
                     ("O-short", "discovery", "Short", "Short.", "2026-06-01 00:00:01"))
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 60)) as pilot:
        await settle(app, pilot)
        detail = app.screen.query_one("#detail")
        narrative_part = detail.query_one(".detail-narrative", Static)
        await move_to(app, pilot, "O-short")
        assert detail.max_scroll_y == 0 and detail.show_vertical_scrollbar  # it fits, and the bar is there
        width = narrative_part.content_size.width
        await move_to(app, pilot, "O-long")
        assert detail.max_scroll_y > 0 and narrative_part.content_size.width == width


async def test_the_detail_says_why_nothing_is_listed(brain, tmp_path, monkeypatch):
    """"No observation selected." on an empty brain, or under filters that match nothing, said neither why
    nor what to do."""
    from cleo_tui.brain import create_brain

    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await search_for_nothing(app, pilot)
        assert table_of(app).total == 0
        assert "No observation matches these filters" in str(app.screen.query_one(".detail-meta", Static).render())
    monkeypatch.chdir(tmp_path)
    empty = create_brain(tmp_path / "empty" / ".cleo-tui" / "brain.db")
    app = CleoApp(brain=empty)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert "holds no observations yet" in str(app.screen.query_one(".detail-meta", Static).render())
    empty.close()


async def test_an_empty_records_tab_offers_no_full_text_of_another_tabs_record(tmp_path):
    """On an empty tab the detail said "No learnings in this brain." but v still opened the
    pattern shown before, from the other tab; the empty table stood there with its header."""
    from textual.widgets import DataTable, TabbedContent

    from cleo_tui.ui.widgets.modals import TextViewer
    from tests.pruner_fixtures import add_pattern, new_brain
    from tests.ui_helpers import footer_actions

    brain = new_brain(tmp_path)
    add_pattern(brain, "P-1", "always rebase before merging")
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("t")
        await settle(app, pilot)
        screen = app.screen
        assert "view_record" in footer_actions(screen)
        screen.query_one("#records-tabs", TabbedContent).active = "records-learning"
        await settle(app, pilot)
        assert "No learnings in this brain" in str(screen.query_one("#record-detail", Static).render())
        assert not screen.query_one("#table-learning", DataTable).display
        assert "view_record" not in footer_actions(screen)
        await pilot.press("v")
        await settle(app, pilot)
        assert not isinstance(app.screen, TextViewer)
    brain.close()


async def test_the_row_keys_leave_the_footer_while_no_row_is_listed(brain):
    """With no row listed the footer still offered e, r, p and v, each then saying "No observation
    selected"; they go while the list is empty and come back with its rows."""
    from tests.ui_helpers import footer_actions

    row_keys = {"evict", "restore", "pin", "view_text"}
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        assert row_keys <= footer_actions(app.screen)
        await search_for_nothing(app, pilot)
        assert not row_keys & footer_actions(app.screen)
        await pilot.press("x")  # clear the filters
        await settle(app, pilot)
        assert row_keys <= footer_actions(app.screen)
