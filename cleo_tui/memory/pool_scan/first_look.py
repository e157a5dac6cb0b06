"""A brain's first look (`first_look`): every observation's columns but no text, with citations and
reflections — the coverage and relevance a first scan shows in seconds while the detectors still
read every title and narrative (`tags.tag_brain`, `in_subprocess`).

No row has findings yet and the row keys are zero: such a scan is shown, never stored as the
brain's snapshot nor folded into.

On CLEO's layout every column it needs has an index of its own (CLEO's migrations make them), and
reading those indexes skips the table's pages, which hold the narratives: at 1,000,000 real-layout
rows (1.4 GB of text) the ids, dates and sessions come from their indexes in ~0.8 s of CPU where a
pass over the table takes ~6 s. SQLite joins each column into one string (`_whole`) or groups it
(`_sessions`), so that no tuple is made per row. The relevance rules' conditions come from their
columns' indexes too, and each combination of them is judged by the scan's own SQL
(`mapping.relevance_rule_sql`, so the rules are written once); only observer rows, whose rule reads
the title, and pinned rows are read from the table. A layout missing one of those indexes is read
by a pass over the table instead.
"""

from __future__ import annotations

import itertools
import json
import operator
import sqlite3
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.migrations import OVERRIDES
from cleo_tui.brain.store import Brain
from cleo_tui.memory import mapping
from cleo_tui.memory.distinct import distinct_values
from cleo_tui.memory.pool_scan.citations import read_citations, reflection_counts_of
from cleo_tui.memory.pool_scan.containers import taken_in_order
from cleo_tui.memory.pool_scan.findings_table import FindingsTable
from cleo_tui.memory.pool_scan.model import BrainScan, live_notes
from cleo_tui.memory.pool_scan.reading import (
    Undecodable,
    chunk_columns,
    column_or_null,
    fetch_chunks,
    plain_text,
    scan_columns,
    scan_sql,
)
from cleo_tui.memory.pool_scan.scan_pass import gather, new_parts, scan_of_parts

# Columns read whole from their own index, each as the scan's SQL reads it but never NULL (`_whole`).
_INDEXED = {"id": "coalesce(CAST(o.id AS TEXT), '')", "created_at": "coalesce(CAST(o.created_at AS TEXT), '')",
            "source_session_id": "coalesce(CAST(o.source_session_id AS TEXT), '')"}  # (NULL sessions read apart)
# Columns whose index finds the rows a relevance rule or the observer-note mark may concern.
_RULED = {"source_type": f"o.source_type IN ('manual', '{mapping.OBSERVER_SOURCE_TYPE}')",
          "source_confidence": "o.source_confidence = 'owner'", "type": "o.type = 'decision'",
          "quality_score": "o.quality_score < 0.4"}


def first_look(brain: Brain, to_save: bool = False) -> BrainScan:
    """Every observation's columns but not its texts, with citations and reflections (see the module).

    `to_save`: for `scan_snapshot.save_snapshot` only, whose loading judges the citations from the
    edges stored (`read_citations`' `judged`): judging them here too cost the scan process 0.4 s of
    CPU at a million real-layout rows before the app could show its look."""
    try:
        return _first_look(brain, True, to_save)
    except Undecodable:
        return _first_look(brain, False, to_save)


def _first_look(brain: Brain, strict: bool, to_save: bool) -> BrainScan:
    indexes = column_indexes(brain)
    parts = _by_indexes(brain, indexes, strict) if indexes is not None else _by_table(brain, strict)
    scan = scan_of_parts(parts, FindingsTable.empty(), read_sessions=True)
    scan.citations, scan.edges, _ = read_citations(brain, live_notes(scan), None, judged=not to_save)
    scan.reflection_counts, scan.reflection_identifiers = reflection_counts_of(brain, {})
    return scan


