"""Coverage, relevance and protection tags, for seed records and for a whole brain.

Coverage counts distinct reflections citing an observation (0 uncited, 1–3
cited, 4+ reinforced). Protection is judged on the live pool: critical
relevance, a user assertion, a completion, an error, or an identifier that
appears in no other live observation or reflection (see `detectors`). Every
protected observation carries readable reasons.

Evicted observations get coverage and relevance too. Their protection reasons
are computed as if they were live again (what restoring one would protect), but
`protected` is False: only live rows take part in a prune.
"""

from __future__ import annotations

import gc
import sqlite3
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.store import Brain
from cleo_tui.memory import detectors, mapping
from cleo_tui.memory.seed_types import MemoryReflection, ObservationRecord, ReflectionRecord

# Observation columns the tagger and the pruner read; absent ones read as NULL.
POOL_COLUMNS = ("id", "created_at", "title", "narrative", "type", "source_type", "source_confidence",
                "quality_score", "source_session_id", "invalid_at")
# Live reflection texts, for "appears in no other observation or reflection".
_REFLECTION_TEXT = ((cs.PATTERNS, "pattern || ' ' || coalesce(context, '')"), (cs.LEARNINGS, "insight"))


@dataclass(frozen=True)
class ProtectionTag:
    """The seed's protection entry, with every reason (the seed's `reason` is them joined)."""

    protected: bool
    reasons: tuple[str, ...] = ()

    @property
    def reason(self) -> str | None:
        return "; ".join(self.reasons) or None


@dataclass(slots=True)
class ObservationTags:
    """Every tag of one brain observation, with the facts behind it."""

    id: str
    live: bool
    coverage: str
    citation_count: int
    citing: list[str]
    relevance: str
    relevance_reason: str
    protected: bool
    reasons: list[str] = field(default_factory=list)


def compute_coverage_tags(observations: Sequence[ObservationRecord],
                          reflections: Iterable[MemoryReflection]) -> dict[str, str]:
    """The seed's computeCoverageTags: for each observation id, reinforced, cited or uncited.

    Each reflection counts once per distinct supporting id present in the pool;
    legacy (plain string) reflections cite nothing.
    """
    pool = {o.id for o in observations}
    counts: Counter[str] = Counter()
    for reflection in reflections:
        if isinstance(reflection, ReflectionRecord):
            counts.update(set(reflection.supporting_observation_ids) & pool)
    return {o.id: mapping.coverage_tag(counts[o.id]) for o in observations}


def _reflection_text(reflection: MemoryReflection) -> str:
    return reflection if isinstance(reflection, str) else reflection.content


def identifier_counts(texts: Iterable[set[str]]) -> Counter[str]:
    """In how many of the texts (given as their identifier sets) each identifier appears."""
    counts: Counter[str] = Counter()
    for identifiers in texts:
        counts.update(identifiers)
    return counts


def protection_reasons(text_reasons: list[str], relevance: str, relevance_reason: str,
                       identifiers: Iterable[str], counts: Counter[str], own: int) -> list[str]:
    """Every reason protecting one observation, in rule order (empty: not protected).

    `text_reasons` are the text detectors' findings (`detectors.text_reasons_of`).
    """
    reasons = [f"critical relevance: {relevance_reason}"] if relevance == "critical" else []
    reasons += text_reasons
    reasons += detectors.unique_identifier_reasons(identifiers, counts, own)
    return reasons


def tag_protected_observations(observations: Sequence[ObservationRecord],
                               reflections: Iterable[MemoryReflection] = ()) -> dict[str, ProtectionTag]:
    """The seed's tagProtectedObservations; identifiers are unique against the pool and reflections."""
    contents = [o.content for o in observations]
    identifiers = detectors.identifiers_of(contents)
    counts = identifier_counts(identifiers)
    counts.update(identifier_counts(detectors.identifiers_of([_reflection_text(r) for r in reflections])))
    tags = {}
    for observation, ids, found in zip(observations, identifiers, detectors.text_reasons_of(contents)):
        reasons = protection_reasons(found, observation.relevance, "set by the observer", ids, counts, own=1)
        tags[observation.id] = ProtectionTag(bool(reasons), tuple(reasons))
    return tags


