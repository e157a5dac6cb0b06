"""CLEO's own table layout, for brains that cleo-tui creates.

The layout comes from `cleo_brain_columns.json` (every column and index of a
fresh CLEO brain), so a brain made here is one CLEO could open.
"""

from __future__ import annotations

import json
import sqlite3
from functools import lru_cache
from importlib import resources

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

# Where CLEO only says "partial", the predicate below is cleo-tui's reading.
_PARTIAL_WHERE = {
    "idx_brain_observations_attachments": "attachments_json IS NOT NULL",
    "idx_brain_decisions_adr_number": "adr_number IS NOT NULL",
}


@lru_cache(maxsize=1)
def cleo_layout() -> dict:
    """The reference layout: {"columns": {table: [...]}, "indexes": {table: [...]}}."""
    text = resources.files("cleo_tui.brain").joinpath("cleo_brain_columns.json").read_text()
    return json.loads(text)


def cleo_columns(table: str) -> list[str]:
    """Column names of `table` in a fresh CLEO brain, in order."""
    return [c["name"] for c in cleo_layout()["columns"][table]]


def _default_sql(default: str) -> str:
    # Literals ('agent', 0, false) go as they are; expressions need parentheses.
    return f"({default})" if "(" in default else default


def create_table_sql(table: str) -> str:
    """CREATE TABLE statement for one CLEO table."""
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


def create_index_sql(table: str) -> list[str]:
    statements = []
    for index in cleo_layout()["indexes"].get(table, []):
        unique = "UNIQUE " if index["unique"] else ""
        cols = ", ".join(f'"{c}"' for c in index["columns"])
        sql = f'CREATE {unique}INDEX IF NOT EXISTS "{index["name"]}" ON "{table}" ({cols})'
        if index["partial"]:
            sql += " WHERE " + _PARTIAL_WHERE.get(index["name"], f'{index["columns"][0]} IS NOT NULL')
        statements.append(sql)
    return statements


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


def create_cleo_tables(conn: sqlite3.Connection) -> None:
    """Create CLEO's brain tables, indexes, FTS table and triggers (idempotent)."""
    for table in cleo_layout()["columns"]:
        conn.execute(create_table_sql(table))
        for sql in create_index_sql(table):
            conn.execute(sql)
    for sql in OBSERVATIONS_FTS_SQL:
        conn.execute(sql)
    conn.execute(f"INSERT OR IGNORE INTO {SCHEMA_META}(key, value) VALUES ('schemaVersion', '1.0.0')")
