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

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from cleo_tui import collector
from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.store import Brain
from cleo_tui.memory import detectors, mapping
from cleo_tui.memory.seed_types import MemoryReflection, ObservationRecord, ReflectionRecord

if TYPE_CHECKING:
    import threading

    import numpy as np

    from cleo_tui.memory import scan_snapshot
    from cleo_tui.memory.pool_scan.in_subprocess import ScanProcess
    from cleo_tui.memory.token_cache import Progress

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
    protection_pending: bool = False  # the detectors are still reading the texts (`protected` is a lower bound)


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


def judged_text(row: Mapping[str, Any]) -> str:
    """The text the detectors read: the content, with the title in front when it adds to it."""
    content = mapping.content_of(row)
    title = mapping.as_text(row.get("title"))
    return content if not title or content.startswith(title) else f"{title}\n{content}"


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
#
# A brain is scanned into columns (see `pool_scan`), not an object per row: at a
# million rows objects cost gigabytes and seconds. `TagTable` is a read-only mapping
# id → ObservationTags over those columns; each ObservationTags is made when asked.

from cleo_tui.memory.pool_scan import (  # noqa: E402  (below the seed-shaped part on purpose)
    BrainScan,
    live_reflection_texts,
    positions_of,
    scan_brain,
    scan_rows_since,
)

__all__ = ["BrainScan", "TagTable", "judged_text", "live_reflection_texts", "scan_brain", "scan_rows_since",
           "tag_brain", "update_tags"]


def gc_paused() -> AbstractContextManager[None]:
    """The collector paused while building 100,000s of objects, its young generation collected after
    (`collector.paused`)."""
    return collector.paused(collect_young=True)


class TagTable(Mapping[str, ObservationTags]):
    """Tags of every scanned observation, by id; built from a scan's columns on demand.

    Besides the Mapping interface (what the UI reads a row at a time), the
    column methods answer whole-pool questions without making an object per row.
    """

    def __init__(self, scan: BrainScan, protection_pending: bool = False) -> None:
        self.scan = scan
        # A first look (`pool_scan.first_look`): coverage and relevance are known, but the detectors
        # have not read the texts yet, so protection is not (shown as pending, never as "no").
        self.protection_pending = protection_pending

    @cached_property
    def _protected(self) -> np.ndarray:
        """The scan's protection column, built once: `scan.protected` walks the whole pool,
        and the table looks a row up for every visible row of every frame."""
        return self.scan.protected

    def ready(self) -> TagTable:
        """Compute now, in the caller's thread, the columns every row lookup reads (the protection
        column: at a million rows its identifier counts take a second or more; the ids' index;
        the protection reasons' scarce identifiers), so that the UI thread, which shows the table, never has to;
        returns the table."""
        _ = self._protected, self.scan.index
        self.scan.reasons_ready()
        return self

    def __len__(self) -> int:
        return len(self.scan)

    def __iter__(self) -> Iterator[str]:
        return iter(self.scan.ids)

    def __contains__(self, key: object) -> bool:
        return key in self.scan.index

    def __getitem__(self, key: str) -> ObservationTags:
        i = self.scan.index[key]
        scan = self.scan
        cited = scan.citations.get(key)
        citing = sorted(cited) if cited else []
        return ObservationTags(
            id=key, live=bool(scan.live[i]), coverage=mapping.coverage_tag(len(citing)),
            citation_count=len(citing), citing=citing, relevance=scan.relevance_of(i),
            relevance_reason=scan.relevance_reason_of(i), protected=bool(self._protected[i]),
            reasons=list(scan.reasons_of(i)), protection_pending=self.protection_pending)

    def fields(self, key: str) -> dict[str, object] | None:
        """One row's tags as plain values (coverage, citations, relevance and why, protection and why),
        read from the scan's columns without building an ObservationTags (an export asks for every row).
        While protection is pending (a first look) `protected` is None: not known, not "no"."""
        i = self.scan.index.get(key)
        if i is None:
            return None
        citations = int(self.scan.citation_counts[i])
        protected: bool | None = bool(self._protected[i])
        if self.protection_pending and not protected:
            protected = None
        return {"coverage": mapping.coverage_tag(citations), "citations": citations,
                "relevance": self.scan.relevance_of(i), "relevance_reason": self.scan.relevance_reason_of(i),
                "protected": protected, "protection_reasons": list(self.scan.reasons_of(i)) if protected else []}

    @property
    def high_water(self) -> int:
        """The largest rowid scanned: rows above it arrived later (see `update_tags`)."""
        return self.scan.high_water

    def ids_with_coverage(self, coverage: str) -> list[str]:
        """Ids of every observation with that coverage tag."""
        return self.scan.ids_where(self.scan.coverage_codes() == _COVERAGE_CODE[coverage])

    def protected_ids(self) -> list[str]:
        """Ids of every protected (live) observation."""
        return self.scan.ids_where(self._protected)

    def citation_counts(self) -> dict[str, int]:
        """Citation count of every cited observation."""
        cited = self.scan.citations
        scanned = positions_of(self.scan.index, list(cited)) >= 0  # one search for all, not one per id
        return {obs_id: len(by) for (obs_id, by), there in zip(cited.items(), scanned.tolist(), strict=True)
                if there}


_COVERAGE_CODE = {"reinforced": 0, "cited": 1, "uncited": 2}


class ScanCancelled(Exception):
    """A first scan was given up (`tag_brain`'s `cancel` was set): no tags, nothing saved."""


