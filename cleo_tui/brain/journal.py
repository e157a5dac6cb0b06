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

Large steps are written in chunks (`ChunkedWriter`), each its own short
transaction, under one run whose `status` is 'in_progress' until its last
chunk commits ('done'). A run left in progress by a crash or kill is **rolled
back** the next time the brain is opened for writing (`recover_interrupted`):
its changes are reverted in reverse order (exactly: the before values, where
the row still holds the run's after values) and the run and its change rows are
deleted, so the brain is exactly as before the step. A run whose writer process
is still alive (another cleo-tui) is left alone.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.migrations import RUN_CHANGES, RUNS

IN_PROGRESS, DONE = "in_progress", "done"
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
# A chunk ends after this many rows or this long, whichever comes first: CLEO's
# writers wait at most about one chunk (the bound is 250 ms).
CHUNK_ROWS = 2_000
CHUNK_SECONDS = 0.05
# Between chunks the lock is left free this long: a writer waiting in SQLite's busy
# handler polls every 1-25 ms at first (100 ms once it has waited long), so a gap
# shorter than its poll interval would starve it — CLEO would wait for the whole run.
CHUNK_PAUSE = 0.05
SUB_BATCH = 25  # rows written between two looks at the clock
PAGE = 100      # journal rows read at a time by an undo


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
    cursor: int | None = None  # the last change tried (changes are undone last first)

    @property
    def complete(self) -> bool:
        return self.remaining == 0

    def to_json(self) -> dict[str, Any]:
        return {"undone": self.run_id, "run_id": self.undo_id, "restored": self.restored,
                "skipped": self.skipped, "missing": self.missing, "remaining": self.remaining,
                "complete": self.complete}


def _key_json(key: Mapping[str, Any]) -> str:
    return json.dumps(dict(key), sort_keys=True, ensure_ascii=False)


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
        f"INSERT INTO {RUNS}(kind, created_at, summary, params_json, undoes, status, owner_pid) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (kind, created_at or cleo_timestamp(), summary, json.dumps(dict(params or {}), ensure_ascii=False),
         undoes, status, os.getpid()),
    )
    return int(cur.lastrowid or 0)


def finish_run(conn: sqlite3.Connection, run_id: int, summary: str | None = None) -> None:
    """Mark a chunked run done (in its last chunk's transaction)."""
    if summary is None:
        conn.execute(f"UPDATE {RUNS} SET status = ? WHERE id = ?", (DONE, run_id))
    else:
        conn.execute(f"UPDATE {RUNS} SET status = ?, summary = ? WHERE id = ?", (DONE, summary, run_id))


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


def undo_some(conn: sqlite3.Connection, outcome: UndoOutcome, limit: int | None = None,
              deadline: float | None = None) -> bool:
    """Reverse pending changes of `outcome.run_id`, last first; True when none is left to try.

    Restored and missing changes are marked `undone_by` (never tried again);
    skipped ones stay pending for a later undo. At most `limit` changes,
    stopping early at `deadline` (time.perf_counter()), so a chunk stays short;
    `outcome.cursor` remembers where the next call goes on.
    """
    sql = (f"SELECT seq, table_name, row_key, before_json, after_json FROM {RUN_CHANGES} "
           "WHERE run_id = ? AND undone_by IS NULL AND seq < ? ORDER BY seq DESC LIMIT ?")
    handled = 0
    done_seqs: list[int] = []
    while limit is None or handled < limit:
        cursor = outcome.cursor if outcome.cursor is not None else 2**62
        page = PAGE if limit is None else min(PAGE, limit - handled)
        rows = conn.execute(sql, [outcome.run_id, cursor, page]).fetchall()
        if not rows:
            break
        for seq, table, key_text, before_text, after_text in rows:
            key = json.loads(key_text)
            verdict, why = reverse_change(conn, outcome.undo_id, table, key,
                                          None if before_text is None else json.loads(before_text),
                                          None if after_text is None else json.loads(after_text))
            if verdict == "restored":
                outcome.restored += 1
                done_seqs.append(seq)
            elif verdict == "missing":
                outcome.missing.append({"id": _name(table, key), "why": why})
                done_seqs.append(seq)
            else:
                outcome.skipped.append({"id": _name(table, key), "why": why})
            outcome.cursor = seq
            handled += 1
            if deadline is not None and time.perf_counter() >= deadline:
                break
        if deadline is not None and time.perf_counter() >= deadline:
            break
    conn.executemany(f"UPDATE {RUN_CHANGES} SET undone_by = ? WHERE run_id = ? AND seq = ?",
                     [(outcome.undo_id, outcome.run_id, s) for s in done_seqs])
    if outcome.cursor is None:
        return True
    return conn.execute(f"SELECT 1 FROM {RUN_CHANGES} WHERE run_id = ? AND undone_by IS NULL AND seq < ? LIMIT 1",
                        (outcome.run_id, outcome.cursor)).fetchone() is None


def end_undo(conn: sqlite3.Connection, outcome: UndoOutcome) -> None:
    """Close an undo: the run counts as undone only when no change of it is left pending."""
    outcome.remaining = pending_count(conn, outcome.run_id)
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
    _run, undo_id = begin_undo(conn, run_id, summary)
    outcome = UndoOutcome(run_id, undo_id)
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