# --- whole brain -------------------------------------------------------------------


def read_observation_rows(brain: Brain, live_only: bool = False) -> list[dict[str, Any]]:
    """Observations (all, or only live ones) with POOL_COLUMNS, oldest first, in one query."""
    have = brain.features.columns(cs.OBSERVATIONS)
    select = ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in POOL_COLUMNS)
    where = " WHERE invalid_at IS NULL" if live_only and "invalid_at" in have else ""
    order = "created_at, rowid" if "created_at" in have else "rowid"
    rows = brain.query(f"SELECT {select} FROM {cs.OBSERVATIONS}{where} ORDER BY {order}")
    return [dict(zip(POOL_COLUMNS, row)) for row in rows]


def live_reflection_texts(brain: Brain) -> list[str]:
    """Texts of live patterns and learnings (observer notes are observations already)."""
    texts = []
    for table, expression in _REFLECTION_TEXT:
        if not brain.features.has_table(table):
            continue
        live = "invalid_at IS NULL" if brain.features.has_column(table, "invalid_at") else "1"
        try:
            texts += [mapping.as_text(r[0]) for r in brain.query(f"SELECT {expression} FROM {table} WHERE {live}")]
        except sqlite3.OperationalError:  # an older layout without these columns: nothing to compare with
            continue
    return texts


def judged_text(row: dict[str, Any]) -> str:
    """The text the detectors read: the content, with the title in front when it adds to it."""
    content = mapping.content_of(row)
    title = mapping.as_text(row.get("title"))
    return content if not title or content.startswith(title) else f"{title}\n{content}"


@dataclass
class BrainSnapshot:
    """What tagging and pruning read from a brain, read once."""

    rows: list[dict[str, Any]]
    overrides: dict[str, str]
    citations: dict[str, set[str]]
    reflection_texts: list[str]


def read_snapshot(brain: Brain, live_only: bool = False) -> BrainSnapshot:
    """Read observations (all, or only the live pool), overrides, citations and reflection texts."""
    return BrainSnapshot(read_observation_rows(brain, live_only), mapping.relevance_overrides(brain),
                         mapping.reflection_citations(brain), live_reflection_texts(brain))


def tag_snapshot(snapshot: BrainSnapshot) -> dict[str, ObservationTags]:
    """Tags of every observation of a snapshot (see the module docstring for evicted rows)."""
    findings = detectors.analyse_texts([judged_text(row) for row in snapshot.rows])
    counts = identifier_counts(ids for row, (ids, _) in zip(snapshot.rows, findings) if row["invalid_at"] is None)
    counts.update(identifier_counts(detectors.identifiers_of(snapshot.reflection_texts)))
    tags: dict[str, ObservationTags] = {}
    for row, (ids, found) in zip(snapshot.rows, findings):
        obs_id = mapping.as_text(row["id"])
        live = row["invalid_at"] is None
        relevance, why = mapping.derive_relevance(row, snapshot.overrides.get(obs_id))
        citing = sorted(snapshot.citations[obs_id]) if obs_id in snapshot.citations else []
        reasons = protection_reasons(list(found), relevance, why, ids, counts, own=1 if live else 0)
        tags[obs_id] = ObservationTags(
            id=obs_id, live=live, coverage=mapping.coverage_tag(len(citing)), citation_count=len(citing),
            citing=citing, relevance=relevance, relevance_reason=why,
            protected=live and bool(reasons), reasons=reasons)
    return tags


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building 100,000s of objects.

    Each full collection walks every live object; building a large pool would
    trigger many of them (about 20% of the time) while creating no cycles.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def tag_brain(brain: Brain) -> dict[str, ObservationTags]:
    """Tags of every observation in the brain, live and evicted, by id (safe in a worker thread)."""
    with gc_paused():
        return tag_snapshot(read_snapshot(brain))
