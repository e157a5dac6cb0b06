"""What a traced memory id points at now: an observation, pattern, learning, decision or hippo memory.

A trace outlives its memories (the seed keeps no foreign key on memory_id), so
an id resolves to `live`, `evicted` (soft-evicted in a brain, superseded in a
hippo store) or `forgotten` (no row with that id any more). Titles and
summaries are the stored text, untouched: display code passes them through
`cleo_tui.safe_text`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.numbers import finite_or_none
from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import as_text
from cleo_tui.safe_text import cut_text, sql_text_prefix

# What a traced id is now; "unresolved" when a trace is read without resolving its ids (reader.py).
MemoryState = Literal["live", "evicted", "forgotten", "unresolved"]
# Where a traced id was found (None in ResolvedMemory: nowhere).
MemoryKind = Literal["observation", "pattern", "learning", "decision", "hippo"]
# What a memory CLEO returned is now, as CLEO sees it (cleo_state).
CleoState = Literal["live", "evicted", "hidden", "deleted"]
LIVE: Final = "live"
EVICTED: Final = "evicted"
FORGOTTEN: Final = "forgotten"
# What a memory CLEO returned is now, seen from CLEO: its find still returns evicted rows, leaves
# out rows under QUALITY_SCORE_THRESHOLD (brain-search.ts, searchWithFts5: `quality_score IS NULL OR
# quality_score >= 0.3`), and a row with no id any more was deleted (its hard sweeper, or by hand).
HIDDEN: Final = "hidden"
DELETED: Final = "deleted"
CLEO_SEARCH_QUALITY = 0.3
HIPPO_MEMORIES = "memories"
SUMMARY_CHARS = 500
TITLE_CHARS = 120
CHUNK = 500  # ids per IN (...) list, well under SQLite's variable limit


@dataclass(frozen=True)
class ResolvedMemory:
    """The memory behind a traced id; `kind` is None when it is forgotten."""

    memory_id: str
    kind: MemoryKind | None
    state: MemoryState
    title: str
    summary: str
    created_at: str | None
    quality: float | None = None  # quality_score, where the table has one

    @property
    def hidden_from_cleo(self) -> bool:
        """CLEO's `memory find` leaves it out: quality_score below its 0.3 threshold."""
        return self.quality is not None and self.quality < CLEO_SEARCH_QUALITY


@dataclass(frozen=True)
class _Table:
    kind: MemoryKind
    table: str
    title: str          # SQL expression for the title
    summary: str        # SQL expression for the summary
    date: str           # date column
    evicted: str        # column that is non-NULL when the row is evicted
    quality: str | None = None  # quality_score column, where CLEO's search filters by it


_TABLES = (
    _Table("observation", cs.OBSERVATIONS, "title", "narrative", "created_at", "invalid_at", "quality_score"),
    _Table("pattern", cs.PATTERNS, "pattern", "context", "extracted_at", "invalid_at", "quality_score"),
    _Table("learning", cs.LEARNINGS, "insight", "application", "created_at", "invalid_at", "quality_score"),
    _Table("decision", cs.DECISIONS, "decision", "rationale", "created_at", "invalid_at", "quality_score"),
    _Table("hippo", HIPPO_MEMORIES, "content", "content", "created", "superseded_by"),
)


def _expr(brain: Brain, table: str, column: str, chars: int | None = None) -> str:
    if not brain.features.has_column(table, column):
        return "NULL"
    return sql_text_prefix(f'"{column}"', chars) if chars else f'"{column}"'


def _first_line(text: str, width: int) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:width]


def _lookup(brain: Brain, spec: _Table, ids: list[str]) -> dict[str, ResolvedMemory]:
    if not brain.features.has_column(spec.table, "id"):
        return {}
    found: dict[str, ResolvedMemory] = {}
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start:start + CHUNK]
        sql = (f'SELECT id, {_expr(brain, spec.table, spec.title, SUMMARY_CHARS)}, '
               f'{_expr(brain, spec.table, spec.summary, SUMMARY_CHARS)}, {_expr(brain, spec.table, spec.date)}, '
               f'{_expr(brain, spec.table, spec.evicted)} IS NOT NULL, '
               f'{_expr(brain, spec.table, spec.quality) if spec.quality else "NULL"} '
               f'FROM "{spec.table}" WHERE id IN ({",".join("?" for _ in chunk)})')
        for row in brain.query(sql, chunk):
            memory_id = as_text(row[0])
            summary = cut_text(row[2], SUMMARY_CHARS) or cut_text(row[1], SUMMARY_CHARS)
            found[memory_id] = ResolvedMemory(
                memory_id, spec.kind, EVICTED if row[4] else LIVE,
                _first_line(cut_text(row[1], SUMMARY_CHARS) or summary, TITLE_CHARS), summary,
                None if row[3] is None else as_text(row[3]), finite_or_none(row[5]))
    return found


def resolve_memories(brain: Brain, memory_ids: Iterable[str]) -> dict[str, ResolvedMemory]:
    """Each id → what it is now; ids found nowhere resolve as forgotten."""
    wanted = list(dict.fromkeys(memory_ids))
    found: dict[str, ResolvedMemory] = {}
    for spec in _TABLES:
        missing = [i for i in wanted if i not in found]
        if not missing:
            break
        if brain.features.has_table(spec.table):
            found.update(_lookup(brain, spec, missing))
    return {i: found.get(i) or ResolvedMemory(i, None, FORGOTTEN, "", "", None) for i in wanted}


def cleo_state(memory: ResolvedMemory) -> CleoState:
    """What a memory CLEO returned is now, as CLEO would see it: live, evicted (CLEO still returns
    it), hidden (live, but its quality keeps it out of CLEO's find) or deleted (no row holds the id)."""
    if memory.state == FORGOTTEN:
        return DELETED
    if memory.state == EVICTED:
        return EVICTED
    return HIDDEN if memory.hidden_from_cleo else LIVE
