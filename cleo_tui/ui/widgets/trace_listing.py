"""LineTable listings over recall traces (`TraceListing`) and over CLEO's retrievals beside them
(`RetrievalListing`, what the Traces pane shows): pages newest first, cached.

A page next to a cached one is read by keyset (`before_id` = the last id of the
page above), so scrolling down costs the same at any depth; only a jump into an
uncached middle uses OFFSET. Rows are dicts with the trace id under "id" (the
table's key) and the TraceSummary under "trace".
"""

from __future__ import annotations

from cleo_tui.brain.listing import PAGE_SIZE, PagedListing
from cleo_tui.brain.rows import Row
from cleo_tui.brain.store import Brain
from cleo_tui.recall.reader import TraceFilter, count_traces, list_traces, trace_position
from cleo_tui.recall.recorded import list_cleo_retrievals
from cleo_tui.recall.retrievals import (
    Listed,
    Ref,
    RetrievalFilter,
    count_retrievals,
    merged_order,
    parse_key,
    read_refs,
    trace_kind,
)


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

    def _read_page(self, page_no: int) -> list[Row]:
        above = self._pages.get(page_no - 1)
        if above and len(above) == self.page_size:
            self.keyset_reads += 1
            traces = list_traces(self.brain, self.filter, before_id=above[-1]["id"], limit=self.page_size)
        else:
            traces = list_traces(self.brain, self.filter, offset=page_no * self.page_size, limit=self.page_size)
        return [{"id": t.id, "trace": t} for t in traces]


def listed_row(listed: Listed) -> Row:
    """A listing row: a trace keeps its number as "id"; a CLEO retrieval is "cleo:N"."""
    return {"id": listed.id if listed.cleo is None else listed.key, "kind": listed.kind,
            "trace": listed.trace, "cleo": listed.cleo}


class RetrievalListing(PagedListing):
    """CLEO's retrievals and the traces matching `flt` by position (0 = the newest).

    When only one kind can be listed (a CLEO brain where nobody recalled through cleo-tui, a
    hippo store, or a filter that picks one kind), the rows are that kind's, newest first by
    id, a page read by keyset next to a cached one as `TraceListing` does: no cost grows with
    the log. With both, the order — both kinds by time — is read once as (time, id) pairs
    (`merged_order`), after which a page is read by id. A row deleted after the order was read
    stays in its place, marked gone.
    """

    def __init__(self, brain: Brain, flt: RetrievalFilter, page_size: int = PAGE_SIZE) -> None:
        super().__init__(page_size)
        self.brain = brain
        self.filter = flt
        self._counts: tuple[int, int] | None = None
        self._order: list[Ref] | None = None
        self.keyset_reads = 0  # for tests: how many pages were read by keyset

    def count(self) -> int:
        if self._counts is None:
            self._counts = count_retrievals(self.brain, self.filter)
            if all(self._counts):
                self._order = merged_order(self.brain, self.filter)
        return sum(self._counts)

    def kinds(self) -> tuple[int, int]:
        """(CLEO's retrievals, traces) listed."""
        self.count()
        return self._counts or (0, 0)

    @property
    def merged(self) -> bool:
        """Both kinds are listed, in the order read up front."""
        self.count()
        return self._order is not None

    def index_of(self, row_id: int | str) -> int | None:
        """Position of a row (a trace's number, or "cleo:N"), or None when the listing does not hold it.

        Merged, from the order read up front; else the cached pages first, then page by page (one kind is
        listed newest first by id, a page a millisecond: call it in a worker).
        """
        if not self.merged:
            for page_no, rows in list(self._pages.items()):
                for offset, row in enumerate(rows):
                    if row["id"] == row_id:
                        return page_no * self.page_size + offset
            for page_no in range(-(-self.count() // self.page_size)):
                for offset, row in enumerate(self.page(page_no)):
                    if row["id"] == row_id:
                        return page_no * self.page_size + offset
            return None
        key = parse_key(row_id) if isinstance(row_id, str) else ("trace", int(row_id))
        if key is None:
            return None
        wanted = (0 if key[0] == "cleo" else 1, key[1])
        for index, ref in enumerate(self._order or ()):
            if (ref[1], ref[2]) == wanted:
                return index
        return None

    def _read_page(self, page_no: int) -> list[Row]:
        if not self.merged:
            return self._read_one_kind(page_no)
        refs = (self._order or [])[page_no * self.page_size:(page_no + 1) * self.page_size]
        found = {(0 if x.cleo is not None else 1, x.id): x for x in read_refs(self.brain, refs)}
        kind = trace_kind(self.brain)
        rows = []
        for _, which, ident in refs:
            listed = found.get((which, ident))
            rows.append(listed_row(listed) if listed is not None else
                        {"id": f"cleo:{ident}" if which == 0 else ident, "kind": "cleo" if which == 0 else kind,
                         "trace": None, "cleo": None})
        return rows

    def _read_one_kind(self, page_no: int) -> list[Row]:
        """A page of the one kind listed, by keyset below the cached page above it, else by offset."""
        above = self._pages.get(page_no - 1)
        before = None
        if above and len(above) == self.page_size:
            self.keyset_reads += 1
            before = int(str(above[-1]["id"]).removeprefix("cleo:"))
        offset = 0 if before is not None else page_no * self.page_size
        cleo_flt, trace_flt = self.filter.cleo_filter(), self.filter.trace_filter()
        if self.kinds()[0] and cleo_flt is not None:
            return [listed_row(Listed("cleo", cleo=r)) for r in
                    list_cleo_retrievals(self.brain, cleo_flt, before_id=before, offset=offset, limit=self.page_size)]
        if trace_flt is None:
            return []
        kind = trace_kind(self.brain)
        return [listed_row(Listed(kind, trace=t)) for t in
                list_traces(self.brain, trace_flt, before_id=before, offset=offset, limit=self.page_size)]
