"""The curation journal: every write cleo-tui makes is recorded so it can be undone.

A *run* is one curation step (a prune commit, one eviction, a pin, a reflector
apply ...). Each row it touched is recorded with the values of the columns it
changed, before and after.

Undo (`undo_run`, or chunked through `cleo_tui.memory.curation.undo`) works row
by row and survives CLEO living in the brain meanwhile:

- a row the run *updated* is put back when the columns the run owns (every
  column it wrote except `CLEO_BOOKKEEPING`, e.g. `invalid_at`, `quality_score`,
  an override's relevance) still hold what the run set — whatever else CLEO
  changed. CLEO's `memory find`/`fetch` bump `citation_count` and `updated_at`
  on every hit, evicted rows included; a restored row gets `updated_at` = now;
- a row the run *inserted* is deleted while its columns (CLEO's bookkeeping
  aside) are as inserted; a row it *deleted* is put back while the key is free;
- a row someone else changed in an owned column is *skipped* and named; a row
  that vanished (CLEO's consolidation hard-deletes) is *missing* and named.

Each change row remembers the undo that reversed it (`undone_by`), so a partly
undone run can be undone again for what is left; the run itself is marked
undone only when nothing is left.

Large steps are written in chunks (`run_chunks`), each its own short
transaction that holds the write lock about `CHUNK_SECONDS`, under one run
whose `status` is 'in_progress' until its last chunk commits ('done'); see
"chunked runs" below for how the chunks and the pauses between them are sized.
A run left in progress by a crash or kill is **rolled back** the next time the
brain is opened for writing (`recover_interrupted`): its changes are reverted in
reverse order (exactly: the before values, where
the row still holds the run's after values) and the run and its change rows are
deleted, so the brain is exactly as before the step. A run whose writer process
is still alive (another cleo-tui) is left alone: the writer is told by its pid and
its start time (`process_start`), so a pid the system gave to a later process
does not keep a dead writer's run in place.
"""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.migrations import RUN_CHANGES, RUNS
from cleo_tui.safe_text import plural, titled_lines

IN_PROGRESS, DONE = "in_progress", "done"
LATER = "later"  # an undo's verdict for a change its chunk had no time left to write (tried again next)
# Columns CLEO changes on its own (on a read, in consolidation); an undo does not
# count them as "changed by someone else". For updated rows only the first two
# matter (the others are never written by cleo-tui's updates).
CLEO_BOOKKEEPING = frozenset({
    "updated_at", "citation_count", "quality_score", "memory_tier", "tier_promoted_at",
    "tier_promotion_reason", "last_activity_at", "last_reinforced_at", "reinforcement_count",
    "last_depressed_at", "depression_count", "stability_score", "occurrence_count", "last_seen_at",
    "weight", "plasticity_class",  # graph edges CLEO strengthens on co-retrieval
})
READ_BOOKKEEPING = frozenset({"updated_at", "citation_count"})
# A chunk holds the write lock about this long, its COMMIT included (or ends after this
# many rows): CLEO's writers wait at most about one chunk (the bound is 250 ms).
# At 1,000,000 rows the disk, not the CPU, sets the pace: a row's UPDATE costs 20-50x the
# usual for a second or two now and then (the writes of CLEO's full-text merges and the
# checkpoints queueing up), so a chunk aims well below the bound to leave room for one.
CHUNK_ROWS = 100_000
CHUNK_SECONDS = 0.06
# Between chunks the lock is left free at least this long, longer after a long chunk
# (see `poll_gap` below: a gap shorter than a waiting writer's sleep would starve it).
CHUNK_PAUSE = 0.03
IN_BATCH = 400  # values in one `IN (...)` list (far below SQLite's variable limit)


@dataclass(frozen=True)
class Run:
    id: int
    kind: str
    created_at: str
    summary: str
    params: dict
    undoes: int | None
    undone_by: int | None
    status: str = DONE


@dataclass
class UndoOutcome:
    """What an undo did: rows restored, and the rows it could not restore, named."""

    run_id: int            # the undone run
    undo_id: int           # the undo's own run
    restored: int = 0
    skipped: list[dict[str, Any]] = field(default_factory=list)   # changed by someone else
    missing: list[dict[str, Any]] = field(default_factory=list)   # deleted meanwhile
    remaining: int = 0     # changes still not undone (a later undo may try them again)
    cursor: int | None = None  # the last change tried (changes are undone last first, or see `forward`)
    forward: bool = False  # first change first: for a run that changed each row once (`each_row_once`)
    stats: RunStats | None = None  # a chunked undo's cost (`run_chunks`)
    undone: str = ""       # the undone run's summary ("pinned O-…"): what the undo took back
    restored_in: Counter[str] = field(default_factory=Counter)  # rows restored, by table

    @property
    def complete(self) -> bool:
        return self.remaining == 0

    @property
    def clean(self) -> bool:
        """Every change of the run undone: nothing skipped, nothing deleted meanwhile."""
        return self.complete and not self.skipped and not self.missing

    def lines(self, again: str) -> list[str]:
        """The outcome in words, for the CLI and the TUI, naming the rows it could not restore;
        `again` says how to try the changes left (a command, a key)."""
        out = [f"Undid run {self.run_id}: {plural(self.restored, 'row')} restored (recorded as run {self.undo_id})."]
        out += titled_lines("Changed since by someone else, left as they are:",
                            [f"{s['id']}: {s['why']}" for s in self.skipped])
        out += titled_lines("Deleted since (by CLEO's consolidation?), not restored:", [s["id"] for s in self.missing])
        if self.remaining:
            changes = "change" if self.remaining == 1 else "changes"
            out.append(f"{self.remaining:,} {changes} of run {self.run_id} stay not undone: the rows no longer hold "
                       f"what the run wrote, and an undo never overwrites someone else's change. "
                       f"{again[:1].upper() + again[1:]} can "
                       "restore them only once they hold the run's values again; until then the run stays "
                       "partly undone.")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"undone": self.run_id, "run_id": self.undo_id, "restored": self.restored,
                "skipped": self.skipped, "missing": self.missing, "remaining": self.remaining,
                "complete": self.complete}


