"""Brains of every kind on disk, for tests: built with sqlite3 the way CLEO or hippo would.

- `make_cleo_consolidated(path)`: a CLEO 2026.6+ `cleo.db`: brain tables beside `tasks`,
  `sessions` and other project tables, no cleo-tui tables.
- `make_cleo_legacy(path)`: an old CLEO `brain.db` whose tables lack the newer columns
  (`LEGACY_MISSING`), built from `cleo_brain_columns.json`.
- `make_hippo(path)`: a hippo-memory store with its `memories` table.
- `insert_observations(path, rows)`: add observation rows, writing only the columns the
  file has.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cleo_tui.brain import cleo_schema as cs

# Columns newer CLEO versions added; an old brain.db has none of them.
LEGACY_MISSING = frozenset({
    "expired_at", "network", "prune_candidate", "origin", "provenance_chain", "idempotency_key",
    "validated_at", "stability_score", "tree_id", "level", "times_derived", "source_ids",
    "provenance_class", "peer_id", "peer_scope", "tier_promoted_at", "tier_promotion_reason",
    "attachments_json", "occurrence_count", "last_seen_at", "plasticity_class", "last_depressed_at",
    "depression_count", "last_reinforced_at", "reinforcement_count",
})

CLEO_PROJECT_TABLES = (
    "CREATE TABLE tasks (id TEXT PRIMARY KEY, title TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending')",
    "CREATE TABLE sessions (id TEXT PRIMARY KEY, started_at TEXT, ended_at TEXT)",
    "CREATE TABLE conduit_messages (id INTEGER PRIMARY KEY, body TEXT)",
)


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    return sqlite3.connect(str(path), isolation_level=None)


def _create_brain_tables(conn: sqlite3.Connection, missing: frozenset[str] = frozenset(),
                         fts: bool = True) -> None:
    """CLEO's tables from the reference layout, minus `missing` columns and their indexes."""
    for table in cs.cleo_layout()["columns"]:
        conn.execute(cs.create_table_sql(table))
        for column in sorted(missing & set(cs.cleo_columns(table))):
            conn.execute(f'ALTER TABLE "{table}" DROP COLUMN "{column}"')
        indexed = {i["name"]: i["columns"] for i in cs.cleo_layout()["indexes"].get(table, [])}
        for sql in cs.create_index_sql(table):
            name = sql.split('"')[1]
            if not set(indexed[name]) & missing:
                conn.execute(sql)
    if fts:
        for sql in cs.OBSERVATIONS_FTS_SQL:
            conn.execute(sql)
    conn.execute(f"INSERT INTO {cs.SCHEMA_META}(key, value) VALUES ('schemaVersion', '1.0.0')")


def make_cleo_consolidated(path: Path, journal_mode: str = "wal") -> Path:
    """A CLEO `cleo.db`: brain tables among the project's other tables."""
    conn = _connect(path)
    conn.execute(f"PRAGMA journal_mode = {journal_mode}")
    _create_brain_tables(conn)
    for sql in CLEO_PROJECT_TABLES:
        conn.execute(sql)
    conn.execute("INSERT INTO tasks(id, title, status) VALUES ('T1', 'Set up CI', 'done')")
    conn.close()
    return path


def make_cleo_legacy(path: Path, fts: bool = True) -> Path:
    """An old CLEO `brain.db`: only brain tables, without the newer columns."""
    conn = _connect(path)
    conn.execute("PRAGMA journal_mode = wal")
    _create_brain_tables(conn, LEGACY_MISSING, fts=fts)
    conn.close()
    return path


