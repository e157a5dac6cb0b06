"""A Line-API table over any `Listing`: only the visible rows are rendered.

Rows come from the listing's page cache. A missing page is drawn as a loading
line and read by a thread worker; the table redraws when it arrives. Nothing
here holds every row, so a million-row brain scrolls like a small one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from rich.segment import Segment
from rich.style import Style
from textual import events, work
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.worker import get_current_worker

from cleo_tui.ui.textual_compat import ScrollViewBarsInTheSameFrame
from cleo_tui.ui.widgets.cells import fit_cells
from cleo_tui.ui.widgets.worker_errors import ForwardWorkerErrors


@dataclass(frozen=True)
class Column:
    """One table column. On a narrow terminal columns first shrink to `min_width`, then the ones
    with a `drop` rank give way, the highest rank first; a column with drop=0 always stays."""

    key: str
    header: str
    width: int | None  # None: takes the remaining width
    right: bool = False
    min_width: int | None = None  # None: a fixed column keeps `width`, a flexible one needs 8
    drop: int = 0
    middle: bool = False  # cut in the middle, not at the end (ids: their distinct tail stays)

    @property
    def least(self) -> int:
        """The fewest cells this column is drawn in."""
        if self.min_width is not None:
            return self.min_width
        return self.width if self.width is not None else FLEX_MIN


FLEX_MIN = 8


def fit_columns(columns: list[Column], width: int) -> list[int]:
    """Each column's width in cells for a table `width` cells wide (0: the column is hidden).

    Shrinkable columns go down to their least width first; while that still does not
    fit, droppable columns are hidden in their `drop` order. The room left grows the
    shrunk fixed columns back to their width, then the flexible ones share the rest.
    """
    shown = list(range(len(columns)))

    def need(indexes: list[int]) -> int:
        return sum(columns[i].least for i in indexes) + max(0, len(indexes) - 1)

    for _, index in sorted(((c.drop, -i) for i, c in enumerate(columns) if c.drop), reverse=True):
        if need(shown) <= width:
            break
        shown.remove(-index)
    widths = [0] * len(columns)
    for i in shown:
        widths[i] = columns[i].least
    room = max(0, width - need(shown))
    for i in shown:
        wanted = columns[i].width
        if wanted is not None and widths[i] < wanted:
            grow = min(room, wanted - widths[i])
            widths[i] += grow
            room -= grow
    flexible = [i for i in shown if columns[i].width is None]
    for n, i in enumerate(flexible):
        widths[i] += room // len(flexible) + (1 if n < room % len(flexible) else 0)
    return widths


Cell = tuple[str, str]  # (text, component class or "")
Row = dict[str, Any]  # what a listing yields: the table needs only its "id"; the formatter reads the rest
RowFormatter = Callable[[Row], dict[str, Cell]]


class Listing(Protocol):
    """Rows by position, as LineTable reads them. Implemented by Listing and
    TraceListing (brain.listing.PagedListing: pages read from the brain) and ListListing
    (a window over an in-memory sequence: the Prune pane's lists and runs).

    `count` and `page` may be slow (they run in workers); `cached_row` must be fast
    (it runs while drawing) and returns None for a row whose page is not read yet.
    """

    page_size: int

    def count(self) -> int: ...

    def cached_row(self, index: int) -> Row | None: ...

    def page(self, page_no: int) -> list[Row]: ...


@dataclass(frozen=True)
class Anchor:
    """The cursor's row, to find again in a new listing: its id, its index, and its line in the view."""

    row_id: Any
    index: int
    line: int  # index - the view's first row
    next_id: Any = None  # the row after it then: its place, if it is gone (None: not known)


@dataclass(frozen=True)
class Located:
    """Where an anchor's row is in a listing (`index` None: it is not there any more, and `neighbour`
    is where the row after it is, if found)."""

    anchor: Anchor
    index: int | None
    neighbour: int | None = None


NEAR_ROWS = 300  # rows either side of the old place searched first (reads at most a few pages)


def locate(listing: Listing, anchor: Anchor, read: bool = True) -> Located:
    """Find `anchor`'s row in `listing` by its id; when it is gone, the row after it (`next_id`).

    A listing with an `index_of(row_id)` (an exact search, e.g. the observations' SQL count) is
    asked; otherwise the rows near the old place, then every row, are compared. Without `read`
    only rows already in memory are looked at (for the UI thread). Slow with `read`: in a worker.
    """
    index = _find(listing, anchor.row_id, anchor.index, read)
    if index is not None or anchor.next_id is None:
        return Located(anchor, index)
    return Located(anchor, None, _find(listing, anchor.next_id, anchor.index + 1, read))


def _find(listing: Listing, row_id: Any, near_index: int, read: bool) -> int | None:
    """The index of the row `row_id` in `listing`, searched from `near_index` out (see `locate`)."""
    exact = getattr(listing, "index_of", None)
    in_memory = getattr(listing, "in_memory", False)
    if exact is not None and read and not in_memory:
        return exact(row_id)  # type: ignore[no-any-return]
    total = listing.count()
    near = range(max(0, near_index - NEAR_ROWS), min(total, near_index + NEAR_ROWS + 1))
    order = sorted(near, key=lambda i: abs(i - near_index))
    if exact is not None and in_memory:  # the rows near the old place first, then an exact search
        found = next((i for i in order if (listing.cached_row(i) or {}).get("id") == row_id), None)
        return found if found is not None else exact(row_id)
    for index in [*order, *(i for i in range(total) if i not in near)]:
        row = listing.cached_row(index)
        if row is None and read:
            listing.page(index // listing.page_size)
            row = listing.cached_row(index)
        if row is not None and row.get("id") == row_id:
            return index
    return None


class LineTable(ForwardWorkerErrors, ScrollViewBarsInTheSameFrame, can_focus=True):
    """Virtual table: `listing` supplies rows by position, `formatter` turns a row into cells."""

    COMPONENT_CLASSES = {
        "table--header", "table--cursor", "table--muted", "table--evicted", "table--protected",
        "table--critical", "table--high", "table--low", "table--reinforced", "table--cited",
    }
    DEFAULT_CSS = """
    LineTable { height: 1fr; overflow-x: hidden; }
    LineTable > .table--header { text-style: bold; background: $panel; }
    LineTable > .table--cursor { background: $accent 40%; }
    LineTable:focus > .table--cursor { background: $accent; color: $text; }
    LineTable > .table--muted { color: $text-muted; }
    LineTable > .table--evicted { color: $text-disabled; text-style: strike; }
    LineTable > .table--protected { color: $warning; }
    LineTable > .table--critical { color: $error; text-style: bold; }
    LineTable > .table--high { color: $warning; }
    LineTable > .table--low { color: $text-muted; }
    LineTable > .table--reinforced { color: $success; text-style: bold; }
    LineTable > .table--cited { color: $success; }
    """
    BINDINGS = [
        Binding("up,k", "cursor_up", "Up", show=False),
        Binding("down,j", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home,g", "first", "First", show=False),
        Binding("end,G", "last", "Last", show=False),
        Binding("enter", "select", "Open", show=False),
    ]

    cursor = reactive(0, init=False, repaint=False)  # watch_cursor repaints only the lines that change

    @dataclass(eq=False)
    class Highlighted(Message):
        """The cursor is on another row (None: the listing is empty, or the row left it: `gone`)."""

        table: LineTable
        row: Row | None
        gone: Any = None  # the id of the highlighted row, when it left the list (see set_listing)

    @dataclass(eq=False)
    class Selected(Message):
        """Enter or a double click on a row."""

        table: LineTable
        row: Row

    def __init__(self, columns: list[Column], formatter: RowFormatter, *, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.columns = columns
        self.formatter = formatter
        self.listing: Listing | None = None
        self.total = 0
        self._wanted: set[int] = set()
        self._announced: object = object()
        self._fitted: tuple[int, list[int]] = (-1, [])  # (table width, column widths) last fitted
        self._pass_styles: dict[tuple[str | None, bool], Style] | None = None  # see render_lines
        self.gone: Anchor | None = None  # the highlighted row left the list: nothing is selected

    # -- data ---------------------------------------------------------------
    def set_listing(self, listing: Listing, keep_cursor: bool = False, *, by_index: bool = False,
                    located: Located | None = None, quiet: bool = False) -> None:
        """Show a new listing (its count already read).

        `keep_cursor` keeps the cursor on the same row, found by its id, on the same line of the
        view (rows CLEO wrote meanwhile move neither). `located` is where a worker found it
        (`locate`); without it, or when the cursor moved since, only rows in memory are searched.
        When the row left the list, nothing is selected until the cursor moves (`gone`), with a
        notice, unless `quiet` (a write of this app's: the next row takes its place silently); the
        rows in view meanwhile stay where they are (`held_anchor`).
        `by_index` keeps the cursor's index instead (a list following its newest rows).
        """
        anchor = self.held_anchor() if keep_cursor and not by_index else None
        if anchor is not None and (located is None or located.anchor.row_id != anchor.row_id):
            located = locate(listing, anchor, read=False)
        previous_gone = self.gone
        holding_view = previous_gone is not None and anchor is not None and anchor is not previous_gone
        self.listing = listing
        self.total = listing.count()
        self._wanted.clear()
        self.virtual_size = Size(self.size.width, self.total + 1)
        cursor = min(self.cursor, max(0, self.total - 1)) if keep_cursor else 0
        top = int(self.scroll_offset.y) if keep_cursor else 0
        self.gone = previous_gone if keep_cursor and anchor is None else None
        if anchor is not None and located is not None:
            if holding_view:  # nothing selected: the view moves with its first row, the cursor's place too
                self.gone = previous_gone
                if located.index is not None:
                    cursor, top = max(0, min(cursor + located.index - anchor.index, self.total - 1)), located.index
            elif located.index is not None:
                cursor, top = located.index, located.index - anchor.line
            else:
                if located.neighbour is not None:  # the row after it takes its place, on its line
                    cursor, top = located.neighbour, located.neighbour - anchor.line
                if not quiet:
                    self.gone = anchor
                    if previous_gone is None or previous_gone.row_id != anchor.row_id:  # said once
                        self.notify(f"{anchor.row_id} left this list (CLEO changed or deleted it, or it no "
                                    "longer matches the filters): nothing is selected until you move the cursor.",
                                    severity="warning", markup=False, timeout=8)
        top = max(0, min(top, self.total - self._visible_rows))
        self.scroll_to(y=top, animate=False, immediate=True)
        self.set_reactive(LineTable.cursor, cursor)
        self._announced = object()
        self.refresh()
        self._announce()

    def cursor_anchor(self) -> Anchor | None:
        """The cursor's row as an `Anchor` (None when no row is highlighted)."""
        row = self.current_row()
        if row is None:
            return self.gone
        after = self.listing.cached_row(self.cursor + 1) if self.listing is not None else None
        return Anchor(row.get("id"), self.cursor, self.cursor - int(self.scroll_offset.y),
                      None if after is None else after.get("id"))

    def held_anchor(self) -> Anchor | None:
        """What a new listing keeps in place: the cursor's row; while it is gone, the first row in view
        (CLEO writing on: the rows the user looks at must not scroll under them)."""
        if self.gone is None or self.listing is None:
            return self.cursor_anchor()
        top = int(self.scroll_offset.y)
        row = self.listing.cached_row(top)
        return Anchor(row.get("id"), top, 0) if row is not None else self.gone

    def current_row(self) -> Row | None:
        if self.listing is None or self.total == 0 or self.gone is not None:
            return None
        return self.listing.cached_row(self.cursor)

    def redraw(self) -> None:
        """Drop nothing, draw again (tags or overrides changed)."""
        self.refresh()
        self._announce(force=True)

    # -- rendering ----------------------------------------------------------
    def _widths(self) -> list[int]:
        """Column widths at the present width (fitted once per width: every drawn line asks)."""
        width = max(self.scrollable_content_region.width, 20)
        if self._fitted[0] != width:
            self._fitted = (width, fit_columns(self.columns, width))
        return self._fitted[1]

    def shown_columns(self) -> list[str]:
        """The keys of the columns drawn at the table's present width."""
        return [c.key for c, w in zip(self.columns, self._widths(), strict=False) if w]

    def render_lines(self, crop: Region) -> list[Strip]:
        # One drawing pass: every line has the same base and component styles, which
        # Textual computes afresh per call (its cache is cleared on every refresh).
        self._pass_styles = {}
        try:
            return super().render_lines(crop)
        finally:
            self._pass_styles = None

    def _style(self, component: str | None = None, partial: bool = False) -> Style:
        """The base style (no component) or a component's style, kept for the drawing pass."""
        memo = self._pass_styles
        key = (component, partial)
        if memo is not None and key in memo:
            return memo[key]
        style = self.rich_style if component is None else self.get_component_rich_style(component, partial=partial)
        if memo is not None:
            memo[key] = style
        return style

    def _cells_strip(self, cells: list[Cell], base: Style, width: int) -> Strip:
        segments: list[Segment] = []
        drawn = -1  # cells taken, less the separator after the last column
        for (text, cls), col, w in zip(cells, self.columns, self._widths(), strict=False):
            if not w:
                continue
            style = base + self._style(cls, partial=True) if cls else base
            segments.append(Segment(fit_cells(text, w, right=col.right, middle=col.middle), style))  # exactly w cells
            segments.append(Segment(" ", base))
            drawn += w + 1
        if segments:
            segments.pop()
        if drawn == width:  # the usual case: the columns fill the width, nothing to cut or pad
            return Strip(segments, width)
        return Strip(segments).crop_extend(0, width, base)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self._style()
        if y == 0:
            header = self._style("table--header")
            return self._cells_strip([(c.header, "") for c in self.columns], base + header, width)
        index = int(self.scroll_offset.y) + y - 1
        if self.listing is None or index >= self.total:
            return Strip.blank(width, base)
        row = self.listing.cached_row(index)
        line_style = base
        if index == self.cursor and self.gone is None:
            line_style = base + self._style("table--cursor")
        if row is None:
            self._want(index // self.listing.page_size)
            muted = self._style("table--muted", partial=True)
            return self._cells_strip([("…", "")] + [("", "")] * (len(self.columns) - 1), line_style + muted, width)
        cells = self.formatter(row)
        return self._cells_strip([cells.get(c.key, ("", "")) for c in self.columns], line_style, width)

    # -- loading pages --------------------------------------------------------
    def _want(self, page_no: int) -> None:
        if page_no not in self._wanted:
            self._wanted.add(page_no)
            self.call_after_refresh(self._load_wanted)

    def _load_wanted(self) -> None:
        if self._wanted and self.listing is not None:
            self._load_pages(self.listing, sorted(self._wanted))

    @work(thread=True, group="table-pages", exit_on_error=False)
    def _load_pages(self, listing: Listing, pages: list[int]) -> None:
        worker = get_current_worker()
        for page_no in pages:
            if worker.is_cancelled:
                return
            listing.page(page_no)
        self.post_message(self._PagesLoaded(listing, pages))

    @dataclass(eq=False)
    class _PagesLoaded(Message):
        listing: Listing
        pages: list[int]

    def on_line_table__pages_loaded(self, message: LineTable._PagesLoaded) -> None:
        message.stop()
        if message.listing is not self.listing:
            return
        self._wanted.difference_update(message.pages)
        self.refresh()
        self._announce()

    # -- cursor ---------------------------------------------------------------
    @property
    def _visible_rows(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def watch_cursor(self, old: int, new: int) -> None:
        top = int(self.scroll_offset.y)
        if new < top:
            self.scroll_to(y=new, animate=False)
            self.refresh()
        elif new >= top + self._visible_rows:
            self.scroll_to(y=new - self._visible_rows + 1, animate=False)
            self.refresh()
        else:
            # The view stays: only the old and the new cursor lines change.
            self._refresh_row(old, top)
            self._refresh_row(new, top)
        self._announce()

    def _refresh_row(self, index: int, top: int) -> None:
        """Repaint the line of row `index` if it is on screen (the view's first row is `top`)."""
        if top <= index < top + self._visible_rows:
            self.refresh(Region(0, index - top + 1, self.size.width, 1))

    def _announce(self, force: bool = False) -> None:
        if self.gone is not None:
            key: object = ("gone", self.gone.row_id)
            if force or key != self._announced:
                self._announced = key
                self.post_message(self.Highlighted(self, None, gone=self.gone.row_id))
            return
        row = self.current_row()
        if row is None and self.listing is not None and self.total:
            self._want(self.cursor // self.listing.page_size)
            return
        key = None if row is None else row.get("id")
        if force or key != self._announced:
            self._announced = key
            self.post_message(self.Highlighted(self, row))

    def _move(self, to: int) -> None:
        if self.gone is not None:  # the first move after the row left selects again
            self.gone = None
            self._refresh_row(self.cursor, int(self.scroll_offset.y))
            if self.total and max(0, min(self.total - 1, to)) == self.cursor:
                self._announce()
        if self.total:
            self.cursor = max(0, min(self.total - 1, to))

    def action_cursor_up(self) -> None:
        self._move(self.cursor - 1)

    def action_cursor_down(self) -> None:
        # After the row left the list, the row that took its place is the next one.
        self._move(self.cursor + (0 if self.gone is not None else 1))

    def action_page_up(self) -> None:
        self._page(-self._visible_rows)

    def action_page_down(self) -> None:
        self._page(self._visible_rows)

    def _page(self, rows: int) -> None:
        """Move the view a page (as far as it goes) and the cursor as far: it keeps its line on
        screen (moved alone, the view followed it only as far as it had to, one row)."""
        if self.total:
            self.scroll_to(y=int(self.scroll_offset.y) + rows, animate=False)
        self._move(self.cursor + rows)

    def action_first(self) -> None:
        self._move(0)

    def action_last(self) -> None:
        self._move(self.total - 1)

    def action_select(self) -> None:
        row = self.current_row()
        if row is not None:
            self.post_message(self.Selected(self, row))

    def on_click(self, event: events.Click) -> None:
        y = event.get_content_offset(self)
        if y is None or y.y == 0:
            return
        self._move(int(self.scroll_offset.y) + y.y - 1)
        if event.chain == 2:
            self.action_select()
