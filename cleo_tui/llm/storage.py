"""Writing notes, patterns, learnings, graph rows and evictions as CLEO writes them.

Every function runs inside the caller's `Brain.write()` transaction and goes
through the curation journal with the caller's run id, so one undo reverses
all of it: inserted rows are deleted, a raised `frequency` or `confidence`
is put back, an eviction is lifted. Columns a brain lacks are left out.

Patterns and learnings get the quality score, tier, type and source
confidence CLEO's `storePattern` / `storeLearning` give a reflector entry
(packages/core/src/memory/patterns.ts, learnings.ts and quality-scoring.ts in
CLEO v2026.8.9): the reflector's source `reflector-synthesized` routes to
source confidence `agent` (multiplier 0.7); patterns are `medium`/`procedural`
(tier bonus 0.05), learnings `short`/`semantic` (no bonus).
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain import journal
from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.numbers import finite_int_or_none, finite_or_none
from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import OBSERVER_SOURCE_TYPE

EDGE_TYPE = "supersedes"
EDGE_PROVENANCE = "observer-reflector"  # CLEO's provenance of observer note → source edges
REFLECTION_PROVENANCE = "reflector-synthesized:session-end-reflection"  # pattern/learning → observation
NOTE_EDGE_WEIGHT = 0.9
REFLECTION_EDGE_WEIGHT = 1.0
PATTERN_TYPE = "workflow"
LEARNING_SOURCE = "reflector-synthesized"
ACTIONABLE_AT = 0.7
TITLE_EXCERPT = 80
LABEL_LIMIT = 120
AGENT_MULTIPLIER = 0.7
MEDIUM_TIER_BONUS = 0.05
PATTERN_CLASS = {"memory_tier": "medium", "memory_type": "procedural", "source_confidence": "agent", "verified": 0}
LEARNING_CLASS = {"memory_tier": "short", "memory_type": "semantic", "source_confidence": "agent", "verified": 0}


def _js_length(text: str) -> int:
    """Length as JavaScript's `String.length` counts it (UTF-16 code units), as CLEO's thresholds do."""
    return len(text.encode("utf-16-le")) // 2


def _clamp(score: float) -> float:
    return min(1.0, max(0.0, score))


def pattern_quality(pattern: str, context: str) -> float:
    """CLEO's quality of a reflector `workflow` pattern.

    (0.4 + 0.1 workflow + 0.1 if the pattern exceeds 100 chars + 0.1 if the
    context exceeds 50) × 0.7 (agent) + 0.05 (medium tier), clamped to 0..1.
    """
    score = 0.4 + 0.1
    score += 0.1 if _js_length(pattern.strip()) > 100 else 0.0
    score += 0.1 if _js_length(context.strip()) > 50 else 0.0
    return _clamp(score * AGENT_MULTIPLIER + MEDIUM_TIER_BONUS)


def learning_quality(confidence: float, actionable: bool, insight: str) -> float:
    """CLEO's quality of a reflector learning.

    (confidence + 0.1 if actionable + 0.1 if the insight exceeds 100 chars)
    × 0.7 (agent); short tier, no bonus; clamped to 0..1.
    """
    score = confidence + (0.1 if actionable else 0.0) + (0.1 if _js_length(insight.strip()) > 100 else 0.0)
    return _clamp(score * AGENT_MULTIPLIER)


def content_hash(text: str) -> str:
    """CLEO's content hash: first 16 hex of sha256 of the trimmed, lower-cased text."""
    return hashlib.sha256(text.strip().lower().encode("utf-8")).hexdigest()[:16]


def _new_id(conn: sqlite3.Connection, table: str, prefix: str) -> str:
    """`<prefix>-<8 hex>`, unused in `table`."""
    while True:
        candidate = f"{prefix}-{secrets.token_hex(4)}"
        if conn.execute(f'SELECT 1 FROM "{table}" WHERE id = ?', (candidate,)).fetchone() is None:
            return candidate


def _insert(conn: sqlite3.Connection, run_id: int, brain: Brain, table: str, row: dict[str, Any],
            key: tuple[str, ...]) -> None:
    """Insert the columns this brain has, journaled."""
    have = brain.features.columns(table)
    journal.insert_row(conn, run_id, table, {k: v for k, v in row.items() if k in have}, key)


def _with_updated_at(brain: Brain, table: str, values: dict[str, Any], now: str) -> dict[str, Any]:
    if brain.features.has_column(table, "updated_at"):
        values["updated_at"] = now
    return values


