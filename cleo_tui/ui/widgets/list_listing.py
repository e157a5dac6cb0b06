"""A LineTable listing over an in-memory sequence: a window of it, rows built only when drawn.

The Prune pane's lists are slices of one prepared pool (dropped = the first n rows
of the drop order, kept = the rest). A new budget is a new window over the same
list — O(1) — and only the rows on screen are ever turned into dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from cleo_tui.brain.rows import Row

PAGE_SIZE = 100
T = TypeVar("T")  # what the sequence holds


class ListListing(Generic[T]):
    """Rows `start..stop` of `items`; `to_row(index, item)` makes the dict the table draws (needs "id")."""

    page_size = PAGE_SIZE
    in_memory = True  # `index_of` may run on the UI thread (see table.locate)

    def __init__(self, items: Sequence[T], to_row: Callable[[int, T], Row],
                 start: int = 0, stop: int | None = None) -> None:
        self.items = items
        self.to_row = to_row
        self.start = max(0, start)
        self.stop = len(items) if stop is None else max(self.start, min(stop, len(items)))

    def count(self) -> int:
        return self.stop - self.start

    def cached_row(self, index: int) -> Row | None:
        """The row at `index` of the window (always in memory), or None past the end."""
        if not 0 <= index < self.count():
            return None
        absolute = self.start + index
        return self.to_row(absolute, self.items[absolute])

    def page(self, page_no: int) -> list[Row]:
        first = page_no * self.page_size
        rows = (self.cached_row(i) for i in range(first, min(first + self.page_size, self.count())))
        return [row for row in rows if row is not None]

    def index_of(self, row_id: Any) -> int | None:
        """The position of the row whose id is `row_id` in the window, or None. Items that can list
        their ids (the prune pool's `EntryView.ids`) are searched without making a row per item."""
        ids = getattr(self.items, "ids", None)
        if callable(ids):
            window = ids(self.stop)[self.start:]
            return window.index(row_id) if row_id in window else None
        for index in range(self.count()):
            row = self.cached_row(index)
            if row is not None and row.get("id") == row_id:
                return index
        return None
