"""A LineTable listing over recall traces: pages of `list_traces`, newest first, cached.

A page next to a cached one is read by keyset (`before_id` = the last id of the
page above), so scrolling down costs the same at any depth; only a jump into an
uncached middle uses OFFSET. Rows are dicts with the trace id under "id" (the
table's key) and the TraceSummary under "trace".
"""

from __future__ import annotations

from cleo_tui.brain.listing import PAGE_SIZE, PagedListing
from cleo_tui.brain.store import Brain
from cleo_tui.recall.reader import TraceFilter, count_traces, list_traces, trace_position


class TraceListing(PagedListing):
    """Traces matching `flt` by position (0 = the newest)."""

    def __init__(self, brain: Brain, flt: TraceFilter, page_size: int = PAGE_SIZE) -> None:
        super().__init__(page_size)
        self.brain = brain
        self.filter = flt
        self._count: int | None = None
        self.keyset_reads = 0  # for tests: how many pages were read by keyset

    def count(self) -> int:
        if self._count is None:
            self._count = count_traces(self.brain, self.filter)
        return self._count

    def index_of(self, trace_id: int) -> int | None:
        """Position of a trace in this listing, or None (reads the brain: in a worker)."""
        return trace_position(self.brain, self.filter, trace_id)

    def cached_index(self, trace_id: int) -> int | None:
        """Position of a trace among the cached rows, if it is cached."""
        for page_no, rows in self._pages.items():
            for offset, row in enumerate(rows):
                if row["id"] == trace_id:
                    return page_no * self.page_size + offset
        return None

    def _read_page(self, page_no: int) -> list[dict]:
        above = self._pages.get(page_no - 1)
        if above and len(above) == self.page_size:
            self.keyset_reads += 1
            traces = list_traces(self.brain, self.filter, before_id=above[-1]["id"], limit=self.page_size)
        else:
            traces = list_traces(self.brain, self.filter, offset=page_no * self.page_size, limit=self.page_size)
        return [{"id": t.id, "trace": t} for t in traces]
