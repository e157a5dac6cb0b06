"""The scan of a brain (`BrainScan`): observations in columns, what tags and the pruner read,
and how a scan takes in the rows that changed (`BrainScan.updated`, `without`) without
copying a million rows' columns (see `containers`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from cleo_tui.memory import detectors, mapping
from cleo_tui.memory import packed_strings as packed
from cleo_tui.memory.detectors import Findings
from cleo_tui.memory.pool_scan.citations import EdgeSet
from cleo_tui.memory.pool_scan.containers import (
    AppendedList,
    HashIndex,
    index_with_appended,
    overlaid,
    positions_of,
    taken_in_order,
)
from cleo_tui.memory.pool_scan.findings_table import NO_FINDINGS, FindingsTable
from cleo_tui.memory.pool_scan.line_units import RULE_RELEVANCE
from cleo_tui.memory.token_cache import CountStats

_CRITICAL = mapping.RELEVANCES.index("critical")
NO_ID_REASON = "no id: CLEO and cleo-tui find a row by its id, so nothing can evict this one"


@dataclass
class BrainScan:
    """Observations in columns (index i is the i-th row scanned), with what tagging needs besides."""

    ids: Sequence[str]      # packed when they fit (`packed_strings`)
    created: Sequence[str]  # packed when they fit
    sessions: Sequence[str | None]  # a list, or `AppendedList` by a fold (as `quality`)
    rowids: np.ndarray      # int64
    live: np.ndarray        # bool
    rules: np.ndarray       # uint8, see mapping.relevance_rule_sql
    quality: Sequence[Any]  # quality_score of low-quality rows (for their reason), else None
    findings: np.ndarray    # int32 index into `table`
    table: FindingsTable    # (identifiers, text reasons) of each entry, in arrays; table[0] is the empty one
    citations: dict[str, Collection[str]]  # observation id → the live reflections citing it (a tuple each)
    reflection_counts: Counter[str]  # identifier → live patterns and learnings holding it
    edges: EdgeSet | None = None   # the reflection edges read, to read only new ones next time
    units: np.ndarray | None = None  # int64 line units, for the rows in `unit_scope`
    unit_scope: str | None = None    # the session the units were measured for (None: all)
    count_stats: CountStats = field(default_factory=CountStats)
    # In a delta (`scan_rows_since` with a base): the observation ids whose citations may differ
    # from the base's (None: any may).
    cited_touched: set[str] | None = None
    notes: np.ndarray | None = None  # bool: an observer note (a reflection, when live, that cites rows)
    reflection_identifiers: dict[str, frozenset[str]] = field(default_factory=dict)  # by reflection text
    keys: np.ndarray | None = None  # uint64 `content_keys` of each row (only as scanned)
    row_keys: np.ndarray | None = None  # uint64 hash of all a row's scanned columns (`row_keys=True`)
    # Opt-in recall-aware protection (`recall_protection`): id → reasons, read with every scan, never stored.
    recall_reasons: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Loaded from a snapshot file: a digest of each group of columns it stored (`scan_snapshot.load_snapshot`).
    stored_digests: dict[str, bytes] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def high_water(self) -> int:
        """The largest rowid scanned (0 for no rows): rows above it arrived later."""
        return int(self.rowids.max()) if len(self.rowids) else 0

    @cached_property
    def index(self) -> Mapping[str, int]:
        """Row index by id (the last row, should an id repeat)."""
        return HashIndex(self.ids)

    @cached_property
    def relevance(self) -> np.ndarray:
        """uint8 index into mapping.RELEVANCES of each row."""
        codes = np.array([mapping.RELEVANCES.index(r) for r in RULE_RELEVANCE], dtype=np.uint8)
        return np.asarray(codes[self.rules])

    def relevance_of(self, i: int) -> str:
        """Row i's relevance name."""
        return mapping.RELEVANCES[self.relevance[i]]

    def relevance_reason_of(self, i: int) -> str:
        """Why row i has its relevance."""
        return reason_of_rule(int(self.rules[i]), self.quality[i])

    @cached_property
    def counts(self) -> Counter[str]:
        """Identifier → live observations and reflections holding it."""
        table = self.table
        per_string = table.identifier_counts(np.bincount(self.findings[self.live], minlength=len(table)))
        held = np.flatnonzero(per_string)
        counts = Counter(self.reflection_counts)
        counts.update(dict(zip(packed.take(table.strings, held), per_string[held].tolist(), strict=True)))
        return counts

    @cached_property
    def citation_counts(self) -> np.ndarray:
        """int32 count of distinct live reflections citing each row."""
        counts = np.zeros(len(self.ids), dtype=np.int32)
        cited = self.citations
        at = positions_of(self.index, list(cited))
        found = at >= 0
        counts[at[found]] = np.fromiter(map(len, cited.values()), dtype=np.int32, count=len(cited))[found]
        return counts

    def coverage_codes(self) -> np.ndarray:
        """0 reinforced, 1 cited, 2 uncited (the drop order's coverage rank)."""
        counts = self.citation_counts
        return np.where(counts >= mapping.REINFORCED_AT, 0, np.where(counts > 0, 1, 2)).astype(np.uint8)

    @cached_property
    def entry_protected(self) -> np.ndarray:
        """bool per table entry: its findings protect a live row (a text reason, a unique identifier)."""
        return self.table.protecting(self.scarce)

    @cached_property
    def scarce(self) -> np.ndarray:
        """bool per string of the table: as an identifier, held by at most one live row or reflection."""
        get, strings = self.counts.get, self.table.strings
        return np.fromiter((get(x, 0) <= 1 for x in strings), dtype=bool, count=len(strings))

    @property
    def table_index(self) -> Mapping[Findings, int]:
        """Positions of the table entries a fold looks its new findings up in: the empty one and
        those folds added.

        Indexing the whole table (926,092 entries at a million real-layout rows) would make a
        fold build every entry's tuple; a new row whose findings equal an old row's instead gets
        an entry of its own, which counts and protection treat the same."""
        where = self.__dict__.get("table_index")
        return where if where is not None else {NO_FINDINGS: 0}

    @property
    def protected(self) -> np.ndarray:
        """bool: live and protected (critical relevance, a text detector, a unique identifier, and the
        opt-in recall-aware reasons)."""
        guarded = (self.relevance == _CRITICAL) | self.entry_protected[self.findings] | self.without_id
        if self.recall_reasons:
            guarded = guarded | self.recall_protected
        return np.asarray(self.live & guarded)

    @cached_property
    def without_id(self) -> np.ndarray:
        """bool: the row's id is NULL or empty. CLEO and cleo-tui find a row by its id, so nothing can
        evict such a row: it is protected (`NO_ID_REASON`), never offered for dropping."""
        return packed.empty(self.ids)

    @cached_property
    def recall_protected(self) -> np.ndarray:
        """bool: the row has a recall-aware protection reason."""
        mask = np.zeros(len(self.ids), dtype=bool)
        at = positions_of(self.index, list(self.recall_reasons))
        mask[at[at >= 0]] = True
        return mask

    @cached_property
    def _scarce_flags(self) -> list[bool]:
        return self.scarce.tolist()  # type: ignore[no-any-return]

    @cached_property
    def _scarce_entries(self) -> np.ndarray:
        """bool per table entry: it holds a `scarce` identifier. Only those can name a unique one, so
        the others' identifiers are not looked at (at 100,000 real-layout rows, 25,000 protected rows
        listed by `prune --json`: 0.04 → 0.005 s)."""
        return self.table.holding_flagged(self.scarce)

    def reasons_ready(self) -> None:
        """Compute now the columns `reasons_of` reads (`scarce`, and the entries holding one): the
        first rows looked up would, a walk over every identifier (45–77 ms at a million rows, on
        the UI thread as it drew the rows the tags arrived for)."""
        _ = self._scarce_entries, self._scarce_flags

    def reasons_of(self, i: int) -> list[str]:
        """Every reason protecting row i (computed as if live for an evicted one)."""
        entry = int(self.findings[i])
        relevance, why = mapping.relevance_of_rule(int(self.rules[i]), self.quality[i])
        reasons = [f"critical relevance: {why}"] if relevance == "critical" else []
        reasons += self.table.text_reasons(entry)
        # Only identifiers held by at most one row can be unique (`scarce`): the others are never
        # made strings (a protected row names 15 identifiers, and a prune's JSON lists 25,000 rows).
        if self._scarce_entries[entry]:
            scarce = self.table.identifiers_where(entry, self._scarce_flags)
            reasons += detectors.unique_identifier_reasons(scarce, self.counts, own=1 if self.live[i] else 0)
        if self.recall_reasons:
            reasons += self.recall_reasons.get(self.ids[i], ())
        if not self.ids[i]:
            reasons.append(NO_ID_REASON)
        return reasons

    def ids_where(self, mask: np.ndarray) -> list[str]:
        """The ids of the rows where `mask` is True, in scan order."""
        return packed.take(self.ids, np.flatnonzero(mask))

    def updated(self, delta: BrainScan) -> BrainScan:
        """This scan with `delta`'s rows put in (replacing rows of the same id, else appended),
        and delta's citations and reflections; self is left unchanged.

        The cost is the delta's rows and a copy of the numpy columns (no Python object per row
        is copied: the ids and dates are packed, the findings table is grown, not copied)."""
        index = self.index
        delta_ids = list(delta.ids)
        found = [index.get(d) for d in delta_ids]
        known = [(j, i) for j, i in enumerate(found) if i is not None]
        new = [j for j, i in enumerate(found) if i is None]
        table, remap, where = merged_table(self.table, delta.table, self.table_index)
        delta_findings = remap[delta.findings] if len(delta.findings) else delta.findings
        delta_created = list(delta.created)
        created = packed.replaced(self.created, {i: delta_created[j] for j, i in known})
        sessions: Sequence[str | None] = self.sessions
        quality: Sequence[Any] = self.quality
        if known:
            sessions, quality = list(sessions), list(quality)
        arrays: dict[str, Any] = {"rowids": self.rowids, "live": self.live, "rules": self.rules,
                                  "findings": self.findings, "notes": notes_of(self)}
        if self.row_keys is not None and delta.row_keys is not None:
            arrays["row_keys"] = self.row_keys
        units = self.units
        if known:
            arrays = {name: column.copy() for name, column in arrays.items()}
            units = None if units is None else units.copy()
        for j, i in known:
            sessions[i], quality[i] = delta.sessions[j], delta.quality[j]  # type: ignore[index]  # (lists here)
            for name, column in arrays.items():
                column[i] = delta_findings[j] if name == "findings" else column_of(delta, name)[j]
            if units is not None and delta.units is not None:
                units[i] = delta.units[j]
        ids: Sequence[str] = self.ids
        if new:
            take = np.array(new, dtype=np.int64)
            ids = packed.appended(ids, [delta_ids[j] for j in new])
            created = packed.appended(created, [delta_created[j] for j in new])
            sessions = AppendedList.of(sessions, [delta.sessions[j] for j in new])
            quality = AppendedList.of(quality, [delta.quality[j] for j in new])
            for name in arrays:
                extra = delta_findings[take] if name == "findings" else column_of(delta, name)[take]
                arrays[name] = np.concatenate([arrays[name], extra])
            if units is not None:
                units = np.concatenate([units, delta.units[take] if delta.units is not None
                                        else np.zeros(len(new), dtype=np.int64)])
        scan = BrainScan(ids, created, sessions, table=table, quality=quality, citations=delta.citations,
                         reflection_counts=delta.reflection_counts, edges=delta.edges, units=units,
                         reflection_identifiers=delta.reflection_identifiers, cited_touched=None,
                         unit_scope=self.unit_scope, count_stats=delta.count_stats,
                         recall_reasons=delta.recall_reasons, **arrays)
        scan.__dict__["table_index"] = where
        index_now = index if not new else index_with_appended(index, ids, len(self.ids))
        scan.__dict__["index"] = index_now
        self._carry_counts(scan, [i for _, i in known], len(self.table))
        self._carry_citation_counts(scan, delta, [i for _, i in known])
        if "_live_notes_after" in delta.__dict__:
            scan.__dict__["_live_notes"] = delta.__dict__["_live_notes_after"]
        if not dates_in_order(created, [i for _, i in known] + list(range(len(self.ids), len(ids)))):
            return scan.sorted_by_date()
        return scan

    def _carry_counts(self, scan: BrainScan, replaced: list[int], old_table: int) -> None:
        """Give `scan` its identifier counts and entry protection from this scan's, adjusted for
        what changed (replaced and new rows, reflections), instead of recounting every row.

        Only the changed identifiers are written (`overlaid` over this scan's mappings), so
        a few new rows cost a few dictionary entries, not a copy of a million."""
        old = self.counts
        change: Counter[str] = Counter()
        change.subtract(self.reflection_counts)
        change.update(scan.reflection_counts)
        for i in replaced:
            if self.live[i]:
                change.subtract(self.table[self.findings[i]][0])
        touched = set(self.reflection_counts) | set(scan.reflection_counts)
        for i in replaced:
            touched.update(self.table[self.findings[i]][0])
        for i in [*replaced, *range(len(self.ids), len(scan.ids))]:
            if scan.live[i]:
                change.update(scan.table[scan.findings[i]][0])
            touched.update(scan.table[scan.findings[i]][0])
        now = {x: max(0, old.get(x, 0) + change.get(x, 0)) for x in touched}
        counts = overlaid(old, now)
        scan.__dict__["counts"] = counts
        flipped = {x for x in touched if (old.get(x, 0) <= 1) != (now[x] <= 1)}
        protected = np.concatenate([self.entry_protected, np.zeros(len(scan.table) - old_table, dtype=bool)])
        for k in scan.table.holding(flipped) | set(range(old_table, len(scan.table))):
            ids, reasons = scan.table[k]
            protected[k] = bool(reasons) or any(counts.get(i, 0) <= 1 for i in ids)
        scan.__dict__["entry_protected"] = protected

    def _carry_citation_counts(self, scan: BrainScan, delta: BrainScan, replaced: list[int]) -> None:
        """`scan.citation_counts` from this scan's, when the delta says whose citations changed."""
        if delta.cited_touched is None or "citation_counts" not in self.__dict__:
            return  # computed when first asked
        counts = np.concatenate([self.citation_counts, np.zeros(len(scan.ids) - len(self.ids), dtype=np.int32)])
        index, cited = scan.index, scan.citations
        for obs_id in delta.cited_touched | {scan.ids[i] for i in [*replaced, *range(len(self.ids), len(scan.ids))]}:
            i = index.get(obs_id)
            if i is not None:
                counts[i] = len(cited.get(obs_id, ()))
        scan.__dict__["citation_counts"] = counts

    def without(self, rowids: Collection[int]) -> BrainScan:
        """This scan less the rows of those rowids (deleted from the brain); self is left unchanged.

        Counts, protection and citation counts are worked out again when first asked; fold
        a `scan_rows_since` delta in afterwards for the citations of what remains."""
        return self._rows_at(np.flatnonzero(~np.isin(self.rowids, np.fromiter(rowids, dtype=np.int64))))

    def _rows_at(self, at: np.ndarray) -> BrainScan:
        """The rows at positions `at`, in that order, with the same table, citations and reflections."""
        return BrainScan(
            packed.reordered(self.ids, at), packed.reordered(self.created, at), taken_in_order(self.sessions, at),
            self.rowids[at], self.live[at], self.rules[at], taken_in_order(self.quality, at),
            self.findings[at], self.table, self.citations, self.reflection_counts, self.edges,
            None if self.units is None else self.units[at], self.unit_scope, self.count_stats,
            notes=notes_of(self)[at], reflection_identifiers=self.reflection_identifiers,
            row_keys=None if self.row_keys is None else self.row_keys[at], recall_reasons=self.recall_reasons)

    def sorted_by_date(self) -> BrainScan:
        """The same rows oldest first (ties by rowid), as a full scan would hold them."""
        scan = self._rows_at(packed.date_order(self.created, self.rowids))
        for name in ("counts", "entry_protected", "scarce", "table_index", "_live_notes"):
            if name in self.__dict__:
                scan.__dict__[name] = self.__dict__[name]
        return scan


