"""A pruning pool's rows as columns: what ranks each row, without an object per row.

`PoolColumns` holds the pool's rows by position (the pool's own order). A pool
prepared from a brain scan of a million rows sees the scan's columns through
small views rather than copying them:

- `ScanPicks`: the scan's values at the pool's rows (`values[picks[k]]`), when
  the pool is some of the scan's rows (one session's);
- `CodedNames`: names kept as an array of small codes (`names[codes[k]]`);
- `ScanRelevanceReasons`: each scan row's relevance reason, made when read.

`PoolEntry` is one row as an object, made only when a caller reads it
(`EntryView`, `PoolColumns.entry`).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from cleo_tui.memory import mapping
from cleo_tui.memory import packed_strings as packed
from cleo_tui.memory.seed_types import COVERAGE_TAGS, DROP_RELEVANCE

if TYPE_CHECKING:
    from cleo_tui.memory.pool_scan import BrainScan
    from cleo_tui.memory.tokenizers import Tokenizer

COVERAGE_RANK = {tag: rank for rank, tag in enumerate(COVERAGE_TAGS)}
RELEVANCE_RANK = {relevance: rank for rank, relevance in enumerate(DROP_RELEVANCE)}
UNKNOWN_RELEVANCE_RANK = len(DROP_RELEVANCE)  # a relevance the rules do not name drops last
RANK_OF_RELEVANCE_CODE = np.array([RELEVANCE_RANK.get(r, UNKNOWN_RELEVANCE_RANK) for r in mapping.RELEVANCES],
                                  dtype=np.uint8)


@dataclass(slots=True)  # not frozen: a frozen __init__ costs a second per million rows
class PoolEntry:
    """One observation of a prepared pool, with the facts that rank it (treat as read-only)."""

    id: str
    position: int  # in the pool's own order (ties keep it)
    created_at: str
    coverage: str
    citation_count: int
    relevance: str
    relevance_reason: str
    units: int
    reasons: tuple[str, ...] = ()  # non-empty: protected

    @property
    def why(self) -> str:
        """Why this row drops where it does, in rule order."""
        return (f"{self.coverage} (cited by {self.citation_count} reflection"
                f"{'' if self.citation_count == 1 else 's'}); {self.relevance} relevance "
                f"({self.relevance_reason}); created {self.created_at or 'at an unknown time'}")

    def drop_key(self) -> tuple[int, int, str, int]:
        """The row's place in the drop order: coverage, relevance, oldest, position."""
        return (COVERAGE_RANK[self.coverage], RELEVANCE_RANK.get(self.relevance, UNKNOWN_RELEVANCE_RANK),
                self.created_at, self.position)


class PoolColumns:
    """The rows of a pool by position (the pool's order), as columns; `entry(k)` makes a PoolEntry.

    Built from PoolEntry objects (records, tests) with `of_entries`, or from a brain
    scan with `columns_of_scan` (a million rows without an object per row).
    """

    def __init__(self, ids: Sequence[str], created: Sequence[str], coverage: np.ndarray, citations: np.ndarray,
                 relevance: Sequence[str], relevance_reasons: Any, units: np.ndarray, protected: np.ndarray,
                 reasons_at: Callable[[int], tuple[str, ...]], ranks: np.ndarray | None = None,
                 dates_sorted: bool | None = None) -> None:
        self.ids, self.created, self.coverage, self.citations = ids, created, coverage, citations
        self.relevance, self.relevance_reasons, self.units = relevance, relevance_reasons, units
        self.protected = protected  # positions of the protected rows, ascending
        self.reasons_at = reasons_at
        self.protected_mask = np.zeros(len(ids), dtype=bool)
        self.protected_mask[protected] = True
        self.ranks = ranks if ranks is not None else np.array(
            [RELEVANCE_RANK.get(r, UNKNOWN_RELEVANCE_RANK) for r in relevance], dtype=np.uint8)
        self.dates_sorted = non_decreasing(created) if dates_sorted is None else dates_sorted

    def __len__(self) -> int:
        return len(self.ids)

    def entry(self, k: int) -> PoolEntry:
        """The row at position k as a PoolEntry."""
        reasons = self.relevance_reasons
        reason = reasons(k) if callable(reasons) else reasons[k]
        return PoolEntry(self.ids[k], k, self.created[k], COVERAGE_TAGS[self.coverage[k]], int(self.citations[k]),
                         self.relevance[k], reason, int(self.units[k]),
                         self.reasons_at(k) if self.protected_mask[k] else ())

    def dropped_json(self, positions: np.ndarray, tokenizer: Tokenizer) -> list[dict[str, Any]]:
        """The JSON rows of dropped entries (as PoolEntry would give them, without making one each)."""
        at = positions.tolist()
        ids, created, relevance = take(self.ids, at), take(self.created, at), take(self.relevance, at)
        reasons = take(self.relevance_reasons, at)
        coverage_codes = self.coverage[positions]
        heads = _why_heads(coverage_codes, self.citations[positions])
        coverage = _COVERAGE_NAMES[coverage_codes].tolist()
        tokens = tokenizer.finish_all(self.units[positions])
        return [{"id": oid, "coverage": tag, "relevance": rel, "created_at": made, "tokens": size,
                 "why": f"{head}{rel} relevance ({why}); created {made or 'at an unknown time'}"}
                for oid, tag, rel, made, size, head, why in zip(ids, coverage, relevance, created, tokens, heads,
                                                                reasons, strict=True)]

    def protected_json(self, positions: np.ndarray | None = None) -> list[dict[str, Any]]:
        """The JSON rows of the protected entries (id and reasons), in pool order, or of those
        at `positions` (protected ones)."""
        at, reasons_at = (self.protected if positions is None else positions).tolist(), self.reasons_at
        return [{"id": obs_id, "reasons": list(reasons_at(k))}
                for obs_id, k in zip(take(self.ids, at), at, strict=True)]

    @classmethod
    def of_entries(cls, entries: Sequence[PoolEntry]) -> PoolColumns:
        """Columns of entries given in pool order (index = position)."""
        reasons = {k: tuple(e.reasons) for k, e in enumerate(entries) if e.reasons}
        return cls([e.id for e in entries], [e.created_at for e in entries],
                   np.array([COVERAGE_RANK[e.coverage] for e in entries], dtype=np.uint8),
                   np.array([e.citation_count for e in entries], dtype=np.int32),
                   [e.relevance for e in entries], [e.relevance_reason for e in entries],
                   np.array([e.units for e in entries], dtype=np.int64),
                   np.array(sorted(reasons), dtype=np.int64), reasons.__getitem__)

    def drop_order(self, positions: np.ndarray) -> np.ndarray:
        """`positions` (unprotected rows) sorted into drop order: coverage, relevance, oldest, position."""
        # coverage < 3 and rank < 8: the key fits a byte, which numpy sorts stably by radix (fast)
        key = (self.coverage[positions] * np.uint8(8) + self.ranks[positions]).astype(np.uint8)
        if self.dates_sorted:  # the usual case: the pool is in created order already
            ordered: np.ndarray = positions[np.argsort(key, kind="stable")]
            return ordered
        created_rank = np.empty(len(self.created), dtype=np.int64)
        created_rank[sorted(range(len(self.created)), key=self.created.__getitem__)] = np.arange(len(self.created))
        by_date: np.ndarray = positions[np.lexsort((positions, created_rank[positions], key))]
        return by_date


