"""The recall impact of applying a sweep: which recorded retrievals returned the rows it would purge.

The figures are the shared recall impact's (`recall.impact`: the same retrievals, "affected" and
"used by a task" as the Prune pane and `prune --json` count them); this adds, per purged row, how
often a task used it (`brain_usage_log`) even when no recorded retrieval returned it, which the
Sweeps pane shows beside each staged row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cleo_tui.brain.store import Brain
from cleo_tui.recall.impact import RecallIndex
from cleo_tui.recall.recorded import entry_usage


@dataclass(frozen=True)
class LostEntry:
    """One id the step would take away: how many recorded retrievals returned it, when last, task uses."""

    id: str
    recalls: int
    last_recalled_at: str | None
    used: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "recalls": self.recalls, "last_recalled_at": self.last_recalled_at, "used": self.used}


@dataclass(frozen=True)
class RecallImpact:
    """`retrievals` recorded in all; `affected_retrievals` returned at least one id of the step;
    `affected_used` of those, the ones whose lost results a task used (as `recall.impact` counts);
    `lost`, per id recalled or used, most recalled first."""

    retrievals: int
    affected_retrievals: int
    affected_used: int
    lost: list[LostEntry] = field(default_factory=list)

    def by_id(self) -> dict[str, LostEntry]:
        return {e.id: e for e in self.lost}

    def to_dict(self) -> dict[str, Any]:
        return {"retrievals": self.retrievals, "affected_retrievals": self.affected_retrievals,
                "affected_used": self.affected_used, "lost": [e.to_dict() for e in self.lost]}


def sweep_recall_impact(brain: Brain, ids: Iterable[str]) -> RecallImpact:
    """What the recorded retrievals lose when `ids` leave the live brain (the rows a sweep would purge)."""
    wanted = list(dict.fromkeys(ids))
    index, _problem = RecallIndex.load_or_problem(brain)
    if index is None:  # the logs cannot be read: no figures rather than a failed review
        return RecallImpact(0, 0, 0)
    shared = index.impact(wanted)
    recalled = {e.id: e for e in shared.lost}
    usage = entry_usage(brain)
    lost = [LostEntry(i, recalled[i].recalls if i in recalled else 0,
                      recalled[i].last_recalled_at if i in recalled else None, usage[i].used if i in usage else 0)
            for i in wanted if i in recalled or i in usage]
    lost.sort(key=lambda e: (-e.recalls, -e.used, e.id))
    return RecallImpact(shared.retrievals, shared.affected_retrievals, shared.affected_used, lost)
