"""A LineTable listing over recall traces: pages of `list_traces`, newest first, cached.

A page next to a cached one is read by keyset (`before_id` = the last id of the
page above), so scrolling down costs the same at any depth; only a jump into an
uncached middle uses OFFSET. Rows are dicts with the trace id under "id" (the
table's key) and the TraceSummary under "trace".
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from cleo_tui.brain.store import Brain
from cleo_tui.recall.reader import TraceFilter, count_traces, list_traces

PAGE_SIZE = 100
CACHED_PAGES = 24


class TraceListing:
    """Traces matching `flt` by position (0 = the newest)."""

    def __init__(self, brain: Brain, flt: TraceFilter, page_size: int = PAGE_SIZE) -> None:
        self.brain = brain
        self.filter = flt
        self.page_size = page_size
        self._pages: OrderedDict[int, list[dict]] = OrderedDict()
        self._count: int | None = None
        self.pages_read = 0  # for tests: how many pages came from SQLite
        self.keyset_reads = 0  # …and how many of them by keyset
        self._lock = threading.Lock()  # pages are read from worker threads

    def count(self) -> int:
        if self._count is None:
            self._count = count_traces(self.brain, self.filter)
        return self._count

    def cached_row(self, index: int) -> dict | None:
        """The row at `index` if its page is in memory (never touches SQLite)."""
        page = self._pages.get(index // self.page_size)
        if page is None:
            return None
        offset = index % self.page_size
        return page[offset] if offset < len(page) else None

    def index_of(self, trace_id: int) -> int | None:
        """Position of a trace among the cached rows, if it is cached."""
        for page_no, rows in self._pages.items():
            for offset, row in enumerate(rows):
                if row["id"] == trace_id:
                    return page_no * self.page_size + offset
        return None

    def page(self, page_no: int) -> list[dict]:
        with self._lock:
            if page_no in self._pages:
                self._pages.move_to_end(page_no)
                return self._pages[page_no]
            rows = [{"id": t.id, "trace": t} for t in self._read(page_no)]
            self.pages_read += 1
            self._pages[page_no] = rows
            while len(self._pages) > CACHED_PAGES:
                self._pages.popitem(last=False)
            return rows

    def _read(self, page_no: int):
        above = self._pages.get(page_no - 1)
        if above and len(above) == self.page_size:
            self.keyset_reads += 1
            return list_traces(self.brain, self.filter, before_id=above[-1]["id"], limit=self.page_size)
        return list_traces(self.brain, self.filter, offset=page_no * self.page_size, limit=self.page_size)