def add_node(conn: sqlite3.Connection, run_id: int, brain: Brain, node_id: str, node_type: str,
             label: str, quality: float | None, now: str) -> bool:
    """A `brain_page_nodes` row for a new entry, where the brain has that table and no such node."""
    if not brain.features.has_table(cs.NODES):
        return False
    if conn.execute(f"SELECT 1 FROM {cs.NODES} WHERE id = ?", (node_id,)).fetchone():
        return False
    _insert(conn, run_id, brain, cs.NODES, {
        "id": node_id, "node_type": node_type, "label": label[:LABEL_LIMIT],
        "quality_score": 0.5 if quality is None else quality, "content_hash": content_hash(label),
        "created_at": now, "last_activity_at": now, "updated_at": now,
    }, ("id",))
    return True


def add_edge(conn: sqlite3.Connection, run_id: int, brain: Brain, from_id: str, to_id: str,
             weight: float, now: str, provenance: str = EDGE_PROVENANCE) -> bool:
    """A `supersedes` edge, unless the brain has no edges table or the edge exists already.

    `provenance` is what CLEO writes: `observer-reflector` for note → source
    edges (the default), REFLECTION_PROVENANCE for pattern/learning → observation.
    """
    if not brain.supports("graph_edges"):
        return False
    if conn.execute(f"SELECT 1 FROM {cs.EDGES} WHERE from_id = ? AND to_id = ? AND edge_type = ?",
                    (from_id, to_id, EDGE_TYPE)).fetchone():
        return False
    _insert(conn, run_id, brain, cs.EDGES, {
        "from_id": from_id, "to_id": to_id, "edge_type": EDGE_TYPE, "weight": weight,
        "provenance": provenance, "created_at": now,
    }, ("from_id", "to_id", "edge_type"))
    return True


def note_title(note: dict[str, Any]) -> str:
    """`[Observer p<priority>] <first 80 chars>`."""
    return f"[Observer p{note['priority']}] {note['observation'][:TITLE_EXCERPT]}"


def note_narrative(note: dict[str, Any]) -> str:
    """`<observation> (compressed from: <ids>)`."""
    return f"{note['observation']} (compressed from: {', '.join(note['source_ids'])})"


def note_quality(priority: int) -> float:
    """max(0.6, 1.0 - (priority - 1) * 0.1), rounded against float noise."""
    return round(max(0.6, 1.0 - (priority - 1) * 0.1), 4)


def _live_duplicate(conn: sqlite3.Connection, brain: Brain, table: str, digest: str) -> str | None:
    """Id of a live row with the same content hash (CLEO stores identical text once)."""
    if not brain.features.has_column(table, "content_hash"):
        return None
    live = " AND invalid_at IS NULL" if brain.features.has_column(table, "invalid_at") else ""
    row = conn.execute(f'SELECT id FROM "{table}" WHERE content_hash = ?{live} LIMIT 1', (digest,)).fetchone()
    return None if row is None else row[0]


def store_note(conn: sqlite3.Connection, run_id: int, brain: Brain, note: dict[str, Any],
               session_id: str | None, graph: bool) -> tuple[str, bool]:
    """Store one observer note with its edges (and node); returns (id, newly inserted)."""
    now = cleo_timestamp()
    narrative = note_narrative(note)
    digest = content_hash(narrative)
    note_id = _live_duplicate(conn, brain, cs.OBSERVATIONS, digest)
    inserted = note_id is None
    if inserted:
        note_id = _new_id(conn, cs.OBSERVATIONS, "O")
        quality = note_quality(note["priority"])
        _insert(conn, run_id, brain, cs.OBSERVATIONS, {
            "id": note_id, "type": "change", "title": note_title(note), "narrative": narrative,
            "source_type": OBSERVER_SOURCE_TYPE, "source_session_id": session_id, "memory_tier": "short",
            "quality_score": quality, "content_hash": digest, "created_at": now, "updated_at": now,
            "valid_at": now,
        }, ("id",))
        if graph:
            add_node(conn, run_id, brain, f"observation:{note_id}", "observation", note_title(note), quality, now)
    if graph:
        for source in note["source_ids"]:
            add_edge(conn, run_id, brain, f"observation:{note_id}", f"observation:{source}", NOTE_EDGE_WEIGHT, now)
    return note_id, inserted  # type: ignore[return-value]


def _live(brain: Brain, table: str) -> str:
    return " AND invalid_at IS NULL" if brain.features.has_column(table, "invalid_at") else ""


