"""Undo: reverse a recorded run row by row, while CLEO lives in the brain.

See the journal package docstring (`cleo_tui.brain.journal`) for the rules: owned
columns decide whether a row is put back, CLEO's bookkeeping never does; skipped
rows are named and stay pending for a later undo. `undo_changes` undoes a run in
the caller's transaction; `begin_undo` / `undo_some` / `end_undo` are the pieces a
chunked undo (`cleo_tui.memory.curation.undo`) calls chunk by chunk.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.journal_runs import (
    DONE,
    IN_BATCH,
    Run,
    delete_row,
    executemany_while,
    finish_run,
    get_run,
    insert_row,
    key_json,
    record_many,
    start_run,
    update_row,
    where_key,
)
from cleo_tui.brain.migrations import OVERRIDES, RUN_CHANGES, RUNS
from cleo_tui.safe_text import plural, titled_lines

if TYPE_CHECKING:
    from cleo_tui.brain.journal_chunks import RunStats, Slice

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

# What a row of each table is called when an undo counts what it restored ("2 observations and 2 edges").
ROW_WORDS = {cs.OBSERVATIONS: "observation", cs.EDGES: "edge", cs.PATTERNS: "pattern", cs.LEARNINGS: "learning",
             OVERRIDES: "relevance override"}


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
        """No change of the run is left not undone."""
        return self.remaining == 0

    @property
    def clean(self) -> bool:
        """Every change of the run undone: nothing skipped, nothing deleted meanwhile."""
        return self.complete and not self.skipped and not self.missing

    def restored_counts(self) -> list[str]:
        """The rows restored, counted by kind: ["2 observations", "2 edges"] (an edge a run added
        is restored by taking it away); [] when none was."""
        counts: Counter[str] = Counter()
        for table, n in self.restored_in.items():
            counts[ROW_WORDS.get(table, "other row")] += n
        return [plural(counts[word], word) for word in [*ROW_WORDS.values(), "other row"] if counts[word]]

    def lines(self, again: str) -> list[str]:
        """The outcome in words, for the CLI and the TUI, naming the rows it could not restore;
        `again` says how to try the changes left (a command, a key)."""
        counts = self.restored_counts() or ["no row"]
        restored = ", ".join(counts[:-1]) + " and " + counts[-1] if len(counts) > 1 else counts[0]
        out = [f"Undid run {self.run_id}: {restored} restored (recorded as run {self.undo_id})."]
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
        """The outcome for `--json`."""
        return {"undone": self.run_id, "run_id": self.undo_id, "restored": self.restored,
                "skipped": self.skipped, "missing": self.missing, "remaining": self.remaining,
                "complete": self.complete}



def _row_name(table: str, key: Mapping[str, Any]) -> str:
    """How a row is named in an undo's result: its id, or table:key for other tables."""
    if set(key) == {"id"}:
        return str(key["id"])
    if set(key) == {"observation_id"}:
        return f"{key['observation_id']} (relevance override)"
    return f"{table}:{key_json(key)}"


def _differs(conn: sqlite3.Connection, table: str, key: Mapping[str, Any],
             expected: Mapping[str, Any]) -> list[str] | None:
    """Columns of `expected` whose stored value differs (None: the row is gone)."""
    where, params = where_key(key)
    cols = list(expected) or [next(iter(key))]
    row = conn.execute(f'SELECT {", ".join(chr(34) + c + chr(34) for c in cols)} FROM "{table}" WHERE {where}',
                       params).fetchone()
    if row is None:
        return None
    if not expected:
        return []
    return [c for c, value in zip(cols, row, strict=False) if not _same(value, expected[c])]


def _same(stored: Any, recorded: Any) -> bool:
    """A stored value equals the recorded one (numbers compared as numbers: 1 == 1.0)."""
    if isinstance(stored, (int, float)) and isinstance(recorded, (int, float)) \
            and not isinstance(stored, bool) and not isinstance(recorded, bool):
        return float(stored) == float(recorded)
    return bool(stored == recorded)