def tag_brain(brain: Brain, early: Callable[[TagTable], None] | None = None,
              cancel: threading.Event | None = None, progress: Progress | None = None,
              started: ScanProcess | None = None) -> TagTable:
    """Tags of every observation in the brain, live and evicted, by id (safe in a worker thread).

    Reopening a brain starts from the snapshot of its last scan (`scan_snapshot`) and
    the rows added since; `early` receives those tags at once, before every older row
    is checked against the snapshot (what is returned then holds any row that changed).
    Without a snapshot every row is read (a large brain's in another process, see
    `_first_scan`); detector findings still come from the per-brain cache where a row's
    text is unchanged. Setting `cancel` ends such a first scan's process (or a large brain's check
    against its snapshot, also made in another process: `check_in_subprocess`) and raises
    ScanCancelled (the app quits or opens another brain: it must not wait for the scan).
    A large brain's tags are left out of later garbage collections (`collector.freeze_on_leave`).
    `progress(done, total)` follows a scan of every row (rows read so far), from any thread.
    `started`: the first scan's process, started ahead (`in_subprocess.ScanAhead`); ended if not needed.
    """
    from cleo_tui.memory import scan_snapshot

    with gc_paused():
        stored = scan_snapshot.load_snapshot(brain)
        if stored is not None and scan_snapshot.same_brain(brain, stored):
            if started is not None:
                started.stop()  # (another cleo-tui saved the snapshot meanwhile)
            scan = stored.updated(scan_rows_since(brain, stored.high_water, base=stored))
            if early is not None:
                early(TagTable(scan))
            changes, before = _changed_rows(brain, stored, cancel), len(stored)
            del stored  # (a million rows' columns: not kept through another scan)
            if changes is None:
                del scan
                scan = scan_brain(brain, row_keys=True, progress=progress)
            elif changes:
                if changes.gone:
                    scan = scan.without(changes.gone)
                scan = scan.updated(scan_rows_since(brain, scan.high_water, changes.changed, base=scan))
            if changes is None or changes or len(scan) != before:
                scan_snapshot.save_snapshot(brain, scan)
            return _kept(TagTable(scan))
        del stored
    return _first_scan(brain, cancel, progress, early, started)  # (it pauses the collector only while it builds tags)


KEEP_FROM = 20_000  # rows: a brain's tags this large are frozen out of garbage collections (`_kept`)


def _kept(tags: TagTable) -> TagTable:
    """The tags, frozen out of garbage collections when the collector's pause ends if they are large
    (`collector.freeze_on_leave`: a collection would walk their millions of objects holding the GIL)."""
    if len(tags) >= KEEP_FROM:
        collector.freeze_on_leave()
    return tags


def _changed_rows(brain: Brain, stored: BrainScan,
                  cancel: threading.Event | None) -> scan_snapshot.RowChanges | None:
    """The rows that differ from the snapshot (`scan_snapshot.changed_rows`); a large brain's are
    compared in another process (`check_in_subprocess`: the app's interpreter stays free for keys).
    Setting `cancel` meanwhile ends that process and raises ScanCancelled."""
    from cleo_tui.memory.pool_scan import check_in_subprocess

    try:
        return check_in_subprocess.changed_rows(brain, stored, cancel, check_in_subprocess.worth_a_process(stored))
    except check_in_subprocess.CheckCancelled:
        raise ScanCancelled from None


def _first_scan(brain: Brain, cancel: threading.Event | None = None, progress: Progress | None = None,
                early: Callable[[TagTable], None] | None = None, started: ScanProcess | None = None) -> TagTable:
    """The tags of a whole scan of a brain that has no usable snapshot, saved as its snapshot.

    A large brain is scanned in another process (`in_subprocess`): this interpreter only
    waits, then loads the snapshot the child wrote and folds in the rows added meanwhile.
    Meanwhile `early` gets the child's first look (coverage and relevance; protection pending).
    Rows edited meanwhile are as a scan in this thread would have read them: either way the
    scan reads each row once, at some moment of its pass. The collector is paused only while
    the tags are built, not while the child runs: the UI's garbage of those minutes is collected
    (paused, it piled up, 60 MB at a million rows, then frozen for good by `_kept`), and over
    only what those minutes make (`collector.freeze_now`)."""
    from cleo_tui.memory import scan_snapshot
    from cleo_tui.memory.pool_scan import in_subprocess

    first: list[BrainScan] = []

    def looked() -> None:
        with gc_paused():
            look = scan_snapshot.load_snapshot(brain, scan_snapshot.first_look_path(brain), digests=True)
            if look is None or early is None:
                return
            first.append(look)
            early(_kept(TagTable(look, protection_pending=True)))

    if started is not None or in_subprocess.worth_a_process(brain):
        collector.freeze_now()  # (the minutes of waiting: the collector walks only what they make)
        if in_subprocess.snapshot_in_subprocess(brain, cancel, progress, looked if early is not None else None,
                                                started):
            with gc_paused():
                stored = scan_snapshot.load_snapshot(brain, like=first[0] if first else None)
                first.clear()
                if stored is not None:
                    return _kept(TagTable(stored.updated(scan_rows_since(brain, stored.high_water, base=stored))))
        if cancel is not None and cancel.is_set():
            raise ScanCancelled
    with gc_paused():
        scan = scan_brain(brain, row_keys=True, progress=progress)
        scan_snapshot.save_snapshot(brain, scan)
        return _kept(TagTable(scan))


def update_tags(brain: Brain, tags: TagTable, changed_ids: Iterable[str] = ()) -> TagTable:
    """The tags once rows above `tags.high_water` arrived (and `changed_ids` were edited or evicted).

    Only those rows are read and analysed; citations and reflections are read again
    (a new reflection changes the coverage of the rows it cites) and the protection
    of rows whose identifiers stopped (or started) being unique is recomputed.
    The given table is left as it was.
    """
    with gc_paused():
        return TagTable(tags.scan.updated(scan_rows_since(brain, tags.high_water, changed_ids, base=tags.scan)))
