"""The scan's SQL (its columns, the row keys a snapshot checks rows by) and reading it a chunk
at a time, the short text columns decoded by SQLite in C where they are valid UTF-8.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.connection import decode_text
from cleo_tui.brain.migrations import OVERRIDES
from cleo_tui.brain.store import Brain
from cleo_tui.memory import mapping

SCAN_CHUNK = 8_000  # rows fetched at a time (only a chunk's texts are held at once)


def column_or_null(have: Collection[str]) -> Callable[[str], str]:
    """A function naming an observation column in SQL: `o."name"`, or NULL where the layout lacks it."""
    return lambda name: f'o."{name}"' if name in have else "NULL"


def scan_columns(brain: Brain, sessions: bool) -> tuple[list[str], str]:
    """The scan's columns after the rowid (see `ChunkColumns`), and the table (with pins joined) to read."""
    have = brain.features.columns(cs.OBSERVATIONS)
    col = column_or_null(have)
    # No pin at all (the usual case): no join, which costs a lookup per row. A pin written after
    # this check is caught where it matters: a commit checks every row for pins again.
    override = "ov.relevance" if brain.features.has_table(OVERRIDES) and \
        brain.query_one(f"SELECT 1 FROM {OVERRIDES} LIMIT 1") is not None else None
    join = f" LEFT JOIN {OVERRIDES} ov ON ov.observation_id = o.id" if override else ""
    live = "o.invalid_at IS NULL" if "invalid_at" in have else "1"
    quality = col("quality_score")
    low_quality = f"CASE WHEN {mapping.low_quality_sql(quality)} THEN {quality} END"
    columns = [f"CAST({col('id')} AS TEXT)", f"coalesce(CAST({col('created_at')} AS TEXT), '')",
               f"CAST({col('source_session_id')} AS TEXT)" if sessions else "NULL", live,
               f"CAST(coalesce({col('title')}, '') AS BLOB)", f"CAST(coalesce({col('narrative')}, '') AS BLOB)",
               mapping.relevance_rule_sql(col, override), low_quality,
               f"coalesce({col('source_type')} = '{mapping.OBSERVER_SOURCE_TYPE}', 0)"]
    return columns, f"{cs.OBSERVATIONS} o{join}"


_TITLE, _NARRATIVE = 4, 5  # their places in `scan_columns`


def scan_sql(brain: Brain, where: str, sessions: bool = True, row_keys: bool = False, texts: bool = True,
             scores: bool = False) -> str:
    """The scan's SELECT; `sessions` adds what a session's pool needs, and `row_keys` the rest
    of each row's key after its title and narrative (see `row_key_sql`). Without `texts` the
    titles and narratives read as empty (a first look: `pool_scan.first_look`). With `scores`,
    every row's quality_score comes last, as stored (`ChunkColumns.scores`: the duplicate
    finder's rows are read with the scan).

    Without `row_keys`, the small codes come as one number (`compact_columns`)."""
    columns, source = scan_columns(brain, sessions)
    if not texts:
        columns[_TITLE] = columns[_NARRATIVE] = "X''"
    if row_keys:
        columns.append(row_tail_sql(columns))
    else:
        columns = compact_columns(columns, sessions)
    if scores:
        columns.append(column_or_null(brain.features.columns(cs.OBSERVATIONS))("quality_score"))
    return f"SELECT o.rowid, {', '.join(columns)} FROM {source}{where}"  # rowid order; sorted by date in Python


_SESSION, _LIVE, _RULE, _NOTE = 2, 3, 6, 8  # places in `scan_columns`
_FULL_WIDTH = 10  # a row of `scan_columns` after its rowid (and the tail with `row_keys`); compact: 7 or 8


def compact_columns(columns: list[str], sessions: bool) -> list[str]:
    """The columns with live, rule and note as one number (`rule * 4 + note * 2 + live`) in live's
    place, and without the session when it is not read.

    Python's sqlite3 lets other threads run while it asks each value's type (a lock taken
    and given back per column and row): at 100,000 rows each column fetched costs about 14 ms
    of CPU (measured with columns of constants), so three fewer are about 0.04 s of a scan."""
    flags = f"({columns[_RULE]}) * 4 + ({columns[_NOTE]}) * 2 + ({columns[_LIVE]})"
    return [flags if k == _LIVE else c for k, c in enumerate(columns)
            if k not in (_RULE, _NOTE) and (sessions or k != _SESSION)]


