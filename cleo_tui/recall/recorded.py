"""Every retrieval the brain has recorded, whoever made it: CLEO's log and the recall traces.

CLEO logs each `memory find`, `fetch`, hybrid search and timeline in `brain_retrieval_log`
(the raw query, the returned ids as a JSON list in rank order, its `source`), and which
entries a task used in `brain_usage_log`. cleo-tui's recalls and hippo's are traces in the
seed's tables. This module reads all of them into one shape, so the recall impact, the
replay and the Traces pane see the same list. It never writes, and a row it cannot read
(ids that are not JSON, NULLs, a table from an older CLEO missing a column) is kept and
marked, never raised.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from cleo_tui.brain.cleo_schema import RETRIEVAL_LOG, USAGE_LOG
from cleo_tui.brain.migrations import TRACE_RESULTS, TRACES
from cleo_tui.brain.numbers import finite_int_or_none
from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import as_text
from cleo_tui.safe_text import cut_text, sql_text_prefix

RetrievalOrigin = Literal["cleo", "cleo-tui", "hippo"]


@dataclass(frozen=True)
class RecordedRetrieval:
    """One recorded retrieval: who made it, when, and the ids it returned in rank order.

    `query` is CLEO's raw query text (data: it may hold anything) and None for traces,
    which keep only a hash. `source` is CLEO's `source` (`find-rrf`, `fetch`, …) or the
    trace's pipeline. `malformed` says the returned ids could not be read as a JSON list.
    """

    origin: RetrievalOrigin
    id: int
    created_at: str
    source: str
    query: str | None
    session_id: str | None
    returned: tuple[str, ...]
    malformed: bool = False
    entry_count: int | None = None   # CLEO's own count (None for traces, or not a number)
    tokens_used: int | None = None   # CLEO's estimate (50 a find result, 500 a fetched entry)
    query_bytes: int | None = None   # UTF-8 bytes of the whole query, NULs included (CLEO's rows)
    query_cut: bool = False          # `query` holds only the first QUERY_PREVIEW characters

    @property
    def key(self) -> str:
        """Unique across origins: `cleo:12`, `cleo-tui:5`, `hippo:7`."""
        return f"{self.origin}:{self.id}"


@dataclass(frozen=True)
class EntryUsage:
    """What `brain_usage_log` says of one entry: how often a task used it, which tasks, when last."""

    used: int
    tasks: tuple[str, ...]
    last_used_at: str | None


def has_retrieval_log(brain: Brain) -> bool:
    """The brain holds CLEO's retrieval log with the columns it has always had."""
    return brain.supports("retrieval_log")


def parse_entry_ids(raw: object) -> tuple[tuple[str, ...], bool]:
    """CLEO's `entry_ids` (a JSON list of ids) as a tuple, and whether it was malformed."""
    if raw is None:
        return (), True
    try:
        value = json.loads(as_text(raw))
    except (ValueError, RecursionError):
        return (), True
    if not isinstance(value, list):
        return (), True
    return tuple(as_text(v) for v in value if isinstance(v, str | int)), False


def iter_cleo_retrievals(brain: Brain, page: int = 5000) -> Iterator[RecordedRetrieval]:
    """CLEO's logged retrievals, newest first, read page by page by id."""
    if not brain.supports("retrieval_log"):
        return
    session = "session_id" if brain.features.has_column(RETRIEVAL_LOG, "session_id") else "NULL"
    before: int | None = None
    while True:
        where = "" if before is None else "WHERE id < ?"
        rows = brain.query(f"SELECT id, created_at, source, query, {session}, entry_ids FROM {RETRIEVAL_LOG} "
                           f"{where} ORDER BY id DESC LIMIT ?", ([] if before is None else [before]) + [page])
        for row in rows:
            ids, malformed = parse_entry_ids(row[5])
            yield RecordedRetrieval("cleo", int(row[0]), as_text(row[1]), as_text(row[2]),
                                    None if row[3] is None else as_text(row[3]),
                                    None if row[4] is None else as_text(row[4]), ids, malformed)
        if len(rows) < page:
            return
        before = int(rows[-1][0])