class ChunkBudget:
    """Decides when a chunk is full: after `rows` rows or `seconds`, whichever first."""

    def __init__(self, rows: int | None = None, seconds: float | None = None, pause: float | None = None) -> None:
        self.rows = rows or CHUNK_ROWS
        self.seconds = CHUNK_SECONDS if seconds is None else seconds
        self.pause = CHUNK_PAUSE if pause is None else pause

    def chunks(self, items: Iterable[Any]) -> Iterator[list[Any]]:
        """Split `items` into lists of at most `rows` (time is checked by `full`)."""
        batch: list[Any] = []
        for item in items:
            batch.append(item)
            if len(batch) >= self.rows:
                yield batch
                batch = []
        if batch:
            yield batch


WriteOpener = Callable[[bool], Any]  # brain.write-like: opener(first_chunk) -> context manager of a connection


def write_in_chunks(opener: WriteOpener, items: list[Any],
                    step: Callable[[sqlite3.Connection, list[Any]], None],
                    start: Callable[[sqlite3.Connection], None],
                    finish: Callable[[sqlite3.Connection], None],
                    budget: ChunkBudget | None = None) -> None:
    """Write `items` in short transactions: `start` in the first, `finish` in the last.

    `step(conn, chunk)` writes one chunk; a chunk is cut at `budget.rows` items or
    when `budget.seconds` have passed inside it (the rest goes to the next chunk).
    """
    budget = budget or ChunkBudget()
    position, first = 0, True
    while True:
        with opener(first) as conn:
            if first:
                start(conn)
                first = False
            deadline = time.perf_counter() + budget.seconds
            end = min(len(items), position + budget.rows)
            while position < end:
                stop = min(end, position + SUB_BATCH)
                step(conn, items[position:stop])
                position = stop
                if time.perf_counter() >= deadline:
                    break
            if position >= len(items):
                finish(conn)
                return
        pause(budget.pause)


def pause(seconds: float | None = None) -> None:
    """Leave the write lock free between two chunks, long enough for a waiting writer to take it."""
    time.sleep(CHUNK_PAUSE if seconds is None else seconds)  # not a synchronisation: the busy handler needs the gap


# --- crash recovery ----------------------------------------------------------------


def _alive(pid: int | None) -> bool:
    if not pid or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def interrupted_runs(conn: sqlite3.Connection) -> list[tuple[int, str, int | None]]:
    """(id, kind, owner pid) of runs left in progress whose writer is gone."""
    rows = conn.execute(f"SELECT id, kind, owner_pid FROM {RUNS} WHERE status = ?", (IN_PROGRESS,)).fetchall()
    return [(r[0], r[1], r[2]) for r in rows if not _alive(r[2])]


def rollback_some(conn: sqlite3.Connection, run_id: int, limit: int = 200) -> bool:
    """Revert up to `limit` changes of an interrupted run, last first, deleting them; True when done.

    When none is left the run row goes too, and an interrupted undo releases the
    changes it had marked, so the journal is exactly as before the step.
    """
    rows = conn.execute(f"SELECT seq, table_name, row_key, before_json, after_json FROM {RUN_CHANGES} "
                        "WHERE run_id = ? ORDER BY seq DESC LIMIT ?", (run_id, limit)).fetchall()
    for seq, table, key_text, before_text, after_text in rows:
        reverse_change(conn, None, table, json.loads(key_text),
                       None if before_text is None else json.loads(before_text),
                       None if after_text is None else json.loads(after_text), exact=True)
        conn.execute(f"DELETE FROM {RUN_CHANGES} WHERE run_id = ? AND seq = ?", (run_id, seq))
    if len(rows) == limit:
        return False
    conn.execute(f"UPDATE {RUN_CHANGES} SET undone_by = NULL WHERE undone_by = ?", (run_id,))
    conn.execute(f"UPDATE {RUNS} SET undone_by = NULL WHERE undone_by = ?", (run_id,))
    conn.execute(f"DELETE FROM {RUNS} WHERE id = ?", (run_id,))
    return True


def recover_interrupted(conn: sqlite3.Connection) -> list[str]:
    """Roll back every run a crash left in progress, in short transactions; what was done, in words.

    Called on every writable open (store.open_brain). Each transaction reverts a
    chunk and deletes the journal rows it reverted, so a crash during recovery
    is recovered in turn on the next open.
    """
    try:
        runs = interrupted_runs(conn)
    except sqlite3.OperationalError:  # an older layout without status (not yet migrated)
        return []
    notes = []
    for run_id, kind, _pid in runs:
        done, first = False, True
        while not done:
            if not first:
                pause()
            first = False
            conn.execute("BEGIN IMMEDIATE")
            try:
                done = rollback_some(conn, run_id)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        notes.append(f"run {run_id} ({kind}) was interrupted and has been rolled back")
    return notes


def interrupted_notes(conn: sqlite3.Connection) -> list[str]:
    """For a read-only open: runs a crash left in progress, which the next writable open rolls back."""
    try:
        runs = interrupted_runs(conn)
    except sqlite3.OperationalError:
        return []
    return [f"run {run_id} ({kind}) was interrupted; it is rolled back the next time the brain is opened "
            "for writing" for run_id, kind, _pid in runs]
