"""CLEO's own retrievals and the recall traces in one list, newest first (the Traces pane, `traces`).

CLEO logs every `memory find`, `fetch`, hybrid search and timeline in `brain_retrieval_log`
(`cleo_tui.recall.recorded`); cleo-tui's recalls (or hippo's, in a hippo store) are traces
(`cleo_tui.recall.reader`). The list sorts both by time, newest first (CLEO's
`2026-05-01 10:00:00` and a trace's `2026-05-01T10:00:00.000Z` compared to the second),
from an order of (time, id) pairs read once per listing (two narrow scans and a sort),
after which any page is read by id; a listing of one kind only pages by keyset on its id
(`cleo_tui.ui.widgets.trace_listing.RetrievalListing`).

Each row says whose it is (`kind`: "cleo", "cleo-tui" or "hippo"); keys like `cleo:12`
name a CLEO retrieval where a bare number names a trace. Opening a CLEO retrieval resolves
its returned ids, in rank order, to what each memory is now as CLEO sees it (live, evicted,
hidden from its search, deleted) with what `brain_usage_log` says of each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from cleo_tui.brain.store import Brain
from cleo_tui.recall.reader import TraceFilter, TraceSummary, count_traces, trace_times, traces_by_id
from cleo_tui.recall.recorded import (
    QUERY_PREVIEW,
    CleoFilter,
    EntryUse,
    RecordedRetrieval,
    RetrievalOrigin,
    cleo_retrieval_times,
    cleo_retrievals_by_id,
    count_cleo_retrievals,
    get_cleo_retrieval,
    time_key,
    usage_of,
)
from cleo_tui.recall.resolve import CleoState, ResolvedMemory, cleo_state, resolve_memories

CLEO: RetrievalOrigin = "cleo"
KINDS = ("cleo", "cleo-tui", "hippo")
_KEY = re.compile(r"^\s*(?:(cleo|cleo-tui|hippo|trace):)?(\d{1,18})\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class RetrievalFilter:
    """Which retrievals to list.

    `cleo` and `traces` say which kinds may appear. `source` (CLEO's `source`, e.g. `find-rrf`)
    keeps CLEO's retrievals only. Of `trace`, the session, the time bounds and the result counts
    apply to both kinds; tenant, pipeline, "with outcome" and "explained" are the traces' own,
    so setting one leaves CLEO's retrievals out (CLEO records no outcome against a retrieval).
    """

    cleo: bool = True
    traces: bool = True
    source: str | None = None
    trace: TraceFilter = TraceFilter()

    def cleo_filter(self) -> CleoFilter | None:
        """The filter of CLEO's log, or None when no CLEO retrieval can match."""
        t = self.trace
        if not self.cleo or t.tenant_id is not None or t.pipeline is not None or t.has_outcome is True \
                or t.explain_mode is True:
            return None
        return CleoFilter(source=self.source, session_id=t.session_id, since=t.since, until=t.until,
                          min_results=t.min_results, max_results=t.max_results)

    def trace_filter(self) -> TraceFilter | None:
        """The traces' filter, or None when no trace can match."""
        return self.trace if self.traces and self.source is None else None


def trace_kind(brain: Brain) -> RetrievalOrigin:
    """Whose the traces of this file are: hippo's in a hippo store, cleo-tui's otherwise."""
    return brain.kind.trace_origin


@dataclass(frozen=True)
class Listed:
    """One row of the list: a CLEO retrieval (`cleo`) or a trace (`trace`)."""

    kind: RetrievalOrigin
    cleo: RecordedRetrieval | None = None
    trace: TraceSummary | None = None

    @property
    def id(self) -> int:
        return self.cleo.id if self.cleo is not None else self.trace.id if self.trace is not None else 0

    @property
    def key(self) -> str:
        """`cleo:12` for a CLEO retrieval; a trace's bare id (`traces --show` takes both)."""
        return f"cleo:{self.id}" if self.cleo is not None else str(self.id)

    @property
    def time(self) -> str:
        return self.cleo.created_at if self.cleo is not None else self.trace.ts if self.trace is not None else ""


def parse_key(text: str) -> tuple[str, int] | None:
    """`12`, `trace:12`, `cleo-tui:12`, `hippo:12` → ("trace", 12); `cleo:12` → ("cleo", 12); else None."""
    match = _KEY.match(text or "")
    if match is None:
        return None
    return ("cleo" if (match.group(1) or "").lower() == "cleo" else "trace", int(match.group(2)))


# An entry of a merged order: (time key, 0 for CLEO / 1 for a trace, id).
Ref = tuple[str, int, int]


def merged_order(brain: Brain, flt: RetrievalFilter) -> list[Ref]:
    """Every matching retrieval of both kinds, newest first (same second: CLEO's first, then the
    higher id); a row whose time is not a date sorts last."""
    cleo_flt, trace_flt = flt.cleo_filter(), flt.trace_filter()
    refs = [(key, 0, i) for i, key in cleo_retrieval_times(brain, cleo_flt)] if cleo_flt else []
    refs += [(time_key(ts), 1, i) for i, ts in trace_times(brain, trace_flt)] if trace_flt else []
    refs.sort(key=lambda ref: (ref[0], -ref[1], ref[2]), reverse=True)
    return refs


def read_refs(brain: Brain, refs: Iterable[Ref], query_chars: int | None = QUERY_PREVIEW) -> list[Listed]:
    """The rows of these refs, in their order (rows deleted meanwhile are left out); CLEO's queries
    cut to `query_chars` characters (None: whole)."""
    refs = list(refs)
    cleo = cleo_retrievals_by_id(brain, [r[2] for r in refs if r[1] == 0], query_chars)
    traces = traces_by_id(brain, [r[2] for r in refs if r[1] == 1])
    kind = trace_kind(brain)
    out: list[Listed] = []
    for _, which, ident in refs:
        if which == 0 and ident in cleo:
            out.append(Listed(CLEO, cleo=cleo[ident]))
        elif which == 1 and ident in traces:
            out.append(Listed(kind, trace=traces[ident]))
    return out


def count_retrievals(brain: Brain, flt: RetrievalFilter = RetrievalFilter()) -> tuple[int, int]:
    """(CLEO's retrievals, traces) matching `flt`."""
    cleo_flt, trace_flt = flt.cleo_filter(), flt.trace_filter()
    return (count_cleo_retrievals(brain, cleo_flt) if cleo_flt else 0,
            count_traces(brain, trace_flt) if trace_flt else 0)


def list_retrievals(brain: Brain, flt: RetrievalFilter = RetrievalFilter(), limit: int = 50,
                    query_chars: int | None = QUERY_PREVIEW) -> list[Listed]:
    """The newest `limit` retrievals of both kinds matching `flt`."""
    return read_refs(brain, merged_order(brain, flt)[:max(0, limit)], query_chars)


def iter_retrievals(brain: Brain, flt: RetrievalFilter = RetrievalFilter(), oldest_first: bool = False,
                    page: int = 500, query_chars: int | None = QUERY_PREVIEW) -> Iterator[Listed]:
    """Every matching retrieval, newest (or oldest) first, read a page at a time."""
    order = merged_order(brain, flt)
    if oldest_first:
        order.reverse()
    for start in range(0, len(order), page):
        yield from read_refs(brain, order[start:start + page], query_chars)


# -- one CLEO retrieval, opened ------------------------------------------------------------------

@dataclass(frozen=True)
class CleoResult:
    """One id a CLEO retrieval returned: its rank, what it is now, what the usage log says of it."""

    rank: int
    memory_id: str
    memory: ResolvedMemory
    state: CleoState      # cleo_state: live, evicted, hidden or deleted
    use: EntryUse | None  # None: no brain_usage_log row names it


@dataclass(frozen=True)
class OpenCleoRetrieval:
    retrieval: RecordedRetrieval
    results: list[CleoResult]


def cleo_results(brain: Brain, retrieval: RecordedRetrieval) -> list[CleoResult]:
    """The ids a retrieval returned, in rank order, each resolved and with its usage."""
    memories = resolve_memories(brain, retrieval.returned)
    uses = usage_of(brain, retrieval.returned)
    return [CleoResult(rank, memory_id, memories[memory_id], cleo_state(memories[memory_id]), uses.get(memory_id))
            for rank, memory_id in enumerate(retrieval.returned, start=1)]


def open_cleo_retrieval(brain: Brain, retrieval_id: int) -> OpenCleoRetrieval | None:
    """One of CLEO's retrievals (its whole query) with its results resolved, or None."""
    retrieval = get_cleo_retrieval(brain, retrieval_id)
    if retrieval is None:
        return None
    return OpenCleoRetrieval(retrieval, cleo_results(brain, retrieval))