def column_indexes(brain: Brain) -> dict[str, str] | None:
    """For each column the first look reads by index (and the layout has), a whole (not partial)
    index leading with it; None when one of them has none."""
    have = brain.features.columns(cs.OBSERVATIONS)
    leading: dict[str, str] = {}
    for row in brain.query(f"PRAGMA index_list({cs.OBSERVATIONS})"):
        name, partial = row["name"], row["partial"]
        first = brain.query_one(f"PRAGMA index_info(\"{name}\")")
        if not partial and first is not None and first["name"] is not None:
            leading.setdefault(first["name"], name)
    wanted = [c for c in (*_INDEXED, *_RULED, "invalid_at") if c in have]
    if "id" not in have or any(c not in leading for c in wanted):
        return None
    return {c: leading[c] for c in wanted}


def _none(count: int) -> dict[str, list[Any]]:
    """What a chunk of `count` rows without findings adds besides its columns."""
    zeros = np.zeros(count, dtype=np.uint64)
    return {"keys": [zeros], "row_keys": [zeros], "entries": [np.zeros(count, dtype=np.int32)]}


def _by_table(brain: Brain, strict: bool) -> dict[str, list[Any]]:
    """The scan's columns by a pass over the table (its SQL with empty texts)."""
    parts = new_parts()
    for rows in fetch_chunks(brain, scan_sql(brain, "", texts=False), (), strict):
        c = chunk_columns(rows)
        gather(parts, c, np.array(c.rowids, dtype=np.int64))
        for name, values in _none(len(rows)).items():
            parts[name] += values
    return parts


def _by_indexes(brain: Brain, indexes: dict[str, str], strict: bool) -> dict[str, list[Any]]:
    """The scan's columns from the columns' own indexes, oldest row first, in one read transaction
    (CLEO may write meanwhile: every column then describes the same rows)."""
    have = brain.features.columns(cs.OBSERVATIONS)
    table = f"{cs.OBSERVATIONS} o"
    with _read_transaction(brain, strict) as cursor:
        read = _reader(cursor, strict)
        by_id, ids = _whole(read, table, indexes["id"], _INDEXED["id"])
        if "created_at" in indexes:
            places = _Places.by_date(*_whole(read, table, indexes["created_at"], _INDEXED["created_at"]))
        else:
            places = _Places.by_date(np.sort(by_id), [""] * len(by_id))
        sessions = _sessions(read, f"{table} INDEXED BY \"{indexes['source_session_id']}\"", places) \
            if "source_session_id" in indexes else [None] * len(places)
        evicted = _rowids(read, "WHERE o.invalid_at IS NOT NULL") \
            if "invalid_at" in indexes else np.zeros(0, dtype=np.int64)
        rules, notes, quality = _rule_columns(brain, read, places, have)
    live = np.ones(len(places), dtype=bool)
    live[places.of(evicted)] = False
    return {"rowids": [places.at], "ids": places.arranged(by_id, ids), "created": places.created,
            "sessions": sessions, "live": [live], "rules": [rules], "quality": quality, "notes": [notes],
            "units": [], **_none(len(places))}


_SEPARATOR = "\x1e"  # (ASCII's record separator: a value holding it is read row by row)


def _sessions(read: Callable[[str], list[Any]], indexed: str, places: _Places) -> list[str | None]:
    """Each row's session (`scan_columns`' third column), in the scan's order, each distinct name one
    string: each session's name and its rows' rowids, grouped over the session index.

    Half the CPU of the joined names (0.3 against 0.6 s at a million rows, most of them sharing a
    few thousand sessions or none), and no name is made twice."""
    runs = read(f"SELECT CAST(o.source_session_id AS TEXT), count(*), group_concat(o.rowid) FROM {indexed} "
                "GROUP BY o.source_session_id")
    rowids = _integers(",".join(joined for _, _, joined in runs))
    codes = np.repeat(np.arange(len(runs), dtype=np.int64), [count for _, count, _ in runs])
    names = [name for name, _, _ in runs]
    return [names[k] for k in codes[places.arranged_positions(rowids)].tolist()]


