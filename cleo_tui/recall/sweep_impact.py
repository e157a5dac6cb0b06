"""The recall impact of applying a sweep: which recorded retrievals returned the rows it would purge.

Self-contained on purpose (issue 28): one function, `sweep_recall_impact`, over
`recall.recorded` — every retrieval CLEO logged in `brain_retrieval_log` and every recall trace —
and `brain_usage_log` (which entries a task used). The shared recall-impact function of issue 27
can replace it; the shape is the one DESIGN.md gives `prune|dedup --json`'s "impact".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cleo_tui.brain.store import Brain
from cleo_tui.recall.recorded import entry_usage, recorded_retrievals


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
    `affected_used`: ids of the step a task used (brain_usage_log); `lost`, per id, most recalled first."""

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
    wanted = set(ids)
    counts: dict[str, int] = {}
    last: dict[str, str] = {}
    total = affected = 0
    for retrieval in recorded_retrievals(brain):
        total += 1
        hit = wanted.intersection(retrieval.returned)
        if not hit:
            continue
        affected += 1
        for entry in hit:
            counts[entry] = counts.get(entry, 0) + 1
            if retrieval.created_at and retrieval.created_at > last.get(entry, ""):
                last[entry] = retrieval.created_at
    usage = entry_usage(brain)
    used = {i: usage[i].used for i in wanted if i in usage}
    lost = [LostEntry(i, counts.get(i, 0), last.get(i), used.get(i, 0)) for i in wanted if counts.get(i) or used.get(i)]
    lost.sort(key=lambda e: (-e.recalls, -e.used, e.id))
    return RecallImpact(total, affected, len(used), lost)