def notes_of(scan: BrainScan) -> np.ndarray:
    """The scan's observer-note column (all False when it was not read)."""
    return scan.notes if scan.notes is not None else np.zeros(len(scan.ids), dtype=bool)


def column_of(scan: BrainScan, name: str) -> np.ndarray:
    """One of the scan's numpy columns by name (`notes` as `notes_of` gives it)."""
    return notes_of(scan) if name == "notes" else np.asarray(getattr(scan, name))


def live_notes(scan: BrainScan) -> frozenset[str]:
    """Node ids (`observation:ID`) of the scan's live observer notes (kept with the scan)."""
    notes = scan.__dict__.get("_live_notes")
    if notes is None:
        ids = scan.ids
        notes = scan.__dict__["_live_notes"] = frozenset(
            f"observation:{obs_id}" for obs_id in packed.take(ids, np.flatnonzero(scan.live & notes_of(scan))))
    return notes


def live_notes_since(base: BrainScan, delta: BrainScan) -> frozenset[str]:
    """The live observer notes once `delta`'s rows replace or join `base`'s (kept with the delta,
    for the scan `base.updated(delta)` makes)."""
    notes = set(live_notes(base))
    live, is_note = delta.live, notes_of(delta)
    for j, obs_id in enumerate(delta.ids):
        node = f"observation:{obs_id}"
        if live[j] and is_note[j]:
            notes.add(node)
        else:
            notes.discard(node)
    after = delta.__dict__["_live_notes_after"] = frozenset(notes)
    return after


