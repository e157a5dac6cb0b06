"""The curation journal: every write cleo-tui makes is recorded so it can be undone.

A *run* is one curation step (a prune commit, one eviction, a pin, a reflector
apply ...). Each row it touched is recorded with the values of the columns it
changed, before and after. Undo puts the `before` values back — only on rows
that still hold the run's `after` values, so later changes by CLEO or by
another run are never overwritten — and removes rows the run inserted.
Callers run these functions inside `Brain.write()`, so a step and its journal
entry commit together.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.connection import inserted_id
from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.migrations import RUN_CHANGES, RUNS


@dataclass(frozen=True)
class Run:
    id: int
    kind: str
    created_at: str
    summary: str
    params: dict
    undoes: int | None
    undone_by: int | None


def _key_json(key: Mapping[str, Any]) -> str:
    return json.dumps(dict(key), sort_keys=True, ensure_ascii=False)


def _where(key: Mapping[str, Any]) -> tuple[str, list[Any]]:
    return " AND ".join(f'"{k}" = ?' for k in key), list(key.values())


def start_run(conn: sqlite3.Connection, kind: str, summary: str = "",
              params: Mapping[str, Any] | None = None, undoes: int | None = None,
              created_at: str | None = None) -> int:
    """Open a journal entry for one curation step; returns its run id.

    `created_at` defaults to now; the demo generator passes its fixed clock.
    """
    cur = conn.execute(
        f"INSERT INTO {RUNS}(kind, created_at, summary, params_json, undoes) VALUES (?, ?, ?, ?, ?)",
        (kind, created_at or cleo_timestamp(), summary, json.dumps(dict(params or {}), ensure_ascii=False), undoes),
    )
    return inserted_id(cur)


def _record(conn: sqlite3.Connection, run_id: int, table: str, key: Mapping[str, Any],
            before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> None:
    seq = conn.execute(f"SELECT COALESCE(MAX(seq), 0) + 1 FROM {RUN_CHANGES} WHERE run_id = ?",
                       (run_id,)).fetchone()[0]
    conn.execute(
        f"INSERT INTO {RUN_CHANGES}(run_id, seq, table_name, row_key, before_json, after_json) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (run_id, seq, table, _key_json(key),
         None if before is None else json.dumps(dict(before), ensure_ascii=False),
         None if after is None else json.dumps(dict(after), ensure_ascii=False)),
    )


def update_row(conn: sqlite3.Connection, run_id: int, table: str, key: Mapping[str, Any],
               values: Mapping[str, Any], only_if: str | None = None,
               only_if_params: tuple[Any, ...] | list[Any] = ()) -> bool:
    """Set `values` on the row with `key`, journaled. Returns False when no row matched.

    `only_if` is an extra SQL condition (e.g. `invalid_at IS NULL`), checked in
    the same statement so a concurrent writer cannot slip in between.
    """
    where, params = _where(key)
    if only_if:
        where += f" AND ({only_if})"
        params += list(only_if_params)
    cols = ", ".join(f'"{c}"' for c in values)
    row = conn.execute(f'SELECT {cols} FROM "{table}" WHERE {where}', params).fetchone()
    if row is None:
        return False
    before = dict(zip(values, row, strict=True))
    sets = ", ".join(f'"{c}" = ?' for c in values)
    conn.execute(f'UPDATE "{table}" SET {sets} WHERE {where}', [*values.values(), *params])
    _record(conn, run_id, table, key, before, dict(values))
    return True


def insert_row(conn: sqlite3.Connection, run_id: int, table: str, row: Mapping[str, Any],
               key_columns: tuple[str, ...]) -> None:
    """Insert `row`, journaled so undo deletes it."""
    cols = ", ".join(f'"{c}"' for c in row)
    marks = ", ".join("?" for _ in row)
    conn.execute(f'INSERT INTO "{table}" ({cols}) VALUES ({marks})', list(row.values()))
    _record(conn, run_id, table, {k: row[k] for k in key_columns}, None, dict(row))


def delete_row(conn: sqlite3.Connection, run_id: int, table: str, key: Mapping[str, Any]) -> bool:
    """Delete the row with `key` (only cleo-tui's own tables), journaled so undo re-inserts it."""
    where, params = _where(key)
    cur = conn.execute(f'SELECT * FROM "{table}" WHERE {where}', params)
    row = cur.fetchone()
    if row is None:
        return False
    before = dict(zip([d[0] for d in cur.description], row, strict=True))
    conn.execute(f'DELETE FROM "{table}" WHERE {where}', params)
    _record(conn, run_id, table, key, before, None)
    return True


def _row_from(r: sqlite3.Row | tuple) -> Run:
    return Run(id=r[0], kind=r[1], created_at=r[2], summary=r[3],
               params=json.loads(r[4] or "{}"), undoes=r[5], undone_by=r[6])


_RUN_COLUMNS = "id, kind, created_at, summary, params_json, undoes, undone_by"


def get_run(conn: sqlite3.Connection, run_id: int) -> Run | None:
    row = conn.execute(f"SELECT {_RUN_COLUMNS} FROM {RUNS} WHERE id = ?", (run_id,)).fetchone()
    return None if row is None else _row_from(row)


def list_runs(conn: sqlite3.Connection, kinds: tuple[str, ...] | None = None, limit: int = 200) -> list[Run]:
    """Most recent runs first."""
    sql = f"SELECT {_RUN_COLUMNS} FROM {RUNS}"
    params: list[Any] = []
    if kinds:
        sql += f" WHERE kind IN ({','.join('?' for _ in kinds)})"
        params += list(kinds)
    sql += " ORDER BY id DESC LIMIT ?"
    return [_row_from(r) for r in conn.execute(sql, [*params, limit]).fetchall()]


def run_changes(conn: sqlite3.Connection, run_id: int) -> list[tuple[str, dict, dict | None, dict | None]]:
    """(table, key, before, after) for each row the run touched, in order."""
    rows = conn.execute(
        f"SELECT table_name, row_key, before_json, after_json FROM {RUN_CHANGES} "
        "WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
    return [(t, json.loads(k), None if b is None else json.loads(b), None if a is None else json.loads(a))
            for t, k, b, a in rows]


def touching(conn: sqlite3.Connection, table: str, key: Mapping[str, Any]) -> list[Run]:
    """Runs that changed one row, oldest first (an observation's history)."""
    rows = conn.execute(
        f"SELECT DISTINCT r.id, r.kind, r.created_at, r.summary, r.params_json, r.undoes, r.undone_by "
        f"FROM {RUN_CHANGES} c JOIN {RUNS} r ON r.id = c.run_id "
        "WHERE c.table_name = ? AND c.row_key = ? ORDER BY r.id", (table, _key_json(key))).fetchall()
    return [_row_from(r) for r in rows]


def undo_run(conn: sqlite3.Connection, run_id: int, summary: str = "") -> tuple[int, int]:
    """Reverse one run inside the caller's transaction; returns (undo run id, rows restored).

    Rows changed since by someone else are left alone and not counted.
    """
    run = get_run(conn, run_id)
    if run is None:
        raise BrainError(f"There is no run {run_id}. `cleo-tui prune --runs` lists the runs.")
    if run.undone_by is not None:
        raise BrainError(f"Run {run_id} was already undone (by run {run.undone_by}).")
    if run.kind == "undo":
        raise BrainError(f"Run {run_id} is itself an undo; undo is not undone again.")
    undo_id = start_run(conn, "undo", summary or f"undo of run {run_id} ({run.kind})", {"undoes": run_id},
                        undoes=run_id)
    restored = 0
    for table, key, before, after in reversed(run_changes(conn, run_id)):
        where, params = _where(key)
        if before is None:  # inserted: delete if still as inserted
            if delete_row(conn, undo_id, table, key):
                restored += 1
        elif after is None:  # deleted: put back
            if conn.execute(f'SELECT 1 FROM "{table}" WHERE {where}', params).fetchone() is None:
                insert_row(conn, undo_id, table, before, tuple(key))
                restored += 1
        else:
            guard = " AND ".join(f'"{c}" IS ?' for c in after)
            if update_row(conn, undo_id, table, key, before, only_if=guard, only_if_params=list(after.values())):
                restored += 1
    conn.execute(f"UPDATE {RUNS} SET undone_by = ? WHERE id = ?", (undo_id, run_id))
    return undo_id, restored

