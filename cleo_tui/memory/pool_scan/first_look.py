"""A brain's first look (`first_look`): every observation's columns but no text, with citations and
reflections — the coverage and relevance a first scan shows in seconds while the detectors still
read every title and narrative (`tags.tag_brain`, `in_subprocess`).

No row has findings yet and the row keys are zero: such a scan is shown, never stored as the
brain's snapshot nor folded into.

On CLEO's layout every column it needs has an index of its own (CLEO's migrations make them), and
reading those indexes skips the table's pages, which hold the narratives: at 1,000,000 real-layout
rows (1.4 GB of text) the ids, dates and sessions come from their indexes in ~2.5 s of CPU where a
pass over the table takes ~6 s. Relevance rules and quality are read from the table only for the
rows some rule may concern (manual, observer, owner, decision, low quality, pinned: ~15% of CLEO's
rows), by the scan's own SQL, so the rules are written once (`mapping.relevance_rule_sql`). A layout
missing one of those indexes is read by a pass over the table instead.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.migrations import OVERRIDES
from cleo_tui.brain.store import Brain
from cleo_tui.memory import mapping
from cleo_tui.memory.pool_scan.citations import read_citations, reflection_counts_of
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

# Columns read whole from their own index: (column, the scan's SQL for it, its value where the layout lacks it).
_INDEXED = (("id", "CAST(o.id AS TEXT)", ""), ("created_at", "coalesce(CAST(o.created_at AS TEXT), '')", ""),
            ("source_session_id", "CAST(o.source_session_id AS TEXT)", None))
# Columns whose index finds the rows a relevance rule or the observer-note mark may concern.
_RULED = {"source_type": f"o.source_type IN ('manual', '{mapping.OBSERVER_SOURCE_TYPE}')",
          "source_confidence": "o.source_confidence = 'owner'", "type": "o.type = 'decision'",
          "quality_score": "o.quality_score < 0.4"}


def first_look(brain: Brain) -> BrainScan:
    """Every observation's columns but not its texts, with citations and reflections (see the module)."""
    try:
        return _first_look(brain, strict=True)
    except Undecodable:
        return _first_look(brain, strict=False)


def _first_look(brain: Brain, strict: bool) -> BrainScan:
    indexes = column_indexes(brain)
    parts = _by_indexes(brain, indexes, strict) if indexes is not None else _by_table(brain, strict)
    scan = scan_of_parts(parts, FindingsTable.empty(), read_sessions=True)
    scan.citations, scan.edges, _ = read_citations(brain, live_notes(scan), None)
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
    wanted = [c for c in (*(c for c, _, _ in _INDEXED), *_RULED, "invalid_at") if c in have]
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
    """The scan's columns from the columns' own indexes, in rowid order, in one read transaction
    (CLEO may write meanwhile: every column then describes the same rows)."""
    columns, source = scan_columns(brain, sessions=True)
    col = column_or_null(brain.features.columns(cs.OBSERVATIONS))
    table = f"{cs.OBSERVATIONS} o"
    with _read_transaction(brain, strict) as cursor:
        def read(sql: str) -> list[Any]:
            try:
                return cursor.execute(sql).fetchall()
            except sqlite3.OperationalError as exc:
                if strict and "decode" in str(exc).lower():
                    raise Undecodable() from None
                raise

        def whole(column: str, expression: str, absent: str | None) -> list[Any]:
            if column not in indexes:
                return [absent] * len(rowids)
            return [r[0] for r in read(f"SELECT {expression} FROM {table} INDEXED BY \"{indexes[column]}\" "
                                       "ORDER BY o.rowid")]

        by_id = read(f"SELECT o.rowid, {_INDEXED[0][1]} FROM {table} INDEXED BY \"{indexes['id']}\" "
                     "ORDER BY o.rowid")
        rowids = [r[0] for r in by_id]
        ids = [r[1] if r[1] is not None else "" for r in by_id]
        del by_id
        created, sessions = (whole(*column) for column in _INDEXED[1:])
        evicted = [r[0] for r in read(f"SELECT o.rowid FROM {table} WHERE o.invalid_at IS NOT NULL")] \
            if "invalid_at" in indexes else []
        concerned = [f"SELECT o.rowid FROM {table} WHERE {where}" for c, where in _RULED.items() if c in indexes]
        if OVERRIDES in source:  # (pins: their rows are joined by id)
            concerned.append(f"SELECT o.rowid FROM {table} JOIN {OVERRIDES} p ON p.observation_id = {col('id')}")
        rule, low_quality, note = columns[6:9]  # (`scan_columns`' order)
        ruled = read(f"SELECT o.rowid, {rule}, {low_quality}, {note} FROM {source} "
                     f"WHERE o.rowid IN ({' UNION '.join(concerned)})") if concerned else []
    if not len(created) == len(sessions) == len(rowids):
        raise RuntimeError("the indexes disagree on the rows")  # (one transaction: never expected)
    n = len(rowids)
    at = np.array(rowids, dtype=np.int64)
    live, rules, notes = np.ones(n, dtype=bool), np.full(n, mapping.DEFAULT_RULE, dtype=np.uint8), \
        np.zeros(n, dtype=bool)
    quality: list[Any] = [None] * n
    live[np.searchsorted(at, np.array(evicted, dtype=np.int64))] = False
    if ruled:
        where = np.searchsorted(at, np.array([r[0] for r in ruled], dtype=np.int64)).tolist()
        rules[where] = [r[1] for r in ruled]
        notes[where] = [bool(r[3]) for r in ruled]
        for i, r in zip(where, ruled, strict=True):
            quality[i] = r[2]
    return {"rowids": [at], "ids": ids, "created": created, "sessions": sessions, "live": [live], "rules": [rules],
            "quality": quality, "notes": [notes], "units": [], **_none(n)}


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
