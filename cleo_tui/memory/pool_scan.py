"""Scanning a brain's observations into columns: what tags and the pruner both read.

A million observations as a million Python objects cost about a gigabyte and
seconds to build, so a scan keeps numbers in numpy arrays and only the ids,
dates and sessions as Python lists. Each row's relevance is computed in SQL
(`mapping.relevance_rule_sql`), and its detector findings (identifiers, text
reasons) come from a per-brain cache file in the platform cache directory, keyed
by rowid and a hash of the row's title and narrative: reopening a brain analyses
only rows that are new or edited. A scan can be brought up to date with the rows
that arrived since (`scan_rows_since`, `BrainScan.updated`) without reading the
others again.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import operator
import sqlite3
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.connection import decode_text
from cleo_tui.brain.migrations import OVERRIDES
from cleo_tui.brain.store import Brain
from cleo_tui.memory import detectors, mapping, recall_protection
from cleo_tui.memory import packed_strings as packed
from cleo_tui.memory.cache_files import brain_cache_file, write_npz
from cleo_tui.memory.detectors import Findings
from cleo_tui.memory.seed_types import render_line
from cleo_tui.memory.token_cache import CountStats, Progress, TokenCache, count_line_units
from cleo_tui.memory.tokenizers import Tokenizer, utf16_length

SCAN_CHUNK = 8_000
_CRITICAL = mapping.RELEVANCES.index("critical")
_EMPTY: Findings = ((), ())
_ASCII_BLANKS = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"  # what str.isspace() accepts in ASCII
_REFLECTION_TEXT = ((cs.PATTERNS, "pattern || ' ' || coalesce(context, '')"), (cs.LEARNINGS, "insight"))


@dataclass
class BrainScan:
    """Observations in columns (index i is the i-th row scanned), with what tagging needs besides."""

    ids: Sequence[str]      # packed when they fit (`packed_strings`)
    created: Sequence[str]  # packed when they fit
    sessions: Sequence[str | None]  # a list, or `_Grown` by a fold (as `quality`)
    rowids: np.ndarray      # int64
    live: np.ndarray        # bool
    rules: np.ndarray       # uint8, see mapping.relevance_rule_sql
    quality: Sequence[Any]  # quality_score of low-quality rows (for their reason), else None
    findings: np.ndarray    # int32 index into `table`
    table: Sequence[Findings]  # (identifiers, text reasons); table[0] is the empty one (a list, or `_Grown`)
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
    keys: np.ndarray | None = None  # uint64 `_content_keys` of each row (only as scanned)
    row_keys: np.ndarray | None = None  # uint64 hash of all a row's scanned columns (`row_keys=True`)
    # Opt-in recall-aware protection (`recall_protection`): id → reasons, read with every scan, never stored.
    recall_reasons: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def high_water(self) -> int:
        return int(self.rowids.max()) if len(self.rowids) else 0

    @cached_property
    def index(self) -> Mapping[str, int]:
        """Row index by id (the last row, should an id repeat)."""
        return HashIndex(self.ids)

    @cached_property
    def relevance(self) -> np.ndarray:
        """uint8 index into mapping.RELEVANCES of each row."""
        codes = np.array([mapping.RELEVANCES.index(r) for r in _RULE_RELEVANCE], dtype=np.uint8)
        return np.asarray(codes[self.rules])

    def relevance_of(self, i: int) -> str:
        return mapping.RELEVANCES[self.relevance[i]]

    def relevance_reason_of(self, i: int) -> str:
        return _reason_of_rule(int(self.rules[i]), self.quality[i])

    @cached_property
    def counts(self) -> Counter[str]:
        """Identifier → live observations and reflections holding it."""
        per_entry = np.bincount(self.findings[self.live], minlength=len(self.table))
        entries = np.flatnonzero(per_entry)
        counts: dict[str, int] = dict(self.reflection_counts)  # a plain dict: no __missing__ call per key
        get, table = counts.get, self.table
        for entry, rows in zip(entries.tolist(), per_entry[entries].tolist(), strict=True):
            for identifier in table[entry][0]:
                counts[identifier] = get(identifier, 0) + rows
        return Counter(counts)

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
        # "some identifier is held by at most one" is "not every identifier is held by two or more"
        common = {identifier for identifier, n in self.counts.items() if n > 1}
        return np.array([bool(reasons) or not common.issuperset(ids) for ids, reasons in self.table], dtype=bool)

    @property
    def table_index(self) -> Mapping[Findings, int]:
        """Positions of the table entries a fold looks its new findings up in: the empty one and
        those folds added.

        Indexing the whole table (400,000 entries at a million rows) would cost a fold 0.13 s;
        a new row whose findings equal an old row's instead gets an entry of its own (a tuple),
        which counts and protection treat the same."""
        where = self.__dict__.get("table_index")
        return where if where is not None else {_EMPTY: 0}

    @cached_property
    def entries_of_identifier(self) -> dict[str, list[int]]:
        """The table entries holding each identifier (to re-judge only what a change touches)."""
        holders: dict[str, list[int]] = {}
        for k, (ids, _) in enumerate(self.table):
            for identifier in ids:
                holders.setdefault(identifier, []).append(k)
        return holders

    @property
    def protected(self) -> np.ndarray:
        """bool: live and protected (critical relevance, a text detector, a unique identifier, and the
        opt-in recall-aware reasons)."""
        guarded = (self.relevance == _CRITICAL) | self.entry_protected[self.findings]
        if self.recall_reasons:
            guarded = guarded | self.recall_protected
        return np.asarray(self.live & guarded)

    @cached_property
    def recall_protected(self) -> np.ndarray:
        """bool: the row has a recall-aware protection reason."""
        mask = np.zeros(len(self.ids), dtype=bool)
        at = positions_of(self.index, list(self.recall_reasons))
        mask[at[at >= 0]] = True
        return mask

    def reasons_of(self, i: int) -> list[str]:
        """Every reason protecting row i (computed as if live for an evicted one)."""
        ids, text_reasons = self.table[self.findings[i]]
        relevance, why = mapping.relevance_of_rule(int(self.rules[i]), self.quality[i])
        reasons = [f"critical relevance: {why}"] if relevance == "critical" else []
        reasons += text_reasons
        reasons += detectors.unique_identifier_reasons(ids, self.counts, own=1 if self.live[i] else 0)
        if self.recall_reasons:
            reasons += self.recall_reasons.get(self.ids[i], ())
        return reasons

    def ids_where(self, mask: np.ndarray) -> list[str]:
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
        table, remap, where = _merged_table(self.table, delta.table, self.table_index)
        delta_findings = remap[delta.findings] if len(delta.findings) else delta.findings
        delta_created = list(delta.created)
        created = packed.replaced(self.created, {i: delta_created[j] for j, i in known})
        sessions: Sequence[str | None] = self.sessions
        quality: Sequence[Any] = self.quality
        if known:
            sessions, quality = list(sessions), list(quality)
        arrays = {"rowids": self.rowids, "live": self.live, "rules": self.rules,
                  "findings": self.findings, "notes": _notes_of(self)}
        if self.row_keys is not None and delta.row_keys is not None:
            arrays["row_keys"] = self.row_keys
        units = self.units
        if known:
            arrays = {name: column.copy() for name, column in arrays.items()}
            units = None if units is None else units.copy()
        for j, i in known:
            sessions[i], quality[i] = delta.sessions[j], delta.quality[j]  # type: ignore[index]  # (lists here)
            for name, column in arrays.items():
                column[i] = delta_findings[j] if name == "findings" else _column_of(delta, name)[j]
            if units is not None and delta.units is not None:
                units[i] = delta.units[j]
        ids: Sequence[str] = self.ids
        if new:
            take = np.array(new, dtype=np.int64)
            ids = packed.appended(ids, [delta_ids[j] for j in new])
            created = packed.appended(created, [delta_created[j] for j in new])
            sessions = _Grown.of(sessions, [delta.sessions[j] for j in new])
            quality = _Grown.of(quality, [delta.quality[j] for j in new])
            for name in arrays:
                extra = delta_findings[take] if name == "findings" else _column_of(delta, name)[take]
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
        index_now = index if not new else _grown_index(index, ids, len(self.ids))
        scan.__dict__["index"] = index_now
        self._carry_counts(scan, [i for _, i in known], len(self.table))
        self._carry_citation_counts(scan, delta, [i for _, i in known])
        if "_live_notes_after" in delta.__dict__:
            scan.__dict__["_live_notes"] = delta.__dict__["_live_notes_after"]
        if not _dates_in_order(created, [i for _, i in known] + list(range(len(self.ids), len(ids)))):
            return scan.sorted_by_date()
        return scan

    def _carry_counts(self, scan: BrainScan, replaced: list[int], old_table: int) -> None:
        """Give `scan` its identifier counts and entry protection from this scan's, adjusted for
        what changed (replaced and new rows, reflections), instead of recounting every row.

        Only the changed identifiers are written (`_layered` over this scan's mappings), so
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
        counts = _layered(old, now)
        scan.__dict__["counts"] = counts
        flipped = {x for x in touched if (old.get(x, 0) <= 1) != (now[x] <= 1)}
        protected = np.concatenate([self.entry_protected, np.zeros(len(scan.table) - old_table, dtype=bool)])
        for k in self._holders(scan, flipped, old_table) | set(range(old_table, len(scan.table))):
            ids, reasons = scan.table[k]
            protected[k] = bool(reasons) or any(counts.get(i, 0) <= 1 for i in ids)
        scan.__dict__["entry_protected"] = protected

    def _holders(self, scan: BrainScan, identifiers: set[str], old_table: int) -> set[int]:
        """The entries of `scan.table` (this table and entries from `old_table` on) holding any of
        `identifiers`; carries the identifier index to `scan` when this scan has built it."""
        if "entries_of_identifier" not in self.__dict__:  # (a dict of lists: 50 MB at a million rows)
            if not identifiers:
                return set()
            index = self.__dict__.get("_holder_index")
            if index is None or len(scan.table) - index.size > _LAYER_MAX:
                index = _HolderIndex(scan.table)
            scan.__dict__["_holder_index"] = index  # (the table only grows: its old entries stay put)
            return index.holding(identifiers, scan.table)
        old_holders = self.entries_of_identifier
        grown: dict[str, list[int]] = {}
        for k in range(old_table, len(scan.table)):
            for identifier in scan.table[k][0]:
                grown[identifier] = [*grown.get(identifier, old_holders.get(identifier, ())), k]
        holders = _layered(old_holders, grown)
        scan.__dict__["entries_of_identifier"] = holders
        return {k for x in identifiers for k in holders.get(x, ())}

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
        keep = np.flatnonzero(~np.isin(self.rowids, np.fromiter(rowids, dtype=np.int64)))
        return BrainScan(
            packed.reordered(self.ids, keep), packed.reordered(self.created, keep), _reordered(self.sessions, keep),
            self.rowids[keep], self.live[keep], self.rules[keep], _reordered(self.quality, keep),
            self.findings[keep], self.table, self.citations, self.reflection_counts, self.edges,
            None if self.units is None else self.units[keep], self.unit_scope, self.count_stats,
            notes=_notes_of(self)[keep], reflection_identifiers=self.reflection_identifiers,
            row_keys=None if self.row_keys is None else self.row_keys[keep], recall_reasons=self.recall_reasons)

    def sorted_by_date(self) -> BrainScan:
        """The same rows oldest first (ties by rowid), as a full scan would hold them."""
        take = packed.date_order(self.created, self.rowids)
        scan = BrainScan(
            packed.reordered(self.ids, take), packed.reordered(self.created, take), _reordered(self.sessions, take),
            self.rowids[take], self.live[take], self.rules[take], _reordered(self.quality, take),
            self.findings[take], self.table, self.citations, self.reflection_counts, self.edges,
            None if self.units is None else self.units[take], self.unit_scope, self.count_stats,
            notes=_notes_of(self)[take], reflection_identifiers=self.reflection_identifiers,
            row_keys=None if self.row_keys is None else self.row_keys[take], recall_reasons=self.recall_reasons)
        for name in ("counts", "entry_protected", "entries_of_identifier", "table_index", "_live_notes",
                     "_holder_index"):
            if name in self.__dict__:
                scan.__dict__[name] = self.__dict__[name]
        return scan


class HashIndex(Mapping[Any, int]):
    """Position by value, as `dict(zip(values, range(len(values))))` answers it (the last
    position of a repeated value), in two arrays instead of a dict entry per value (60 MB
    for a million ids): a scan's ids, or its findings table.

    The values' `hash()` sorted, with the position each came from: a lookup is a binary
    search, confirmed by comparing the value. The hashes live only in this process."""

    def __init__(self, ids: Sequence[Any]) -> None:
        self.ids = ids
        hashes = ids.hashes() if isinstance(ids, packed.PackedStrings) else \
            np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids))
        self.rows = np.argsort(hashes, kind="stable")  # equal hashes stay in row order
        self.hashes = hashes[self.rows]
        self.repeats = bool(len(ids) > 1 and (self.hashes[1:] == self.hashes[:-1]).any())

    def get(self, key: Any, default: Any = None) -> Any:
        hashes, target = self.hashes, hash(key)
        at = int(np.searchsorted(hashes, target))
        if not self.repeats:
            if at < len(hashes) and hashes[at] == target:
                i = int(self.rows[at])
                if self.ids[i] == key:
                    return i
            return default
        end = int(np.searchsorted(hashes, target, side="right"))
        found = [i for i in self.rows[at:end].tolist() if self.ids[i] == key]
        return found[-1] if found else default

    def __getitem__(self, key: Any) -> int:
        i = self.get(key)
        if i is None:
            raise KeyError(key)
        return int(i)

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None

    def __iter__(self) -> Iterator[Any]:
        return iter(dict.fromkeys(self.ids))

    def __len__(self) -> int:
        return len(set(self.ids)) if self.repeats else len(self.ids)

    def positions(self, keys: Sequence[Any]) -> np.ndarray:
        """int64 row of each key, -1 for a key not there (one binary search for all)."""
        if self.repeats or not len(self.hashes):
            return np.array([self.get(k, -1) for k in keys], dtype=np.int64)
        targets = np.fromiter(map(hash, keys), dtype=np.int64, count=len(keys))
        at = np.searchsorted(self.hashes, targets).clip(0, len(self.hashes) - 1)
        rows = self.rows[at]
        values = self.ids.take(rows) if isinstance(self.ids, packed.PackedStrings) else \
            [self.ids[i] for i in rows.tolist()]
        same = (self.hashes[at] == targets) & np.fromiter(
            map(operator.eq, values, keys), dtype=bool, count=len(keys))
        return np.where(same, rows, -1)

    def over(self, ids: Sequence[Any]) -> HashIndex:
        """This index for `ids`, a list starting with this one's values (a grown copy)."""
        grown = object.__new__(HashIndex)
        grown.ids, grown.rows, grown.hashes, grown.repeats = ids, self.rows, self.hashes, self.repeats
        return grown


