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
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.store import Brain
from cleo_tui.memory import detectors, mapping
from cleo_tui.memory.seed_types import MemoryReflection, ObservationRecord, ReflectionRecord, render_line
from cleo_tui.memory.token_cache import CountStats, Progress, TokenCache, count_line_units
from cleo_tui.memory.tokenizers import Tokenizer

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


def identifier_counts(texts: Iterable[Iterable[str]]) -> Counter[str]:
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
    for observation, ids, found in zip(observations, identifiers, detectors.text_reasons_of(contents), strict=True):
        reasons = protection_reasons(found, observation.relevance, "set by the observer", ids, counts, own=1)
        tags[observation.id] = ProtectionTag(bool(reasons), tuple(reasons))
    return tags


# --- whole brain -------------------------------------------------------------------

SCAN_CHUNK = 4_000


def iter_observation_rows(brain: Brain, live_only: bool = False) -> Iterator[list[dict[str, Any]]]:
    """Observations (all, or only live ones) with POOL_COLUMNS, oldest first, a chunk at a time.

    One statement, so the rows are one consistent read; the brain's lock is held
    until the last chunk is taken (use a reader brain in a worker thread).
    Streaming keeps only one chunk of narratives in memory at a time.
    """
    have = brain.features.columns(cs.OBSERVATIONS)
    select = ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in POOL_COLUMNS)
    where = " WHERE invalid_at IS NULL" if live_only and "invalid_at" in have else ""
    order = "created_at, rowid" if "created_at" in have else "rowid"
    with brain.lock:
        cursor = brain.conn.execute(f"SELECT {select} FROM {cs.OBSERVATIONS}{where} ORDER BY {order}")
        try:
            while rows := cursor.fetchmany(SCAN_CHUNK):
                yield [dict(zip(POOL_COLUMNS, row, strict=True)) for row in rows]
        finally:
            cursor.close()


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


@dataclass(slots=True)
class ScannedRow:
    """What is kept of one observation once its text has been read and analysed."""

    id: str
    live: bool
    created_at: str
    session: str | None
    relevance: str
    relevance_reason: str
    identifiers: tuple[str, ...]
    text_reasons: tuple[str, ...]
    units: int = 0  # size of its pool line (see tokenizers), when the scan measured it


@dataclass
class BrainScan:
    """Every observation scanned, with what tagging needs besides."""

    rows: list[ScannedRow]
    citations: dict[str, set[str]]
    counts: Counter[str]  # identifier → live observations and reflections holding it
    count_stats: CountStats = field(default_factory=CountStats)


def _scan_row(row: dict[str, Any], findings: tuple, overrides: dict[str, str]) -> ScannedRow:
    obs_id = mapping.as_text(row["id"])
    relevance, why = mapping.derive_relevance(row, overrides.get(obs_id))
    session = row["source_session_id"]
    return ScannedRow(obs_id, row["invalid_at"] is None, mapping.as_text(row["created_at"]),
                      None if session is None else mapping.as_text(session), relevance, why, *findings)


def scan_brain(brain: Brain, live_only: bool = False, tokenizer: Tokenizer | None = None,
               session: str | None = None, progress: Progress | None = None) -> BrainScan:
    """Read and analyse every observation once, streaming.

    With a tokenizer, each row in scope (one session's, or all when `session` is
    None) also gets the size of its pool line `[id] YYYY-MM-DD HH:MM [relevance]
    content`, counted through the token cache; `progress(done, total)` follows it.
    """
    overrides = mapping.relevance_overrides(brain)
    rows: list[ScannedRow] = []
    stats = CountStats()
    cache = TokenCache()
    total = _count_in_scope(brain, session) if tokenizer is not None and progress else 0
    try:
        for chunk in iter_observation_rows(brain, live_only):
            findings = detectors.analyse_texts([judged_text(row) for row in chunk], cache)
            scanned = [_scan_row(row, found, overrides) for row, found in zip(chunk, findings, strict=True)]
            if tokenizer is not None:
                _measure(chunk, scanned, tokenizer, session, cache, stats,
                         None if progress is None else _offset(progress, stats.lines, total))
            rows += scanned
    finally:
        cache.close()
    counts = identifier_counts(row.identifiers for row in rows if row.live)
    counts.update(identifier_counts(detectors.identifiers_of(live_reflection_texts(brain))))
    return BrainScan(rows, mapping.reflection_citations(brain), counts, stats)


def _count_in_scope(brain: Brain, session: str | None) -> int:
    live = "invalid_at IS NULL" if brain.features.has_column(cs.OBSERVATIONS, "invalid_at") else "1"
    if session is None:
        return int(brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} WHERE {live}"))
    if not brain.features.has_column(cs.OBSERVATIONS, "source_session_id"):
        return 0
    return int(brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} WHERE {live} AND source_session_id = ?",
                            (session,)))


def _offset(progress: Progress, done_before: int, total: int) -> Progress:
    return lambda done, _chunk_total: progress(done_before + done, total)


def _measure(chunk: list[dict[str, Any]], scanned: list[ScannedRow], tokenizer: Tokenizer, session: str | None,
             cache: TokenCache, stats: CountStats, progress: Progress | None) -> None:
    """Set `units` on the chunk's rows in scope, counting through the cache."""
    in_scope = [i for i, s in enumerate(scanned) if session is None or s.session == session]
    lines = [render_line(scanned[i].id, mapping.minute_timestamp(chunk[i]["created_at"]), scanned[i].relevance,
                         mapping.content_of(chunk[i])) for i in in_scope]
    units, chunk_stats = count_line_units(lines, tokenizer, progress, cache)
    for i, unit in zip(in_scope, units, strict=True):
        scanned[i].units = unit
    stats.lines += chunk_stats.lines
    stats.from_cache += chunk_stats.from_cache
    stats.counted += chunk_stats.counted
    stats.cache_used = stats.cache_used or chunk_stats.cache_used
    stats.seconds += chunk_stats.seconds


def citing_of(scan: BrainScan, row: ScannedRow) -> list[str]:
    """The live reflections (node ids) citing a row, sorted."""
    cited = scan.citations.get(row.id)
    return sorted(cited) if cited else []


def reasons_of(scan: BrainScan, row: ScannedRow) -> list[str]:
    """Every reason protecting a row (computed as if live for an evicted one)."""
    return protection_reasons(list(row.text_reasons), row.relevance, row.relevance_reason, row.identifiers,
                              scan.counts, own=1 if row.live else 0)


def tags_of(scan: BrainScan) -> dict[str, ObservationTags]:
    """Tags of every scanned observation (see the module docstring for evicted rows)."""
    tags: dict[str, ObservationTags] = {}
    for row in scan.rows:
        citing = citing_of(scan, row)
        reasons = reasons_of(scan, row)
        tags[row.id] = ObservationTags(
            id=row.id, live=row.live, coverage=mapping.coverage_tag(len(citing)), citation_count=len(citing),
            citing=citing, relevance=row.relevance, relevance_reason=row.relevance_reason,
            protected=row.live and bool(reasons), reasons=reasons)
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
        return tags_of(scan_brain(brain))