_COVERAGE_NAMES = np.array(COVERAGE_TAGS, dtype=object)


def _why_heads(coverage_codes: np.ndarray, citations: np.ndarray) -> list[str]:
    """The start of each dropped row's `why`, "<coverage> (cited by N reflections); ", one string per kind
    (picked from an object array: no Python step per row)."""
    kinds, which = np.unique(coverage_codes.astype(np.int64) << 32 | citations.astype(np.int64), return_inverse=True)
    heads = [f"{COVERAGE_TAGS[kind >> 32]} (cited by {cited} reflection{'' if cited == 1 else 's'}); "
             for kind in kinds.tolist() for cited in [kind & 0xFFFFFFFF]]
    picked: list[str] = np.array(heads, dtype=object)[which.reshape(-1)].tolist()
    return picked


def take(column: Any, positions: list[int]) -> list[Any]:
    """column[k] for each position: a list, one of this module's views, or a callable column.

    Lists and the names are picked in C (`itemgetter`, an object array): 86,000 rows of a
    prune's JSON took 16 ms a column as a comprehension."""
    if isinstance(column, (ScanRelevanceReasons, packed.PackedStrings)):
        return column.take(positions)
    if isinstance(column, CodedNames):
        names: list[Any] = np.array(column.names, dtype=object)[column.codes[positions]].tolist()
        return names
    if isinstance(column, ScanPicks):
        values, picks = column.values, column.picks
        if isinstance(values, (ScanRelevanceReasons, packed.PackedStrings)):
            return values.take([picks[k] for k in positions])
        return [values[picks[k]] for k in positions]
    if callable(column):
        return [column(k) for k in positions]
    if isinstance(column, list) and len(positions) > 1:
        return list(operator.itemgetter(*positions)(column))
    return [column[k] for k in positions]


class ScanRelevanceReasons:
    """The relevance reason of each scan row, by scan index (made when read)."""

    def __init__(self, scan: BrainScan) -> None:
        self.quality, self.scan = scan.quality, scan

    def __getitem__(self, i: int) -> str:
        return relevance_reason(int(self.scan.rules[i]), self.quality[i])

    def take(self, rows: list[int]) -> list[str]:
        """The reasons of these scan rows: one per rule, except where a quality score tells more
        (the rows with one are found once, in C: most rows have none)."""
        at = np.asarray(rows, dtype=np.int64)
        codes = self.scan.rules[at]
        kinds = np.flatnonzero(np.bincount(codes)).tolist()  # (np.unique would import numpy.ma: 15 ms)
        by_rule = np.empty(max(kinds, default=0) + 1, dtype=object)
        for code in kinds:
            by_rule[code] = relevance_reason(code, None)
        out: list[str] = by_rule[codes].tolist()
        quality = self.quality
        rated = [code for code in kinds if reason_reads_quality(code)]
        for n in (np.flatnonzero(np.isin(codes, rated)).tolist() if rated else ()):
            out[n] = relevance_reason(int(codes[n]), quality[rows[n]])
        return out