def _grown_index(index: Mapping[Any, int], ids: Sequence[Any], old: int) -> Mapping[Any, int]:
    """`index` once the values from `old` on were appended to `ids`: those layered over it
    (a few rows cost a few entries, not a copy), or an index built again when they are many."""
    base, top = (index.base, dict(index.top)) if isinstance(index, _Layered) else (index, {})
    top.update(zip(ids[old:], range(old, len(ids)), strict=True))
    if not isinstance(base, HashIndex):
        return _layered(base, top)
    return HashIndex(ids) if len(top) > _LAYER_MAX else _Layered(base.over(ids), top)


def positions_of(index: Mapping[str, int], keys: Sequence[Any]) -> np.ndarray:
    """int64 row of each key in a scan's `index` (a layered one too), -1 where it is not."""
    if isinstance(index, HashIndex):
        return index.positions(keys)
    if isinstance(index, _Layered) and isinstance(index.base, HashIndex):
        top = index.top
        at = index.base.positions(keys)
        for n, key in enumerate(keys):
            if key in top:
                at[n] = top[key]
        return at
    get = index.get
    return np.array([get(k, -1) for k in keys], dtype=np.int64)


class _Layered(Mapping[Any, Any]):
    """A read-only mapping: `top`'s entries over `base`'s (neither is changed)."""

    def __init__(self, base: Mapping[Any, Any], top: dict[Any, Any]) -> None:
        self.base, self.top = base, top

    def __getitem__(self, key: Any) -> Any:
        top = self.top
        return top[key] if key in top else self.base[key]

    def get(self, key: Any, default: Any = None) -> Any:
        top = self.top
        return top[key] if key in top else self.base.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.top or key in self.base

    def __iter__(self) -> Iterator[Any]:
        yield from self.top
        yield from (k for k in self.base if k not in self.top)

    def __len__(self) -> int:
        return len(self.base) + sum(1 for k in self.top if k not in self.base)


