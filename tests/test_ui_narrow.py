"""80×24 is first class (issue 29 item 3): what a narrow terminal keeps, pane by pane."""

from __future__ import annotations

from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.widgets.footer import CleoFooter, footer_priority, keys_that_fit
from tests.ui_helpers import settle


def test_footer_order_is_help_then_the_panes_first_keys_then_the_rest():
    first = ("commit", "undo_run", "step")
    actions = ["focus_budget", "step(1, 0)", "commit", "help", "undo_run", "export"]
    ordered = sorted(actions, key=lambda a: footer_priority(a, first))
    assert ordered == ["help", "commit", "undo_run", "step(1, 0)", "focus_budget", "export"]
    assert keys_that_fit([9, 9, 9], 26) == 2 and keys_that_fit([9, 9], 18) == 2 and keys_that_fit([], 5) == 0


def shown_footer(app) -> list[tuple[str, bool]]:
    """(action, drawn whole within the screen's width) for every footer key drawn, palette excluded."""
    footer = app.screen.query_one(CleoFooter)
    line = footer.render()
    fits = line.cell_len <= app.screen.size.width
    return [(key.action, fits and f"{key.key_display} {key.description}" in line.plain) for key in footer.shown]


async def test_at_80x24_the_footer_shows_the_panes_main_keys_whole_and_a_patterns_text_opens_whole(brain):
    from textual.widgets import Static

    from cleo_tui.ui.widgets.modals import TextViewer

    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        keys = shown_footer(app)
        assert all(whole for _, whole in keys)  # no key cut in half
        assert [a for a, _ in keys][:4] == ["help", "focus_search", "evict", "restore"]
        await pilot.press("2")
        await settle(app, pilot)
        keys = shown_footer(app)
        assert all(whole for _, whole in keys)
        assert {"help", "commit", "undo_run", "export"} <= {a for a, _ in keys}

        # At 80x24 a pattern's text shows below its table and Enter opens it whole.
        await pilot.press("1")
        await settle(app, pilot)
        await pilot.press("t")
        await settle(app, pilot)
        detail = app.screen.query_one("#record-detail", Static)
        assert detail.region.height >= 5 and detail.region.bottom <= 23  # on screen, above the footer
        assert "pattern:P-" in str(detail.render())
        await pilot.press("down", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, TextViewer) and app.screen.title_text.startswith("pattern P-")
        await pilot.press("escape")
        await pilot.press("v")
        await settle(app, pilot)
        assert isinstance(app.screen, TextViewer)


def test_at_80_columns_the_header_keeps_the_path_tail_the_kind_and_the_warning():
    from cleo_tui.ui.widgets.chrome import header_text

    summary = {"observations": {"live": 1920, "evicted": 80}, "patterns": 19, "learnings": 21, "traces": 13}
    text = header_text(summary, "/tmp/some/demo/.cleo/cleo.db", "cleo-tui brain", None, 80,
                       alert="⚠ observer idle 191 d").plain
    assert len(text) <= 80
    assert ".cleo/cleo.db" in text and "cleo-tui brain" in text and "⚠ observer idle 191 d" in text
    assert "1,920 live" in text


def test_ids_shortened_from_the_middle_keep_their_distinct_tail():
    from rich.cells import cell_len

    from cleo_tui.ui.widgets.cells import cut_cells, cut_cells_middle

    ids = ["O-mx3abcdb2eu0-0", "O-mx3abcdb2eu0-1", "O-mx3abcdb2eu0-a"]
    assert len({cut_cells(i, 12) for i in ids}) == 1  # cut at the end, they read the same
    shortened = [cut_cells_middle(i, 12) for i in ids]
    assert len(set(shortened)) == 3 and all(cell_len(s) == 12 for s in shortened)
    assert shortened[0].startswith("O-mx") and shortened[0].endswith("b2eu0-0") and "…" in shortened[0]
    assert cut_cells_middle("O-short", 12) == "O-short"
    assert cell_len(cut_cells_middle("漢字漢字漢字漢字", 7)) <= 7
