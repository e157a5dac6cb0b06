"""CLEO-layout brains for the find and replay tests: rows in all four tables, CLEO's four FTS indexes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cleo_tui.recall.cleo_find import TABLES, fts_ddl
from tests.brain_fixtures import make_cleo_consolidated

DEFAULTS: dict[str, dict[str, Any]] = {
    "brain_observations": {"type": "discovery", "source_type": "manual", "created_at": "2026-11-01 10:00:00"},
    "brain_learnings": {"source": "manual", "confidence": 0.8, "created_at": "2026-11-01 10:00:00"},
    "brain_patterns": {"type": "workflow", "context": "", "extracted_at": "2026-11-01 10:00:00"},
    "brain_decisions": {"type": "architecture", "rationale": "", "confidence": "high",
                        "created_at": "2026-11-01 10:00:00"},
}


def cleo_brain(path: Path, all_fts: bool = True) -> Path:
    """A consolidated CLEO brain; with `all_fts`, the FTS indexes CLEO's first search creates for every table."""
    make_cleo_consolidated(path)
    if all_fts:
        conn = sqlite3.connect(path)
        for spec in TABLES[:3]:  # the observations index is part of the reference layout already
            for sql in fts_ddl(spec):
                conn.execute(sql)
        conn.commit()
        conn.close()
    return path


def add_rows(path: Path, table: str, rows: Iterable[Mapping[str, Any]]) -> None:
    """Insert rows (table defaults filled in) in one transaction; the FTS triggers index them."""
    conn = sqlite3.connect(path)
    for row in rows:
        values = {**DEFAULTS[table], **row}
        if table == "brain_observations":
            values.setdefault("title", str(values.get("narrative", ""))[:120])
        conn.execute(f"INSERT INTO {table} ({', '.join(values)}) VALUES ({', '.join('?' for _ in values)})",
                     list(values.values()))
    conn.commit()
    conn.close()


def observations(path: Path, texts: Mapping[str, str], **columns: Any) -> None:
    """Observations `id → narrative`, the same `columns` on each."""
    add_rows(path, "brain_observations", [{"id": k, "narrative": v, **columns} for k, v in texts.items()])
