"""cleo-tui's own tables inside a brain: versioned, idempotent migrations.

Only tables named `cleo_tui_*` are created here (hippo's `recall_trace*`
tables are named here but created by recall/traces.py with the first trace).
CLEO's tables and columns are never altered or dropped.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlite_utils import Database

META = "cleo_tui_meta"
RUNS = "cleo_tui_runs"
RUN_CHANGES = "cleo_tui_run_changes"
OVERRIDES = "cleo_tui_relevance_overrides"
PROPOSALS = "cleo_tui_proposals"
PROPOSAL_MARKS = "cleo_tui_proposal_marks"
TRACES = "recall_traces"
TRACE_RESULTS = "recall_trace_results"
TRACE_OUTCOMES = "recall_trace_outcomes"


Step = str | Callable[["Database"], None]


@dataclass(frozen=True)
class Migration:
    """One versioned step: its statements run in one transaction, then the version is recorded."""

    version: int
    name: str
    statements: tuple[Step, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "meta, curation journal, relevance overrides", (
        f"CREATE TABLE IF NOT EXISTS {META} (key TEXT PRIMARY KEY, value TEXT)",
        # One row per curation step (prune commit, evict, restore, pin, apply, undo ...).
        f"""CREATE TABLE IF NOT EXISTS {RUNS} (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            created_at TEXT NOT NULL,
            summary TEXT NOT NULL DEFAULT '',
            params_json TEXT NOT NULL DEFAULT '{{}}',
            undoes INTEGER REFERENCES {RUNS}(id),
            undone_by INTEGER REFERENCES {RUNS}(id)
        )""",
        # Every row a step touched: before/after values of the columns it changed.
        # before_json NULL = the step inserted the row; after_json NULL = it deleted it.
        f"""CREATE TABLE IF NOT EXISTS {RUN_CHANGES} (
            run_id INTEGER NOT NULL REFERENCES {RUNS}(id),
            seq INTEGER NOT NULL,
            table_name TEXT NOT NULL,
            row_key TEXT NOT NULL,
            before_json TEXT,
            after_json TEXT,
            PRIMARY KEY (run_id, seq)
        )""",
        f"CREATE INDEX IF NOT EXISTS idx_{RUN_CHANGES}_row ON {RUN_CHANGES}(table_name, row_key)",
        f"""CREATE TABLE IF NOT EXISTS {OVERRIDES} (
            observation_id TEXT PRIMARY KEY,
            relevance TEXT NOT NULL CHECK (relevance IN ('low','medium','high','critical')),
            reason TEXT,
            created_at TEXT NOT NULL
        )""",
    )),
    # Kept as a step so version numbers stay; the trace tables are created by
    # recall/traces.py when the first trace is written, not by opening a brain.
    Migration(2, "recall traces: created with the first trace (recall/traces.py)", ()),
    Migration(3, "observer and reflector proposals awaiting review", (
        f"""CREATE TABLE IF NOT EXISTS {PROPOSALS} (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL CHECK (kind IN ('observer','reflector')),
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending','applied','discarded','undone')),
            created_at TEXT NOT NULL,
            session_id TEXT,
            provider TEXT,
            model TEXT,
            input_json TEXT NOT NULL DEFAULT '[]',
            proposal_json TEXT NOT NULL DEFAULT '{{}}',
            raw_response TEXT,
            usage_json TEXT,
            pool_fingerprint TEXT,
            decision_json TEXT,
            decided_at TEXT,
            run_id INTEGER REFERENCES {RUNS}(id)
        )""",
        f"CREATE INDEX IF NOT EXISTS idx_{PROPOSALS}_status ON {PROPOSALS}(status, created_at)",
    )),
    # Chunked runs and partial undo (see brain/journal.py): a run is 'in_progress' until its
    # last chunk, owned by a process; each change remembers the undo that reversed it.
    Migration(4, "chunked runs, partial undo", (
        f"ALTER TABLE {RUNS} ADD COLUMN status TEXT NOT NULL DEFAULT 'done'",
        f"ALTER TABLE {RUNS} ADD COLUMN owner_pid INTEGER",
        f"ALTER TABLE {RUN_CHANGES} ADD COLUMN undone_by INTEGER",
        f"CREATE INDEX IF NOT EXISTS idx_{RUNS}_status ON {RUNS}(status) WHERE status != 'done'",
        f"CREATE INDEX IF NOT EXISTS idx_{RUN_CHANGES}_undone ON {RUN_CHANGES}(undone_by) WHERE undone_by IS NOT NULL",
    )),
    # The reviewer's accept/reject marks on a pending proposal, kept with it (llm/proposals.py).
    Migration(5, "review marks kept with their proposal", (
        f"""CREATE TABLE IF NOT EXISTS {PROPOSAL_MARKS} (
            proposal_id INTEGER NOT NULL REFERENCES {PROPOSALS}(id) ON DELETE CASCADE,
            item_key TEXT NOT NULL,
            accepted INTEGER NOT NULL CHECK (accepted IN (0, 1)),
            marked_at TEXT NOT NULL,
            PRIMARY KEY (proposal_id, item_key)
        )""",
    )),
    # A run's owner told by more than its pid (brain/journal.py `process_start`): a pid reused by
    # another process after a crash no longer keeps an interrupted run from being rolled back.
    Migration(6, "the owner's process start time beside its pid", (
        f"ALTER TABLE {RUNS} ADD COLUMN owner_started TEXT",
    )),
)

LATEST_VERSION = MIGRATIONS[-1].version


def schema_version(conn: sqlite3.Connection) -> int:
    """cleo-tui's schema version in this file (0 when it has none of our tables)."""
    try:
        row = conn.execute(f"SELECT value FROM {META} WHERE key = 'schema_version'").fetchone()
    except sqlite3.OperationalError:
        return 0
    try:
        return int(row[0]) if row else 0
    except (TypeError, ValueError):
        return 0


def _run_step(conn: sqlite3.Connection, step: Step) -> None:
    if isinstance(step, str):
        conn.execute(step)
        return
    from sqlite_utils import Database

    step(Database(conn))


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Bring cleo-tui's tables up to date, one transaction per step; return the version.

    Safe to call on every open: a brain already at the latest version is not written.
    """
    current = schema_version(conn)
    for migration in migrations:
        if migration.version <= current:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in migration.statements:
                _run_step(conn, statement)
            conn.execute(
                f"INSERT INTO {META}(key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(migration.version),),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        current = migration.version
    return current
