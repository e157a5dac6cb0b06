"""Random access by position over a filtered, sorted list of observations.

The TUI's table asks for "rows 40,000-40,100"; this answers from SQLite a page
at a time and keeps a few pages. A page next to a cached one is read by keyset
(cheap at any depth); the last page is read backwards from the end; only a
jump into the unknown middle uses OFFSET. An optional *lead* — ids ordered in
Python, e.g. cited observations by citation count — comes before the rest.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from cleo_tui.brain.observations import (
    ObservationQuery,
    count_observations,
    cursor_of,
    page_at_offset,
    page_observations,
    position_of,
)
from cleo_tui.brain.rows import Row
from cleo_tui.brain.store import Brain

PAGE_SIZE = 100
NARROW_BELOW = 2000  # fewer matches than this: let SQLite use the filters' indexes
CACHED_PAGES = 24


class PagedListing:
    """Rows by position, read a page at a time by `_read_page` and kept in a small LRU cache.

    Subclasses say how to count and how to read one page; pages may be asked for
    from a worker thread while the UI thread looks rows up in the cache.
    """

    def __init__(self, page_size: int = PAGE_SIZE) -> None:
        self.page_size = page_size
        self._pages: OrderedDict[int, list[Row]] = OrderedDict()
        self._lock = threading.Lock()
        self.pages_read = 0  # for tests and benchmarks: how many pages came from SQLite

    def count(self) -> int:
        raise NotImplementedError

    def _read_page(self, page_no: int) -> list[Row]:
        raise NotImplementedError

    def cached_row(self, index: int) -> Row | None:
        """The row at `index` if its page is in memory (never touches SQLite)."""
        page = self._pages.get(index // self.page_size)
        if page is None:
            return None
        offset = index % self.page_size
        return page[offset] if offset < len(page) else None

    def row(self, index: int) -> Row | None:
        """The row at `index`, reading its page when needed."""
        page = self.page(index // self.page_size)
        offset = index % self.page_size
        return page[offset] if offset < len(page) else None

    def page(self, page_no: int) -> list[Row]:
        with self._lock:
            if page_no in self._pages:
                self._pages.move_to_end(page_no)
                return self._pages[page_no]
            rows = self._read_page(page_no)
            self.pages_read += 1
            self._pages[page_no] = rows
            while len(self._pages) > CACHED_PAGES:
                self._pages.popitem(last=False)
            return rows




class ObservationListing(PagedListing):
    """Rows of `query` by position; `lead` ids (already filtered and ordered) come first."""

    def __init__(self, brain: Brain, query: ObservationQuery, lead: list[str] | None = None,
                 page_size: int = PAGE_SIZE) -> None:
        super().__init__(page_size)
        self.brain = brain
        self.lead = lead or []
        self.rest_query = query.with_(ids_not_in=tuple(self.lead)) if self.lead else query
        self._rest_count: int | None = None

    def count(self) -> int:
        if self._rest_count is None:
            self._rest_count = count_observations(self.brain, self.rest_query)
            if self._rest_count < NARROW_BELOW:
                self.rest_query = self.rest_query.with_(narrow=True)
        return len(self.lead) + self._rest_count

    def index_of(self, observation_id: str) -> int | None:
        """Where `observation_id` is in this listing now, or None (deleted, or not matching): reads the brain."""
        if observation_id in self.lead:
            return self.lead.index(observation_id)
        found = position_of(self.brain, self.rest_query, observation_id)
        return None if found is None else len(self.lead) + found

    def _read_page(self, page_no: int) -> list[Row]:
        start = page_no * self.page_size
        end = min(start + self.page_size, self.count())
        if start >= end:
            return []
        rows: list[Row] = []
        if start < len(self.lead):
            ids = self.lead[start:min(end, len(self.lead))]
            by_id = {r["id"]: r for r in page_observations(
                self.brain, self.rest_query.with_(ids_in=tuple(ids), ids_not_in=None), None, len(ids))}
            rows += [by_id[i] for i in ids if i in by_id]
            start = len(self.lead)
        if start < end:
            rows += self._read_rest(start - len(self.lead), end - start)
        return rows

    def _read_rest(self, offset: int, limit: int) -> list[Row]:
        q = self.rest_query
        total = self._rest_count or 0
        before = self._neighbour_row(offset - 1)
        if before is not None:
            return page_observations(self.brain, q, cursor_of(self.brain, q, before), limit)
        after = self._neighbour_row(offset + limit)
        if after is not None:
            return page_observations(self.brain, q, cursor_of(self.brain, q, after), limit, backwards=True)
        if offset + limit >= total:
            return page_observations(self.brain, q, None, limit, backwards=True)
        if offset == 0:
            return page_observations(self.brain, q, None, limit)
        return page_at_offset(self.brain, q, offset, limit)

    def _neighbour_row(self, rest_index: int) -> Row | None:
        """A cached row of the rest segment at `rest_index`, if any (for keyset reads)."""
        if rest_index < 0:
            return None
        index = rest_index + len(self.lead)
        if index < len(self.lead):
            return None
        return self.cached_row(index)
