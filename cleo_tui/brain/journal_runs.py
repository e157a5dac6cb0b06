"""Recording runs: one journal entry per curation step, one change row per row it touched.

A run (`start_run`) holds the step's kind, summary and parameters, and its writer
(`journal_owner`); each row written through `update_row`, `update_many`,
`insert_row` or `delete_row` is recorded with its key and the values of the columns
changed, before and after, so `journal_undo` can put it back and `journal_recovery`
can roll an interrupted run back. Reading the journal: `get_run`, `list_runs`,
`run_changes`, `pending_count`, `touching`.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.journal_owner import own_start
from cleo_tui.brain.migrations import RUN_CHANGES, RUNS

if TYPE_CHECKING:
    from cleo_tui.brain.journal_chunks import Slice

IN_PROGRESS, DONE = "in_progress", "done"
RecordedRow = tuple[str, dict[str, Any], dict[str, Any] | None, dict[str, Any] | None]  # table, key, before, after
IN_BATCH = 400  # values in one `IN (...)` list (far below SQLite's variable limit)


@dataclass(frozen=True)
class Run:
    """One journal entry: a curation step (or an undo of one)."""

    id: int
    kind: str
    created_at: str
    summary: str
    params: dict[str, Any]
    undoes: int | None
    undone_by: int | None
    status: str = DONE



# One encoder each, made once: `json.dumps` with options builds a new encoder per call, which
# a commit of 100,000 rows (two documents a row) would pay 200,000 times. Same output.
_encode = json.JSONEncoder(ensure_ascii=False).encode
_encode_sorted = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode


def key_json(key: Mapping[str, Any]) -> str:
    """A row's key as the journal stores it (sorted JSON: one text per row)."""
    return _encode_sorted(dict(key))


def where_key(key: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """The WHERE clause (and its parameters) that picks the row with `key`."""
    return " AND ".join(f'"{k}" = ?' for k in key), list(key.values())


def start_run(conn: sqlite3.Connection, kind: str, summary: str = "",
              params: Mapping[str, Any] | None = None, undoes: int | None = None,
              created_at: str | None = None, status: str = DONE) -> int:
    """Open a journal entry for one curation step; returns its run id.

    `created_at` defaults to now; the demo generator passes its fixed clock.
    `status` IN_PROGRESS marks a chunked run until `finish_run`.
    """
    cur = conn.execute(
        f"INSERT INTO {RUNS}(kind, created_at, summary, params_json, undoes, status, owner_pid, owner_started) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (kind, created_at or cleo_timestamp(), summary, json.dumps(dict(params or {}), ensure_ascii=False),
         undoes, status, os.getpid(), own_start()),
    )
    return int(cur.lastrowid or 0)


def finish_run(conn: sqlite3.Connection, run_id: int, summary: str | None = None) -> None:
    """Mark a chunked run done (in its last chunk's transaction)."""
    if summary is None:
        conn.execute(f"UPDATE {RUNS} SET status = ? WHERE id = ?", (DONE, run_id))
    else:
        conn.execute(f"UPDATE {RUNS} SET status = ?, summary = ? WHERE id = ?", (DONE, summary, run_id))


def values_json(value: Mapping[str, Any] | None) -> str | None:
    """Column values as the journal stores them (None stays None: no row before or after)."""
    return None if value is None else _encode(dict(value))


def next_seq(conn: sqlite3.Connection, run_id: int) -> int:
    """The seq the next change of `run_id` gets (one look-up per batch, not per row)."""
    return int(conn.execute(f"SELECT COALESCE(MAX(seq), 0) + 1 FROM {RUN_CHANGES} WHERE run_id = ?",
                            (run_id,)).fetchone()[0])


def record_many(conn: sqlite3.Connection, run_id: int, table: str,
                changes: Iterable[tuple[Mapping[str, Any], Mapping[str, Any] | None, Mapping[str, Any] | None]],
                after_json: str | None = None) -> None:
    """Journal (key, before, after) changes of one table in one statement, seq after the last.

    `after_json` is the after value already encoded, when every change shares it
    (a prune's eviction values): encoded once, not once per row.
    """
    seq = next_seq(conn, run_id)
    conn.executemany(
        f"INSERT INTO {RUN_CHANGES}(run_id, seq, table_name, row_key, before_json, after_json) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [(run_id, seq + i, table, key_json(key), values_json(before), after_json if after_json is not None
          else values_json(after)) for i, (key, before, after) in enumerate(changes)])