def _whole(read: Callable[[str], list[Any]], table: str, index: str, expression: str) -> tuple[np.ndarray, list[str]]:
    """Every row's rowid and `expression` (never NULL), in the index's order.

    SQLite joins each column into one string: a tuple fetched per row cost ~2.5 times the CPU
    (0.74 against 0.3 s for a million ids)."""
    indexed = f"{table} INDEXED BY \"{index}\""
    try:
        numbers, joined, count = read(f"SELECT group_concat(o.rowid), group_concat({expression}, char(30)), "
                                      f"count(*) FROM {indexed}")[0]
        values = joined.split(_SEPARATOR) if count else []
        if len(values) == count:  # (else a value holds the separator)
            return _integers(numbers), values
    except sqlite3.DataError:  # (longer than SQLite makes a string: SQLITE_LIMIT_LENGTH)
        pass
    rows = read(f"SELECT o.rowid, {expression} FROM {indexed}")
    return np.array([r[0] for r in rows], dtype=np.int64), [r[1] for r in rows]


def _rowids(read: Callable[[str], list[Any]], where: str) -> np.ndarray:
    """The rowids of the observations `where` selects (joined by SQLite, as `_whole` reads them)."""
    return _integers(read(f"SELECT group_concat(o.rowid) FROM {cs.OBSERVATIONS} o {where}")[0][0])


def _integers(joined: str | None) -> np.ndarray:
    """The integers of SQLite's `group_concat` of integers (NULL when there were none)."""
    return np.fromstring(joined or "", dtype=np.int64, sep=",")


class _Places:
    """Where each row goes in the parts handed to `scan_of_parts`: oldest first, ties by rowid (as
    `scan_pass.date_order` puts them, which then has nothing to sort), or else in rowid order."""

    def __init__(self, at: np.ndarray, created: list[str]) -> None:
        self.at, self.created = at, created  # (rowids and dates in the scan's order)
        self._by_rowid = np.argsort(at, kind="stable")
        self._sorted = at[self._by_rowid]

    @classmethod
    def by_date(cls, rowids: np.ndarray, created: list[str]) -> _Places:
        """From the rows' dates as their index gives them: in date order already, unless some value is
        no text (an index orders each kind apart) — then in rowid order, which `scan_of_parts` sorts."""
        if _dated_in_order(created, rowids):
            return cls(rowids, created)
        in_rowid_order = np.argsort(rowids, kind="stable")
        return cls(rowids[in_rowid_order], taken_in_order(created, in_rowid_order))

    def __len__(self) -> int:
        return len(self.at)

    def of(self, rowids: np.ndarray) -> np.ndarray:
        """The places of these rowids (every one a row of the scan)."""
        return self._by_rowid[np.searchsorted(self._sorted, rowids)]

    def arranged(self, rowids: np.ndarray, values: list[Any]) -> list[Any]:
        """`values` (one per rowid, every row once) put in the scan's order."""
        return taken_in_order(values, self.arranged_positions(rowids))

    def arranged_positions(self, rowids: np.ndarray) -> np.ndarray:
        """Where in `rowids` (every row once) each row of the scan's order is."""
        if len(rowids) != len(self.at) or not np.array_equal(np.sort(rowids), self._sorted):
            raise RuntimeError("the indexes disagree on the rows")  # (one transaction: never expected)
        source = np.empty(len(rowids), dtype=np.int64)
        source[self.of(rowids)] = np.arange(len(rowids))
        return source


def _dated_in_order(created: list[str], rowids: np.ndarray) -> bool:
    """Whether the rows are oldest first, equal dates by rowid."""
    if not all(map(operator.le, created, itertools.islice(created, 1, None))):
        return False
    same = np.fromiter(map(operator.eq, created, itertools.islice(created, 1, None)), dtype=bool,
                       count=max(0, len(created) - 1))
    return not bool((same & (rowids[1:] < rowids[:-1])).any())