def make_hippo(path: Path) -> Path:
    """A hippo-memory store: its memories table (and meta), no CLEO tables."""
    conn = _connect(path)
    conn.execute("PRAGMA journal_mode = wal")
    conn.execute("""CREATE TABLE memories (
        id TEXT PRIMARY KEY, content TEXT NOT NULL, created TEXT NOT NULL,
        layer TEXT NOT NULL DEFAULT 'episodic', strength REAL NOT NULL DEFAULT 1.0,
        tags_json TEXT NOT NULL DEFAULT '[]', tenant_id TEXT NOT NULL DEFAULT 'default',
        superseded_by TEXT, pinned INTEGER NOT NULL DEFAULT 0, confidence TEXT DEFAULT 'observed')""")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.executemany("INSERT INTO memories(id, content, created, layer) VALUES (?, ?, ?, ?)", [
        ("mem_1", "Deploys go through the staging branch", "2026-03-01T10:00:00.000Z", "semantic"),
        ("mem_2", "The billing tests need Postgres running", "2026-03-02T11:00:00.000Z", "episodic"),
    ])
    conn.close()
    return path


def observation(index: int, **columns: Any) -> dict[str, Any]:
    """A plausible observation row; `columns` override or add values."""
    narrative = f"Observation {index}: looked at src/module_{index % 7}.py for task T{100 + index % 5}."
    row = {
        "id": f"O-test{index:05d}-{index:x}", "type": ("discovery", "change", "bugfix")[index % 3],
        "title": narrative[:60], "narrative": narrative, "source_type": "agent",
        "created_at": f"2026-0{1 + index % 5}-{1 + index % 28:02d} 10:{index % 60:02d}:00",
        "quality_score": None if index % 6 == 0 else round(0.2 + (index % 8) / 10, 2),
        "memory_tier": ("short", "medium", "long")[index % 3],
        "source_session_id": None if index % 4 == 0 else f"ses_{index % 3}",
        "content_hash": hashlib.sha256(narrative.strip().lower().encode()).hexdigest()[:16],
        "invalid_at": "2026-05-30 12:00:00" if index % 10 == 9 else None,
    }
    row.update(columns)
    return row


def insert_observations(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Insert rows into brain_observations, skipping columns this file does not have."""
    conn = _connect(path)
    have = {r[1] for r in conn.execute(f"PRAGMA table_info({cs.OBSERVATIONS})")}
    conn.execute("BEGIN")
    for row in rows:
        keep = {k: v for k, v in row.items() if k in have}
        cols = ", ".join(f'"{c}"' for c in keep)
        conn.execute(f"INSERT INTO {cs.OBSERVATIONS} ({cols}) VALUES ({', '.join('?' for _ in keep)})",
                     list(keep.values()))
    conn.execute("COMMIT")
    conn.close()


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes (the -wal/-shm beside it are not part of it)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def add_cleo_recall_logs(path: Path, retrievals: Iterable[Mapping[str, Any]] = (),
                         usage: Iterable[Mapping[str, Any]] = ()) -> None:
    """CLEO's `brain_retrieval_log` and `brain_usage_log` (its DDL), with rows written as CLEO writes them.

    A retrieval row needs `query` and `entry_ids` (a list is JSON-encoded as CLEO does; a string
    is stored as it is, so a test can plant a malformed one); `source` defaults to `find-rrf`,
    `entry_count` to the list's length, `tokens_used` to 50 a result.
    """
    conn = _connect(path)
    for sql in (*cs.RETRIEVAL_LOG_SQL, *cs.USAGE_LOG_SQL):
        conn.execute(sql)
    conn.execute("BEGIN")
    for row in retrievals:
        ids = row["entry_ids"]
        values = {"source": "find-rrf", **row,
                  "entry_ids": ids if isinstance(ids, str | None) else json.dumps(list(ids)),
                  "entry_count": row.get("entry_count", 0 if isinstance(ids, str | None) else len(ids))}
        values.setdefault("tokens_used", 50 * values["entry_count"])
        cols = ", ".join(values)
        conn.execute(f"INSERT INTO {cs.RETRIEVAL_LOG} ({cols}) VALUES ({', '.join('?' for _ in values)})",
                     list(values.values()))
    for row in usage:
        cols = ", ".join(row)
        conn.execute(f"INSERT INTO {cs.USAGE_LOG} ({cols}) VALUES ({', '.join('?' for _ in row)})", list(row.values()))
    conn.execute("COMMIT")
    conn.close()
