"""The deterministic pruner: drop order prepared once, any budget answered from prefix sums.

Semantics (the seed, REFERENCE §2):
- target = max(1, floor(0.8 × budget)); nothing drops while the pool is at or under it;
- drop order: coverage (reinforced, cited, uncited), then relevance (low, medium,
  high), then oldest first, stable on ties (the pool's order);
- drop in that order and stop as soon as the pool is at or under the target;
- protected observations never drop; `fell_back` is true when everything
  droppable is dropped and the pool is still over the target.

The pool is its rendered lines `[id] YYYY-MM-DD HH:MM [relevance] content` joined
by newlines; its tokens are measured as `tokenizers` explains (chars4:
ceil(UTF-16 length / 4) of the joined text; tiktoken: the sum of the line counts
plus one per newline).

The drop order does not depend on the budget, so `PreparedPool` computes it
once with the prefix sums of the droppable rows' units; a budget is then a
binary search (O(log n)), which is what lets a budget slider move freely.

This module prepares pools (from seed records, or from a brain's live pool) and
is the pruner's one import for its callers. The work is in its parts:
`pruner_columns` (the pool's rows as columns and views), `pruner_plan` (drop
order, prefix sums, the prune at a budget), `pruner_commit` (soft-evicting what
the user saw) and `budget` (reading a budget a user typed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.store import Brain
from cleo_tui.memory import tags
from cleo_tui.memory.budget import MAX_BUDGET, BadBudget, parse_budget
from cleo_tui.memory.pruner_columns import EntryView, PoolColumns, PoolEntry
from cleo_tui.memory.pruner_commit import PARAMS_IDS_MAX, CommitResult, commit_preview, commit_prune, pool_rowids
from cleo_tui.memory.pruner_plan import (
    TARGET_SHARE,
    CurvePoint,
    PreparedPool,
    PrunePreview,
    build_pool,
    pool_from_scan,
    target_for,
)
from cleo_tui.memory.pruner_units import scan_line_units
from cleo_tui.memory.seed_types import MemoryReflection, ObservationRecord, render_record
from cleo_tui.memory.token_cache import Progress, count_line_units
from cleo_tui.memory.tokenizers import Tokenizer, get_tokenizer

__all__ = [
    "MAX_BUDGET", "PARAMS_IDS_MAX", "TARGET_SHARE", "BadBudget", "CommitResult", "CurvePoint", "EmptyScope",
    "EntryView", "PoolColumns", "PoolEntry", "PreparedPool", "PrunePreview", "PrunerResult", "build_pool",
    "commit_preview", "commit_prune", "deterministic_prune", "parse_budget", "pool_from_scan", "pool_rowids",
    "prepare_pool", "prepare_records", "target_for",
]


class EmptyScope(BrainError):
    """The chosen scope holds no live observation."""


# --- seed-shaped, on records -------------------------------------------------------


@dataclass(frozen=True)
class PrunerResult:
    """The seed's PrunerResult, plus the facts that ranked each dropped row."""

    observations: list[ObservationRecord]
    dropped_ids: list[str]
    fell_back: bool
    tokens_before: int
    tokens_after: int
    dropped: list[PoolEntry]


def prepare_records(observations: Sequence[ObservationRecord], reflections: Sequence[MemoryReflection],
                    tokenizer: str | Tokenizer = "chars4", progress: Progress | None = None) -> PreparedPool:
    """Prepare a pool of seed records (the whole list is the pool)."""
    tokenizer = get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    coverage = tags.compute_coverage_tags(observations, reflections)
    citations = _citation_counts(observations, reflections)
    protection = tags.tag_protected_observations(observations, reflections)
    units, stats = count_line_units([render_record(o) for o in observations], tokenizer, progress)
    entries = [PoolEntry(o.id, i, o.timestamp, coverage[o.id], citations.get(o.id, 0), o.relevance,
                         "set by the observer", units[i], protection[o.id].reasons)
               for i, o in enumerate(observations)]
    return build_pool(entries, tokenizer, None, stats)


def _citation_counts(observations: Sequence[ObservationRecord],
                     reflections: Sequence[MemoryReflection]) -> dict[str, int]:
    pool = {o.id for o in observations}
    counts: dict[str, int] = {}
    for reflection in reflections:
        if not isinstance(reflection, str):
            for obs_id in set(reflection.supporting_observation_ids) & pool:
                counts[obs_id] = counts.get(obs_id, 0) + 1
    return counts


def deterministic_prune(observations: Sequence[ObservationRecord], reflections: Sequence[MemoryReflection],
                        budget_tokens: int, tokenizer: str | Tokenizer = "chars4") -> PrunerResult:
    """The seed's deterministicPrune over records (see the module docstring for the rules)."""
    preview = prepare_records(observations, reflections, tokenizer).preview(budget_tokens)
    dropped_positions = {e.position for e in preview.dropped}
    kept = [o for i, o in enumerate(observations) if i not in dropped_positions]
    return PrunerResult(kept, preview.dropped_ids, preview.fell_back, preview.tokens_before,
                        preview.tokens_after, preview.dropped)


# --- over a brain ------------------------------------------------------------------


def prepare_pool(brain: Brain, tokenizer: str | Tokenizer = "chars4", session: str | None = None,
                 progress: Progress | None = None) -> PreparedPool:
    """Prepare the brain's live pool (or one session's part of it) for previews.

    Tags are judged on the whole live pool (an identifier is unique when no other
    live observation or reflection holds it, whatever the scope). Only reads the
    brain; token counts go to the cache outside it. Rows CLEO adds later are folded
    in with `PreparedPool.refreshed` (no full prepare).
    """
    tokenizer = get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    with tags.gc_paused():
        return _prepare_live_pool(brain, tokenizer, session, progress)


def _prepare_live_pool(brain: Brain, tokenizer: Tokenizer, session: str | None,
                       progress: Progress | None) -> PreparedPool:
    """The live pool's scan, measured, as a pool (`prepare_pool` without the collector's pause)."""
    if tokenizer.cached:  # tiktoken: the counts come from the brain's units file (see pruner_units)
        scan = tags.scan_brain(brain, live_only=True, sessions=session is not None)
        scan.units, scan.count_stats = scan_line_units(brain, scan, tokenizer, session, progress)
        scan.unit_scope = session
    else:  # chars4: measured while the scan reads each chunk, cheaper than any cache
        scan = tags.scan_brain(brain, live_only=True, tokenizer=tokenizer, session=session, progress=progress)
    pool = pool_from_scan(scan, tokenizer, session, scan.count_stats)
    if session is not None and not len(pool):
        raise EmptyScope(
            f"No live observation belongs to session {session!r}. CLEO often leaves source_session_id "
            "empty; prune the whole pool instead (no --session).")
    return pool