def matching_pattern(conn: sqlite3.Connection, brain: Brain, text: str) -> tuple[str, Any] | None:
    """(id, frequency) of the live `workflow` pattern a new one with `text` merges into, if any."""
    row = conn.execute(
        f"SELECT id, frequency FROM {cs.PATTERNS} WHERE type = ? AND lower(trim(pattern)) = lower(trim(?))"
        f"{_live(brain, cs.PATTERNS)} ORDER BY rowid LIMIT 1", (PATTERN_TYPE, text)).fetchone()
    return None if row is None else (row[0], row[1])


def matching_learning(conn: sqlite3.Connection, brain: Brain, insight: str) -> tuple[str, Any] | None:
    """(id, confidence) of the live learning a new one with `insight` merges into, if any."""
    row = conn.execute(
        f"SELECT id, confidence FROM {cs.LEARNINGS} WHERE lower(trim(insight)) = lower(trim(?))"
        f"{_live(brain, cs.LEARNINGS)} ORDER BY rowid LIMIT 1", (insight,)).fetchone()
    return None if row is None else (row[0], row[1])


def store_pattern(conn: sqlite3.Connection, run_id: int, brain: Brain, pattern: dict[str, Any],
                  graph: bool) -> tuple[str, bool]:
    """Store a `workflow` pattern, or merge into an identical live one; (id, new).

    A merge is CLEO's: frequency + 1 and `extracted_at` set to now.
    """
    now = cleo_timestamp()
    row = matching_pattern(conn, brain, pattern["pattern"])
    if row is not None:
        values: dict[str, Any] = {"frequency": (finite_int_or_none(row[1]) or 0) + 1}
        if brain.features.has_column(cs.PATTERNS, "extracted_at"):
            values["extracted_at"] = now
        values = _with_updated_at(brain, cs.PATTERNS, values, now)
        journal.update_row(conn, run_id, cs.PATTERNS, {"id": row[0]}, values)
        return row[0], False
    pattern_id = _new_id(conn, cs.PATTERNS, "P")
    quality = pattern_quality(pattern["pattern"], pattern["context"])
    _insert(conn, run_id, brain, cs.PATTERNS, {
        "id": pattern_id, "type": PATTERN_TYPE, "pattern": pattern["pattern"], "context": pattern["context"],
        "frequency": 1, "extracted_at": now, "updated_at": now, "valid_at": now,
        "content_hash": content_hash(pattern["pattern"]), "quality_score": quality, **PATTERN_CLASS,
    }, ("id",))
    if graph:
        add_node(conn, run_id, brain, f"pattern:{pattern_id}", "pattern", pattern["pattern"], quality, now)
    return pattern_id, True


def store_learning(conn: sqlite3.Connection, run_id: int, brain: Brain, learning: dict[str, Any],
                   graph: bool) -> tuple[str, bool]:
    """Store a learning, or raise an identical live one's confidence to the larger value; (id, new)."""
    now = cleo_timestamp()
    confidence = float(learning["confidence"])
    row = matching_learning(conn, brain, learning["insight"])
    if row is not None:
        stored = finite_or_none(row[1])
        if stored is None or confidence > stored:
            values = _with_updated_at(brain, cs.LEARNINGS, {"confidence": confidence}, now)
            journal.update_row(conn, run_id, cs.LEARNINGS, {"id": row[0]}, values)
        return row[0], False
    learning_id = _new_id(conn, cs.LEARNINGS, "L")
    actionable = confidence >= ACTIONABLE_AT
    quality = learning_quality(confidence, actionable, learning["insight"])
    _insert(conn, run_id, brain, cs.LEARNINGS, {
        "id": learning_id, "insight": learning["insight"], "source": LEARNING_SOURCE,
        "confidence": confidence, "actionable": int(actionable), "created_at": now,
        "updated_at": now, "valid_at": now, "content_hash": content_hash(learning["insight"]),
        "quality_score": quality, **LEARNING_CLASS,
    }, ("id",))
    if graph:
        add_node(conn, run_id, brain, f"learning:{learning_id}", "learning", learning["insight"], quality, now)
    return learning_id, True


def evict(conn: sqlite3.Connection, run_id: int, brain: Brain, observation_id: str) -> bool:
    """Soft-evict a live observation (invalid_at, updated_at); False when it was not live."""
    if not brain.features.has_column(cs.OBSERVATIONS, "invalid_at"):
        return False
    now = cleo_timestamp()
    values = _with_updated_at(brain, cs.OBSERVATIONS, {"invalid_at": now}, now)
    return journal.update_row(conn, run_id, cs.OBSERVATIONS, {"id": observation_id}, values,
                              only_if="invalid_at IS NULL")