def iter_trace_retrievals(brain: Brain) -> Iterator[RecordedRetrieval]:
    """The recall traces (cleo-tui's, or hippo's in a hippo store) with their results, newest first."""
    if not all(brain.features.has_table(t) for t in (TRACES, TRACE_RESULTS)):
        return
    origin: RetrievalOrigin = brain.kind.trace_origin
    rows = brain.query(f"SELECT t.id, t.ts, t.pipeline, t.session_id, r.memory_id FROM {TRACES} t "
                       f"LEFT JOIN {TRACE_RESULTS} r ON r.trace_id = t.id ORDER BY t.id DESC, r.result_rank")
    current: tuple[int, str, str, str | None] | None = None
    ids: list[str] = []
    for row in rows:
        head = (int(row[0]), as_text(row[1]), as_text(row[2]), None if row[3] is None else as_text(row[3]))
        if current is not None and head[0] != current[0]:
            yield RecordedRetrieval(origin, current[0], current[1], current[2], None, current[3], tuple(ids))
            ids = []
        current = head
        if row[4] is not None:
            ids.append(as_text(row[4]))
    if current is not None:
        yield RecordedRetrieval(origin, current[0], current[1], current[2], None, current[3], tuple(ids))


def recorded_retrievals(brain: Brain) -> list[RecordedRetrieval]:
    """Every recorded retrieval of every origin, CLEO's first, each newest first."""
    return [*iter_cleo_retrievals(brain), *iter_trace_retrievals(brain)]


def entry_usage(brain: Brain) -> dict[str, EntryUsage]:
    """Per entry id, what `brain_usage_log` records as used by a task (`used = 1`); empty without the table."""
    if not {"entry_id", "used"} <= brain.features.columns(USAGE_LOG):
        return {}
    columns = brain.features.columns(USAGE_LOG)
    task = "task_id" if "task_id" in columns else "NULL"
    created = "created_at" if "created_at" in columns else "NULL"
    rows = brain.query(f"SELECT entry_id, {task}, {created} FROM {USAGE_LOG} WHERE used = 1 ORDER BY {created}")
    tallies: dict[str, tuple[int, dict[str, None], str | None]] = {}
    for row in rows:
        entry = as_text(row[0])
        used, tasks, last = tallies.get(entry, (0, {}, None))
        if row[1] is not None:
            tasks[as_text(row[1])] = None
        stamp = None if row[2] is None else as_text(row[2])
        tallies[entry] = (used + 1, tasks, stamp if stamp is not None and (last is None or stamp > last) else last)
    return {entry: EntryUsage(used, tuple(tasks), last) for entry, (used, tasks, last) in tallies.items()}


# -- CLEO's log as a list: filters, pages by keyset, one row in full ---------------------------

QUERY_PREVIEW = 300  # characters of a query a listing reads; one retrieval is read whole
SOURCES_LIMIT = 50


@dataclass(frozen=True)
class CleoFilter:
    """Which of CLEO's retrievals to list; None means any.

    `since` (inclusive) and `until` (exclusive) compare as text with `created_at` written the
    ISO way (`2026-05-01T10:00:00`; CLEO writes a space), so a date or a date-time works.
    `min_results`/`max_results` compare with CLEO's `entry_count`.
    """

    source: str | None = None
    session_id: str | None = None
    since: str | None = None
    until: str | None = None
    min_results: int | None = None
    max_results: int | None = None


# CLEO's `created_at` (`2026-05-01 10:00:00`) in the traces' ISO form, to the second: one clock for both.
CLEO_TIME_KEY = "replace(substr(created_at, 1, 19), ' ', 'T')"


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def time_key(stamp: object) -> str:
    """A stored time (CLEO's `2026-05-01 10:00:00` or a trace's `2026-05-01T10:00:00.000Z`) as the
    text both sort by: `2026-05-01T10:00:00`; empty (oldest) when it is not a date."""
    text = as_text(stamp)
    return text[:19].replace(" ", "T") if _DATE.match(text) else ""