_LAYER_MAX = 20_000  # past this many entries on top, one plain dict is cheaper to read


def _layered(base: Mapping[Any, Any], top: dict[Any, Any]) -> Mapping[Any, Any]:
    """`top` over `base` without copying `base`; layers do not stack (the tops are merged), and a
    large top is folded into a plain dict."""
    if isinstance(base, _Layered):
        layer: _Layered = base
        base, top = layer.base, {**layer.top, **top}
    if len(top) > _LAYER_MAX:
        return {**base, **top}
    return _Layered(base, top)


def _notes_of(scan: BrainScan) -> np.ndarray:
    return scan.notes if scan.notes is not None else np.zeros(len(scan.ids), dtype=bool)


def _column_of(scan: BrainScan, name: str) -> np.ndarray:
    return _notes_of(scan) if name == "notes" else np.asarray(getattr(scan, name))


def _live_notes(scan: BrainScan) -> frozenset[str]:
    """Node ids (`observation:ID`) of the scan's live observer notes (kept with the scan)."""
    notes = scan.__dict__.get("_live_notes")
    if notes is None:
        ids = scan.ids
        notes = scan.__dict__["_live_notes"] = frozenset(
            f"observation:{obs_id}" for obs_id in packed.take(ids, np.flatnonzero(scan.live & _notes_of(scan))))
    return notes


def _live_notes_since(base: BrainScan, delta: BrainScan) -> frozenset[str]:
    """The live observer notes once `delta`'s rows replace or join `base`'s (kept with the delta,
    for the scan `base.updated(delta)` makes)."""
    notes = set(_live_notes(base))
    live, is_note = delta.live, _notes_of(delta)
    for j, obs_id in enumerate(delta.ids):
        node = f"observation:{obs_id}"
        if live[j] and is_note[j]:
            notes.add(node)
        else:
            notes.discard(node)
    after = delta.__dict__["_live_notes_after"] = frozenset(notes)
    return after


def _dates_in_order(created: Sequence[str], touched: list[int]) -> bool:
    """Whether rows are still oldest first after the rows at `touched` changed or arrived."""
    last = len(created) - 1
    return all((i == 0 or created[i - 1] <= created[i]) and (i == last or created[i] <= created[i + 1])
               for i in touched)


@lru_cache(maxsize=4096)
def _reason_of_rule(code: int, quality: Any) -> str:
    return mapping.relevance_of_rule(code, quality)[1]


def _merged_table(table: Sequence[Findings], extra: Sequence[Findings], where: Mapping[Findings, int]
                  ) -> tuple[Sequence[Findings], np.ndarray, Mapping[Findings, int]]:
    """`table` with the entries of `extra` that `where` does not know appended (as a `_Grown`
    table: the old entries are not copied), where each of extra's went, and the merged table's
    index (`where` is not copied either: the added entries are layered over it)."""
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
    merged = _Grown.of(table, list(added))
    return merged, remap, _grown_index(where, merged, len(table))


class _HolderIndex:
    """The table entries holding each identifier, for the first `size` entries of a table: each
    (identifier, entry) pair as the identifier's `hash()` beside its entry (12 bytes a pair, where
    a dict of lists costs 50 MB at a million rows). A lookup compares every hash in one numpy pass
    (a millisecond or two per identifier: a fold looks up a few); nothing is sorted. Built when a
    fold first needs it (an identifier that stopped or started being unique); later folds carry it."""

    def __init__(self, table: Sequence[Findings]) -> None:
        identifiers = list(map(operator.itemgetter(0), table))
        lengths = np.fromiter(map(len, identifiers), dtype=np.int64, count=len(identifiers))
        self.hashes = np.fromiter(map(hash, itertools.chain.from_iterable(identifiers)), dtype=np.int64,
                                  count=int(lengths.sum()))
        self.entries = np.repeat(np.arange(len(table), dtype=np.int32), lengths)
        self.size = len(table)

    def holding(self, identifiers: set[str], table: Sequence[Findings]) -> set[int]:
        """The entries of `table` (this index's and those after them) holding any of `identifiers`."""
        targets = np.fromiter(map(hash, identifiers), dtype=np.int64, count=len(identifiers))
        candidates = set(self.entries[np.isin(self.hashes, targets)].tolist())
        candidates.update(range(self.size, len(table)))
        return {k for k in candidates if not identifiers.isdisjoint(table[k][0])}  # (a hash is not proof)


