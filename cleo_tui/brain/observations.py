"""Reading observations: filters, full-text search, sorting and keyset paging.

Pages are addressed by a keyset cursor `(sort value, rowid)`, so reading the
next page of a million-row brain costs the same as reading the first. Rows
whose sort value is NULL (CLEO's history allows them) form their own segment
at the end of a descending order and the start of an ascending one.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, cast

from cleo_tui.brain import cleo_rules
from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.rows import ObservationListRow, ObservationState, Row
from cleo_tui.brain.store import Brain

# Columns the table view needs; absent ones read as NULL. The narrative is cut
# short here: a 1 MB narrative must not travel with every page.
LIST_COLUMNS = (
    "id", "created_at", "type", "title", "quality_score", "memory_tier", "source_type",
    "source_confidence", "source_session_id", "invalid_at", "updated_at", "citation_count",
    "memory_type", "agent",
)
NARRATIVE_PREVIEW = 300
SORTS = {"date": "created_at", "quality": "quality_score"}
STATES: tuple[ObservationState, ...] = ("live", "evicted", "all")


@dataclass(frozen=True)
class ObservationQuery:
    """What to list. Empty tuples and None mean "no filter"."""

    state: str = "all"  # one of STATES (an ObservationState; the UI's filters still hold a str)
    types: tuple[str, ...] = ()
    session: str | None = None
    tier: str | None = None
    source_types: tuple[str, ...] = ()
    search: str = ""
    ids_in: tuple[str, ...] | None = None
    ids_not_in: tuple[str, ...] | None = None
    day: str | None = None  # YYYY-MM-DD: created on that UTC day (as the History pane counts days)
    since: str | None = None  # created at or after (text compare with created_at: a date or a timestamp)
    before: str | None = None  # created before
    sort: str = "date"
    descending: bool = True
    # True when few rows match: SQLite may then use the filters' indexes and sort the
    # matches. Otherwise pages walk the sort column's index and filter as they go,
    # which stays fast however deep the page (a 96%-live filter must not sort 1M rows).
    narrow: bool = False
    cleo_mark: str | None = None  # cleo_rules.AT_RISK or HIDDEN: only rows CLEO's rules mark so

    def with_(self, **changes: Any) -> ObservationQuery:
        return replace(self, **changes)


@dataclass(frozen=True)
class Cursor:
    """Position after (or before) a row: its sort value and rowid."""

    value: Any
    rowid: int


_HAS_WORD = re.compile(r"\w", re.UNICODE)


def fts_expression(text: str) -> str:
    """Turn what a user typed into a safe FTS5 query: every word a quoted prefix term.

    Pieces FTS has no token for (only punctuation, such as `-` or `'`) are left
    out; when nothing is left the result is empty and the search falls back to a
    plain text match (LIKE), so `-` finds rows holding a dash.
    """
    words = [w for w in text.replace('"', " ").split() if w and _HAS_WORD.search(w)]
    return " AND ".join(f'"{w}"*' for w in words)


def _like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _select_list(brain: Brain) -> str:
    have = brain.features.columns(cs.OBSERVATIONS)
    parts = [f'"{c}"' if c in have else f'NULL AS "{c}"' for c in LIST_COLUMNS]
    parts.append(f"substr(narrative, 1, {NARRATIVE_PREVIEW}) AS narrative_preview"
                 if "narrative" in have else "NULL AS narrative_preview")
    parts.append("length(narrative) AS narrative_length" if "narrative" in have else "0 AS narrative_length")
    now = cleo_rules.now_text()  # CLEO's marks, per row of the page (cleo_rules)
    parts.append(f"{cleo_rules.at_risk_sql(brain, now)} AS cleo_at_risk")
    parts.append(f"{cleo_rules.flagged_sql(brain)} AS cleo_flagged")
    parts.append(f"{cleo_rules.hidden_sql(brain)} AS cleo_hidden")
    parts.append("rowid AS _rowid")
    return ", ".join(parts)


def _filters(brain: Brain, q: ObservationQuery, walk: bool = False) -> tuple[list[str], list[Any]]:
    """WHERE terms and parameters. With `walk`, a unary `+` keeps SQLite from choosing a
    filter's index over the sort column's (see `ObservationQuery.narrow`)."""
    have = brain.features.columns(cs.OBSERVATIONS)
    where: list[str] = []
    params: list[Any] = []
    plus = "+" if walk else ""
    if "invalid_at" in have:
        if q.state == "live":
            where.append(f"{plus}invalid_at IS NULL")
        elif q.state == "evicted":
            where.append(f"{plus}invalid_at IS NOT NULL")
    elif q.state == "evicted":
        where.append("0")
    for column, values in (("type", q.types), ("source_type", q.source_types)):
        if values:
            if column in have:
                where.append(f"{plus}{column} IN ({','.join('?' for _ in values)})")
                params += list(values)
            else:
                where.append("0")
    for column, value in (("source_session_id", q.session), (f"{plus}memory_tier", q.tier)):
        if value is not None:
            where.append(f"{column} = ?" if column.lstrip("+") in have else "0")
            params += [value] if column.lstrip("+") in have else []
    if q.search.strip():
        if brain.features.fts and fts_expression(q.search):
            where.append(f"{plus}rowid IN (SELECT rowid FROM {cs.OBSERVATIONS_FTS} "
                         f"WHERE {cs.OBSERVATIONS_FTS} MATCH ?)")
            params.append(fts_expression(q.search))
        else:
            text_cols = [c for c in ("id", "title", "narrative") if c in have]
            where.append("(" + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in text_cols) + ")")
            params += [_like_pattern(q.search.strip())] * len(text_cols)
    if q.day is not None:  # a range on created_at (its index), then the History pane's exact day test
        where.append("created_at >= ? AND created_at < ? AND substr(created_at, 1, 10) = ?"
                     if "created_at" in have else "0")
        params += [q.day, q.day + "~", q.day] if "created_at" in have else []
    for bound, op in ((q.since, ">="), (q.before, "<")):
        if bound is not None:
            where.append(f"created_at {op} ?" if "created_at" in have else "0")
            params += [bound] if "created_at" in have else []
    if q.cleo_mark is not None:
        where.append(cleo_rules.mark_sql(brain, q.cleo_mark))
    if q.ids_in is not None:
        where.append(f"{plus}id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(q.ids_in)))
    if q.ids_not_in:
        where.append(f"{plus}id NOT IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(q.ids_not_in)))
    return where, params


def _sort_column(brain: Brain, q: ObservationQuery) -> str:
    column = SORTS.get(q.sort, "created_at")
    return column if brain.features.has_column(cs.OBSERVATIONS, column) else "rowid"


def count_observations(brain: Brain, q: ObservationQuery = ObservationQuery()) -> int:
    """How many rows match the query."""
    where, params = _filters(brain, q)
    sql = f"SELECT count(*) FROM {cs.OBSERVATIONS}" + (" WHERE " + " AND ".join(where) if where else "")
    return int(brain.scalar(sql, params))


def _page_sql(brain: Brain, q: ObservationQuery, descending: bool, cursor: Cursor | None,
              null_segment: bool, limit: int, offset: int = 0) -> tuple[str, list[Any]]:
    where, params = _filters(brain, q, walk=not q.narrow)
    col = _sort_column(brain, q)
    op = "<" if descending else ">"
    direction = "DESC" if descending else "ASC"
    if col != "rowid":
        where.append(f"{col} IS NULL" if null_segment else f"{col} IS NOT NULL")
    if cursor is not None:
        if null_segment or col == "rowid":
            where.append(f"rowid {op} ?")
            params.append(cursor.rowid)
        else:
            where.append(f"({col} {op} ? OR ({col} = ? AND rowid {op} ?))")
            params += [cursor.value, cursor.value, cursor.rowid]
    order = f"rowid {direction}" if col == "rowid" or null_segment else f"{col} {direction}, rowid {direction}"
    sql = f"SELECT {_select_list(brain)} FROM {cs.OBSERVATIONS}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += f" ORDER BY {order} LIMIT ? OFFSET ?"
    return sql, [*params, limit, offset]


def _segments(brain: Brain, q: ObservationQuery, descending: bool) -> list[bool]:
    """Segment order (False = non-NULL sort values, True = NULL) for a direction."""
    if _sort_column(brain, q) == "rowid":
        return [False]
    return [False, True] if descending else [True, False]


def cursor_of(brain: Brain, q: ObservationQuery, row: Row) -> Cursor:
    col = _sort_column(brain, q)
    return Cursor(row["_rowid"] if col == "rowid" else row.get(col), row["_rowid"])


def position_of(brain: Brain, q: ObservationQuery, observation_id: str) -> int | None:
    """Where `observation_id` is in the query's order (0 = first), or None when it does not match
    (deleted, or filtered out). One count over the rows that sort before it."""
    if q.ids_in is not None and observation_id not in q.ids_in:
        return None
    found = page_observations(brain, q.with_(ids_in=(observation_id,)), None, 1)
    if not found:
        return None
    row = found[0]
    col = _sort_column(brain, q)
    where, params = _filters(brain, q)
    op = ">" if q.descending else "<"
    value = row["_rowid"] if col == "rowid" else row.get(col)
    if col == "rowid":
        where.append(f"rowid {op} ?")
        params.append(value)
    elif value is None:  # NULLs come last in a descending order, first in an ascending one
        where.append(f"({col} IS NOT NULL OR rowid {op} ?)" if q.descending else f"({col} IS NULL AND rowid {op} ?)")
        params.append(row["_rowid"])
    else:
        before = f"({col} {op} ? OR ({col} = ? AND rowid {op} ?))"
        where.append(before if q.descending else f"({col} IS NULL OR {before})")
        params += [value, value, row["_rowid"]]
    return int(brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} WHERE " + " AND ".join(where), params))


def page_observations(brain: Brain, q: ObservationQuery = ObservationQuery(),
                      after: Cursor | None = None, limit: int = 100,
                      backwards: bool = False) -> list[Row]:
    """Up to `limit` rows following `after` in the query's order.

    With `backwards`, the rows *preceding* `after` (or the last rows when `after`
    is None), still returned in the query's order.
    """
    descending = q.descending != backwards
    segments = _segments(brain, q, descending)
    col = _sort_column(brain, q)
    if after is not None and col != "rowid":
        in_null = after.value is None
        segments = segments[segments.index(in_null):]
    rows: list[Row] = []
    cursor = after
    for segment in segments:
        seg_cursor = cursor if cursor is not None and (col == "rowid" or (cursor.value is None) == segment) else None
        sql, params = _page_sql(brain, q, descending, seg_cursor, segment, limit - len(rows))
        rows += [_as_dict(r) for r in brain.query(sql, params)]
        if len(rows) >= limit:
            break
        cursor = None
    if backwards:
        rows.reverse()
    return rows


def page_at_offset(brain: Brain, q: ObservationQuery, offset: int, limit: int = 100) -> list[Row]:
    """Rows `offset .. offset+limit` in the query's order (for jumps to an arbitrary place)."""
    rows: list[Row] = []
    for segment in _segments(brain, q, q.descending):
        sql, params = _page_sql(brain, q, q.descending, None, segment, limit - len(rows), offset)
        got = [_as_dict(r) for r in brain.query(sql, params)]
        rows += got
        if len(rows) >= limit:
            break
        if not got:
            # Skip the whole segment: count it to know how far into the next one to go.
            where, fparams = _filters(brain, q)
            col = _sort_column(brain, q)
            where.append(f"{col} IS NULL" if segment else f"{col} IS NOT NULL")
            seg_count = int(brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} WHERE " + " AND ".join(where),
                                         fparams))
            offset = max(0, offset - seg_count)
        else:
            offset = 0
    return rows


