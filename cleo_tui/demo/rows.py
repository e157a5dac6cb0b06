"""The demo's rows as CLEO stores them: columns, ids, hashes, timestamps, and the batch that writes them.

The generator (`demo.generator`) draws rows into a `Batch`; `Batch.flush` writes them in the
caller's transaction with multi-row INSERTs (CLEO's FTS triggers index each row).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cleo_tui.brain import cleo_schema as cs

INSERT_BATCH = 200         # rows per multi-row INSERT statement
SqlRow = tuple[str | int | float | bytes | None, ...]  # one row's values, in its table's columns order

OBSERVATION_COLUMNS = (
    "id", "type", "title", "subtitle", "narrative", "facts_json", "concepts_json", "project",
    "files_read_json", "files_modified_json", "source_session_id", "source_type", "content_hash",
    "discovery_tokens", "created_at", "updated_at", "agent", "quality_score", "memory_tier",
    "memory_type", "verified", "valid_at", "invalid_at", "source_confidence", "citation_count",
)
NODE_COLUMNS = ("id", "node_type", "label", "created_at", "quality_score", "last_activity_at")
EDGE_COLUMNS = ("from_id", "to_id", "edge_type", "weight", "provenance", "created_at")
PATTERN_COLUMNS = ("id", "type", "pattern", "context", "frequency", "impact", "extracted_at", "updated_at",
                   "quality_score", "memory_tier", "valid_at", "content_hash", "occurrence_count",
                   "last_seen_at", "invalid_at")
LEARNING_COLUMNS = ("id", "insight", "source", "confidence", "actionable", "created_at", "updated_at",
                    "quality_score", "memory_tier", "valid_at", "content_hash")
DECISION_COLUMNS = ("id", "type", "decision", "rationale", "confidence", "outcome", "context_task_id",
                    "created_at", "valid_at", "quality_score", "memory_tier", "confirmation_state",
                    "decided_by", "decision_category", "source_confidence")


def content_hash(value: str) -> str:
    """CLEO's content hash: first 16 hex digits of sha256 of the lower-cased, trimmed text."""
    return hashlib.sha256(value.strip().lower().encode("utf-8", "surrogatepass")).hexdigest()[:16]


def stamp(moment: datetime) -> str:
    """CLEO's timestamp format."""
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if not number:
            return out


def insert_rows(conn: sqlite3.Connection, table: str, columns: tuple[str, ...], rows: Sequence[Sequence[Any]],
                 ignore: bool = False) -> None:
    """Bulk-insert rows (tuples in `columns` order) with sqlite-utils, inside the caller's transaction.

    Its multi-row INSERTs write the demo ~30% faster than `executemany`; it is imported
    here, not at module level, because the CLI imports this module for its constants.
    """
    if not rows:
        return
    from sqlite_utils import Database

    Database(conn)[table].insert_all([list(columns), *rows], batch_size=INSERT_BATCH,  # type: ignore[union-attr]
                                     ignore=ignore)


@dataclass
class Batch:
    """Rows waiting for the next transaction; observations are checked for duplicate text."""

    observations: list[SqlRow] = field(default_factory=list)
    nodes: list[SqlRow] = field(default_factory=list)
    edges: list[SqlRow] = field(default_factory=list)
    decisions: list[SqlRow] = field(default_factory=list)
    evictions: list[tuple[str, str, str]] = field(default_factory=list)  # (invalid_at, updated_at, id)
    raw_narratives: list[tuple[bytes, str]] = field(default_factory=list)  # invalid UTF-8, by id
    hashes: set[str] = field(default_factory=set)

    def flush(self, conn: sqlite3.Connection) -> None:
        """Write everything inside the caller's transaction (CLEO's FTS triggers index each row)."""
        insert_rows(conn, cs.OBSERVATIONS, OBSERVATION_COLUMNS, self.observations)
        insert_rows(conn, cs.NODES, NODE_COLUMNS, self.nodes, ignore=True)
        insert_rows(conn, cs.EDGES, EDGE_COLUMNS, self.edges, ignore=True)
        insert_rows(conn, cs.DECISIONS, DECISION_COLUMNS, self.decisions)
        conn.executemany(f"UPDATE {cs.OBSERVATIONS} SET invalid_at = ?, updated_at = ? "
                         "WHERE id = ? AND invalid_at IS NULL", self.evictions)
        conn.executemany(f"UPDATE {cs.OBSERVATIONS} SET narrative = CAST(? AS TEXT) WHERE id = ?",
                         self.raw_narratives)
        for rows in (self.observations, self.nodes, self.edges, self.decisions, self.evictions,
                     self.raw_narratives):
            rows.clear()
        self.hashes.clear()
