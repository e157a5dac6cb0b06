"""Counts that describe a brain (the `info` command and the TUI header)."""

from __future__ import annotations

from cleo_tui.brain import cleo_rules
from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.kinds import HIPPO_MEMORIES
from cleo_tui.brain.migrations import TRACES
from cleo_tui.brain.rows import JsonObject
from cleo_tui.brain.store import Brain


def _count(brain: Brain, table: str, where: str = "") -> int:
    if not brain.features.has_table(table):
        return 0
    return int(brain.scalar(f'SELECT count(*) FROM "{table}"' + (f" WHERE {where}" if where else "")))


def brain_summary(brain: Brain) -> JsonObject:
    """`{"db", "kind", "observations": {"live", "evicted"}, "patterns", "learnings", "traces", "at_risk",
    "hidden_from_cleo_search"}` (the last two: CLEO's own rules, brain/cleo_rules.py)."""
    has_invalid = brain.features.has_column(cs.OBSERVATIONS, "invalid_at")
    if brain.supports("observations"):
        live = _count(brain, cs.OBSERVATIONS, "invalid_at IS NULL" if has_invalid else "")
        evicted = _count(brain, cs.OBSERVATIONS, "invalid_at IS NOT NULL") if has_invalid else 0
    elif "superseded_by" in brain.features.columns(HIPPO_MEMORIES):  # a hippo store: a superseded
        # memory is out of the pool, as History's timeline and the Traces pane count it
        live = _count(brain, HIPPO_MEMORIES, "superseded_by IS NULL")
        evicted = _count(brain, HIPPO_MEMORIES, "superseded_by IS NOT NULL")
    else:
        live, evicted = _count(brain, HIPPO_MEMORIES), 0
    return {
        "db": str(brain.path),
        "kind": brain.kind.name,
        "kind_label": brain.kind.label,
        "read_only": brain.read_only,
        "observations": {"live": live, "evicted": evicted},
        "patterns": _count(brain, cs.PATTERNS),
        "learnings": _count(brain, cs.LEARNINGS),
        "traces": _count(brain, TRACES),
        **cleo_rules.mark_counts(brain),  # issue 28: "at_risk", "hidden_from_cleo_search"
    }
