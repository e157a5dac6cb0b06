"""A cheap digest of everything a prune preview depends on, read with a few SQL aggregates.

Preparing a pool reads it before and after (`PreparedPool.state`), which tells
whether the brain changed while the pool was read. A commit no longer refuses
when the pool changed: it evicts exactly the previewed rows that are still as
previewed, row by row (`pruner.commit_preview`).
"""

from __future__ import annotations

from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.migrations import OVERRIDES
from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import REFLECTION_EDGE_TYPES

_ROW_AGGREGATES = (("rowid", "total(rowid)"), ("title", "total(length(title))"),
                   ("narrative", "total(length(narrative))"), ("updated_at", "max(updated_at)"),
                   ("quality_score", "total(quality_score)"), ("source_type", "group_concat(DISTINCT source_type)"),
                   ("type", "group_concat(DISTINCT type)"))


def pool_state(brain: Brain, session: str | None) -> tuple[Any, ...]:
    """The pool's rows (count, ids, sizes, last update), pins, citations and live reflections.

    Call it on the brain's own connection; inside `brain.write()` it sees exactly
    what the commit will change.
    """
    have = brain.features.columns(cs.OBSERVATIONS)
    aggregates = ["count(*)"] + [sql for column, sql in _ROW_AGGREGATES if column in have or column == "rowid"]
    where = ["invalid_at IS NULL"] if "invalid_at" in have else []
    params: list[Any] = []
    if session is not None:
        where.append("source_session_id = ?")
        params.append(session)
    sql = f"SELECT {', '.join(aggregates)} FROM {cs.OBSERVATIONS}" + (f" WHERE {' AND '.join(where)}" if where else "")
    state: list[Any] = list(brain.query(sql, params)[0])  # aggregates: always one row
    if brain.features.has_table(OVERRIDES):
        state += list(brain.query(f"SELECT count(*), group_concat(observation_id || ':' || relevance) "
                                  f"FROM (SELECT * FROM {OVERRIDES} ORDER BY observation_id)")[0])
    if brain.features.has_table(cs.EDGES):
        types = ",".join(f"'{t}'" for t in REFLECTION_EDGE_TYPES)
        state += list(brain.query(f"SELECT count(*), total(rowid) FROM {cs.EDGES} WHERE edge_type IN ({types})")[0])
    for table in (cs.PATTERNS, cs.LEARNINGS):
        if brain.features.has_table(table):
            live = " WHERE invalid_at IS NULL" if brain.features.has_column(table, "invalid_at") else ""
            state.append(brain.scalar(f"SELECT count(*) FROM {table}{live}"))
    return tuple(state)
