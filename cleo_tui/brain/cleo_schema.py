"""CLEO's own table layout, for brains that cleo-tui creates.

The layout comes from `cleo_brain_columns.json` (every column and index of a
fresh CLEO brain), so a brain made here is one CLEO could open.
"""

from __future__ import annotations

import json
import sqlite3
from functools import lru_cache
from importlib import resources
from typing import Any

# Tables of CLEO that cleo-tui reads; also what marks a file as a brain.
OBSERVATIONS = "brain_observations"
PATTERNS = "brain_patterns"
LEARNINGS = "brain_learnings"
DECISIONS = "brain_decisions"
NODES = "brain_page_nodes"
EDGES = "brain_page_edges"
MEMORY_LINKS = "brain_memory_links"
SCHEMA_META = "brain_schema_meta"
OBSERVATIONS_FTS = "brain_observations_fts"
RETRIEVAL_LOG = "brain_retrieval_log"
USAGE_LOG = "brain_usage_log"
BACKFILL_RUNS = "brain_backfill_runs"
SWEEP_STAGING = "brain_observations_staging"

# CLEO's two recall logs, as its consolidated schema declares them (store/schema/cleo-shared/brain.ts);
# the reference layout predates them. Only a brain cleo-tui creates (demo, tests) gets them from here.
RETRIEVAL_LOG_SQL = [
    f"""CREATE TABLE IF NOT EXISTS {RETRIEVAL_LOG} (id INTEGER PRIMARY KEY AUTOINCREMENT, query TEXT NOT NULL,
        entry_ids TEXT NOT NULL, entry_count INTEGER NOT NULL, source TEXT NOT NULL, tokens_used INTEGER,
        session_id TEXT, created_at TEXT NOT NULL DEFAULT (datetime('now')), retrieval_order INTEGER,
        delta_ms INTEGER, reward_signal REAL)""",
    f"CREATE INDEX IF NOT EXISTS idx_retrieval_log_created ON {RETRIEVAL_LOG}(created_at)",
    f"CREATE INDEX IF NOT EXISTS idx_retrieval_log_source ON {RETRIEVAL_LOG}(source)",
    f"CREATE INDEX IF NOT EXISTS idx_retrieval_log_session ON {RETRIEVAL_LOG}(session_id)",
]
USAGE_LOG_SQL = [
    f"""CREATE TABLE IF NOT EXISTS {USAGE_LOG} (id INTEGER PRIMARY KEY AUTOINCREMENT, entry_id TEXT NOT NULL,
        task_id TEXT, used INTEGER NOT NULL DEFAULT 0, outcome TEXT NOT NULL DEFAULT 'unknown',
        created_at TEXT NOT NULL DEFAULT (datetime('now')))""",
    f"CREATE INDEX IF NOT EXISTS idx_brain_usage_log_entry_id ON {USAGE_LOG}(entry_id)",
    f"CREATE INDEX IF NOT EXISTS idx_brain_usage_log_task_id ON {USAGE_LOG}(task_id)",
]

# CLEO's staged-run log and the noise sweep's candidates, as its consolidated schema declares them
# (migration t11363-consolidation-cleo-project; store/schema/memory-schema.ts `brainBackfillRuns`,
# `brainObservationsStaging`). Only a brain cleo-tui creates for tests or a demo gets them from here.
SWEEP_TABLES_SQL = [
    f"""CREATE TABLE IF NOT EXISTS {BACKFILL_RUNS} (id TEXT PRIMARY KEY, kind TEXT NOT NULL,
        status TEXT DEFAULT 'staged' NOT NULL, created_at TEXT DEFAULT (datetime('now')) NOT NULL,
        approved_at TEXT, rows_affected INTEGER DEFAULT 0 NOT NULL, rollback_snapshot_json TEXT,
        source TEXT DEFAULT 'unknown' NOT NULL, target_table TEXT DEFAULT 'brain_observations' NOT NULL,
        approved_by TEXT)""",
    f"CREATE INDEX IF NOT EXISTS idx_backfill_runs_status ON {BACKFILL_RUNS}(status)",
    f"CREATE INDEX IF NOT EXISTS idx_backfill_runs_kind ON {BACKFILL_RUNS}(kind)",
    f"CREATE INDEX IF NOT EXISTS idx_backfill_runs_created_at ON {BACKFILL_RUNS}(created_at)",
    f"""CREATE TABLE IF NOT EXISTS {SWEEP_STAGING} (id TEXT PRIMARY KEY, source_table TEXT NOT NULL,
        source_id TEXT NOT NULL, sweep_run_id TEXT NOT NULL, action TEXT NOT NULL, new_quality_score REAL,
        new_invalid_at TEXT, new_provenance_class TEXT, validation_status TEXT DEFAULT 'pending' NOT NULL,
        created_at TEXT DEFAULT (datetime('now')) NOT NULL)""",
    f"CREATE INDEX IF NOT EXISTS idx_bos_sweep_run ON {SWEEP_STAGING}(sweep_run_id)",
    f"CREATE INDEX IF NOT EXISTS idx_bos_source ON {SWEEP_STAGING}(source_table, source_id)",
    f"CREATE INDEX IF NOT EXISTS idx_bos_status ON {SWEEP_STAGING}(validation_status)",
]
# CLEO adds this column itself, at run time (quality-feedback.ts ensurePruneCandidateColumn).
PRUNE_CANDIDATE_SQL = "ALTER TABLE {table} ADD COLUMN prune_candidate INTEGER DEFAULT 0"

# Where CLEO only says "partial", the predicate below is cleo-tui's reading.
_PARTIAL_WHERE = {
    "idx_brain_observations_attachments": "attachments_json IS NOT NULL",
    "idx_brain_decisions_adr_number": "adr_number IS NOT NULL",
}