def _cleo_where(flt: CleoFilter, before_id: int | None = None) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    for column, value in (("source", flt.source), ("session_id", flt.session_id)):
        if value is not None:
            clauses.append(f"+{column} = ?")  # '+': walk the id order, never sort by the column's index
            params.append(value)
    if flt.since is not None:
        clauses.append(f"{CLEO_TIME_KEY} >= ?")
        params.append(flt.since)
    if flt.until is not None:
        clauses.append(f"{CLEO_TIME_KEY} < ?")
        params.append(flt.until)
    if flt.min_results is not None:
        clauses.append("entry_count >= ?")
        params.append(int(flt.min_results))
    if flt.max_results is not None:
        clauses.append("entry_count <= ?")
        params.append(int(flt.max_results))
    if before_id is not None:
        clauses.append("id < ?")
        params.append(int(before_id))
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _cleo_columns(brain: Brain, query_chars: int | None) -> str:
    """The SELECT list of a CLEO row; columns an older CLEO lacks read as NULL."""
    has = brain.features.columns(RETRIEVAL_LOG)

    def col(name: str) -> str:
        return name if name in has else "NULL"

    query = "query" if query_chars is None else sql_text_prefix("query", query_chars)
    return (f"id, created_at, source, {query}, {col('session_id')}, entry_ids, {col('entry_count')}, "
            f"{col('tokens_used')}, CASE WHEN typeof(query) = 'text' THEN length(CAST(query AS BLOB)) END")


def _cleo_row(row: object, query_chars: int | None) -> RecordedRetrieval:
    r = list(row)  # type: ignore[call-overload]
    ids, malformed = parse_entry_ids(r[5])
    if r[3] is None:  # NULL, or an empty text (SQLite's substr of an empty blob is NULL)
        query = "" if r[8] == 0 else None
    else:
        query = cut_text(r[3], query_chars) if query_chars else as_text(r[3])
    cut = query_chars is not None and r[8] is not None and int(r[8]) > len((query or "").encode("utf-8"))
    return RecordedRetrieval("cleo", int(r[0]), as_text(r[1]), as_text(r[2]), query,
                             None if r[4] is None else as_text(r[4]), ids, malformed,
                             entry_count=finite_int_or_none(r[6]), tokens_used=finite_int_or_none(r[7]),
                             query_bytes=None if r[8] is None else int(r[8]), query_cut=cut)


def list_cleo_retrievals(brain: Brain, flt: CleoFilter = CleoFilter(), *, before_id: int | None = None,
                         offset: int = 0, limit: int = 100,
                         query_chars: int | None = QUERY_PREVIEW) -> list[RecordedRetrieval]:
    """CLEO's retrievals matching `flt`, newest first by id; page with `before_id` (last id seen) or
    `offset`. Each query is cut to `query_chars` characters (`query_cut` says so; None reads it whole)."""
    if not brain.supports("retrieval_log"):
        return []
    where, params = _cleo_where(flt, before_id)
    rows = brain.query(f"SELECT {_cleo_columns(brain, query_chars)} FROM {RETRIEVAL_LOG}{where} "
                       "ORDER BY id DESC LIMIT ? OFFSET ?", [*params, int(limit), int(offset)])
    return [_cleo_row(r, query_chars) for r in rows]


def count_cleo_retrievals(brain: Brain, flt: CleoFilter = CleoFilter()) -> int:
    """How many of CLEO's retrievals match `flt` (0 without the log)."""
    if not brain.supports("retrieval_log"):
        return 0
    where, params = _cleo_where(flt)
    return int(brain.scalar(f"SELECT count(*) FROM {RETRIEVAL_LOG}{where}", params))


def cleo_retrieval_times(brain: Brain, flt: CleoFilter = CleoFilter()) -> list[tuple[int, str]]:
    """(id, time key) of every matching retrieval, in no order (read through the created_at index when
    CLEO has one): what a listing sorts by time."""
    if not brain.supports("retrieval_log"):
        return []
    where, params = _cleo_where(flt)
    return [(int(r[0]), time_key(r[1])) for r in
            brain.query(f"SELECT id, created_at FROM {RETRIEVAL_LOG}{where}", params)]  # any order: sorted after


