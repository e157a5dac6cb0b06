"""Patterns, learnings, decisions and graph edges: small tables read directly."""

from __future__ import annotations

from typing import Any, cast

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.rows import EdgeRow, Row
from cleo_tui.brain.store import Brain

# What each kind of record is called in the graph, its table and its text column.
RECORD_KINDS = {
    "pattern": (cs.PATTERNS, "pattern"),
    "learning": (cs.LEARNINGS, "insight"),
    "decision": (cs.DECISIONS, "decision"),
    "observation": (cs.OBSERVATIONS, "title"),
}
LIST_LIMIT = 5000


def _rows(brain: Brain, sql: str, params: tuple[Any, ...] = ()) -> list[Row]:
    return [{k: r[k] for k in r.keys()} for r in brain.query(sql, params)]


def list_records(brain: Brain, kind: str, limit: int = LIST_LIMIT) -> list[Row]:
    """Newest first, at most `limit` rows of patterns, learnings or decisions."""
    table, _ = RECORD_KINDS[kind]
    if not brain.features.has_table(table):
        return []
    date = "extracted_at" if kind == "pattern" else "created_at"
    order = f'"{date}" DESC, ' if brain.features.has_column(table, date) else ""
    return _rows(brain, f'SELECT * FROM "{table}" ORDER BY {order}rowid DESC LIMIT ?', (limit,))


def get_record(brain: Brain, node_id: str) -> tuple[str, Row | None]:
    """Resolve a graph node id like `pattern:P-1a2b` to (kind, row or None)."""
    kind, _, record_id = node_id.partition(":")
    if kind not in RECORD_KINDS or not record_id:
        return kind, None
    table, _ = RECORD_KINDS[kind]
    if not brain.features.has_table(table):
        return kind, None
    rows = _rows(brain, f'SELECT * FROM "{table}" WHERE id = ?', (record_id,))
    return kind, rows[0] if rows else None


def record_text(kind: str, row: Row) -> str:
    """The main text of a record of `kind`."""
    if kind == "observation":
        return str(row.get("narrative") or row.get("title") or "")
    column = RECORD_KINDS.get(kind, (None, "id"))[1]
    return str(row.get(column) or "")


def edges_of(brain: Brain, node_id: str, limit: int = 500) -> list[EdgeRow]:
    """Graph edges from or to `node_id`, each with a `direction` of 'out' or 'in'."""
    if not brain.supports("graph_edges"):
        return []
    out = _rows(brain, f"SELECT *, 'out' AS direction FROM {cs.EDGES} WHERE from_id = ? LIMIT ?", (node_id, limit))
    inc = _rows(brain, f"SELECT *, 'in' AS direction FROM {cs.EDGES} WHERE to_id = ? LIMIT ?", (node_id, limit))
    return cast(list[EdgeRow], out + inc)  # SELECT * of brain_page_edges, plus its direction
