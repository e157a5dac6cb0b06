"""Trace browsing for any front end: filter choices, a memory's whole text, an undoable outcome.

- `trace_values`: the distinct sessions or tenants of the traces (filter choices).
- `memory_text`: the whole stored text of a traced memory, for a viewer.
- `record_outcome_undoable`: an outcome written through the curation journal, so
  the TUI can undo it like any other step (the CLI's `outcome` stays fail-soft
  and unjournaled, as hippo's contract has it).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from datetime import datetime

from cleo_tui.brain import journal
from cleo_tui.brain.clock import iso_timestamp
from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.migrations import TRACE_OUTCOMES, TRACES
from cleo_tui.brain.records import get_record, record_text
from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import as_text
from cleo_tui.recall.resolve import HIPPO_MEMORIES, ResolvedMemory
from cleo_tui.recall.traces import OUTCOMES, credited_ids

VALUE_COLUMNS = ("tenant_id", "session_id", "pipeline")
VALUE_LIMIT = 200


def trace_values(brain: Brain, column: str, limit: int = VALUE_LIMIT) -> list[str]:
    """Distinct non-NULL values of `column` (tenant_id, session_id or pipeline), sorted."""
    if column not in VALUE_COLUMNS:
        raise ValueError(f"column must be one of {', '.join(VALUE_COLUMNS)}")
    if not brain.supports("traces"):
        return []
    rows = brain.query(f'SELECT DISTINCT "{column}" FROM {TRACES} WHERE "{column}" IS NOT NULL '
                       f'ORDER BY 1 LIMIT ?', (int(limit),))
    return [as_text(r[0]) for r in rows]


def memory_text(brain: Brain, memory: ResolvedMemory) -> str:
    """The whole text of a pattern, learning, decision or hippo memory (the resolved summary is cut short)."""
    if memory.kind in ("pattern", "learning", "decision"):
        _, row = get_record(brain, f"{memory.kind}:{memory.memory_id}")
        if row is not None:
            details = [f"{k}: {as_text(row[k])}" for k in ("context", "application", "rationale", "source", "type")
                       if row.get(k) not in (None, "")]
            return "\n\n".join([record_text(memory.kind, row), *details])
    if memory.kind == "hippo" and brain.features.has_column(HIPPO_MEMORIES, "content"):
        value = brain.scalar(f'SELECT content FROM "{HIPPO_MEMORIES}" WHERE id = ?', (memory.memory_id,))
        if value is not None:
            return as_text(value)
    return memory.summary or memory.title


def _next_outcome_id(conn: sqlite3.Connection) -> int:
    """The id AUTOINCREMENT would give (never one an undone outcome had); the journal needs it up front."""
    top = conn.execute(f"SELECT COALESCE(MAX(id), 0) FROM {TRACE_OUTCOMES}").fetchone()[0]
    seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (TRACE_OUTCOMES,)).fetchone()
    return max(int(top), int(seq[0]) if seq else 0) + 1


def record_outcome_undoable(brain: Brain, trace_id: int, tenant_id: str, outcome: str,
                            memory_ids: Iterable[str], at: datetime | None = None) -> tuple[int, list[str]]:
    """Record `outcome` against a trace through the journal; returns (run id, credited ids).

    The same checks as `record_trace_outcome` (trace exists, same tenant, only ids it
    returned), but a refusal raises BrainError with the reason instead of a stderr line.
    """
    if outcome not in OUTCOMES:
        raise BrainError(f"An outcome is positive or negative, not {outcome!r}.")
    brain.ensure_writable()
    with brain.write() as conn:
        credited, reason = credited_ids(conn, int(trace_id), tenant_id, list(memory_ids))
        if reason:
            raise BrainError(f"Nothing was recorded: {reason}.")
        run_id = journal.start_run(conn, "outcome", f"{outcome} outcome on trace {int(trace_id)}",
                                   {"trace_id": int(trace_id), "ids": credited})
        outcome_id = _next_outcome_id(conn)
        journal.insert_row(conn, run_id, TRACE_OUTCOMES, {
            "id": outcome_id, "trace_id": int(trace_id), "ts": iso_timestamp(at), "tenant_id": tenant_id,
            "outcome": outcome, "memory_ids_json": json.dumps(credited, ensure_ascii=False)}, ("id",))
    return run_id, credited