def record_one(conn: sqlite3.Connection, run_id: int, table: str, key: Mapping[str, Any],
               before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> None:
    """Journal one (key, before, after) change of `table`."""
    record_many(conn, run_id, table, [(key, before, after)])


def update_row(conn: sqlite3.Connection, run_id: int, table: str, key: Mapping[str, Any],
               values: Mapping[str, Any], only_if: str | None = None,
               only_if_params: tuple[Any, ...] | list[Any] = ()) -> bool:
    """Set `values` on the row with `key`, journaled. Returns False when no row matched.

    `only_if` is an extra SQL condition (e.g. `invalid_at IS NULL`), checked in
    the same statement so a concurrent writer cannot slip in between. `key`
    must hold the values as stored (an INTEGER id stays an int).
    """
    where, params = where_key(key)
    if only_if:
        where += f" AND ({only_if})"
        params += list(only_if_params)
    cols = ", ".join(f'"{c}"' for c in values)
    row = conn.execute(f'SELECT {cols} FROM "{table}" WHERE {where}', params).fetchone()
    if row is None:
        return False
    before = dict(zip(values, row, strict=False))
    sets = ", ".join(f'"{c}" = ?' for c in values)
    conn.execute(f'UPDATE "{table}" SET {sets} WHERE {where}', [*values.values(), *params])
    record_one(conn, run_id, table, key, before, dict(values))
    return True


def update_many(conn: sqlite3.Connection, run_id: int, table: str, key_column: str, keys: Iterable[Any],
                values: Mapping[str, Any], only_if: str | None = None,
                before: Mapping[Any, Mapping[str, Any]] | None = None, part: Slice | None = None) -> list[Any]:
    """`update_row` for many rows of one table keyed by one column, in a few statements; the keys updated.

    Inside the caller's write transaction the rows read are the rows updated (no
    other writer can come in between). `before` gives, by key, the rows the caller
    has just read in this transaction (holding at least the columns of `values`,
    and only rows that meet `only_if`): they are not read again. Keys are the
    values as stored. With `part`, the rows are updated while its chunk's clock
    allows (`Slice.while_time`): the keys updated are then a prefix of those found.
    """
    wanted = list(dict.fromkeys(keys))
    cols = list(values)
    found = {k: tuple(row[c] for c in cols) for k, row in before.items()} if before is not None \
        else _read_where(conn, table, key_column, wanted, cols, only_if)
    done = [k for k in wanted if k in found]
    if not done:
        return []
    sets = ", ".join(f'"{c}" = ?' for c in cols)
    new = list(values.values())
    extra = f" AND ({only_if})" if only_if else ""
    params = [(*new, k) for k in done]
    ran = executemany_while(conn, f'UPDATE "{table}" SET {sets} WHERE "{key_column}" = ?{extra}', params, part)
    done = done[:ran]
    record_many(conn, run_id, table, [({key_column: k}, dict(zip(cols, found[k], strict=True)), None)
                                      for k in done], after_json=values_json(values))
    return done


def executemany_while(conn: sqlite3.Connection, sql: str, params: list[tuple[Any, ...]], part: Slice | None) -> int:
    """`executemany` of `params` (all, or while `part`'s clock allows); how many ran."""
    if part is None:
        conn.executemany(sql, params)
        return len(params)
    ran = 0

    def counted() -> Iterator[tuple[Any, ...]]:
        nonlocal ran
        for one in part.while_time(params):
            ran += 1
            yield one
    conn.executemany(sql, counted())  # sqlite3 takes the parameters one statement at a time
    return ran


def _read_where(conn: sqlite3.Connection, table: str, key_column: str, keys: list[Any], cols: list[str],
                only_if: str | None) -> dict[Any, tuple[Any, ...]]:
    """`cols` of the rows with these keys that meet `only_if`, by key."""
    # `only_if` is read as a column, not a filter: as a filter (`invalid_at IS NULL`) it could
    # lead SQLite to an index on that column and a scan of every live row per batch.
    select = ", ".join([*(f'"{c}"' for c in (key_column, *cols)), f"({only_if})" if only_if else "1"])
    found: dict[Any, tuple[Any, ...]] = {}
    for start in range(0, len(keys), IN_BATCH):
        part = keys[start:start + IN_BATCH]
        rows = conn.execute(f'SELECT {select} FROM "{table}" WHERE "{key_column}" IN '
                            f'({",".join("?" * len(part))})', part).fetchall()
        found.update((r[0], tuple(r[1:-1])) for r in rows if r[-1])
    return found


def insert_row(conn: sqlite3.Connection, run_id: int, table: str, row: Mapping[str, Any],
               key_columns: tuple[str, ...]) -> None:
    """Insert `row`, journaled so undo deletes it."""
    cols = ", ".join(f'"{c}"' for c in row)
    marks = ", ".join("?" for _ in row)
    conn.execute(f'INSERT INTO "{table}" ({cols}) VALUES ({marks})', list(row.values()))
    record_one(conn, run_id, table, {k: row[k] for k in key_columns}, None, dict(row))


def delete_row(conn: sqlite3.Connection, run_id: int, table: str, key: Mapping[str, Any]) -> bool:
    """Delete the row with `key` (only cleo-tui's own tables), journaled so undo re-inserts it."""
    where, params = where_key(key)
    cur = conn.execute(f'SELECT * FROM "{table}" WHERE {where}', params)
    row = cur.fetchone()
    if row is None:
        return False
    before = dict(zip([d[0] for d in cur.description], row, strict=False))
    conn.execute(f'DELETE FROM "{table}" WHERE {where}', params)
    record_one(conn, run_id, table, key, before, None)
    return True


_RUN_COLUMNS = "id, kind, created_at, summary, params_json, undoes, undone_by, status"


def _run_from(r: sqlite3.Row | tuple[Any, ...]) -> Run:
    """A journal row (`_RUN_COLUMNS`) as a Run."""
    return Run(id=r[0], kind=r[1], created_at=r[2], summary=r[3],
               params=json.loads(r[4] or "{}"), undoes=r[5], undone_by=r[6], status=r[7] or DONE)


def get_run(conn: sqlite3.Connection, run_id: int) -> Run | None:
    """The run `run_id` (None when there is none)."""
    row = conn.execute(f"SELECT {_RUN_COLUMNS} FROM {RUNS} WHERE id = ?", (run_id,)).fetchone()
    return None if row is None else _run_from(row)


def list_runs(conn: sqlite3.Connection, kinds: tuple[str, ...] | None = None, limit: int = 200) -> list[Run]:
    """Most recent runs first."""
    sql = f"SELECT {_RUN_COLUMNS} FROM {RUNS}"
    params: list[Any] = []
    if kinds:
        sql += f" WHERE kind IN ({','.join('?' for _ in kinds)})"
        params += list(kinds)
    sql += " ORDER BY id DESC LIMIT ?"
    return [_run_from(r) for r in conn.execute(sql, [*params, limit]).fetchall()]


def run_changes(conn: sqlite3.Connection, run_id: int) -> list[RecordedRow]:
    """(table, key, before, after) for each row the run touched, in order."""
    rows = conn.execute(
        f"SELECT table_name, row_key, before_json, after_json FROM {RUN_CHANGES} "
        "WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
    return [(t, json.loads(k), None if b is None else json.loads(b), None if a is None else json.loads(a))
            for t, k, b, a in rows]


def pending_count(conn: sqlite3.Connection, run_id: int) -> int:
    """Changes of a run that no undo has reversed yet."""
    return int(conn.execute(f"SELECT count(*) FROM {RUN_CHANGES} WHERE run_id = ? AND undone_by IS NULL",
                            (run_id,)).fetchone()[0])


def touching(conn: sqlite3.Connection, table: str, key: Mapping[str, Any]) -> list[Run]:
    """Runs that changed one row, oldest first (an observation's history)."""
    rows = conn.execute(
        "SELECT DISTINCT r.id, r.kind, r.created_at, r.summary, r.params_json, r.undoes, r.undone_by, r.status "
        f"FROM {RUN_CHANGES} c JOIN {RUNS} r ON r.id = c.run_id "
        "WHERE c.table_name = ? AND c.row_key = ? ORDER BY r.id", (table, key_json(key))).fetchall()
    return [_run_from(r) for r in rows]