def reverse_change(conn: sqlite3.Connection, undo_id: int | None, table: str, key: dict[str, Any],
                   before: dict[str, Any] | None, after: dict[str, Any] | None, exact: bool = False) -> tuple[str, str]:
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
            where, params = where_key(key)
            conn.execute(f'DELETE FROM "{table}" WHERE {where}', params)
        else:
            delete_row(conn, undo_id, table, key)
        return "restored", ""
    if after is None:  # deleted: put back while the key is free
        where, params = where_key(key)
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
        where, params = where_key(key)
        sets = ", ".join(f'"{c}" = ?' for c in values)
        conn.execute(f'UPDATE "{table}" SET {sets} WHERE {where}', [*values.values(), *params])
    else:
        update_row(conn, undo_id, table, key, values)
    return "restored", ""


def _check_undoable(conn: sqlite3.Connection, run_id: int) -> Run:
    """The run `run_id`, when it can be undone now; a BrainError saying why not otherwise."""
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
class RecordedChange:
    """One journal change row being undone (or rolled back): which row, its values before and after."""

    seq: int
    table: str
    key: dict[str, Any]
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    @property
    def shape(self) -> tuple[Any, ...] | None:
        """Changes of one shape are undone together (`_reverse_updates`); None: undone alone."""
        if self.before is None or self.after is None or len(self.key) != 1:
            return None
        return self.table, next(iter(self.key)), tuple(self.after), tuple(self.before)


def changes_from_rows(rows: list[tuple[int, str, str, str | None, str | None]]) -> list[RecordedChange]:
    """Journal rows (seq, table_name, row_key, before_json, after_json) as RecordedChanges."""
    return [RecordedChange(seq, table, json.loads(key), None if before is None else json.loads(before),
                           None if after is None else json.loads(after)) for seq, table, key, before, after in rows]


def _pending_changes(conn: sqlite3.Connection, outcome: UndoOutcome, count: int) -> list[RecordedChange]:
    """The next `count` changes of the undone run no undo has reversed, from `outcome.cursor` on."""
    if outcome.forward:
        cursor = outcome.cursor if outcome.cursor is not None else -1
        rows = conn.execute(_PENDING_FORWARD, [outcome.run_id, cursor, count]).fetchall()
    else:
        cursor = outcome.cursor if outcome.cursor is not None else 2**62
        rows = conn.execute(_PENDING, [outcome.run_id, cursor, count]).fetchall()
    return changes_from_rows(rows)


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
        verdicts = reverse_batch(conn, outcome.undo_id, changes, part=part)
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
                outcome.missing.append({"id": _row_name(change.table, change.key), "why": why})
                done_seqs.append(change.seq)
            else:
                outcome.skipped.append({"id": _row_name(change.table, change.key), "why": why})
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


def reverse_batch(conn: sqlite3.Connection, undo_id: int | None, changes: list[RecordedChange],
                   exact: bool = False, part: Slice | None = None) -> list[tuple[str, str]]:
    """`reverse_change` for each of `changes`, in order, runs of one shape together; the verdicts.

    A run holds a row once at most (a second change of it ends the run: it must
    see the first one's result). With `part`, rows are written while its chunk's
    clock allows; the changes not tried then get the verdict LATER (nothing of them
    was written).
    """
    verdicts: list[tuple[str, str]] = []
    group: list[RecordedChange] = []
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
        key = key_json(change.key)
        if group and (shape != group[0].shape or key in keys):
            flush()
        if shape is not None:
            group.append(change)
            keys.add(key)
            continue
        verdicts.append(reverse_change(conn, undo_id, change.table, change.key, change.before, change.after, exact))
    flush()
    return verdicts


def _reverse_updates(conn: sqlite3.Connection, undo_id: int | None, changes: list[RecordedChange],
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
        ran = executemany_while(conn, f'UPDATE "{table}" SET {sets} WHERE "{key_column}" = ?',
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
    parts = [f"restored {outcome.restored:,}"]
    if outcome.skipped:
        parts.append(f"skipped {len(outcome.skipped):,} changed since")
    if outcome.missing:
        parts.append(f"{len(outcome.missing):,} deleted since")
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