def row_tail_sql(columns: list[str]) -> str:
    """The texts' byte lengths and every other scanned column, as one blob (NULL as char(30))."""
    texts = (columns[_TITLE], columns[_NARRATIVE])
    parts = [*(f"length({t})" for t in texts),
             *(f"coalesce(CAST({c} AS TEXT), char(30))" for c in columns if c not in texts)]
    return f"CAST({' || char(31) || '.join(parts)} AS BLOB)"


def row_key_sql(brain: Brain, where: str) -> str:
    """SELECT rowid and the bytes whose blake2b (`row_hash`) is the row's entry in a scan's `row_keys`:
    the rest (`row_tail_sql`), NUL, title, NUL, narrative, joined in SQL (a row's columns as one object;
    the long texts last, as each `||` copies what it joins)."""
    columns, source = scan_columns(brain, True)
    joined = f"{row_tail_sql(columns)} || char(0) || {columns[_TITLE]} || char(0) || {columns[_NARRATIVE]}"
    return f"SELECT o.rowid, CAST({joined} AS BLOB) FROM {source}{where}"


def row_hash(title: bytes, narrative: bytes, tail: bytes) -> bytes:
    """The 8-byte blake2b of a row's key bytes (as `row_key_sql` joins them in SQL)."""
    return hashlib.blake2b(b"\x00".join((tail, title, narrative)), digest_size=8).digest()


@contextmanager
def plain_text(conn: sqlite3.Connection, strict: bool) -> Iterator[None]:
    """Let SQLite decode the short text columns in C (`strict`), or leniently in Python."""
    previous = conn.text_factory
    conn.text_factory = str if strict else decode_text
    try:
        yield
    finally:
        conn.text_factory = previous


class Undecodable(Exception):
    """An id, date or session holds invalid UTF-8: read again with the lenient decoder."""


def fetch_chunks(brain: Brain, sql: str, params: Sequence[Any], strict: bool) -> Iterator[list[tuple[Any, ...]]]:
    """The query's rows a chunk at a time, as one statement under the brain's lock.

    With `strict`, ids, dates and sessions are decoded by SQLite (in C) and invalid
    UTF-8 there raises Undecodable; titles and narratives are read as bytes either way.
    """
    with brain.lock, plain_text(brain.conn, strict):
        cursor = brain.conn.execute(sql, params)
        try:
            while True:
                try:
                    rows = cursor.fetchmany(SCAN_CHUNK)
                except sqlite3.OperationalError as exc:
                    if strict and "decode" in str(exc).lower():
                        raise Undecodable() from None
                    raise
                if not rows:
                    return
                yield rows
        finally:
            cursor.close()



@dataclass
class ChunkColumns:
    """One fetched chunk's rows as columns (in `scan_columns` order, after the rowid)."""
    rowids: list[int]
    ids: list[str]
    created: list[str]
    sessions: list[str | None]
    live: list[int] | np.ndarray  # arrays when read compact (`compact_columns`), as rules and notes
    titles: list[bytes]
    narratives: list[bytes]
    rules: list[int] | np.ndarray
    quality: list[Any]
    notes: list[int] | np.ndarray  # 1: an observer note
    tails: list[bytes] | None = None  # the rest of each row's key (a scan with `row_keys`)
    scores: list[Any] | None = None  # each row's quality_score as stored (a scan with `scores`)
    # Every row's title and narrative decoded leniently, when a caller of the scan needs them all
    # (`scan_pass.read_pass` with `rows_read`; else only the rows the detectors read are decoded).
    title_texts: list[str] | None = None
    narrative_texts: list[str] | None = None


def chunk_columns(rows: list[tuple[Any, ...]], scores: bool = False) -> ChunkColumns:
    """The chunk's rows as columns (a NULL id read as the empty string), read as `scan_sql` wrote
    them (compact or not: told by their number, once `scores` has taken the last one off)."""
    columns = list(map(list, zip(*rows, strict=False)))
    score_values = columns.pop() if scores else None
    if len(columns) >= _FULL_WIDTH:
        rowids, ids, created, sessions, live, titles, narratives, rules, quality, notes = columns[:10]
        return ChunkColumns(rowids, [i if i is not None else "" for i in ids], created, sessions, live,
                            titles, narratives, rules, quality, notes, columns[10] if len(columns) > 10 else None,
                            score_values)
    if len(columns) == 8:  # with sessions
        rowids, ids, created, sessions, flag_values, titles, narratives, quality = columns
    else:
        rowids, ids, created, flag_values, titles, narratives, quality = columns
        sessions = [None] * len(rowids)
    flags = np.array(flag_values, dtype=np.int64)
    return ChunkColumns(rowids, [i if i is not None else "" for i in ids], created, sessions, flags & 1,
                        titles, narratives, flags >> 2, quality, (flags >> 1) & 1, scores=score_values)