def dates_in_order(created: Sequence[str], touched: list[int]) -> bool:
    """Whether rows are still oldest first after the rows at `touched` changed or arrived."""
    last = len(created) - 1
    return all((i == 0 or created[i - 1] <= created[i]) and (i == last or created[i] <= created[i + 1])
               for i in touched)


@lru_cache(maxsize=4096)
def reason_of_rule(code: int, quality: Any) -> str:
    """Why a row under relevance rule `code` (and that quality score) has its relevance (cached: few distinct pairs)."""
    return mapping.relevance_of_rule(code, quality)[1]


def merged_table(table: FindingsTable, extra: Sequence[Findings], where: Mapping[Findings, int]
                  ) -> tuple[FindingsTable, np.ndarray, Mapping[Findings, int]]:
    """`table` with the entries of `extra` that `where` does not know appended (`FindingsTable.appended`:
    the old entries are not copied), where each of extra's went, and the merged table's index
    (`where` is not copied either: the added entries are layered over it)."""
    remap = np.zeros(len(extra), dtype=np.int32)
    added: dict[Findings, int] = {}
    for k, entry in enumerate(extra):
        at = added.get(entry)
        if at is None:
            at = where.get(entry)
        if at is None:
            at = added[entry] = len(table) + len(added)
        remap[k] = at
    if not added:
        return table, remap, where
    merged = table.appended(list(added))
    return merged, remap, overlaid(where, {entry: len(table) + n for n, entry in enumerate(added)})
