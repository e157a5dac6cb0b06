"""Reading recall traces: lists with filters and paging, one trace's results and outcomes.

Works on any file holding hippo's three trace tables: a cleo-tui or CLEO brain,
or a hippo store. Lists are newest first by trace id (the order traces were
written); `before_id` pages by keyset so the next page costs the same as the
first however many traces there are. Malformed JSON in a row is reported on
that row, never raised.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from cleo_tui.brain.migrations import TRACE_OUTCOMES, TRACE_RESULTS, TRACES
from cleo_tui.brain.numbers import finite_int_or_none, finite_or_none
from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import as_text
from cleo_tui.recall.rerank import RerankStep, steps_from_json
from cleo_tui.recall.resolve import CHUNK, ResolvedMemory, resolve_memories

PAGE = 100


@dataclass(frozen=True)
class TraceFilter:
    """Which traces to list; None means any.

    `since` (inclusive) and `until` (exclusive) compare as text with the ISO
    `ts` column, so a date like `2026-05-01` works as well as a full timestamp.
    """

    tenant_id: str | None = None
    session_id: str | None = None
    pipeline: str | None = None
    since: str | None = None
    until: str | None = None
    has_outcome: bool | None = None
    explain_mode: bool | None = None
    min_results: int | None = None
    max_results: int | None = None


@dataclass(frozen=True)
class TraceSummary:
    """One trace row, with the number of positive and negative outcome events against it."""

    id: int
    ts: str
    tenant_id: str
    session_id: str | None
    pipeline: str
    query_hash: str
    query_length: int
    result_count: int
    explain_mode: bool
    positive: int
    negative: int

    @property
    def outcome(self) -> str:
        """none, positive, negative or mixed."""
        if self.positive and self.negative:
            return "mixed"
        return "positive" if self.positive else "negative" if self.negative else "none"


@dataclass(frozen=True)
class TraceResult:
    """One ranked result of a trace; `steps` is None without explain, when malformed, or when
    no stage changed the score (then `explain_mode`, the trace's, tells the two apart)."""

    rank: int
    memory_id: str
    score: float
    steps: tuple[RerankStep, ...] | None
    steps_error: str | None
    memory: ResolvedMemory
    explain_mode: bool = False


@dataclass(frozen=True)
class TraceOutcome:
    id: int
    trace_id: int
    ts: str
    tenant_id: str
    outcome: str
    memory_ids: tuple[str, ...]
    malformed: bool = False


def has_traces(brain: Brain) -> bool:
    """The file holds hippo's trace tables."""
    return brain.supports("traces")


_SUMMARY_COLUMNS = (
    "t.id, t.ts, t.tenant_id, t.session_id, t.pipeline, t.query_hash, t.query_length, t.result_count, "
    "t.explain_mode, "
    f"(SELECT count(*) FROM {TRACE_OUTCOMES} o WHERE o.trace_id = t.id AND o.outcome = 'positive'), "
    f"(SELECT count(*) FROM {TRACE_OUTCOMES} o WHERE o.trace_id = t.id AND o.outcome = 'negative')"
)


def _where(flt: TraceFilter, before_id: int | None = None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    for column, value in (("tenant_id", flt.tenant_id), ("session_id", flt.session_id),
                          ("pipeline", flt.pipeline)):
        if value is not None:
            clauses.append(f"+t.{column} = ?")  # '+': walk the id order, never sort a tenant's traces
            params.append(value)
    if flt.since is not None:
        clauses.append("t.ts >= ?")
        params.append(flt.since)
    if flt.until is not None:
        clauses.append("t.ts < ?")
        params.append(flt.until)
    if flt.min_results is not None:
        clauses.append("t.result_count >= ?")
        params.append(int(flt.min_results))
    if flt.max_results is not None:
        clauses.append("t.result_count <= ?")
        params.append(int(flt.max_results))
    if flt.explain_mode is not None:
        clauses.append("t.explain_mode != 0" if flt.explain_mode else "t.explain_mode = 0")
    if flt.has_outcome is not None:
        exists = f"EXISTS (SELECT 1 FROM {TRACE_OUTCOMES} o WHERE o.trace_id = t.id)"
        clauses.append(exists if flt.has_outcome else f"NOT {exists}")
    if before_id is not None:
        clauses.append("t.id < ?")
        params.append(before_id)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _summary(row: Any) -> TraceSummary:
    return TraceSummary(
        id=int(row[0]), ts=as_text(row[1]), tenant_id=as_text(row[2]),
        session_id=None if row[3] is None else as_text(row[3]), pipeline=as_text(row[4]),
        query_hash=as_text(row[5]), query_length=finite_int_or_none(row[6]) or 0,
        result_count=finite_int_or_none(row[7]) or 0,
        explain_mode=bool(row[8]), positive=int(row[9]), negative=int(row[10]))


def list_traces(brain: Brain, flt: TraceFilter = TraceFilter(), *, before_id: int | None = None,
                offset: int = 0, limit: int = PAGE) -> list[TraceSummary]:
    """Traces matching `flt`, newest first; page with `before_id` (last id seen) or `offset`."""
    if not brain.supports("traces"):
        return []
    where, params = _where(flt, before_id)
    sql = f"SELECT {_SUMMARY_COLUMNS} FROM {TRACES} t{where} ORDER BY t.id DESC LIMIT ? OFFSET ?"
    return [_summary(r) for r in brain.query(sql, [*params, int(limit), int(offset)])]


def iter_traces(brain: Brain, flt: TraceFilter = TraceFilter(), page: int = 1000) -> Iterator[TraceSummary]:
    """Every matching trace, newest first, read page by page."""
    before: int | None = None
    while True:
        rows = list_traces(brain, flt, before_id=before, limit=page)
        yield from rows
        if len(rows) < page:
            return
        before = rows[-1].id


def count_traces(brain: Brain, flt: TraceFilter = TraceFilter()) -> int:
    if not brain.supports("traces"):
        return 0
    where, params = _where(flt)
    return int(brain.scalar(f"SELECT count(*) FROM {TRACES} t{where}", params))


def trace_position(brain: Brain, flt: TraceFilter, trace_id: int) -> int | None:
    """Where trace `trace_id` is among the traces matching `flt`, newest first (None: not among them)."""
    if not brain.supports("traces"):
        return None
    where, params = _where(flt)
    also = " AND " if where else " WHERE "
    if not brain.scalar(f"SELECT count(*) FROM {TRACES} t{where}{also}t.id = ?", [*params, int(trace_id)]):
        return None
    return int(brain.scalar(f"SELECT count(*) FROM {TRACES} t{where}{also}t.id > ?", [*params, int(trace_id)]))


def get_trace(brain: Brain, trace_id: int) -> TraceSummary | None:
    if not brain.supports("traces"):
        return None
    row = brain.query_one(f"SELECT {_SUMMARY_COLUMNS} FROM {TRACES} t WHERE t.id = ?", (int(trace_id),))
    return None if row is None else _summary(row)


def _steps(raw: Any) -> tuple[tuple[RerankStep, ...] | None, str | None]:
    if raw is None:
        return None, None
    try:
        return tuple(steps_from_json(json.loads(as_text(raw)))), None
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        return None, f"malformed rerank_json ({exc})"
    except RecursionError:
        return None, "malformed rerank_json (nested too deeply to read)"


def trace_results(brain: Brain, trace_id: int, resolve: bool = True) -> list[TraceResult]:
    """The trace's results in rank order, each with its steps and what its id resolves to now."""
    if not brain.supports("traces"):
        return []
    rows = brain.query(f"SELECT result_rank, memory_id, score, rerank_json FROM {TRACE_RESULTS} "
                       "WHERE trace_id = ? ORDER BY result_rank", (int(trace_id),))
    ids = [as_text(r[1]) for r in rows]
    memories = resolve_memories(brain, ids) if resolve else {}
    explain = bool(brain.scalar(f"SELECT explain_mode FROM {TRACES} WHERE id = ?", (int(trace_id),)))
    out = []
    for row, memory_id in zip(rows, ids, strict=True):
        steps, error = _steps(row[3])
        memory = memories.get(memory_id) or ResolvedMemory(memory_id, None, "unresolved", "", "", None)
        score = finite_or_none(row[2])  # a foreign writer's inf or text: shown as 0, never a crash
        out.append(TraceResult(finite_int_or_none(row[0]) or 0, memory_id, 0.0 if score is None else score,
                               steps, error, memory, explain))
    return out


def _memory_ids(raw: Any) -> tuple[tuple[str, ...], bool]:
    try:
        value = json.loads(as_text(raw))
    except (ValueError, RecursionError):  # malformed, or nested too deeply to read
        return (), True
    if not isinstance(value, list):
        return (), True
    return tuple(as_text(v) for v in value), False


def trace_outcomes(brain: Brain, trace_id: int) -> list[TraceOutcome]:
    """Outcome events recorded against one trace, oldest first."""
    if not brain.supports("traces"):
        return []
    rows = brain.query(f"SELECT id, trace_id, ts, tenant_id, outcome, memory_ids_json FROM {TRACE_OUTCOMES} "
                       "WHERE trace_id = ? ORDER BY id", (int(trace_id),))
    return [TraceOutcome(int(r[0]), int(r[1]), as_text(r[2]), as_text(r[3]), as_text(r[4]), *_memory_ids(r[5]))
            for r in rows]


def outcome_counts(brain: Brain, memory_ids: Iterable[str], tenant_id: str) -> dict[str, tuple[int, int]]:
    """(positive, negative) outcome events crediting each id, from earlier traces of `tenant_id`."""
    wanted = list(dict.fromkeys(memory_ids))
    if not wanted or not brain.supports("traces"):
        return {}
    events: dict[int, tuple[str, Any]] = {}
    for start in range(0, len(wanted), CHUNK):
        chunk = wanted[start:start + CHUNK]
        sql = (f"SELECT DISTINCT o.id, o.outcome, o.memory_ids_json FROM {TRACE_RESULTS} r "
               f"JOIN {TRACE_OUTCOMES} o ON o.trace_id = r.trace_id "
               f"WHERE r.tenant_id = ? AND o.tenant_id = ? AND r.memory_id IN ({','.join('?' for _ in chunk)})")
        for row in brain.query(sql, [tenant_id, tenant_id, *chunk]):
            events[int(row[0])] = (as_text(row[1]), row[2])
    wanted_set = set(wanted)
    counts: dict[str, list[int]] = {}
    for outcome, raw in events.values():
        for memory_id in set(_memory_ids(raw)[0]) & wanted_set:
            tally = counts.setdefault(memory_id, [0, 0])
            tally[0 if outcome == "positive" else 1] += 1
    return {k: (v[0], v[1]) for k, v in counts.items()}


def trace_times(brain: Brain, flt: TraceFilter = TraceFilter()) -> list[tuple[int, str]]:
    """(id, ts) of every matching trace, newest first by id: what a listing merges by time."""
    if not brain.supports("traces"):
        return []
    where, params = _where(flt)
    return [(int(r[0]), as_text(r[1])) for r in brain.query(f"SELECT t.id, t.ts FROM {TRACES} t{where} "
                                                            "ORDER BY t.id DESC", params)]


def traces_by_id(brain: Brain, ids: Iterable[int]) -> dict[int, TraceSummary]:
    """The traces with these ids (those that exist)."""
    wanted = [int(i) for i in dict.fromkeys(ids)]
    if not wanted or not brain.supports("traces"):
        return {}
    found: dict[int, TraceSummary] = {}
    for start in range(0, len(wanted), CHUNK):
        chunk = wanted[start:start + CHUNK]
        for row in brain.query(f"SELECT {_SUMMARY_COLUMNS} FROM {TRACES} t WHERE t.id IN "
                               f"({','.join('?' for _ in chunk)})", chunk):
            summary = _summary(row)
            found[summary.id] = summary
    return found