@cache
def reason_reads_quality(rule: int) -> bool:
    """Whether the reason of a row of this rule depends on its quality score (the low-quality rule's
    names it); the others' rows are answered without looking at theirs."""
    return len({relevance_reason(rule, quality) for quality in (None, 0.1, 0.25, 0.9)}) > 1


@lru_cache(maxsize=4096)
def relevance_reason(rule: int, quality: Any) -> str:
    """Why a row of this rule (and quality score) has its relevance."""
    return mapping.relevance_of_rule(rule, quality)[1]


class ScanPicks(Sequence[Any]):
    """`values[picks[k]]` for each k: a column of a scan seen through the pool's positions."""

    def __init__(self, values: Any, picks: list[int]) -> None:  # anything indexable
        self.values, self.picks = values, picks

    def __len__(self) -> int:
        return len(self.picks)

    @overload
    def __getitem__(self, k: int) -> Any: ...

    @overload
    def __getitem__(self, k: slice) -> list[Any]: ...

    def __getitem__(self, k: int | slice) -> Any:
        if isinstance(k, slice):
            return [self.values[i] for i in self.picks[k]]
        return self.values[self.picks[k]]


class CodedNames(Sequence[str]):
    """`names[codes[k]]` for each k: a column of names kept as an array of small codes."""

    def __init__(self, names: Sequence[str], codes: np.ndarray) -> None:
        self.names, self.codes = names, codes

    def __len__(self) -> int:
        return len(self.codes)

    @overload
    def __getitem__(self, k: int) -> str: ...

    @overload
    def __getitem__(self, k: slice) -> list[str]: ...

    def __getitem__(self, k: int | slice) -> str | list[str]:
        if isinstance(k, slice):
            return [self.names[c] for c in self.codes[k].tolist()]
        return self.names[int(self.codes[k])]


def non_decreasing(values: Sequence[str]) -> bool:
    """Whether the values are in order (equal neighbours allowed)."""
    return all(map(operator.le, values, itertools.islice(values, 1, None)))


class EntryView(Sequence[PoolEntry]):
    """Pool entries at some positions, each made when read (otherwise it behaves as a list)."""

    def __init__(self, columns: PoolColumns, positions: np.ndarray) -> None:
        self.columns, self.positions = columns, positions

    def __len__(self) -> int:
        return len(self.positions)

    @overload
    def __getitem__(self, index: int) -> PoolEntry: ...

    @overload
    def __getitem__(self, index: slice) -> list[PoolEntry]: ...

    def __getitem__(self, index: int | slice) -> PoolEntry | list[PoolEntry]:
        if isinstance(index, slice):
            return [self.columns.entry(k) for k in self.positions[index].tolist()]
        return self.columns.entry(int(self.positions[index]))

    def __iter__(self) -> Iterator[PoolEntry]:
        entry = self.columns.entry
        return (entry(k) for k in self.positions.tolist())

    def __add__(self, other: Iterable[PoolEntry]) -> list[PoolEntry]:
        return [*self, *other]

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, (list, EntryView)) else NotImplemented

    def ids(self, count: int | None = None) -> list[str]:
        """Ids of the first `count` entries (all when None), without making entries."""
        return take(self.columns.ids, self.positions[:count].tolist())


def columns_of_scan(scan: BrainScan, session: str | None = None) -> PoolColumns:
    """The columns of a scan's live rows (one session's, when given), seen through views, not copied.

    The scan must hold line units for that scope (`scan_brain(..., tokenizer, session)`).
    """
    in_scope = scan.live.copy()
    if session is not None:
        in_scope &= np.array([s == session for s in scan.sessions], dtype=bool)
    positions = np.flatnonzero(in_scope)
    codes = scan.relevance[positions]
    units = scan.units[positions] if scan.units is not None else np.zeros(len(positions), dtype=np.int64)
    ids: Sequence[str]
    created: Sequence[str]
    reasons: Any
    if len(positions) == len(scan):  # every row (a live scan of the whole pool): the scan's own columns
        ids, created, reasons = scan.ids, scan.created, ScanRelevanceReasons(scan)

        def reasons_at(k: int) -> tuple[str, ...]:
            return tuple(scan.reasons_of(k))
    else:
        rows = positions.tolist()
        ids, created = ScanPicks(scan.ids, rows), ScanPicks(scan.created, rows)
        reasons = ScanPicks(ScanRelevanceReasons(scan), rows)

        def reasons_at(k: int) -> tuple[str, ...]:
            return tuple(scan.reasons_of(rows[k]))

    return PoolColumns(ids, created, scan.coverage_codes()[positions], scan.citation_counts[positions],
                       CodedNames(mapping.RELEVANCES, codes), reasons, units,
                       np.flatnonzero(scan.protected[positions]), reasons_at, RANK_OF_RELEVANCE_CODE[codes],
                       dates_sorted=True)  # a scan is kept oldest first