# One encoder each, made once: `json.dumps` with options builds a new encoder per call, which
# a commit of 100,000 rows (two documents a row) would pay 200,000 times. Same output.
_encode = json.JSONEncoder(ensure_ascii=False).encode
_encode_sorted = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode


def _key_json(key: Mapping[str, Any]) -> str:
    return _encode_sorted(dict(key))


def _where(key: Mapping[str, Any]) -> tuple[str, list[Any]]:
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
         undoes, status, os.getpid(), _own_start()),
    )
    return int(cur.lastrowid or 0)


def finish_run(conn: sqlite3.Connection, run_id: int, summary: str | None = None) -> None:
    """Mark a chunked run done (in its last chunk's transaction)."""
    if summary is None:
        conn.execute(f"UPDATE {RUNS} SET status = ? WHERE id = ?", (DONE, run_id))
    else:
        conn.execute(f"UPDATE {RUNS} SET status = ?, summary = ? WHERE id = ?", (DONE, summary, run_id))


def _json(value: Mapping[str, Any] | None) -> str | None:
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
        [(run_id, seq + i, table, _key_json(key), _json(before), after_json if after_json is not None
          else _json(after)) for i, (key, before, after) in enumerate(changes)])


def _record(conn: sqlite3.Connection, run_id: int, table: str, key: Mapping[str, Any],
            before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> None:
    record_many(conn, run_id, table, [(key, before, after)])


def update_row(conn: sqlite3.Connection, run_id: int, table: str, key: Mapping[str, Any],
               values: Mapping[str, Any], only_if: str | None = None,
               only_if_params: tuple[Any, ...] | list[Any] = ()) -> bool:
    """Set `values` on the row with `key`, journaled. Returns False when no row matched.

    `only_if` is an extra SQL condition (e.g. `invalid_at IS NULL`), checked in
    the same statement so a concurrent writer cannot slip in between. `key`
    must hold the values as stored (an INTEGER id stays an int).
    """
    where, params = _where(key)
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
    _record(conn, run_id, table, key, before, dict(values))
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
    ran = _executemany(conn, f'UPDATE "{table}" SET {sets} WHERE "{key_column}" = ?{extra}', params, part)
    done = done[:ran]
    record_many(conn, run_id, table, [({key_column: k}, dict(zip(cols, found[k], strict=True)), None)
                                      for k in done], after_json=_json(values))
    return done


def _executemany(conn: sqlite3.Connection, sql: str, params: list[tuple], part: Slice | None) -> int:
    """`executemany` of `params` (all, or while `part`'s clock allows); how many ran."""
    if part is None:
        conn.executemany(sql, params)
        return len(params)
    ran = 0

    def counted() -> Iterator[tuple]:
        nonlocal ran
        for one in part.while_time(params):
            ran += 1
            yield one
    conn.executemany(sql, counted())  # sqlite3 takes the parameters one statement at a time
    return ran


def _read_where(conn: sqlite3.Connection, table: str, key_column: str, keys: list[Any], cols: list[str],
                only_if: str | None) -> dict[Any, tuple]:
    """`cols` of the rows with these keys that meet `only_if`, by key."""
    # `only_if` is read as a column, not a filter: as a filter (`invalid_at IS NULL`) it could
    # lead SQLite to an index on that column and a scan of every live row per batch.
    select = ", ".join([*(f'"{c}"' for c in (key_column, *cols)), f"({only_if})" if only_if else "1"])
    found: dict[Any, tuple] = {}
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
    _record(conn, run_id, table, {k: row[k] for k in key_columns}, None, dict(row))


def delete_row(conn: sqlite3.Connection, run_id: int, table: str, key: Mapping[str, Any]) -> bool:
    """Delete the row with `key` (only cleo-tui's own tables), journaled so undo re-inserts it."""
    where, params = _where(key)
    cur = conn.execute(f'SELECT * FROM "{table}" WHERE {where}', params)
    row = cur.fetchone()
    if row is None:
        return False
    before = dict(zip([d[0] for d in cur.description], row, strict=False))
    conn.execute(f'DELETE FROM "{table}" WHERE {where}', params)
    _record(conn, run_id, table, key, before, None)
    return True


_RUN_COLUMNS = "id, kind, created_at, summary, params_json, undoes, undone_by, status"


def _row_from(r: sqlite3.Row | tuple) -> Run:
    return Run(id=r[0], kind=r[1], created_at=r[2], summary=r[3],
               params=json.loads(r[4] or "{}"), undoes=r[5], undone_by=r[6], status=r[7] or DONE)


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


def pending_count(conn: sqlite3.Connection, run_id: int) -> int:
    """Changes of a run that no undo has reversed yet."""
    return int(conn.execute(f"SELECT count(*) FROM {RUN_CHANGES} WHERE run_id = ? AND undone_by IS NULL",
                            (run_id,)).fetchone()[0])


def touching(conn: sqlite3.Connection, table: str, key: Mapping[str, Any]) -> list[Run]:
    """Runs that changed one row, oldest first (an observation's history)."""
    rows = conn.execute(
        "SELECT DISTINCT r.id, r.kind, r.created_at, r.summary, r.params_json, r.undoes, r.undone_by, r.status "
        f"FROM {RUN_CHANGES} c JOIN {RUNS} r ON r.id = c.run_id "
        "WHERE c.table_name = ? AND c.row_key = ? ORDER BY r.id", (table, _key_json(key))).fetchall()
    return [_row_from(r) for r in rows]


# --- undo -----------------------------------------------------------------------


def _name(table: str, key: Mapping[str, Any]) -> str:
    """How a row is named in an undo's result: its id, or table:key for other tables."""
    if set(key) == {"id"}:
        return str(key["id"])
    if set(key) == {"observation_id"}:
        return f"{key['observation_id']} (relevance override)"
    return f"{table}:{_key_json(key)}"


def _differs(conn: sqlite3.Connection, table: str, key: Mapping[str, Any],
             expected: Mapping[str, Any]) -> list[str] | None:
    """Columns of `expected` whose stored value differs (None: the row is gone)."""
    where, params = _where(key)
    cols = list(expected) or [next(iter(key))]
    row = conn.execute(f'SELECT {", ".join(chr(34) + c + chr(34) for c in cols)} FROM "{table}" WHERE {where}',
                       params).fetchone()
    if row is None:
        return None
    if not expected:
        return []
    return [c for c, value in zip(cols, row, strict=False) if not _same(value, expected[c])]


def _same(stored: Any, recorded: Any) -> bool:
    if isinstance(stored, (int, float)) and isinstance(recorded, (int, float)) \
            and not isinstance(stored, bool) and not isinstance(recorded, bool):
        return float(stored) == float(recorded)
    return bool(stored == recorded)


def _has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(r[1] == column for r in conn.execute(f'PRAGMA table_info("{table}")').fetchall())


def reverse_change(conn: sqlite3.Connection, undo_id: int | None, table: str, key: dict,
                   before: dict | None, after: dict | None, exact: bool = False) -> tuple[str, str]:
    """Reverse one recorded change; ('restored' | 'skipped' | 'missing', why).

    With `undo_id` the reversal is journaled under that undo run. `exact` (crash
    recovery) puts the before values back in every column, bookkeeping
    included, where the row still holds the run's after values there.
    """
    if before is None:  # inserted: delete while it is as inserted
        owned = {c: v for c, v in (after or {}).items() if c not in CLEO_BOOKKEEPING}
        differs = _differs(conn, table, key, owned)
        if differs is None:
            return "missing", "deleted since"
        if differs:
            return "skipped", f"{', '.join(differs)} changed since"
        if undo_id is None:
            where, params = _where(key)
            conn.execute(f'DELETE FROM "{table}" WHERE {where}', params)
        else:
            delete_row(conn, undo_id, table, key)
        return "restored", ""
    if after is None:  # deleted: put back while the key is free
        where, params = _where(key)
        if conn.execute(f'SELECT 1 FROM "{table}" WHERE {where}', params).fetchone() is not None:
            return "skipped", "a row with this key was written since"
        if undo_id is None:
            cols = ", ".join(f'"{c}"' for c in before)
            conn.execute(f'INSERT INTO "{table}" ({cols}) VALUES ({", ".join("?" for _ in before)})',
                         list(before.values()))
        else:
            insert_row(conn, undo_id, table, before, tuple(key))
        return "restored", ""
    owned = {c: v for c, v in after.items() if c not in READ_BOOKKEEPING}
    differs = _differs(conn, table, key, owned)
    if differs is None:
        return "missing", "deleted since"
    if differs:
        return "skipped", f"{', '.join(differs)} changed since"
    values = {c: before[c] for c in owned}
    if exact:
        bookkeeping = {c: v for c, v in after.items() if c in READ_BOOKKEEPING}
        current = _differs(conn, table, key, bookkeeping) or []
        values.update({c: before[c] for c in bookkeeping if c not in current})
    elif "updated_at" in after:
        values["updated_at"] = cleo_timestamp()
    if not values:
        return "restored", ""
    if undo_id is None:
        where, params = _where(key)
        sets = ", ".join(f'"{c}" = ?' for c in values)
        conn.execute(f'UPDATE "{table}" SET {sets} WHERE {where}', [*values.values(), *params])
    else:
        update_row(conn, undo_id, table, key, values)
    return "restored", ""


def _check_undoable(conn: sqlite3.Connection, run_id: int) -> Run:
    run = get_run(conn, run_id)
    if run is None:
        raise BrainError(f"There is no run {run_id}. `cleo-tui prune --runs` lists the runs.")
    if run.undone_by is not None:
        raise BrainError(f"Run {run_id} was already undone (by run {run.undone_by}).")
    if run.kind == "undo":
        raise BrainError(f"Run {run_id} is itself an undo; undo is not undone again.")
    if run.kind == "redact":
        raise BrainError(f"Run {run_id} redacted secrets; a redaction cannot be undone (the journal never kept them).")
    if run.status != DONE:
        raise BrainError(f"Run {run_id} is still being written (or was interrupted and is recovered when "
                         "the brain is next opened); try again in a moment.")
    return run


def begin_undo(conn: sqlite3.Connection, run_id: int, summary: str = "", status: str = DONE) -> tuple[Run, int]:
    """Check the run can be undone and open the undo's own run; (run, undo id)."""
    run = _check_undoable(conn, run_id)
    undo_id = start_run(conn, "undo", summary or f"undo of run {run_id} ({run.kind})", {"undoes": run_id},
                        undoes=run_id, status=status)
    return run, undo_id


_PENDING = (f"SELECT seq, table_name, row_key, before_json, after_json FROM {RUN_CHANGES} "
            "WHERE run_id = ? AND undone_by IS NULL AND seq < ? ORDER BY seq DESC LIMIT ?")
_PENDING_FORWARD = (f"SELECT seq, table_name, row_key, before_json, after_json FROM {RUN_CHANGES} "
                    "WHERE run_id = ? AND undone_by IS NULL AND seq > ? ORDER BY seq LIMIT ?")


def each_row_once(conn: sqlite3.Connection, run_id: int) -> bool:
    """True when no row was changed twice by the run: then the order its changes are undone in is free.

    A chunked undo of such a run goes first change first: a prune wrote its rows in
    rowid order, so the undo does too, across the batches of a chunk as well as
    within each (last change first, each batch went back down the file), and a
    chunk's pages (table, indexes) are mostly neighbours: measured on a small
    brain with CLEO's triggers, a quarter fewer pages written and CPU than in a
    shuffled order.
    """
    return conn.execute(f"SELECT 1 FROM {RUN_CHANGES} WHERE run_id = ? GROUP BY table_name, row_key "
                        "HAVING count(*) > 1 LIMIT 1", (run_id,)).fetchone() is None


@dataclass
class _Change:
    """One journal row being undone."""

    seq: int
    table: str
    key: dict[str, Any]
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    @property
    def shape(self) -> tuple | None:
        """Changes of one shape are undone together (`_reverse_updates`); None: undone alone."""
        if self.before is None or self.after is None or len(self.key) != 1:
            return None
        return self.table, next(iter(self.key)), tuple(self.after), tuple(self.before)


def _pending_changes(conn: sqlite3.Connection, outcome: UndoOutcome, count: int) -> list[_Change]:
    if outcome.forward:
        cursor = outcome.cursor if outcome.cursor is not None else -1
        rows = conn.execute(_PENDING_FORWARD, [outcome.run_id, cursor, count]).fetchall()
    else:
        cursor = outcome.cursor if outcome.cursor is not None else 2**62
        rows = conn.execute(_PENDING, [outcome.run_id, cursor, count]).fetchall()
    return [_Change(seq, table, json.loads(key), None if before is None else json.loads(before),
                    None if after is None else json.loads(after)) for seq, table, key, before, after in rows]


def undo_some(conn: sqlite3.Connection, outcome: UndoOutcome, part: Slice | None = None) -> bool:
    """Reverse pending changes of `outcome.run_id`, last first (or first first: `forward`); True when none is left.

    Restored and missing changes are marked `undone_by` (never tried again);
    skipped ones stay pending for a later undo. Without `part` all of them, in
    the caller's transaction; with it, as many as the chunk's time allows.
    `outcome.cursor` remembers where the next call goes on.
    """
    while True:
        count = part.take() if part is not None else IN_BATCH
        if not count:
            return False
        changes = _pending_changes(conn, outcome, count)
        if not changes:
            return True
        verdicts = _reverse_batch(conn, outcome.undo_id, changes, part=part)
        later = [c.seq for c, (verdict, _why) in zip(changes, verdicts, strict=True) if verdict == LATER]
        # Cut short by the chunk's clock: the next batch goes on from the first change not tried;
        # changes past it that were restored or found missing are marked and not read again,
        # skipped ones are read again (and named then).
        resume = None if not later else min(later) if outcome.forward else max(later)
        done_seqs = []
        for change, (verdict, why) in zip(changes, verdicts, strict=True):
            if verdict == LATER or (verdict == "skipped" and resume is not None
                                    and (change.seq > resume if outcome.forward else change.seq < resume)):
                continue
            if verdict == "restored":
                outcome.restored += 1
                outcome.restored_in[change.table] += 1
                done_seqs.append(change.seq)
            elif verdict == "missing":
                outcome.missing.append({"id": _name(change.table, change.key), "why": why})
                done_seqs.append(change.seq)
            else:
                outcome.skipped.append({"id": _name(change.table, change.key), "why": why})
        conn.executemany(f"UPDATE {RUN_CHANGES} SET undone_by = ? WHERE run_id = ? AND seq = ?",
                         [(outcome.undo_id, outcome.run_id, s) for s in done_seqs])
        if resume is not None:
            outcome.cursor = resume - 1 if outcome.forward else resume + 1
            if part is not None:
                part.did(len(changes) - len(later))
            return False
        outcome.cursor = changes[-1].seq
        if part is not None:
            part.did(len(changes))
        if len(changes) < count:
            return True


def _reverse_batch(conn: sqlite3.Connection, undo_id: int | None, changes: list[_Change],
                   exact: bool = False, part: Slice | None = None) -> list[tuple[str, str]]:
    """`reverse_change` for each of `changes`, in order, runs of one shape together; the verdicts.

    A run holds a row once at most (a second change of it ends the run: it must
    see the first one's result). With `part`, rows are written while its chunk's
    clock allows; the changes not tried then get the verdict LATER (nothing of them
    was written).
    """
    verdicts: list[tuple[str, str]] = []
    group: list[_Change] = []
    keys: set[str] = set()

    def flush() -> None:
        if group:
            verdicts.extend(_reverse_updates(conn, undo_id, group, exact, part))
        group.clear()
        keys.clear()

    for change in changes:
        if part is not None and part.cut:
            flush()
            verdicts.append((LATER, ""))
            continue
        shape = change.shape
        key = _key_json(change.key)
        if group and (shape != group[0].shape or key in keys):
            flush()
        if shape is not None:
            group.append(change)
            keys.add(key)
            continue
        verdicts.append(reverse_change(conn, undo_id, change.table, change.key, change.before, change.after, exact))
    flush()
    return verdicts


def _reverse_updates(conn: sqlite3.Connection, undo_id: int | None, changes: list[_Change],
                     exact: bool, part: Slice | None = None) -> list[tuple[str, str]]:
    """`reverse_change` of updated rows of one shape (table, key column, columns), in a few statements.

    With `part` the rows are written while its clock allows; rows not written get LATER.
    """
    table, key_column, after_columns, _before_columns = changes[0].shape or ("", "", (), ())
    owned = [c for c in after_columns if c not in READ_BOOKKEEPING]
    bookkeeping = [c for c in after_columns if c in READ_BOOKKEEPING]
    current: dict[Any, dict[str, Any]] = {}
    # Rows are written in rowid order: neighbouring rows share their pages (`each_row_once`).
    order = "rowid" if table == cs.OBSERVATIONS else "NULL"
    select = ", ".join([*(f'"{c}"' for c in (key_column, *after_columns)), order])
    keys = [c.key[key_column] for c in changes]
    rowids: dict[Any, Any] = {}
    for start in range(0, len(keys), IN_BATCH):
        some = keys[start:start + IN_BATCH]
        for row in conn.execute(f'SELECT {select} FROM "{table}" WHERE "{key_column}" IN '
                                f'({",".join("?" * len(some))})', some).fetchall():
            current[row[0]] = dict(zip(after_columns, row[1:-1], strict=True))
            rowids[row[0]] = row[-1] if isinstance(row[-1], int) else 0
    now = cleo_timestamp() if "updated_at" in after_columns and not exact else None
    verdicts: list[tuple[str, str]] = []
    restore: dict[tuple[str, ...], list[tuple[Any, dict[str, Any], dict[str, Any]]]] = {}  # by columns set
    for change in changes:
        key = change.key[key_column]
        row = current.get(key)
        after, before = change.after or {}, change.before or {}
        if row is None:
            verdicts.append(("missing", "deleted since"))
            continue
        differs = [c for c in owned if not _same(row[c], after[c])]
        if differs:
            verdicts.append(("skipped", f"{', '.join(differs)} changed since"))
            continue
        verdicts.append(("restored", ""))
        values = {c: before[c] for c in owned}
        if exact:  # recovery: the bookkeeping too, where it still holds what the run wrote
            values.update({c: before[c] for c in bookkeeping if _same(row[c], after[c])})
        elif now is not None:
            values["updated_at"] = now
        if values:
            restore.setdefault(tuple(values), []).append((key, values, {c: row[c] for c in values}))
    not_written: set[Any] = set()
    for columns, rows in restore.items():
        rows.sort(key=lambda r: rowids[r[0]])
        if part is not None and part.cut:
            not_written.update(key for key, _values, _was in rows)
            continue
        sets = ", ".join(f'"{c}" = ?' for c in columns)
        ran = _executemany(conn, f'UPDATE "{table}" SET {sets} WHERE "{key_column}" = ?',
                           [(*values.values(), key) for key, values, _ in rows], part)
        not_written.update(key for key, _values, _was in rows[ran:])
        rows = rows[:ran]
        if undo_id is not None:
            record_many(conn, undo_id, table, [({key_column: key}, was, values) for key, values, was in rows])
    if not_written:
        verdicts = [(LATER, "") if verdict[0] == "restored" and change.key[key_column] in not_written else verdict
                    for change, verdict in zip(changes, verdicts, strict=True)]
    return verdicts


def end_undo(conn: sqlite3.Connection, outcome: UndoOutcome) -> None:
    """Close an undo after a whole pass: the run counts as undone only when no change of it is left pending.

    What is left pending is exactly what this pass skipped (it tried every pending change).
    """
    outcome.remaining = len(outcome.skipped)
    if outcome.remaining == 0:
        conn.execute(f"UPDATE {RUNS} SET undone_by = ? WHERE id = ?", (outcome.undo_id, outcome.run_id))
    parts = [f"restored {outcome.restored}"]
    if outcome.skipped:
        parts.append(f"skipped {len(outcome.skipped)} changed since")
    if outcome.missing:
        parts.append(f"{len(outcome.missing)} deleted since")
    run = get_run(conn, outcome.undo_id)
    finish_run(conn, outcome.undo_id, f"{run.summary if run else 'undo'}: {', '.join(parts)}")


def undo_changes(conn: sqlite3.Connection, run_id: int, summary: str = "") -> UndoOutcome:
    """Reverse one run inside the caller's one transaction (see the module docstring)."""
    run, undo_id = begin_undo(conn, run_id, summary)
    outcome = UndoOutcome(run_id, undo_id, undone=run.summary or "")
    undo_some(conn, outcome)
    end_undo(conn, outcome)
    return outcome


def undo_run(conn: sqlite3.Connection, run_id: int, summary: str = "") -> tuple[int, int]:
    """Reverse one run inside the caller's transaction; returns (undo run id, rows restored).

    Kept for callers that want only the counts; `undo_changes` names what was skipped.
    """
    outcome = undo_changes(conn, run_id, summary)
    return outcome.undo_id, outcome.restored


# --- chunked runs ------------------------------------------------------------------
#
# A chunk holds SQLite's write lock for about `ChunkBudget.seconds` (its COMMIT
# included), then leaves it free long enough for a writer waiting in SQLite's busy
# handler to get in. That handler (CLEO's, like ours: `busy_timeout`) sleeps
# BUSY_DELAYS_MS between two tries, so a writer that has waited w seconds tries again
# at most `poll_gap(w)` later: the lock must stay free at least that long or the
# writer sleeps through the gap, waits for the whole next chunk and, its sleeps
# growing, may starve. Batches inside a chunk are sized by what the last ones cost,
# so a chunk ends near its deadline whatever a row costs (CLEO's full-text triggers
# make an UPDATE cost ten times a plain one, and now and then far more); inside a batch
# the clock is read before every row (`Slice.while_time`), so a batch whose rows turn
# slow ends the chunk one row past its deadline and the rest go into the next chunk.

BUSY_DELAYS_MS = (1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100)  # SQLite's sqliteDefaultBusyCallback
PAUSE_MARGIN = 0.005  # the waiting writer must also be scheduled and take the lock
SLICE_SECONDS = 0.01  # one batch aims at this long, so the clock is read often enough
FIRST_BATCH = 4       # items in a run's first batch, before any cost is known
SLOW_SPELL = 2.0      # a chunk that held the lock this many times its budget: the disk is in a slow spell


def poll_gap(waited: float) -> float:
    """How long a writer that has already waited `waited` seconds may sleep before its next try."""
    total = 0.0
    for delay in BUSY_DELAYS_MS:
        total += delay / 1000
        if waited < total:
            return delay / 1000
    return BUSY_DELAYS_MS[-1] / 1000


class ChunkBudget:
    """How long a chunk may hold the write lock (COMMIT included), and a cap on its items.

    `pause` is the least time the lock is left free between two chunks; the pause
    actually taken is longer when the chunk ran long (`poll_gap`).
    """

    def __init__(self, rows: int | None = None, seconds: float | None = None, pause: float | None = None) -> None:
        self.rows = rows or CHUNK_ROWS
        self.seconds = CHUNK_SECONDS if seconds is None else seconds
        self.pause = CHUNK_PAUSE if pause is None else pause

    def pause_after(self, held: float) -> float:
        """The lock-free time after a chunk that kept the lock `held` seconds (0 in tests that ask so)."""
        if self.pause == 0:
            return 0.0
        return max(self.pause, poll_gap(held) + PAUSE_MARGIN)


class Pace:
    """What a run's items and commits cost so far: sizes the batches of its next chunks."""

    def __init__(self, budget: ChunkBudget) -> None:
        self.budget = budget
        self.per_item: float | None = None  # seconds, a moving average
        self.commit = 0.0                   # seconds a COMMIT took, likewise

    def learn(self, items: int, seconds: float, cut: bool = False) -> None:
        """Take in what the last batch cost: a dearer one at once, a cheaper one averaged in.

        Dear rows come in spells (the disk busy with a full-text merge or a checkpoint),
        so the batch after a slow one must already be small; a cheaper batch only
        brings the estimate down gradually. A batch its chunk's clock `cut` is averaged
        in either way: it read all its rows but wrote only some, so its cost a row is
        overstated, and the cut already keeps the chunk short (taken at once, it would
        shrink the next batches to a row or two for many chunks, each paying a batch's
        reads and a pause).
        """
        if items <= 0:
            return
        cost = seconds / items
        if self.per_item is None or (cost >= self.per_item and not cut):
            self.per_item = cost
        else:
            self.per_item = 0.7 * self.per_item + 0.3 * cost

    def learn_commit(self, seconds: float) -> None:
        self.commit = seconds if seconds > self.commit else 0.8 * self.commit + 0.2 * seconds

    def slice(self, began: float) -> Slice:
        """The time budget of a chunk whose transaction began at `began` (perf_counter)."""
        work = max(self.budget.seconds - self.commit, self.budget.seconds / 4)
        return Slice(self, began + work, self.budget.rows)


class Slice:
    """One chunk's share of the clock: `take` says how many items the next batch may hold."""

    def __init__(self, pace: Pace, deadline: float, cap: int) -> None:
        self.pace, self.deadline, self.left = pace, deadline, cap
        self.batches = 0
        self.cut = False  # a batch stopped at the deadline (its rows turned slow): the chunk ends
        self._taken_at = 0.0
        self._rows = 0    # rows written in this chunk

    def while_time(self, items: Iterable[Any]) -> Iterator[Any]:
        """The items, one by one, until the deadline passes (the chunk's first always).

        Rows come in slow spells (the disk busy: every statement, CLEO's own too,
        costs tens of times the usual for a second or two): a batch sized on the last
        ones' cost would then hold the lock many times the chunk's time. Reading the
        clock before each row ends the chunk one row past its deadline instead.
        """
        for item in items:
            if self._rows and time.perf_counter() >= self.deadline:
                self.cut = True
                return
            self._rows += 1
            yield item

    def take(self, available: int = IN_BATCH) -> int:
        """Items for the next batch (at most `available`); 0 when the chunk is full.

        A chunk's first batch always gets at least one item, so every chunk makes progress.
        """
        now = time.perf_counter()
        room = self.deadline - now
        if self.batches and (room <= 0 or self.cut):
            return 0
        per_item = self.pace.per_item
        if per_item is None:
            count = FIRST_BATCH
        else:
            count = int(min(room, SLICE_SECONDS) / per_item) if per_item > 0 else IN_BATCH
        count = min(count, available, self.left, IN_BATCH)
        if count <= 0:
            if self.batches or self.left <= 0 or available <= 0:
                return 0
            count = 1
        self.batches += 1
        self._taken_at = now
        return count

    def did(self, items: int) -> None:
        """`items` of the last batch were done: learn what they cost."""
        self.left -= items
        self.pace.learn(items, time.perf_counter() - self._taken_at, self.cut)

    @property
    def full(self) -> bool:
        return self.cut or self.left <= 0 or time.perf_counter() >= self.deadline


class ChunkTarget(Protocol):
    """What a chunked run writes through: a Brain (store.py), or a bare connection at recovery."""

    @property
    def conn(self) -> sqlite3.Connection: ...

    @property
    def lock(self) -> AbstractContextManager[Any]: ...

    def write(self, sweep_check: bool = True) -> AbstractContextManager[sqlite3.Connection]: ...


ChunkStep = Callable[[sqlite3.Connection, Slice, bool], bool]  # (conn, slice, first chunk) -> done


@dataclass
class RunStats:
    """What a chunked run cost, measured by the run itself (`run_chunks`)."""

    chunks: int = 0
    held: float = 0.0     # seconds the write lock was held, from BEGIN's grant to COMMIT's end, all chunks
    longest: float = 0.0  # the longest chunk, likewise
    longest_commit: float = 0.0  # the longest COMMIT (writing the chunk's pages to the WAL)
    waited: float = 0.0   # seconds BEGIN waited for the lock (another writer held it)
    paused: float = 0.0   # seconds between chunks (the checkpoints included)
    checkpoints: float = 0.0  # seconds of the pauses spent checkpointing the WAL (the lock free)
    cut: int = 0          # chunks ended at their deadline by rows that turned slow (`Slice.while_time`)

    def to_json(self) -> dict[str, Any]:
        return {"chunks": self.chunks, "held_s": round(self.held, 3), "longest_ms": round(self.longest * 1000, 1),
                "longest_commit_ms": round(self.longest_commit * 1000, 1),
                "waited_s": round(self.waited, 3), "paused_s": round(self.paused, 3),
                "checkpoints_s": round(self.checkpoints, 3), "cut": self.cut}


def run_chunks(target: ChunkTarget, step: ChunkStep, budget: ChunkBudget | None = None) -> RunStats:
    """Call `step` in one short write transaction after another until it says it is done; what it cost.

    The first chunk passes the sweep gate (a run that started also finishes). While
    the run lasts, garbage collection waits (a full collection of a big pool takes
    hundreds of ms, inside a chunk or making a pause long) and the WAL is
    checkpointed by this run between chunks, never by CLEO's next commit
    (`_own_checkpoints`). After a chunk that held the lock `SLOW_SPELL` times its
    budget (a slow spell of the disk), the lock stays free at least as long as that
    chunk held it: CLEO's own writes are slow in the spell too, and a chunk right
    after them would stack on them.
    """
    budget = budget or ChunkBudget()
    pace = Pace(budget)
    watch = _Watch(target)
    stats = RunStats()
    first = True
    with _own_checkpoints(target), _gc_paused():
        while True:
            asked = time.perf_counter()
            with target.write(sweep_check=first) as conn:
                began = time.perf_counter()
                part = pace.slice(began)
                done = step(conn, part, first)
                committing = time.perf_counter()
            now = time.perf_counter()
            pace.learn_commit(now - committing)
            stats.longest_commit = max(stats.longest_commit, now - committing)
            held = now - began
            stats.chunks += 1
            stats.held += held
            stats.longest = max(stats.longest, held)
            stats.waited += began - asked
            stats.cut += part.cut
            first = False
            if done:
                return stats
            rest = budget.pause_after(held)
            if budget.pause and held > SLOW_SPELL * budget.seconds:
                rest = max(rest, held)
            stats.checkpoints += _rest(target, rest)
            if budget.pause and watch.went_quiet():
                # CLEO wrote in the last pause but not in this one: a writer may have missed
                # it (not scheduled in time); its sleeps have grown, so wait one out.
                pause(poll_gap(held + rest) + PAUSE_MARGIN)
            stats.paused += time.perf_counter() - now


class _Watch:
    """Whether another connection (CLEO) committed during each pause (SQLite's data_version)."""

    def __init__(self, target: ChunkTarget) -> None:
        self.target = target
        self.version = self._read()
        self.wrote = False

    def _read(self) -> int | None:
        with self.target.lock:
            try:
                return int(self.target.conn.execute("PRAGMA data_version").fetchone()[0])
            except sqlite3.Error:
                return None

    def went_quiet(self) -> bool:
        """True when CLEO wrote in the pause before last but not since (called after each pause)."""
        version = self._read()
        wrote, self.version = version != self.version, version
        quiet, self.wrote = self.wrote and not wrote, wrote
        return quiet


def write_in_chunks(target: ChunkTarget, items: list[Any],
                    step: Callable[[sqlite3.Connection, list[Any], Slice], int | None],
                    start: Callable[[sqlite3.Connection], None],
                    finish: Callable[[sqlite3.Connection], None],
                    budget: ChunkBudget | None = None) -> RunStats:
    """Write `items` in short transactions (`run_chunks`): `start` in the first, `finish` in the last.

    `step(conn, batch, part)` writes one batch and returns how many of its items
    it did (None: all); fewer when `part`'s clock ran out (`Slice.while_time`):
    the rest go into the next chunk. Batches are sized so a chunk holds the lock
    about `budget.seconds`.
    """
    position = 0

    def chunk(conn: sqlite3.Connection, part: Slice, first: bool) -> bool:
        nonlocal position
        if first:
            start(conn)
        while position < len(items):
            count = part.take(len(items) - position)
            if not count:
                return False
            did = step(conn, items[position:position + count], part)
            did = count if did is None else did
            position += did
            part.did(did)
            if did < count:
                return False
        finish(conn)
        return True

    return run_chunks(target, chunk, budget)


def pause(seconds: float | None = None) -> None:
    """Leave the write lock free between two chunks, long enough for a waiting writer to take it."""
    time.sleep(CHUNK_PAUSE if seconds is None else seconds)  # not a synchronisation: the busy handler needs the gap


def _rest(target: ChunkTarget, seconds: float) -> float:
    """The pause between two chunks: checkpoint what the last chunks wrote, then sleep; the checkpoint's seconds.

    The checkpoint comes first, right after the COMMIT: SQLite checkpoints in whichever
    connection's commit finds 1,000 frames in the WAL, so a CLEO writer that took the
    lock in the pause would otherwise copy our chunk's pages in its own commit
    (measured: hundreds of ms). While ours runs, CLEO's commit skips its checkpoint
    (the checkpoint lock is taken). A CLEO write during ours leaves its own frames
    uncopied and keeps the WAL from starting over, so every later CLEO commit in the
    pause would checkpoint (two fsyncs each): checkpoint again until all is copied,
    for as long as the pause lasts. The checkpoints' time counts towards the pause
    (the lock is free meanwhile).
    """
    if seconds <= 0:
        return 0.0
    started = time.perf_counter()
    end = started + seconds
    while not _checkpoint(target) and time.perf_counter() < end:
        pass
    checkpoint = time.perf_counter() - started
    pause(max(0.0, end - time.perf_counter()))
    return checkpoint


def _checkpoint(target: ChunkTarget) -> bool:
    """A passive checkpoint of the WAL; False when frames are left uncopied (a writer wrote meanwhile)."""
    with target.lock:
        try:
            busy, frames, copied = target.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.OperationalError:
            return True  # busy or not in WAL mode: CLEO's connection or the next pause does it
    return bool(busy) or frames == copied


@contextmanager
def _own_checkpoints(target: ChunkTarget) -> Iterator[None]:
    """For a run's length, this connection checkpoints the WAL in the pauses, not at its COMMIT.

    SQLite's auto-checkpoint runs in whichever connection's commit makes the WAL
    pass 1000 pages: with ours writing thousands, that would often be CLEO's next
    insert, which would then copy our pages and wait for it. The pause checkpoints
    instead, with the lock free; the setting is put back (and a last checkpoint
    done) at the end.
    """
    with target.lock:
        prior = target.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        target.conn.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        yield
    finally:
        with target.lock:
            target.conn.execute(f"PRAGMA wal_autocheckpoint = {int(prior)}")
            try:
                target.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.OperationalError:
                pass


class _GcState:
    """Garbage collection paused while any chunked run of any thread lasts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holders = 0
        self.was_enabled = True


_gc_state = _GcState()


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No garbage collection during a run: a full one over a big pool would hold CLEO up for it.

    Reference counting frees what a run allocates; only cycles wait for the end.
    """
    with _gc_state.lock:
        if _gc_state.holders == 0:
            _gc_state.was_enabled = gc.isenabled()
            gc.disable()
        _gc_state.holders += 1
    try:
        yield
    finally:
        with _gc_state.lock:
            _gc_state.holders -= 1
            if _gc_state.holders == 0 and _gc_state.was_enabled:
                gc.enable()


# --- crash recovery ----------------------------------------------------------------


def process_start(pid: int) -> str | None:
    """When process `pid` started, as text that differs for a later process given the same pid.

    Linux: the boot id and field 22 of /proc/PID/stat (clock ticks since boot); elsewhere
    `ps -o lstart=` (BSD, macOS). None when it cannot be told (no such process, no ps).
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        return f"{boot}:{stat.rpartition(b')')[2].split()[19].decode('ascii')}"
    except (OSError, IndexError, UnicodeDecodeError):
        pass
    if Path("/proc/self/stat").exists():
        return None  # Linux without that process: gone
    try:
        done = subprocess.run(["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True,
                              timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


_OWN_START: dict[int, str | None] = {}


def _own_start() -> str | None:
    """This process's start (read once per process: a fork has its own pid)."""
    pid = os.getpid()
    if pid not in _OWN_START:
        _OWN_START[pid] = process_start(pid)
    return _OWN_START[pid]


def _alive(pid: int | None, started: str | None = None) -> bool:
    """The run's owner still runs: its pid is alive and, when its start time was recorded (runs
    before migration 6 have none), it is the same process, not a later one given the same pid."""
    if not pid or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except OverflowError:  # not a pid this system can have
        return False
    if started is None:
        return True
    now = process_start(pid)
    return now is None or now == started


def interrupted_runs(conn: sqlite3.Connection) -> list[tuple[int, str, int | None]]:
    """(id, kind, owner pid) of runs left in progress whose writer is gone."""
    try:
        rows = conn.execute(f"SELECT id, kind, owner_pid, owner_started FROM {RUNS} WHERE status = ?",
                            (IN_PROGRESS,)).fetchall()
    except sqlite3.OperationalError:  # a brain not yet migrated to 6 (read-only): the pid alone
        rows = [(*r, None) for r in conn.execute(f"SELECT id, kind, owner_pid FROM {RUNS} WHERE status = ?",
                                                 (IN_PROGRESS,)).fetchall()]
    return [(r[0], r[1], r[2]) for r in rows if not _alive(r[2], r[3])]


def rollback_some(conn: sqlite3.Connection, run_id: int, part: Slice | None = None) -> bool:
    """Revert changes of an interrupted run, last first, deleting them; True when the run is gone.

    As many as `part` allows (all without it). When none is left, an interrupted
    undo releases the changes it had marked (a batch at a time too) and the run
    row goes, so the journal is exactly as before the step.
    """
    while True:
        count = part.take() if part is not None else IN_BATCH
        if not count:
            return False
        rows = conn.execute(f"SELECT seq, table_name, row_key, before_json, after_json FROM {RUN_CHANGES} "
                            "WHERE run_id = ? ORDER BY seq DESC LIMIT ?", (run_id, count)).fetchall()
        changes = [_Change(seq, table, json.loads(key), None if before is None else json.loads(before),
                           None if after is None else json.loads(after)) for seq, table, key, before, after in rows]
        _reverse_batch(conn, None, changes, exact=True)
        conn.executemany(f"DELETE FROM {RUN_CHANGES} WHERE run_id = ? AND seq = ?",
                         [(run_id, c.seq) for c in changes])
        if part is not None:
            part.did(len(changes))
        if len(changes) < count:
            break
    while True:  # the marks of an interrupted undo: many rows, released a batch at a time
        count = part.take() if part is not None else IN_BATCH
        if not count:
            return False
        released = conn.execute(f"UPDATE {RUN_CHANGES} SET undone_by = NULL WHERE rowid IN (SELECT rowid FROM "
                                f"{RUN_CHANGES} WHERE undone_by = ? LIMIT ?)", (run_id, count)).rowcount
        if part is not None:
            part.did(max(released, 1))
        if released < count:
            break
    conn.execute(f"UPDATE {RUNS} SET undone_by = NULL WHERE undone_by = ?", (run_id,))
    conn.execute(f"DELETE FROM {RUNS} WHERE id = ?", (run_id,))
    return True


def _rollback_step(run_id: int) -> ChunkStep:
    def step(conn: sqlite3.Connection, part: Slice, _first: bool) -> bool:
        return rollback_some(conn, run_id, part)
    return step


class _Connection:
    """A bare writable connection as a ChunkTarget (recovery runs before the Brain exists)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.lock = threading.RLock()

    @contextmanager
    def write(self, sweep_check: bool = True) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise


def recover_interrupted(conn: sqlite3.Connection, budget: ChunkBudget | None = None) -> list[str]:
    """Roll back every run a crash left in progress, in short transactions; what was done, in words.

    Called on every writable open (store.open_brain). Each transaction reverts a
    chunk and deletes the journal rows it reverted, so a crash during recovery
    is recovered in turn on the next open; CLEO's writers wait at most a chunk.
    """
    try:
        runs = interrupted_runs(conn)
    except sqlite3.OperationalError:  # an older layout without status (not yet migrated)
        return []
    notes = []
    for run_id, kind, _pid in runs:
        run_chunks(_Connection(conn), _rollback_step(run_id), budget)
        notes.append(f"run {run_id} ({kind}) was interrupted and has been rolled back")
    return notes


def interrupted_notes(conn: sqlite3.Connection, why: str = "the brain is open read-only") -> list[str]:
    """For an open that cannot write (`why`): runs a crash left in progress, said plainly."""
    try:
        runs = interrupted_runs(conn)
    except sqlite3.OperationalError:
        return []
    return [f"run {run_id} ({kind}) was interrupted and cannot be rolled back now: {why}. Until it is, the "
            "brain holds part of that step; any cleo-tui command rolls it back once it can write the brain"
            for run_id, kind, _pid in runs]
