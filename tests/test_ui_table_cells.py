"""LineTable fits text by terminal cells and gives way column by column on small terminals."""

from __future__ import annotations

from rich.cells import cell_len
from textual.app import App, ComposeResult

from cleo_tui.ui.widgets.cells import cut_cells, cut_cells_middle, cut_cells_start, fit_cells
from cleo_tui.ui.widgets.list_listing import ListListing
from cleo_tui.ui.widgets.table import Column, LineTable, fit_columns

WIDE_TITLE = "漢字のタイトル 😀🎉 👨‍👩‍👧 with emoji and more text than fits"  # 👨‍👩‍👧: a ZWJ sequence
COLUMNS = [Column("id", "id", 6), Column("title", "title", None, min_width=8),
           Column("state", "state", 7), Column("last", "last", 6)]


def test_fit_cells_cuts_and_pads_by_cells():
    assert cell_len(fit_cells(WIDE_TITLE, 9)) == 9
    assert fit_cells("漢字ab", 4) == "漢… "  # a wide character is never split: padded instead
    assert cell_len(fit_cells("😀", 5, right=True)) == 5 and fit_cells("😀", 5, right=True).endswith("😀")
    assert cut_cells("abc", 10) == "abc" and cell_len(cut_cells(WIDE_TITLE, 12)) <= 12
    assert "\x1b" not in fit_cells("a\x1b[31mb", 10)  # still printable


class TableApp(App):
    def compose(self) -> ComposeResult:
        yield LineTable(COLUMNS, lambda row: {k: (str(v), "") for k, v in row.items()}, id="t")

    def on_mount(self) -> None:
        rows = [{"id": "A1", "title": "plain ascii title", "state": "live", "last": "END"},
                {"id": "A2", "title": WIDE_TITLE, "state": "live", "last": "END"}]
        self.query_one(LineTable).set_listing(ListListing(rows, lambda i, r: r))


def cell_offset(line: str, marker: str) -> int:
    return cell_len(line[: line.index(marker)])


async def test_a_wide_title_keeps_every_later_column_in_place():
    app = TableApp()
    async with app.run_test(size=(60, 10)) as pilot:
        await pilot.pause()
        table = app.query_one(LineTable)
        ascii_line, wide_line = table.render_line(1).text, table.render_line(2).text
        assert cell_offset(ascii_line, "live") == cell_offset(wide_line, "live")
        assert cell_offset(ascii_line, "END") == cell_offset(wide_line, "END")
        assert cell_len(wide_line) == cell_len(ascii_line) == table.scrollable_content_region.width


def test_columns_shrink_then_give_way_in_their_order():
    columns = [Column("id", "id", 14, min_width=10), Column("title", "title", None, min_width=12),
               Column("type", "type", 8, drop=2), Column("source", "source", 8, drop=1),
               Column("state", "state", 7)]
    wide = fit_columns(columns, 100)
    assert wide[0] == 14 and all(wide) and sum(wide) + 4 == 100
    # 10 + 12 + 8 + 8 + 7 + 4 separators = 49: at 48 the type column goes first, then source
    assert fit_columns(columns, 49) == [10, 12, 8, 8, 7]
    assert fit_columns(columns, 48)[2] == 0 and fit_columns(columns, 48)[3] == 8
    narrow = fit_columns(columns, 35)
    assert narrow[2] == narrow[3] == 0 and narrow[4] == 7 and narrow[0] >= 10


def test_the_header_cuts_a_wide_path_by_cells():
    from cleo_tui.ui.widgets.chrome import header_text
    path = "/home/用户/项目/非常长的目录名字/还有更多的目录/.cleo/cleo.db"
    summary = {"observations": {"live": 1919, "evicted": 81}, "patterns": 19, "learnings": 22, "traces": 13}
    for width in (90, 100, 110):
        text = header_text(summary, path, "cleo brain", None, width)
        assert text.cell_len <= width, (width, text.plain)
        assert "cleo.db" in text.plain


def test_cut_cells_start_keeps_the_end():
    from cleo_tui.ui.widgets.cells import cut_cells_start
    assert cut_cells_start("abcdef", 4) == "…def"
    assert cut_cells_start("目录目录", 5) == "…目录" and cut_cells_start("ab", 5) == "ab"


FAMILY = "\U0001F468\u200d\U0001F469\u200d\U0001F467"  # 👨‍👩‍👧: three emoji joined by ZWJ, one cluster


def test_an_emoji_zwj_sequence_is_two_cells_and_never_split():
    assert cell_len(FAMILY) == 2  # as terminals draw it (one glyph); code point by code point it is 6
    text = f"ab{FAMILY}cd{FAMILY}ef"
    for width in range(1, cell_len(text) + 2):
        for cut in (cut_cells, cut_cells_start, cut_cells_middle):
            out = cut(text, width)
            assert cell_len(out) <= width, (cut.__name__, width, out)
            # a cluster is whole or absent: no orphan joiner, no lone family member
            assert out.count("\u200d") == 2 * out.count("\U0001F467"), (cut.__name__, width, out)
        assert cell_len(fit_cells(text, width)) == width
    assert cut_cells_start(text, 5) == f"…{FAMILY}ef"


def test_a_number_too_wide_for_its_column_is_rounded_not_cut():
    # "1,665,0…" read as a number is wrong by a factor; "1.67M" is right to three figures.
    assert fit_cells("1,665,023", 8, right=True) == "   1.67M"
    assert fit_cells("1,665,023", 4, right=True) == "1.7M"
    assert fit_cells("338,801,234", 8, right=True) == "    339M"
    assert fit_cells("12,345", 5, right=True) == "12.3k"
    assert fit_cells("-12,345", 5, right=True) == " -12k"
    assert fit_cells("1,665,023", 9, right=True) == "1,665,023"  # fits: as it is
    # Not a grouped number, or a left-aligned cell: cut as any text.
    assert fit_cells("1,665,023 rows", 8, right=True) == "1,665,0…"
    assert fit_cells("1,665,023", 8) == "1,665,0…"