def cleo_retrievals_by_id(brain: Brain, ids: Iterable[int],
                          query_chars: int | None = QUERY_PREVIEW) -> dict[int, RecordedRetrieval]:
    """The retrievals with these ids (those that exist)."""
    wanted = [int(i) for i in dict.fromkeys(ids)]
    if not wanted or not brain.supports("retrieval_log"):
        return {}
    found: dict[int, RecordedRetrieval] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        for row in brain.query(f"SELECT {_cleo_columns(brain, query_chars)} FROM {RETRIEVAL_LOG} "
                               f"WHERE id IN ({','.join('?' for _ in chunk)})", chunk):
            found[int(row[0])] = _cleo_row(row, query_chars)
    return found


def get_cleo_retrieval(brain: Brain, retrieval_id: int) -> RecordedRetrieval | None:
    """One of CLEO's retrievals with its whole query, or None."""
    return cleo_retrievals_by_id(brain, [retrieval_id], query_chars=None).get(int(retrieval_id))


def cleo_sources(brain: Brain, limit: int = SOURCES_LIMIT) -> list[str]:
    """The distinct `source` values of CLEO's log, sorted (filter choices)."""
    if not brain.supports("retrieval_log"):
        return []
    return [as_text(r[0]) for r in brain.query(f"SELECT DISTINCT source FROM {RETRIEVAL_LOG} "
                                               "WHERE source IS NOT NULL ORDER BY 1 LIMIT ?", (int(limit),))]


def cleo_sessions(brain: Brain, limit: int = 200) -> list[str]:
    """The distinct non-NULL session ids of CLEO's log, sorted (filter choices)."""
    if not brain.supports("retrieval_log") or not brain.features.has_column(RETRIEVAL_LOG, "session_id"):
        return []
    return [as_text(r[0]) for r in brain.query(f"SELECT DISTINCT session_id FROM {RETRIEVAL_LOG} "
                                               "WHERE session_id IS NOT NULL ORDER BY 1 LIMIT ?", (int(limit),))]


@dataclass(frozen=True)
class UsageEvent:
    """One `brain_usage_log` row: a task used (or did not use) an entry, with the task's outcome."""

    task_id: str | None
    used: bool
    outcome: str | None
    created_at: str | None


@dataclass(frozen=True)
class EntryUse:
    """Everything `brain_usage_log` says of one entry, oldest first."""

    events: tuple[UsageEvent, ...] = field(default_factory=tuple)

    @property
    def used(self) -> int:
        return sum(1 for e in self.events if e.used)

    @property
    def not_used(self) -> int:
        return sum(1 for e in self.events if not e.used)


def usage_of(brain: Brain, entry_ids: Iterable[str]) -> dict[str, EntryUse]:
    """`brain_usage_log`'s rows for each of these ids (used or not); ids without rows are left out."""
    wanted = list(dict.fromkeys(entry_ids))
    columns = brain.features.columns(USAGE_LOG)
    if not wanted or not {"entry_id", "used"} <= columns:
        return {}

    def col(name: str) -> str:
        return name if name in columns else "NULL"

    events: dict[str, list[UsageEvent]] = {}
    order = "created_at, id" if {"created_at", "id"} <= columns else "rowid"
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        rows = brain.query(f"SELECT entry_id, {col('task_id')}, used, {col('outcome')}, {col('created_at')} "
                           f"FROM {USAGE_LOG} WHERE entry_id IN ({','.join('?' for _ in chunk)}) ORDER BY {order}",
                           chunk)
        for row in rows:
            events.setdefault(as_text(row[0]), []).append(UsageEvent(
                None if row[1] is None else as_text(row[1]), bool(finite_int_or_none(row[2])),
                None if row[3] is None else as_text(row[3]), None if row[4] is None else as_text(row[4])))
    return {entry: EntryUse(tuple(found)) for entry, found in events.items()}
