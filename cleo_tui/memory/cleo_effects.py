"""What cleo-tui's writes change for CLEO itself, in words, and the opt-in that hides from its search.

Read in CLEO v2026.8.x's source (kryptobaseddev/cleo):
- `memory find` (packages/core/src/memory/brain-search.ts, FTS and LIKE paths) filters only
  `quality_score IS NULL OR quality_score >= 0.3` (QUALITY_SCORE_THRESHOLD,
  packages/core/src/memory/quality-scoring.ts); it never looks at invalid_at;
- `memory fetch` and `timeline` (packages/core/src/memory/retrieval/fetch.ts, timeline.ts)
  filter neither; every hit runs `citation_count = citation_count + 1, updated_at = ?`
  (retrieval/increment-citation-counts.ts), evicted rows included;
- consolidation's quality recompute (brain-lifecycle.ts, recomputeQualityScores) only
  touches `invalid_at IS NULL` rows, so it does not lift the quality of an evicted row;
  its hard sweeper (brain-maintenance.ts, runPruneSweep) deletes rows with
  prune_candidate = 1 AND quality_score < 0.2 AND no citations AND older than 30 days;
  usage feedback (quality-feedback.ts) moves quality by ±0.05 per recorded outcome.

So an eviction alone does not shrink what CLEO's agent recalls. Setting quality_score to
0.2 on the evicted row hides it from `memory find` (0.2 < 0.3), is not recomputed by
consolidation (the row is evicted), and stays out of the hard sweeper's reach (not < 0.2);
two positive usage outcomes would lift it back to 0.3. `fetch` by id and `timeline`
still return it.
"""

from __future__ import annotations

from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.store import Brain

HIDDEN_QUALITY = 0.2

def eviction_in_cleo(how_to_hide: str | None) -> str:
    """What a soft eviction changes in CLEO, ending with how this face hides rows from CLEO's search
    (`how_to_hide`, e.g. "commit with --hide-from-cleo"), or where that is offered when it does not."""
    hide = (f"To also hide them from CLEO's search, {how_to_hide}" if how_to_hide else
            "Only a prune commit can also hide rows from CLEO's search (the box in the Prune pane's commit "
            "dialog, or `prune --hide-from-cleo`)")
    return ("What eviction changes in CLEO: cleo-tui soft-evicts (sets invalid_at), which CLEO's "
            "`memory doctor` and tier statistics honour, but CLEO's own `memory find`, `fetch`, "
            "`search-hybrid` and `timeline` still return evicted rows, so your agent may still recall "
            f"them. {hide} (sets quality_score to {HIDDEN_QUALITY}, below the 0.3 CLEO's search requires; "
            "undo restores the prior value). `fetch` by id and `timeline` still show them.")


EVICTION_IN_CLEO = eviction_in_cleo(None)  # for the faces that evict without offering to hide
HIDDEN_FROM_CLEO = (f"The evicted rows are also hidden from CLEO's search: quality_score is {HIDDEN_QUALITY}, below "
                    "the 0.3 `memory find` requires (undo restores the prior value); CLEO's `fetch` by id and "
                    "`timeline` still show them.")


def hide_values(brain: Brain) -> dict[str, Any]:
    """The extra columns an eviction sets to hide the row from CLEO's search ({} when the brain has none)."""
    if not brain.features.has_column(cs.OBSERVATIONS, "quality_score"):
        return {}
    return {"quality_score": HIDDEN_QUALITY}