def _rule_columns(brain: Brain, read: Callable[[str], list[Any]], places: _Places,
                  have: Collection[str]) -> tuple[np.ndarray, np.ndarray, list[Any]]:
    """Each row's relevance rule code, observer-note mark and low quality (`scan_columns`' 7th to 9th
    columns), from the indexes: the rows of each condition a rule tests are read from that column's
    index, and the rule of each combination of conditions is `mapping.relevance_rule_sql` evaluated
    on it. Observer rows (whose rule reads the title) and pinned rows are read from the table by the
    scan's own SQL."""
    n = len(places)
    table = f"{cs.OBSERVATIONS} o"
    conditions = np.zeros(n, dtype=np.uint8)  # a bit per condition, as `_rule_of` reads them
    quality: list[Any] = [None] * n
    apart = [np.zeros(0, dtype=np.int64)]
    if "source_type" in have:
        kinds = read(f"SELECT o.rowid, o.source_type = 'manual' FROM {table} WHERE {_RULED['source_type']}")
        conditions[places.of(np.array([r[0] for r in kinds if r[1]], dtype=np.int64))] |= 1
        apart.append(np.array([r[0] for r in kinds if not r[1]], dtype=np.int64))
    for bit, (column, where) in enumerate((("source_confidence", _RULED["source_confidence"]),
                                            ("type", _RULED["type"])), start=1):
        if column in have:
            conditions[places.of(_rowids(read, f"WHERE {where}"))] |= 1 << bit
    if "quality_score" in have:
        low = read(f"SELECT o.rowid, o.quality_score FROM {table} WHERE {_RULED['quality_score']} "
                   f"AND {mapping.low_quality_sql('o.quality_score')}")
        at = places.of(np.array([r[0] for r in low], dtype=np.int64))
        conditions[at] |= 8
        for i, r in zip(at.tolist(), low, strict=True):
            quality[i] = r[1]
    rules = np.full(n, mapping.DEFAULT_RULE, dtype=np.uint8)
    for combination in distinct_values(conditions[conditions > 0]).tolist():
        rules[conditions == combination] = read(f"SELECT {_rule_of(combination)}")[0][0]
    columns, source = scan_columns(brain, sessions=False)
    if OVERRIDES in source:  # (pins: their rows are joined by id)
        apart.append(_rowids(read, f"JOIN {OVERRIDES} p ON p.observation_id = {column_or_null(have)('id')}"))
    notes = np.zeros(n, dtype=bool)
    rowids = distinct_values(np.concatenate(apart))
    if len(rowids):
        rule, low_quality, note = columns[6:9]  # (`scan_columns`' order)
        rows = read(f"SELECT o.rowid, {rule}, {low_quality}, {note} FROM {source} "
                    f"WHERE o.rowid IN (SELECT value FROM json_each('{json.dumps(rowids.tolist())}'))")
        at = places.of(np.array([r[0] for r in rows], dtype=np.int64))
        rules[at] = [r[1] for r in rows]
        notes[at] = [bool(r[3]) for r in rows]
        for i, r in zip(at.tolist(), rows, strict=True):
            quality[i] = r[2]
    return rules, notes, quality


def _rule_of(conditions: int) -> str:
    """`mapping.relevance_rule_sql` of a row meeting these conditions (bits: manual, owner, decision,
    low quality) and no other: its columns as literals."""
    literal = {"source_type": "'manual'" if conditions & 1 else "''",
               "source_confidence": "'owner'" if conditions & 2 else "NULL",
               "type": "'decision'" if conditions & 4 else "NULL", "quality_score": "0" if conditions & 8 else "NULL"}
    return mapping.relevance_rule_sql(lambda name: literal.get(name, "NULL"), None)


def _reader(cursor: sqlite3.Cursor, strict: bool) -> Callable[[str], list[Any]]:
    """A query's rows on the cursor; invalid UTF-8 in a strict read raises Undecodable."""

    def read(sql: str) -> list[Any]:
        try:
            return cursor.execute(sql).fetchall()
        except sqlite3.OperationalError as exc:
            if strict and "decode" in str(exc).lower():
                raise Undecodable() from None
            raise

    return read


@contextmanager
def _read_transaction(brain: Brain, strict: bool) -> Iterator[sqlite3.Cursor]:
    """A cursor giving plain tuples, inside one read transaction on the brain's connection."""
    with brain.lock, plain_text(brain.conn, strict):
        cursor = brain.conn.cursor()
        cursor.row_factory = None
        cursor.execute("BEGIN")
        try:
            yield cursor
        finally:
            cursor.execute("COMMIT")
            cursor.close()