class _Grown(Sequence[Any]):
    """A list with more items after it, without copying the list (a findings table a fold grew).

    Growing one again copies only its added items; past `_LAYER_MAX` of them it becomes one list."""

    def __init__(self, base: list[Any], extra: list[Any]) -> None:
        self.base, self.extra, self._split = base, extra, len(base)

    @classmethod
    def of(cls, items: Sequence[Any], more: list[Any]) -> Sequence[Any]:
        base, extra = (items.base, [*items.extra, *more]) if isinstance(items, _Grown) else (items, more)
        if not isinstance(base, list) or len(extra) > _LAYER_MAX:
            return [*base, *extra]
        return cls(base, extra)

    def __len__(self) -> int:
        return self._split + len(self.extra)

    def __getitem__(self, k):  # type: ignore[no-untyped-def]
        if isinstance(k, slice):
            start, stop, step = k.indices(len(self))
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            split = self._split
            return [*self.base[start:min(stop, split)], *self.extra[max(start - split, 0):max(stop - split, 0)]]
        if k < 0:
            k += len(self)
        return self.base[k] if k < self._split else self.extra[k - self._split]

    def __iter__(self) -> Iterator[Any]:
        return itertools.chain(self.base, self.extra)

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, (list, _Grown)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]


@dataclass
class EdgeSet:
    """The reflection edges of a brain as read: each edge's observation id and reflection node id,
    in two lists (a tuple per edge costs 56 bytes: 16 MB at 300,000 edges)."""

    observations: Sequence[str]  # packed when they fit
    sources: Sequence[str]       # (a few thousand reflections: their strings are shared)
    high_water: int  # largest edge rowid read
    count: int       # edges of a reflection type then
    live: frozenset[str] = frozenset()  # the live reflections the citations were judged on

    def __len__(self) -> int:
        return len(self.observations)

    def pairs(self) -> Iterator[tuple[str, str]]:
        """(observation id, reflection node id) of each edge, in the order read."""
        return zip(self.observations, self.sources, strict=True)

    def plus(self, added: list[tuple[str, str]]) -> tuple[Sequence[str], Sequence[str]]:
        """These edges' two columns with `added` pairs after them (self is left unchanged; neither
        column is copied as a list of objects)."""
        if not added:
            return self.observations, self.sources
        return (packed.appended(self.observations, [o for o, _ in added]),
                _Grown.of(self.sources, [s for _, s in added]))


