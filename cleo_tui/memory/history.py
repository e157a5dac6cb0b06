"""The brain's history, for the CLI's `history` and the TUI's History pane.

One import for the three questions of issue 17:
- `memory_life(brain, id)`: the life of one memory and, when it is gone, why
  (`cleo_tui.memory.life`, with the cause rule in `causes` and its evidence in `evidence`);
- `brain_timeline(brain, since)`: what the brain did each day (`timeline`);
- `brain_liveness(brain)`: whether the observer, reflector and consolidation still run
  (`liveness`).
Nothing here imports Textual.
"""

from __future__ import annotations

from cleo_tui.memory.causes import (
    CLEO_CONSOLIDATION,
    CLEO_REFLECTOR,
    CLEO_SWEEP,
    CLEO_TUI_PREFIX,
    DELETED_OUTSIDE,
    HIPPO_FORGET,
    HIPPO_SUPERSEDE,
    UNKNOWN,
    cause_label,
    evicted_with_causes,
)
from cleo_tui.memory.evidence import ConsolidationEvent, EvictionCause, Reflection
from cleo_tui.memory.life import (
    EdgeRef,
    JournalStep,
    MemoryLife,
    Mention,
    MissingId,
    TraceHit,
    Written,
    memory_life,
    missing_memories,
)
from cleo_tui.memory.liveness import DreamState, Liveness, brain_liveness
from cleo_tui.memory.timeline import Day, Timeline, brain_timeline, is_day

__all__ = [
    "CLEO_CONSOLIDATION", "CLEO_REFLECTOR", "CLEO_SWEEP", "CLEO_TUI_PREFIX", "DELETED_OUTSIDE", "HIPPO_FORGET",
    "HIPPO_SUPERSEDE", "UNKNOWN", "ConsolidationEvent", "Day", "DreamState", "EdgeRef", "EvictionCause",
    "JournalStep", "Liveness", "MemoryLife", "Mention", "MissingId", "Reflection", "Timeline", "TraceHit", "Written",
    "brain_liveness", "brain_timeline", "cause_label", "evicted_with_causes", "is_day", "memory_life",
    "missing_memories",
]