def iter_observations(brain: Brain, q: ObservationQuery = ObservationQuery(),
                      page_size: int = 1000) -> Iterator[ObservationListRow]:
    """Every matching row once, in order, a page at a time."""
    cursor = None
    while True:
        rows = page_observations(brain, q, cursor, page_size)
        yield from cast(list[ObservationListRow], rows)  # _select_list's columns
        if len(rows) < page_size:
            return
        cursor = cursor_of(brain, q, rows[-1])


def _as_dict(row: sqlite3.Row) -> Row:
    return {k: row[k] for k in row.keys()}


def get_observation(brain: Brain, observation_id: str) -> Row | None:
    """Every column of one observation (the whole narrative included)."""
    row = brain.query_one(f"SELECT *, rowid AS _rowid FROM {cs.OBSERVATIONS} WHERE id = ?", (observation_id,))
    return None if row is None else _as_dict(row)


def distinct_values(brain: Brain, column: str, limit: int = 200) -> list[str]:
    """Values of a low-cardinality column (type, tier, source type), for filter menus."""
    if not brain.features.has_column(cs.OBSERVATIONS, column):
        return []
    rows = brain.query(f"SELECT DISTINCT {column} FROM {cs.OBSERVATIONS} WHERE {column} IS NOT NULL "
                       f"ORDER BY 1 LIMIT ?", (limit,))
    return [str(r[0]) for r in rows]