def _split_pairs(pairs: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    return [o for o, _ in pairs], [s for _, s in pairs]


def _edge_stats(brain: Brain) -> tuple[int, int]:
    """(reflection edges, the largest edge rowid of any type): the rowid's max is read from the
    table's b-tree at once; edges above it are read with the type filter anyway."""
    types = ",".join(f"'{t}'" for t in mapping.REFLECTION_EDGE_TYPES)
    row = brain.query_one(f"SELECT (SELECT count(*) FROM {cs.EDGES} WHERE edge_type IN ({types})), "
                          f"(SELECT coalesce(max(rowid), 0) FROM {cs.EDGES})")
    return (int(row[0]), int(row[1])) if row is not None else (0, 0)


def _read_edges(brain: Brain, since: int, sources: Collection[str] | None = None,
                upto: int | None = None) -> list[tuple[str, str]]:
    """(observation id, reflection node id) of the reflection edges above rowid `since` (and at
    most `upto`), or only those from `sources`."""
    types = ",".join(f"'{t}'" for t in mapping.REFLECTION_EDGE_TYPES)
    sql = (f"SELECT substr(to_id, 13), from_id FROM {cs.EDGES} WHERE edge_type IN ({types}) "
           f"AND to_id LIKE 'observation:%' AND rowid > ?")
    params: list[Any] = [since]
    if upto is not None:
        sql += " AND rowid <= ?"
        params.append(upto)
    if sources is not None:
        sql += " AND from_id IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(list(sources)))
    return _plain_rows(brain, sql, params)


def _plain_rows(brain: Brain, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """The rows as plain tuples, text decoded in C (leniently in Python only if some is invalid UTF-8)."""
    for strict in (True, False):
        with brain.lock, _plain_text(brain.conn, strict):
            cursor = brain.conn.cursor()
            cursor.row_factory = None
            try:
                return cursor.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:
                if not strict or "decode" not in str(exc).lower():
                    raise
            finally:
                cursor.close()
    raise AssertionError("unreachable")


def _live_reflections(brain: Brain, notes: Collection[str]) -> set[str]:
    """Node ids of live patterns, live learnings and the live observer notes given (the scan's)."""
    live = lambda table: "invalid_at IS NULL" if brain.features.has_column(table, "invalid_at") else "1"  # noqa: E731
    sources = [f"SELECT '{prefix}' || id FROM {table} WHERE {live(table)}"
               for table, prefix in ((cs.PATTERNS, "pattern:"), (cs.LEARNINGS, "learning:"))
               if brain.features.has_table(table)]
    reflections = set(notes)
    if sources:
        reflections.update(r[0] for r in brain.query(" UNION ALL ".join(sources)))
    return reflections


def _citations(brain: Brain, notes: Collection[str], previous: EdgeSet | None,
               previous_cited: dict[str, Collection[str]] | None = None
               ) -> tuple[dict[str, Collection[str]], EdgeSet | None, set[str] | None]:
    """mapping.reflection_citations, reading only the edges added since `previous` when edges
    were only added (the liveness of patterns and learnings is read again: a few thousand
    rows; the live observer notes `notes` come from the scan).

    With `previous_cited` (the citations judged on `previous`), only what changed is
    judged again: the new edges, and the old ones whose reflection was evicted or
    arrived. The third value is then the observation ids whose citations may have
    changed (None: any may have).
    """
    if not brain.supports("graph_edges"):
        return {}, None, None
    try:
        count, high = _edge_stats(brain)
        added: list[tuple[str, str]] | None = None
        if previous is not None and high >= previous.high_water and count >= previous.count:
            added = _read_edges(brain, previous.high_water)
            observations, sources = previous.plus(added)
        else:
            observations, sources = _split_pairs(_read_edges(brain, 0))
    except sqlite3.OperationalError:  # no rowid to read by: read them all, as recall does
        return dict(mapping.reflection_citations(brain)), None, None
    if len(observations) != count:
        if previous is not None:  # edges were deleted and added: read all again
            return _citations(brain, notes, None)
        return _cited_by(zip(observations, sources, strict=True), _live_reflections(brain, notes)), None, None
    live = frozenset(_live_reflections(brain, notes))
    if added is None or previous is None or previous_cited is None:
        cited = _cited_by(zip(observations, sources, strict=True), live)  # (from the strings, before packing)
        return cited, EdgeSet(packed.pack(observations), sources, high, count, live), None
    cited, touched = _cited_since(brain, previous_cited, previous, added, live)
    return cited, EdgeSet(observations, sources, high, count, live), touched


def _cited_by(pairs: Iterable[tuple[str, str]], live: Collection[str]) -> dict[str, Collection[str]]:
    """Observation id → the live reflections citing it (a note citing itself does not count),
    each as a tuple: a set per cited row costs 160 bytes more (35 MB at a million rows)."""
    cited: dict[str, set[str]] = {}
    for obs_id, source in pairs:
        if source in live and not _self_citation(obs_id, source):
            cited.setdefault(obs_id, set()).add(source)
    return {obs_id: tuple(sources) for obs_id, sources in cited.items()}


def _self_citation(obs_id: str, source: str) -> bool:
    """Whether `source` is the node of the observation itself (`endswith` first: no string built
    for the usual pattern or learning)."""
    return source.endswith(obs_id) and source == f"observation:{obs_id}"


def _cited_since(brain: Brain, before: dict[str, Collection[str]], previous: EdgeSet,
                 added: list[tuple[str, str]], live: frozenset[str]) -> tuple[dict[str, Collection[str]], set[str]]:
    """`_cited_by(previous.pairs() + added, live)` from `before` (`_cited_by(previous.pairs(),
    previous.live)`), judging only what changed; `before` and its sets are left as they were."""
    gone, came = previous.live - live, live - previous.live
    cited = dict(before)
    changing: dict[str, set[str]] = {}  # the touched rows' citations, as sets while they change

    def own(obs_id: str) -> set[str]:  # copied from `before` on first change
        sources = changing.get(obs_id)
        if sources is None:
            sources = changing[obs_id] = set(cited.get(obs_id, ()))
        return sources

    if gone or came:  # the old edges of those reflections, read again by their source (indexed)
        for obs_id, source in _read_edges(brain, 0, gone | came, previous.high_water):
            if source in gone:
                own(obs_id).discard(source)
            elif source in came and source != f"observation:{obs_id}":
                own(obs_id).add(source)
    for obs_id, source in added:
        if source in live and source != f"observation:{obs_id}":
            own(obs_id).add(source)
    for obs_id, sources in changing.items():
        if sources:
            cited[obs_id] = tuple(sources)
        else:
            cited.pop(obs_id, None)
    return cited, set(changing)


# --- reading ---------------------------------------------------------------------------


def _column(have: Collection[str]) -> Callable[[str], str]:
    return lambda name: f'o."{name}"' if name in have else "NULL"


def _scan_columns(brain: Brain, sessions: bool) -> tuple[list[str], str]:
    """The scan's columns after the rowid (see `_Chunk`), and the table (with pins joined) to read."""
    have = brain.features.columns(cs.OBSERVATIONS)
    col = _column(have)
    # No pin at all (the usual case): no join, which costs a lookup per row. A pin written after
    # this check is caught where it matters: a commit checks every row for pins again.
    override = "ov.relevance" if brain.features.has_table(OVERRIDES) and \
        brain.query_one(f"SELECT 1 FROM {OVERRIDES} LIMIT 1") is not None else None
    join = f" LEFT JOIN {OVERRIDES} ov ON ov.observation_id = o.id" if override else ""
    live = "o.invalid_at IS NULL" if "invalid_at" in have else "1"
    quality = col("quality_score")
    low_quality = f"CASE WHEN typeof({quality}) IN ('integer', 'real') AND {quality} < 0.4 THEN {quality} END"
    columns = [f"CAST({col('id')} AS TEXT)", f"coalesce(CAST({col('created_at')} AS TEXT), '')",
               f"CAST({col('source_session_id')} AS TEXT)" if sessions else "NULL", live,
               f"CAST(coalesce({col('title')}, '') AS BLOB)", f"CAST(coalesce({col('narrative')}, '') AS BLOB)",
               mapping.relevance_rule_sql(col, override), low_quality,
               f"coalesce({col('source_type')} = '{mapping.OBSERVER_SOURCE_TYPE}', 0)"]
    return columns, f"{cs.OBSERVATIONS} o{join}"


_TITLE, _NARRATIVE = 4, 5  # their places in `_scan_columns`


def _scan_sql(brain: Brain, where: str, sessions: bool = True, row_keys: bool = False) -> str:
    """The scan's SELECT; `sessions` adds what a session's pool needs, and `row_keys` the rest
    of each row's key after its title and narrative (see `row_key_sql`)."""
    columns, source = _scan_columns(brain, sessions)
    if row_keys:
        columns.append(_row_tail_sql(columns))
    return f"SELECT o.rowid, {', '.join(columns)} FROM {source}{where}"  # rowid order; sorted by date in Python


def _row_tail_sql(columns: list[str]) -> str:
    """The texts' byte lengths and every other scanned column, as one blob (NULL as char(30))."""
    texts = (columns[_TITLE], columns[_NARRATIVE])
    parts = [*(f"length({t})" for t in texts),
             *(f"coalesce(CAST({c} AS TEXT), char(30))" for c in columns if c not in texts)]
    return f"CAST({' || char(31) || '.join(parts)} AS BLOB)"


def row_key_sql(brain: Brain, where: str) -> str:
    """SELECT rowid and the bytes whose blake2b (`_row_hash`) is the row's entry in a scan's `row_keys`:
    the rest (`_row_tail_sql`), NUL, title, NUL, narrative, joined in SQL (a row's columns as one object;
    the long texts last, as each `||` copies what it joins)."""
    columns, source = _scan_columns(brain, True)
    joined = f"{_row_tail_sql(columns)} || char(0) || {columns[_TITLE]} || char(0) || {columns[_NARRATIVE]}"
    return f"SELECT o.rowid, CAST({joined} AS BLOB) FROM {source}{where}"


def _row_hash(title: bytes, narrative: bytes, tail: bytes) -> bytes:
    return hashlib.blake2b(b"\x00".join((tail, title, narrative)), digest_size=8).digest()


@contextmanager
def _plain_text(conn: sqlite3.Connection, strict: bool) -> Iterator[None]:
    """Let SQLite decode the short text columns in C (`strict`), or leniently in Python."""
    previous = conn.text_factory
    conn.text_factory = str if strict else decode_text
    try:
        yield
    finally:
        conn.text_factory = previous


class _Undecodable(Exception):
    """An id, date or session holds invalid UTF-8: read again with the lenient decoder."""


def _fetch_chunks(brain: Brain, sql: str, params: Sequence[Any], strict: bool) -> Iterator[list[tuple]]:
    """The query's rows a chunk at a time, as one statement under the brain's lock.

    With `strict`, ids, dates and sessions are decoded by SQLite (in C) and invalid
    UTF-8 there raises _Undecodable; titles and narratives are read as bytes either way.
    """
    with brain.lock, _plain_text(brain.conn, strict):
        cursor = brain.conn.execute(sql, params)
        try:
            while True:
                try:
                    rows = cursor.fetchmany(SCAN_CHUNK)
                except sqlite3.OperationalError as exc:
                    if strict and "decode" in str(exc).lower():
                        raise _Undecodable() from None
                    raise
                if not rows:
                    return
                yield rows
        finally:
            cursor.close()


def _content_keys(titles: list[bytes], narratives: list[bytes]) -> np.ndarray:
    """uint64 key of each row's title and narrative: the CRC-32 of the narrative beside the title's.

    The findings cache is looked up by rowid and this key, so it only has to tell an edited
    row from its cached self: two CRCs in C cost a third of a blake2b object per row."""
    count = len(titles)
    high = np.fromiter(map(zlib.crc32, narratives), dtype=np.uint64, count=count)
    low = np.fromiter(map(zlib.crc32, titles), dtype=np.uint64, count=count)
    return (high << np.uint64(32)) | low


def shared_findings(findings: Findings, strings: dict[str, str]) -> Findings:
    """The same findings holding the one copy of each string in `strings` (added there if new).

    A million rows' findings name a few ten thousand identifiers: one string each, not one
    per row that holds it, saves about 50 MB."""
    ids, reasons = findings
    return (tuple(map(strings.setdefault, ids, ids)) if ids else (),
            tuple(map(strings.setdefault, reasons, reasons)) if reasons else ())


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _judged_text(title: str, narrative: str) -> str:
    content = narrative if narrative.strip() else title
    return content if not title or content.startswith(title) else f"{title}\n{content}"


def judged_text(row: dict[str, Any]) -> str:
    """The text the detectors read for a row read with POOL_COLUMNS: the content, titled when that adds."""
    return _judged_text(mapping.as_text(row.get("title")), mapping.as_text(row.get("narrative")))


def _content(title: bytes, narrative: bytes) -> str:
    narrative_text = _decode(narrative)
    return narrative_text if narrative_text.strip() else _decode(title)


def _minute_length(created: str) -> int:
    """len(mapping.minute_timestamp(created)), without building it for the usual shape."""
    if len(created) >= 16 and created[4] == "-" and created[10] in " T" and not created[0].isspace():
        return 16
    return len(mapping.minute_timestamp(created))


def _content_units(title: bytes, narrative: bytes) -> int:
    """UTF-16 length of the seed's content (narrative, or title when it is blank)."""
    if narrative.isascii() and narrative.strip(_ASCII_BLANKS):
        return len(narrative)
    return utf16_length(_content(title, narrative))


@dataclass
class _Chunk:
    rowids: list[int]
    ids: list[str]
    created: list[str]
    sessions: list[str | None]
    live: list[int]
    titles: list[bytes]
    narratives: list[bytes]
    rules: list[int]
    quality: list[Any]
    notes: list[int]  # 1: an observer note
    tails: list[bytes] | None = None  # the rest of each row's key (a scan with `row_keys`)


def _columns_of(rows: list[tuple]) -> _Chunk:
    columns = list(map(list, zip(*rows, strict=False)))
    rowids, ids, created, sessions, live, titles, narratives, rules, quality, notes = columns[:10]
    return _Chunk(rowids, [i if i is not None else "" for i in ids], created, sessions, live,
                  titles, narratives, rules, quality, notes, columns[10] if len(columns) > 10 else None)


_KEYS_FORMAT = "crc2"  # how `_content_keys` hashes (a file of another kind is not read)


class _FindingsFile:
    """The per-brain cache of findings by (rowid, content key), next to the token cache."""

    def __init__(self, brain: Brain) -> None:
        self.path = brain_cache_file("row_findings", brain.path, f"{detectors.RULES_KEY}-{_KEYS_FORMAT}")
        self.rowids = np.zeros(0, dtype=np.int64)
        self.keys = np.zeros(0, dtype=np.uint64)
        self.entries = np.zeros(0, dtype=np.int32)
        self.table: list[Findings] = [_EMPTY]
        try:
            with np.load(self.path, allow_pickle=False) as data:
                rowids, keys, entries = data["rowids"], data["keys"], data["entries"]
                table = bytes(data["table"]).decode("utf-8", "surrogatepass").split("\x1d")
            order = np.argsort(rowids, kind="stable")
            self.rowids, self.keys, self.entries = rowids[order], keys[order], entries[order]
            strings: dict[str, str] = {}
            self.table = [shared_findings(detectors._decode(t), strings) for t in table]
            if not self.table or self.table[0] != _EMPTY or (len(entries) and entries.max() >= len(self.table)):
                raise ValueError("damaged")
        except (OSError, KeyError, ValueError, UnicodeDecodeError, EOFError, zipfile.BadZipFile):
            self.rowids = np.zeros(0, dtype=np.int64)
            self.keys = np.zeros(0, dtype=np.uint64)
            self.entries = np.zeros(0, dtype=np.int32)
            self.table = [_EMPTY]

    def lookup(self, rowids: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """int32 table index of each row whose cached hash matches, else -1."""
        found = np.full(len(rowids), -1, dtype=np.int32)
        if not len(self.rowids) or not len(rowids):
            return found
        at = np.searchsorted(self.rowids, rowids).clip(0, len(self.rowids) - 1)
        hit = (self.rowids[at] == rowids) & (self.keys[at] == keys)
        found[hit] = self.entries[at[hit]]
        return found

    def save(self, rowids: np.ndarray, keys: np.ndarray, entries: np.ndarray, table: Sequence[Findings]) -> None:
        """Replace the file (atomically); a failure only costs speed next time."""
        # Rows this scan did not read (evicted ones, when only live rows were read) keep theirs.
        keep = ~np.isin(self.rowids, rowids)
        if keep.any():
            rowids = np.concatenate([rowids, self.rowids[keep]])
            keys = np.concatenate([keys, self.keys[keep]])
            entries = np.concatenate([entries, self.entries[keep]])
        blob = "\x1d".join(detectors._encode(t) for t in table).encode("utf-8", "surrogatepass")
        write_npz(self.path, {"rowids": rowids, "keys": keys, "entries": entries,
                              "table": np.frombuffer(blob, dtype=np.uint8)})


def live_reflection_texts(brain: Brain) -> list[str]:
    """Texts of live patterns and learnings (observer notes are observations already)."""
    texts = []
    for table, expression in _REFLECTION_TEXT:
        if not brain.features.has_table(table):
            continue
        live = "invalid_at IS NULL" if brain.features.has_column(table, "invalid_at") else "1"
        try:
            texts += [r[0] if type(r[0]) is str else mapping.as_text(r[0])
                      for r in _plain_rows(brain, f"SELECT {expression} FROM {table} WHERE {live}")]
        except sqlite3.OperationalError:  # an older layout without these columns: nothing to compare with
            continue
    return texts


def _reflection_counts(brain: Brain, known: dict[str, frozenset[str]]
                       ) -> tuple[Counter[str], dict[str, frozenset[str]]]:
    """Identifier → live patterns and learnings holding it, and each text's identifiers
    (`known`: those of an earlier read, so only new or edited texts are analysed again)."""
    texts = live_reflection_texts(brain)
    fresh = [t for t in dict.fromkeys(texts) if t not in known]
    found = dict(zip(fresh, map(frozenset, detectors.identifiers_of(fresh)), strict=True))
    identifiers = {t: known[t] if t in known else found[t] for t in texts}
    return Counter(itertools.chain.from_iterable(identifiers[t] for t in texts)), identifiers


def _scan(brain: Brain, where: str, params: Sequence[Any], tokenizer: Tokenizer | None, session: str | None,
          progress: Progress | None, cache_file: bool, base: BrainScan | None = None,
          row_keys: bool = False) -> BrainScan:
    stored = _FindingsFile(brain) if cache_file else None
    try:
        scan, fresh = _scan_pass(brain, where, params, tokenizer, session, progress, stored, True, base, row_keys)
    except _Undecodable:
        scan, fresh = _scan_pass(brain, where, params, tokenizer, session, progress, stored, False, base, row_keys)
    if base is None:
        scan.citations, scan.edges, _ = _citations(brain, _live_notes(scan), None)
    else:
        scan.citations, scan.edges, scan.cited_touched = _citations(brain, _live_notes_since(base, scan),
                                                                    base.edges, base.citations)
    if stored is not None and fresh and scan.keys is not None:
        stored.save(scan.rowids, scan.keys, scan.findings, scan.table)
    scan.recall_reasons = recall_protection.protection_reasons(brain)  # {} unless the config opts in
    return scan


def _scan_pass(brain: Brain, where: str, params: Sequence[Any], tokenizer: Tokenizer | None, session: str | None,
               progress: Progress | None, stored: _FindingsFile | None, strict: bool,
               base: BrainScan | None = None, row_keys: bool = False) -> tuple[BrainScan, int]:
    """One reading of the rows, a chunk at a time (only a chunk's texts are held at once)."""
    table = list(stored.table) if stored else [_EMPTY]
    strings: dict[str, str] = {}
    where_entry: dict[Findings, int] | None = None  # built at the first row the cache lacks
    parts: dict[str, list] = {name: [] for name in ("rowids", "ids", "created", "sessions", "live", "rules",
                                                    "quality", "keys", "row_keys", "entries", "units", "notes")}
    fresh = 0
    stats = CountStats()
    cache = TokenCache() if tokenizer is not None and tokenizer.cached else None
    done = 0
    total = _count(brain, where, params) if progress and tokenizer is not None else 0
    read_sessions = session is not None or tokenizer is None  # (a whole pool's prune does not need them)
    try:
        sql = _scan_sql(brain, where, sessions=read_sessions, row_keys=row_keys)
        for rows in _fetch_chunks(brain, sql, params, strict):
            c = _columns_of(rows)
            rowids = np.array(c.rowids, dtype=np.int64)
            keys = _content_keys(c.titles, c.narratives)
            entries = stored.lookup(rowids, keys) if stored else np.full(len(rowids), -1, dtype=np.int32)
            missing = np.flatnonzero(entries < 0).tolist()
            if missing:
                fresh += len(missing)
                if where_entry is None:
                    where_entry = {entry: k for k, entry in enumerate(table)}
                texts = [_judged_text(_decode(c.titles[i]), _decode(c.narratives[i])) for i in missing]
                for i, findings in zip(missing, detectors.analyse_texts(texts), strict=False):
                    at = where_entry.get(findings)
                    if at is None:
                        at = where_entry[findings] = len(table)
                        table.append(shared_findings(findings, strings))
                    entries[i] = at
            if tokenizer is not None:
                parts["units"].append(_chunk_units(c, tokenizer, session, cache, stats))
                done += len(rows)
                if progress:
                    progress(done, max(total, done))
            for name in ("ids", "created", "sessions", "live", "rules", "quality", "notes"):
                parts[name] += getattr(c, name)
            parts["rowids"].append(rowids)
            parts["keys"].append(keys)
            if c.tails is not None:
                parts["row_keys"].append(np.frombuffer(b"".join(map(_row_hash, c.titles, c.narratives, c.tails)),
                                                       dtype=np.uint64))
            parts["entries"].append(entries)
    finally:
        if cache is not None:
            cache.close()
    order = _date_order(parts["created"], parts["rowids"])
    lists = {name: _reordered(parts[name], order) for name in ("ids", "created", "sessions", "quality")}
    arrays = {name: _joined(parts[name], dtype) for name, dtype in
              (("rowids", np.int64), ("entries", np.int32), ("keys", np.uint64), ("row_keys", np.uint64),
               ("units", np.int64))}
    arrays.update((name, np.array(parts[name], dtype=dtype)) for name, dtype in
                  (("live", bool), ("notes", bool), ("rules", np.uint8)))
    if order is not None:
        arrays = {name: column[order] if len(column) else column for name, column in arrays.items()}
    scan = BrainScan(
        ids=packed.pack(lists["ids"]), created=packed.pack(lists["created"]),
        sessions=_shared(lists["sessions"]) if read_sessions else lists["sessions"],
        rowids=arrays["rowids"], live=arrays["live"], notes=arrays["notes"], rules=arrays["rules"],
        quality=lists["quality"],
        findings=arrays["entries"], table=table,
        citations={}, reflection_counts=Counter(),
        units=arrays["units"] if tokenizer is not None else None, unit_scope=session, count_stats=stats)
    scan.reflection_counts, scan.reflection_identifiers = _reflection_counts(
        brain, base.reflection_identifiers if base is not None else {})
    scan.keys = arrays["keys"]
    scan.row_keys = arrays["row_keys"] if row_keys else None
    return scan, fresh  # (not `where_entry` as its table_index: a dict of every entry, 40 MB at a million rows)


def _date_order(created: list[str], rowid_chunks: list[np.ndarray]) -> np.ndarray | None:
    """The permutation putting rows (read in rowid order) oldest first, ties by rowid; None when
    they already are (CLEO writes in date order, so this is usually a check, not a sort)."""
    if all(map(operator.le, created, itertools.islice(created, 1, None))):
        return None
    return np.array(sorted(range(len(created)), key=created.__getitem__), dtype=np.int64)  # stable: rowid ties


def _reordered(values: Sequence[Any], order: np.ndarray | None) -> list[Any]:
    """values[i] for each i of order (all of them, as they are, when order is None)."""
    if order is None:
        return values if isinstance(values, list) else list(values)
    if len(order) < 2:
        return [values[i] for i in order.tolist()]
    return list(operator.itemgetter(*order.tolist())(values))


def _joined(arrays: list[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype=dtype)


def _count(brain: Brain, where: str, params: Sequence[Any]) -> int:
    return int(brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} o{where}", params))


_RULE_RELEVANCE = [mapping.relevance_of_rule(code, 0.0)[0] if code in range(1, 10) or code >= mapping.RULE_OVERRIDE
                   else "medium" for code in range(mapping.RULE_CODES_END)]


def _chunk_units(c: _Chunk, tokenizer: Tokenizer, session: str | None, cache: TokenCache | None,
                 stats: CountStats) -> np.ndarray:
    """Line units of a chunk's rows in scope (`[id] YYYY-MM-DD HH:MM [relevance] content`); 0 elsewhere."""
    units = np.zeros(len(c.ids), dtype=np.int64)
    in_scope = range(len(c.ids)) if session is None else [i for i, s in enumerate(c.sessions) if s == session]
    if not in_scope:
        return units
    if not tokenizer.cached and session is None:  # chars4 over every row: in arrays where plain
        values: Any = _plain_line_units(c)
        chunk_stats = CountStats(lines=len(values), counted=len(values))
    elif not tokenizer.cached:  # chars4: UTF-16 lengths, no line is built (cheaper here than in SQL)
        values = [_line_units(c, i) for i in in_scope]
        chunk_stats = CountStats(lines=len(values), counted=len(values))
    else:
        relevance = [_RULE_RELEVANCE[r] for r in c.rules]
        lines = [render_line(c.ids[i], mapping.minute_timestamp(c.created[i]), relevance[i],
                             _content(c.titles[i], c.narratives[i])) for i in in_scope]
        values, chunk_stats = count_line_units(lines, tokenizer, None, cache)
    units[np.fromiter(in_scope, dtype=np.int64, count=len(in_scope))] = values
    stats.lines += chunk_stats.lines
    stats.from_cache += chunk_stats.from_cache
    stats.counted += chunk_stats.counted
    stats.cache_used = stats.cache_used or chunk_stats.cache_used
    stats.seconds += chunk_stats.seconds
    return units


def _line_units(c: _Chunk, i: int) -> int:
    """chars4 units (UTF-16 length) of row i's pool line `[id] YYYY-MM-DD HH:MM [relevance] content`."""
    return (7 + utf16_length(c.ids[i]) + _minute_length(c.created[i]) + int(_RELEVANCE_LENGTH[c.rules[i]])
            + _content_units(c.titles[i], c.narratives[i]))


_RELEVANCE_LENGTH = np.array([len(r) for r in _RULE_RELEVANCE], dtype=np.int64)
_NOT_SPACE = np.ones(256, dtype=bool)
_NOT_SPACE[[ord(ch) for ch in " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"]] = False  # str.isspace() in ASCII


def _plain_line_units(c: _Chunk) -> np.ndarray:
    """`_line_units` of every row of a chunk, in arrays for the usual rows (ASCII id, a date
    of the usual shape, an ASCII narrative that starts with no blank); row by row for the others."""
    count = len(c.ids)
    ids_plain = np.fromiter(map(str.isascii, c.ids), dtype=bool, count=count)
    id_length = np.fromiter(map(len, c.ids), dtype=np.int64, count=count)
    narrative = np.fromiter(map(len, c.narratives), dtype=np.int64, count=count)
    plain = ids_plain & (narrative > 0) & _usual_dates(c.created)
    text = np.frombuffer(b"".join(c.narratives), dtype=np.uint8)
    starts = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(narrative)[:-1]])
    filled = np.flatnonzero(narrative > 0)
    if len(filled):  # an ASCII narrative starting with a non-blank is its own content
        plain[filled] &= (np.maximum.reduceat(text, starts[filled]) < 128) & _NOT_SPACE[text[starts[filled]]]
    units = 7 + id_length + 16 + _RELEVANCE_LENGTH[np.array(c.rules, dtype=np.int64)] + narrative
    for i in np.flatnonzero(~plain).tolist():
        units[i] = _line_units(c, i)
    return units


def _usual_dates(created: list[str]) -> np.ndarray:
    """bool per date: `_minute_length` is 16 (ASCII, YYYY-MM-DD?HH:MM…, no leading blank)."""
    count = len(created)
    length = np.fromiter(map(len, created), dtype=np.int64, count=count)
    joined = "".join(created)
    if not joined.isascii():  # (character offsets are not byte offsets): row by row
        return np.zeros(count, dtype=bool)
    text = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    starts = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(length)[:-1]])
    usual = length >= 16
    at = starts[usual]
    usual[usual] = (text[at + 4] == ord("-")) & ((text[at + 10] == ord(" ")) | (text[at + 10] == ord("T"))) \
        & _NOT_SPACE[text[at]]
    return usual