@lru_cache(maxsize=1)
def cleo_layout() -> dict[str, Any]:
    """The reference layout: {"columns": {table: [...]}, "indexes": {table: [...]}}."""
    text = resources.files("cleo_tui.brain").joinpath("cleo_brain_columns.json").read_text()
    layout: dict[str, Any] = json.loads(text)
    return layout


def cleo_columns(table: str) -> list[str]:
    """Column names of `table` in a fresh CLEO brain, in order."""
    return [c["name"] for c in cleo_layout()["columns"][table]]


def _default_sql(default: str) -> str:
    # Literals ('agent', 0, false) go as they are; expressions need parentheses.
    return f"({default})" if "(" in default else default


def create_table_sql(table: str) -> str:
    """CREATE TABLE statement for one CLEO table (tests build CLEO-written files with it)."""
    columns = cleo_layout()["columns"][table]
    parts = []
    for col in columns:
        piece = f'"{col["name"]}" {col["type"]}'
        if col["notnull"]:
            piece += " NOT NULL"
        if col["default"] is not None:
            piece += f" DEFAULT {_default_sql(col['default'])}"
        parts.append(piece)
    keys = sorted((c for c in columns if c["pk"]), key=lambda c: c["pk"])
    parts.append("PRIMARY KEY (" + ", ".join(f'"{c["name"]}"' for c in keys) + ")")
    return f'CREATE TABLE IF NOT EXISTS "{table}" (\n  ' + ",\n  ".join(parts) + "\n)"


def _index_sql(table: str, index: dict[str, Any]) -> str:
    unique = "UNIQUE " if index["unique"] else ""
    cols = ", ".join(f'"{c}"' for c in index["columns"])
    sql = f'CREATE {unique}INDEX IF NOT EXISTS "{index["name"]}" ON "{table}" ({cols})'
    if index["partial"]:
        sql += " WHERE " + _PARTIAL_WHERE.get(index["name"], f'{index["columns"][0]} IS NOT NULL')
    return sql


def create_index_sql(table: str) -> list[str]:
    """CREATE INDEX statements for one CLEO table (tests build CLEO-written files with them)."""
    return [_index_sql(table, index) for index in cleo_layout()["indexes"].get(table, [])]


# CLEO's own statements for its FTS table and triggers (tests build CLEO-written files with them).
OBSERVATIONS_FTS_SQL = [
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS {OBSERVATIONS_FTS} USING fts5(
        id, title, narrative, content='{OBSERVATIONS}', content_rowid='rowid')""",
    f"""CREATE TRIGGER IF NOT EXISTS brain_observations_ai AFTER INSERT ON {OBSERVATIONS} BEGIN
        INSERT INTO {OBSERVATIONS_FTS}(rowid, id, title, narrative)
        VALUES (new.rowid, new.id, new.title, new.narrative);
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS brain_observations_ad AFTER DELETE ON {OBSERVATIONS} BEGIN
        INSERT INTO {OBSERVATIONS_FTS}({OBSERVATIONS_FTS}, rowid, id, title, narrative)
        VALUES ('delete', old.rowid, old.id, old.title, old.narrative);
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS brain_observations_au AFTER UPDATE ON {OBSERVATIONS} BEGIN
        INSERT INTO {OBSERVATIONS_FTS}({OBSERVATIONS_FTS}, rowid, id, title, narrative)
        VALUES ('delete', old.rowid, old.id, old.title, old.narrative);
        INSERT INTO {OBSERVATIONS_FTS}(rowid, id, title, narrative)
        VALUES (new.rowid, new.id, new.title, new.narrative);
    END""",
]


def _default_value(default: str | None) -> object:
    """A reference default as sqlite-utils wants it: numbers as numbers, SQL text as it is."""
    if default is None:
        return None
    try:
        number = float(default)
    except ValueError:
        return default  # 'agent', datetime('now'), false: sqlite-utils keeps these as SQL
    return int(number) if number.is_integer() and "." not in default else number


def create_cleo_tables(conn: sqlite3.Connection) -> None:
    """Create CLEO's brain tables, indexes, FTS table and triggers (idempotent), with sqlite-utils.

    sqlite-utils is imported here, not at module level: it costs ~0.4 s (it loads numpy),
    and only creating a brain needs it.
    """
    from sqlite_utils import Database

    db = Database(conn)
    layout = cleo_layout()
    for table, columns in layout["columns"].items():
        keys = [c["name"] for c in sorted((c for c in columns if c["pk"]), key=lambda c: c["pk"])]
        db[table].create(  # type: ignore[union-attr]
            {c["name"]: c["type"] for c in columns},
            pk=keys[0] if len(keys) == 1 else tuple(keys),
            not_null={c["name"] for c in columns if c["notnull"]},
            defaults={c["name"]: _default_value(c["default"]) for c in columns if c["default"] is not None},
            if_not_exists=True,
        )
        for index in layout["indexes"].get(table, []):
            if index["partial"]:  # sqlite-utils has no partial indexes
                conn.execute(_index_sql(table, index))
            else:
                db[table].create_index(index["columns"], index_name=index["name"],  # type: ignore[union-attr]
                                       unique=bool(index["unique"]), if_not_exists=True)
    if not db[OBSERVATIONS_FTS].exists():
        # sqlite-utils names the table <table>_fts and its triggers <table>_ai/_ad/_au, as CLEO does.
        db[OBSERVATIONS].enable_fts(["id", "title", "narrative"], create_triggers=True)  # type: ignore[union-attr]
    conn.execute(f"INSERT OR IGNORE INTO {SCHEMA_META}(key, value) VALUES ('schemaVersion', '1.0.0')")