def _shared(values: list[str | None]) -> list[str | None]:
    """The same list with equal strings made one object (sessions repeat a lot)."""
    seen: dict[str | None, str | None] = {}
    return [seen.setdefault(v, v) for v in values]


def scan_brain(brain: Brain, live_only: bool = False, tokenizer: Tokenizer | None = None,
               session: str | None = None, progress: Progress | None = None, row_keys: bool = False) -> BrainScan:
    """Read and analyse every observation (or every live one) once, oldest first.

    With a tokenizer, each row in scope (one session's, or all when `session` is
    None) also gets the size of its pool line; `progress(done, total)` follows it.
    With `row_keys`, each row gets a hash of everything read of it (see `row_key_sql`).
    """
    have = brain.features.columns(cs.OBSERVATIONS)
    where = " WHERE o.invalid_at IS NULL" if live_only and "invalid_at" in have else ""
    return _scan(brain, where, (), tokenizer, session, progress, cache_file=True, row_keys=row_keys)


def scan_rows_since(brain: Brain, high_water: int, changed_ids: Iterable[str] = (),
                    tokenizer: Tokenizer | None = None, session: str | None = None,
                    base: BrainScan | None = None) -> BrainScan:
    """The rows above rowid `high_water` and the rows `changed_ids` (live or not), with the
    brain's current citations and reflections: what `BrainScan.updated` folds in.

    With `base` (the scan it will be folded into), only the edges added since it are read,
    and the rows get `row_keys` when the base has them.
    """
    changed = list(dict.fromkeys(changed_ids))
    where = " WHERE o.rowid > ?"
    params: list[Any] = [int(high_water)]
    if changed:
        where += " OR o.id IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(changed))
    return _scan(brain, where, params, tokenizer, session, None, cache_file=False, base=base,
                 row_keys=base is not None and base.row_keys is not None)


__all__ = ["BrainScan", "live_reflection_texts", "scan_brain", "scan_rows_since"]
