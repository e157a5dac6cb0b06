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
"""

from __future__ import annotations

import itertools
import math
import operator
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain import journal
from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.migrations import OVERRIDES
from cleo_tui.brain.store import Brain
from cleo_tui.memory import curation, mapping, tags
from cleo_tui.memory import packed_strings as packed
from cleo_tui.memory.seed_types import (
    COVERAGE_TAGS,
    DROP_RELEVANCE,
    MemoryReflection,
    ObservationRecord,
    render_line,
    render_record,
)
from cleo_tui.memory.token_cache import CountStats, Progress, count_line_units
from cleo_tui.memory.tokenizers import Tokenizer, get_tokenizer
from cleo_tui.safe_text import one_line, plural, titled_lines

if TYPE_CHECKING:
    from cleo_tui.memory.pool_scan import BrainScan

TARGET_SHARE = 0.8
_COVERAGE_RANK = {tag: rank for rank, tag in enumerate(COVERAGE_TAGS)}
_RELEVANCE_RANK = {relevance: rank for rank, relevance in enumerate(DROP_RELEVANCE)}


class EmptyScope(BrainError):
    """The chosen scope holds no live observation."""


class BadBudget(BrainError):
    """A budget that is not a positive number of tokens."""


_BUDGET_SUFFIX = {"k": 1_000, "m": 1_000_000}
MAX_BUDGET = 10**12


def parse_budget(text: str | int) -> int:
    """A token budget from what a user typed: `8000`, `12k`, `1.5k`, `2M`, `12_000`, `12,000`."""
    raw = str(text).strip().lower().replace("_", "").replace(",", "")
    scale = _BUDGET_SUFFIX.get(raw[-1:], 1)
    number = raw[:-1] if scale > 1 else raw
    try:
        value = float(number) * scale
    except ValueError:
        value = float("nan")
    if value > MAX_BUDGET and value != float("inf"):
        raise BadBudget(f"The budget {one_line(str(text), 40)!r} is too large: the largest allowed budget is "
                        f"{MAX_BUDGET:,} tokens.")
    if not (1 <= value <= MAX_BUDGET) or value != int(value):
        raise BadBudget(f"The budget must be a positive whole number of tokens such as 8000 or 12k; "
                        f"got {one_line(str(text), 40)!r}.")
    return int(value)


def target_for(budget: int) -> int:
    """The pool size a prune aims at: 80% of the budget, at least 1."""
    return max(1, math.floor(TARGET_SHARE * budget))


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

    def drop_key(self) -> tuple:
        return (_COVERAGE_RANK[self.coverage], _RELEVANCE_RANK.get(self.relevance, len(DROP_RELEVANCE)),
                self.created_at, self.position)


@dataclass(frozen=True)
class PrunePreview:
    """A prune at one budget: what drops, what stays, and the pool it was computed on."""

    pool: PreparedPool
    budget: int
    target: int
    drop_count: int
    tokens_before: int
    tokens_after: int
    fell_back: bool

    @property
    def tokenizer(self) -> str:
        return self.pool.tokenizer.name

    @property
    def dropped(self) -> list[PoolEntry]:
        """Dropped rows, in drop order."""
        return list(self.pool.droppable[:self.drop_count])

    @property
    def dropped_ids(self) -> list[str]:
        return self.pool.droppable.ids(self.drop_count)

    @property
    def protected(self) -> Sequence[PoolEntry]:
        return self.pool.protected

    @property
    def kept(self) -> int:
        return len(self.pool) - self.drop_count

    @property
    def protected_tokens(self) -> int:
        """The protected rows' tokens, one separator per line (see `PreparedPool.protected_tokens`)."""
        return self.pool.protected_tokens

    def bar(self) -> tuple[int, int, int]:
        """(protected, kept droppable, dropped) tokens for a budget bar.

        Each part counts its rows plus one separator per line, so the parts add up
        to tokens_before + 1 (the pool joins n lines with n - 1 newlines), and a
        row's own count does not include its separator. The protected part is
        `protected_tokens`, the figure every text about the protected rows shows.
        """
        finish = self.pool.tokenizer.finish
        dropped_units = self.pool.dropped_units(self.drop_count) + self.drop_count
        protected_units = self.pool.protected_units + len(self.pool.protected)
        total_units = self.pool.total_units + len(self.pool)
        return (self.protected_tokens, finish(total_units - protected_units - dropped_units),
                finish(dropped_units))

    def to_json(self, run_id: int | None = None) -> dict[str, Any]:
        """The CLI's JSON shape (DESIGN §3); built from the pool's columns (100,000s of rows)."""
        with tags.gc_paused():  # 100,000s of new dicts, no cycle: collections would only walk them
            return self._json(run_id)

    def _json(self, run_id: int | None) -> dict[str, Any]:
        return {
            "budget": self.budget, "target": self.target, "tokenizer": self.tokenizer,
            "session": self.pool.session,
            "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
            "fell_back": self.fell_back,
            "dropped": self.pool.columns.dropped_json(self.pool.droppable.positions[:self.drop_count],
                                                     self.pool.tokenizer),
            "protected": self.pool.columns.protected_json(),
            "protected_tokens": self.protected_tokens,
            "kept": self.kept, "run_id": run_id,
        }


@dataclass(frozen=True)
class CurvePoint:
    budget: int
    target: int
    tokens_after: int
    dropped: int
    fell_back: bool


class PoolColumns:
    """The rows of a pool by position (the pool's order), as columns; `entry(k)` makes a PoolEntry.

    Built from PoolEntry objects (records, tests) or from a brain scan (a million rows
    without an object per row).
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
            [_RELEVANCE_RANK.get(r, len(DROP_RELEVANCE)) for r in relevance], dtype=np.uint8)
        self.dates_sorted = _non_decreasing(created) if dates_sorted is None else dates_sorted

    def __len__(self) -> int:
        return len(self.ids)

    def entry(self, k: int) -> PoolEntry:
        reason = self.relevance_reasons(k) if callable(self.relevance_reasons) else self.relevance_reasons[k]
        return PoolEntry(self.ids[k], k, self.created[k], COVERAGE_TAGS[self.coverage[k]], int(self.citations[k]),
                         self.relevance[k], reason, int(self.units[k]),
                         self.reasons_at(k) if self.protected_mask[k] else ())

    def dropped_json(self, positions: np.ndarray, tokenizer: Tokenizer) -> list[dict[str, Any]]:
        """The JSON rows of dropped entries (as PoolEntry would give them, without making one each)."""
        at = positions.tolist()
        ids, created, relevance = _take(self.ids, at), _take(self.created, at), _take(self.relevance, at)
        reasons = _take(self.relevance_reasons, at)
        # "<coverage> (cited by N reflections); " repeats: one string per (coverage, count)
        heads = {(tag, cited): f"{COVERAGE_TAGS[tag]} (cited by {cited} reflection{'' if cited == 1 else 's'}); "
                 for tag, cited in set(zip(self.coverage[positions].tolist(), self.citations[positions].tolist(),
                                           strict=True))}
        head_of = [heads[key] for key in zip(self.coverage[positions].tolist(), self.citations[positions].tolist(),
                                             strict=True)]
        coverage = [COVERAGE_TAGS[c] for c in self.coverage[positions].tolist()]
        tokens = tokenizer.finish_all(self.units[positions])
        return [{"id": oid, "coverage": tag, "relevance": rel, "created_at": made, "tokens": size,
                 "why": f"{head}{rel} relevance ({why}); created {made or 'at an unknown time'}"}
                for oid, tag, rel, made, size, head, why in zip(ids, coverage, relevance, created, tokens, head_of,
                                                                reasons, strict=True)]

    def protected_json(self) -> list[dict[str, Any]]:
        """The JSON rows of the protected entries, in pool order (id and reasons)."""
        at, reasons_at = self.protected.tolist(), self.reasons_at
        return [{"id": obs_id, "reasons": list(reasons_at(k))}
                for obs_id, k in zip(_take(self.ids, at), at, strict=True)]

    @classmethod
    def of_entries(cls, entries: Sequence[PoolEntry]) -> PoolColumns:
        """Columns of entries given in pool order (index = position)."""
        reasons = {k: tuple(e.reasons) for k, e in enumerate(entries) if e.reasons}
        return cls([e.id for e in entries], [e.created_at for e in entries],
                   np.array([_COVERAGE_RANK[e.coverage] for e in entries], dtype=np.uint8),
                   np.array([e.citation_count for e in entries], dtype=np.int32),
                   [e.relevance for e in entries], [e.relevance_reason for e in entries],
                   np.array([e.units for e in entries], dtype=np.int64),
                   np.array(sorted(reasons), dtype=np.int64), reasons.__getitem__)

    def drop_order(self, positions: np.ndarray) -> np.ndarray:
        """`positions` (unprotected rows) sorted into drop order: coverage, relevance, oldest, position."""
        # coverage < 3 and rank < 8: the key fits a byte, which numpy sorts stably by radix (fast)
        key = (self.coverage[positions] * np.uint8(8) + self.ranks[positions]).astype(np.uint8)
        if self.dates_sorted:  # the usual case: the pool is in created order already
            return positions[np.argsort(key, kind="stable")]
        created_rank = np.empty(len(self.created), dtype=np.int64)
        created_rank[sorted(range(len(self.created)), key=self.created.__getitem__)] = np.arange(len(self.created))
        return positions[np.lexsort((positions, created_rank[positions], key))]


def _take(column: Any, positions: list[int]) -> list[Any]:
    """column[k] for each position: a list, a _Picked or _Names view, scan reasons or a callable column."""
    if isinstance(column, (_ScanReasons, packed.PackedStrings)):
        return column.take(positions)
    if isinstance(column, _Names):
        names = column.names
        return [names[c] for c in column.codes[positions].tolist()]
    if isinstance(column, _Picked):
        values, picks = column.values, column.picks
        if isinstance(values, (_ScanReasons, packed.PackedStrings)):
            return values.take([picks[k] for k in positions])
        return [values[picks[k]] for k in positions]
    if callable(column):
        return [column(k) for k in positions]
    return [column[k] for k in positions]


class _ScanReasons:
    """The relevance reason of each scan row, by scan index."""

    def __init__(self, scan: BrainScan) -> None:
        self.quality, self.scan = scan.quality, scan

    def __getitem__(self, i: int) -> str:
        return _reason(int(self.scan.rules[i]), self.quality[i])

    def take(self, rows: list[int]) -> list[str]:
        """The reasons of these scan rows: one per rule, except where a quality score tells more."""
        codes = self.scan.rules[np.asarray(rows, dtype=np.int64)].tolist()
        by_rule = {code: _reason(code, None) for code in set(codes)}
        out = [by_rule[code] for code in codes]
        quality = self.quality
        for n, q in enumerate([quality[i] for i in rows]):
            if q is not None:
                out[n] = _reason(codes[n], q)
        return out


@lru_cache(maxsize=4096)
def _reason(rule: int, quality: Any) -> str:
    return mapping.relevance_of_rule(rule, quality)[1]


class _Picked(Sequence[Any]):
    """`values[picks[k]]` for each k: a column of a scan seen through the pool's positions."""

    def __init__(self, values: Any, picks: list[int]) -> None:  # anything indexable
        self.values, self.picks = values, picks

    def __len__(self) -> int:
        return len(self.picks)

    def __getitem__(self, k):  # type: ignore[no-untyped-def]
        if isinstance(k, slice):
            return [self.values[i] for i in self.picks[k]]
        return self.values[self.picks[k]]


class _Names(Sequence[str]):
    """`names[codes[k]]` for each k: a column of names kept as an array of small codes."""

    def __init__(self, names: Sequence[str], codes: np.ndarray) -> None:
        self.names, self.codes = names, codes

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, k):  # type: ignore[no-untyped-def]
        if isinstance(k, slice):
            return [self.names[c] for c in self.codes[k].tolist()]
        return self.names[int(self.codes[k])]


def _non_decreasing(values: Sequence[str]) -> bool:
    return all(map(operator.le, values, itertools.islice(values, 1, None)))


class EntryView(Sequence[PoolEntry]):
    """Pool entries at some positions, each made when read (otherwise it behaves as a list)."""

    def __init__(self, columns: PoolColumns, positions: np.ndarray) -> None:
        self.columns, self.positions = columns, positions

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
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
        return _take(self.columns.ids, self.positions[:count].tolist())


class PreparedPool:
    """A pool in drop order with prefix sums: `preview(budget)` is O(log n)."""

    def __init__(self, tokenizer: Tokenizer, columns: PoolColumns, session: str | None = None,
                 count_stats: CountStats | None = None, scan: BrainScan | None = None) -> None:
        self.tokenizer, self.columns, self.session = tokenizer, columns, session
        self.count_stats = count_stats or CountStats()
        self.scan = scan  # the brain scan the pool came from (what with_new_rows builds on)
        protected = columns.protected
        droppable = np.flatnonzero(~columns.protected_mask)
        self._order = columns.drop_order(droppable)
        self._protected = protected
        self._prefix = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(columns.units[self._order])])
        self.protected_units = int(columns.units[protected].sum())
        self.total_units = int(self._prefix[-1]) + self.protected_units
        self._size = len(columns)
        self.droppable = EntryView(columns, self._order)   # in drop order
        self.protected = EntryView(columns, protected)     # in the pool's order

    def __len__(self) -> int:
        return self._size

    def protected_by_size(self) -> EntryView:
        """The protected rows, largest first (ties in pool order), each made when read."""
        protected = self._protected
        return EntryView(self.columns, protected[np.argsort(-self.columns.units[protected], kind="stable")])

    @property
    def high_water(self) -> int:
        """The largest rowid the pool's scan read: rows above it arrived since."""
        return self.scan.high_water if self.scan is not None else 0

    @property
    def protected_tokens(self) -> int:
        """Tokens the protected rows hold: their lines plus one separator per line.

        The one figure for "the protected rows hold N tokens" (the Prune text, the
        budget bar's protected part, `prune --json`). It includes one separator
        per line, so it is not the sum of the rows' own counts, and it is one
        separator more than the pool's own total of those rows (n lines, n - 1
        newlines between them).
        """
        return self.tokenizer.finish(self.protected_units + len(self.protected))

    def tokens_after_dropping(self, count: int) -> int:
        """Pool tokens once the first `count` droppable rows are gone."""
        return self.tokenizer.pool_tokens(self.total_units - int(self._prefix[count]), self._size - count)

    def dropped_units(self, count: int) -> int:
        """Units (see tokenizers) of the first `count` droppable rows."""
        return int(self._prefix[count])

    @property
    def tokens_before(self) -> int:
        return self.tokens_after_dropping(0)

    def _drop_count(self, target: int) -> int:
        """The fewest rows to drop (in order) for the pool to be at or under `target`."""
        droppable = len(self.droppable)
        # tokens_after_dropping only falls as count grows, so "over target" is a
        # prefix of 0..droppable: binary search the first count that fits.
        fits = _Fits(self, target)
        return bisect_left(fits, True, 0, droppable + 1)

    def preview(self, budget: int) -> PrunePreview:
        """The prune at `budget` tokens."""
        budget = int(budget)
        target = target_for(budget)
        count = self._drop_count(target)
        fell_back = count > len(self.droppable)
        count = min(count, len(self.droppable))
        return PrunePreview(self, budget, target, count, self.tokens_before,
                            self.tokens_after_dropping(count), fell_back)

    def curve(self, budgets: Iterable[int]) -> list[CurvePoint]:
        """Tokens kept and rows dropped for each budget (cheap: a chart's data)."""
        points = []
        for budget in budgets:
            p = self.preview(budget)
            points.append(CurvePoint(p.budget, p.target, p.tokens_after, p.drop_count, p.fell_back))
        return points

    def with_new_rows(self, delta: BrainScan) -> PreparedPool:
        """This pool with the rows of `delta` folded in (from `tags.scan_rows_since`, same tokenizer).

        New live rows join the drop order; rows of the delta that were evicted leave;
        coverage and protection of every row are judged again on the delta's
        citations and reflections (a new reflection changes the coverage of the rows
        it cites; a new row can make another's identifier no longer unique). Only the
        delta's rows were read and analysed; the rest is array work.
        """
        if self.scan is None:
            raise ValueError("this pool was not prepared from a brain")
        with tags.gc_paused():  # a collection would walk every row's objects for a few new rows
            return pool_from_scan(self.scan.updated(delta), self.tokenizer, self.session, delta.count_stats)

    def refreshed(self, brain: Brain, changed_ids: Iterable[str] = ()) -> PreparedPool:
        """The pool with the rows that arrived since (and `changed_ids`) folded in."""
        with tags.gc_paused():
            delta = tags.scan_rows_since(brain, self.high_water, changed_ids, self.tokenizer, self.session,
                                         self.scan)
            return self.with_new_rows(delta)


class _Fits(Sequence[bool]):
    """Virtual sequence: does dropping `count` rows bring the pool within target? (for bisect)."""

    def __init__(self, pool: PreparedPool, target: int) -> None:
        self.pool, self.target = pool, target

    def __len__(self) -> int:
        return len(self.pool.droppable) + 2  # one past the end means "never fits"

    def __getitem__(self, count: int) -> bool:  # type: ignore[override]
        if count > len(self.pool.droppable):
            return True
        return self.pool.tokens_after_dropping(count) <= self.target


def build_pool(entries: list[PoolEntry], tokenizer: Tokenizer, session: str | None = None,
               count_stats: CountStats | None = None) -> PreparedPool:
    """Sort entries (given in pool order) into drop order, protected ones aside, with prefix sums."""
    return PreparedPool(tokenizer, PoolColumns.of_entries(entries), session, count_stats)


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
    scan = tags.scan_brain(brain, live_only=True, tokenizer=tokenizer, session=session, progress=progress)
    pool = pool_from_scan(scan, tokenizer, session, scan.count_stats)
    if session is not None and not len(pool):
        raise EmptyScope(
            f"No live observation belongs to session {session!r}. CLEO often leaves source_session_id "
            "empty; prune the whole pool instead (no --session).")
    return pool


def pool_from_scan(scan: BrainScan, tokenizer: Tokenizer, session: str | None = None,
                   count_stats: CountStats | None = None) -> PreparedPool:
    """The pool of a scan's live rows (one session's, when given), without an object per row.

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
        ids, created, reasons = scan.ids, scan.created, _ScanReasons(scan)

        def reasons_at(k: int) -> tuple[str, ...]:
            return tuple(scan.reasons_of(k))
    else:
        plist = positions.tolist()
        ids, created, reasons = _Picked(scan.ids, plist), _Picked(scan.created, plist), \
            _Picked(_ScanReasons(scan), plist)

        def reasons_at(k: int) -> tuple[str, ...]:
            return tuple(scan.reasons_of(plist[k]))

    columns = PoolColumns(ids, created, scan.coverage_codes()[positions], scan.citation_counts[positions],
                          _Names(mapping.RELEVANCES, codes), reasons, units,
                          np.flatnonzero(scan.protected[positions]), reasons_at, _RANK_OF_CODE[codes],
                          dates_sorted=True)  # a scan is kept oldest first
    return PreparedPool(tokenizer, columns, session, count_stats or scan.count_stats, scan=scan)


_RANK_OF_CODE = np.array([_RELEVANCE_RANK.get(r, len(DROP_RELEVANCE)) for r in mapping.RELEVANCES], dtype=np.uint8)


# --- commit (what the user saw) ---------------------------------------------------


@dataclass
class CommitResult:
    """What a prune commit did: the rows evicted, the previewed rows left alone, the pool now."""

    run_id: int
    budget: int
    target: int
    evicted: list[str]
    skipped: list[dict[str, str]]   # {id, why}: rows of the preview that changed meanwhile
    tokens_now: int                 # the live pool (scope) after the commit, new rows included
    new_rows: int                   # live rows in scope that arrived after the preview
    new_tokens: int
    hidden_from_cleo: bool = False
    stats: journal.RunStats | None = None  # what the chunks cost (time holding the write lock ...)

    @property
    def within_target(self) -> bool:
        return self.tokens_now <= self.target

    def lines(self) -> list[str]:
        """The result in words, for the CLI and the TUI."""
        out = [f"Committed as run {self.run_id}: {plural(len(self.evicted), 'observation')} evicted."]
        were = "was" if len(self.skipped) == 1 else "were"
        out += titled_lines(f"{plural(len(self.skipped), 'row')} of the preview changed since and {were} left alone:",
                            [f"{s['id']}: {s['why']}" for s in self.skipped])
        state = "within" if self.within_target else "over"
        if self.new_rows:
            out.append(f"{self.new_rows:,} new rows since the preview (+{self.new_tokens:,} tokens): "
                       f"the pool is now {self.tokens_now:,} tokens, {state} the target of {self.target:,}.")
        else:
            out.append(f"The pool is now {self.tokens_now:,} tokens, {state} the target of {self.target:,}.")
        if self.hidden_from_cleo and self.evicted:
            from cleo_tui.memory.cleo_effects import HIDDEN_FROM_CLEO
            out.append(HIDDEN_FROM_CLEO)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "evicted": len(self.evicted), "skipped": self.skipped,
                "tokens_now": self.tokens_now, "target": self.target, "within_target": self.within_target,
                "new_rows": self.new_rows, "new_tokens": self.new_tokens,
                "hidden_from_cleo": self.hidden_from_cleo}


PARAMS_IDS_MAX = 10_000


def commit_prune(brain: Brain, preview: PrunePreview) -> int:
    """Commit a preview (see `commit_preview`); returns the run id."""
    return commit_preview(brain, preview).run_id


def commit_preview(brain: Brain, preview: PrunePreview, hide_from_cleo: bool = False,
                   budget: journal.ChunkBudget | None = None) -> CommitResult:
    """Soft-evict exactly the preview's dropped rows that are still as previewed, in short chunks.

    Each row is evicted only while, inside its chunk's write transaction, it is
    still there, live, not pinned since, and its pool line measures the same
    units as in the preview (same text); others are left alone and listed in
    `skipped`. Rows that arrived after the preview are not part of the commit
    and do not block it; the result says where the pool stands against the
    target with them. One journalled run, 'in_progress' until its last chunk
    (journal module docstring: an interrupted commit is rolled back on the next
    open). `hide_from_cleo` also sets quality_score to `cleo_effects.HIDDEN_QUALITY`
    (the prior value is journalled, so undo restores it).
    """
    from cleo_tui.memory import cleo_effects

    if not preview.drop_count:
        raise curation.CurationError("This preview drops nothing (the pool is within its target); nothing to commit.")
    curation.require_eviction_columns(brain)
    extra = cleo_effects.hide_values(brain) if hide_from_cleo else {}
    ids = preview.dropped_ids
    entries = _dropped_in_rowid_order(preview)
    params = {"budget": preview.budget, "target": preview.target, "tokenizer": preview.tokenizer,
              "scope": preview.pool.session or "all", "count": len(ids),
              # a long list would make the first chunk long: the journal's change rows hold them all
              **({"ids": ids} if len(ids) <= PARAMS_IDS_MAX else {"ids_in_journal": True}),
              "tokens_before": preview.tokens_before, "tokens_after": preview.tokens_after,
              "fell_back": preview.fell_back, "hide_from_cleo": bool(extra)}
    evicted: list[str] = []
    skipped: list[dict[str, str]] = []
    changed_units: dict[str, int] = {}
    now = cleo_timestamp()
    run: list[int] = []

    def start(conn: Any) -> None:
        run.append(journal.start_run(conn, "prune", f"pruning {len(entries)} observations to {preview.budget} "
                                                    f"tokens ({preview.tokenizer})", params,
                                     status=journal.IN_PROGRESS))

    also = [c for c in curation.eviction_values(brain, now, extra) if c not in tags.POOL_COLUMNS]

    def step(conn: Any, chunk: list[tuple[str, int]], part: journal.Slice) -> int | None:
        known = len(skipped)
        fresh = _still_as_previewed(brain, conn, chunk, preview.pool.tokenizer, skipped, changed_units, also)
        done = curation.evict_rows(brain, conn, run[0], list(fresh), now, extra, read=fresh, part=part)
        evicted.extend(done)
        if len(done) == len(fresh):
            return None
        return _cut_at(chunk, done[-1] if done else None, skipped, known)

    def finish(conn: Any) -> None:
        journal.finish_run(conn, run[0], f"pruned {len(evicted)} observations to {preview.budget} tokens "
                                         f"({preview.tokenizer})" + (f", {len(skipped)} changed since left alone"
                                                                     if skipped else ""))

    stats = journal.write_in_chunks(brain, entries, step, start, finish, budget)
    evicted, skipped = _in_drop_order(ids, evicted, skipped)
    tokens_now, new_rows, new_tokens = _pool_now(brain, preview, changed_units)
    return CommitResult(run[0], preview.budget, preview.target, evicted, skipped, tokens_now, new_rows,
                        new_tokens, bool(extra), stats)


def _cut_at(chunk: list[tuple[str, int]], last: str | None, skipped: list[dict[str, str]], known: int) -> int:
    """A batch its chunk's clock cut after evicting `last`: how many of its items are done.

    The rest go into the next chunk, which reads them again: the rows of the rest this
    batch put into `skipped` (after its first `known`) come out.
    """
    done = 0 if last is None else next(k for k, (obs_id, _units) in enumerate(chunk) if obs_id == last) + 1
    rest = {obs_id for obs_id, _units in chunk[done:]}
    skipped[known:] = [s for s in skipped[known:] if s["id"] not in rest]
    return done


def _dropped_in_rowid_order(preview: PrunePreview) -> list[tuple[str, int]]:
    """(id, units) of each dropped row, in the order of the rows in the file (rowid) when the pool knows it.

    Each chunk then updates neighbouring rows: the pages it writes (table, indexes,
    full-text segments) are mostly its own, not pages the next chunks write again;
    in drop order a whole-pool commit wrote five times the pages of one UPDATE.
    Which rows are evicted does not depend on the order. No PoolEntry is made per
    row (a million of them would take seconds).
    """
    pool = preview.pool
    positions = pool.droppable.positions[:preview.drop_count]
    entries = list(zip(preview.dropped_ids, pool.columns.units[positions].tolist(), strict=True))
    rowids = pool_rowids(pool, preview.drop_count)
    if rowids is None:
        return entries
    return [entries[k] for k in np.argsort(rowids, kind="stable").tolist()]


def pool_rowids(pool: PreparedPool, dropped: int | None = None) -> np.ndarray | None:
    """The rowids of the pool's rows (of its first `dropped` in drop order), or None without a scan."""
    positions = np.arange(len(pool)) if dropped is None else pool.droppable.positions[:dropped]
    rows = _scan_rows(pool, positions)
    return None if rows is None else pool.scan.rowids[rows]  # type: ignore[union-attr]  # a scan was found


def _scan_rows(pool: PreparedPool, positions: np.ndarray) -> np.ndarray | None:
    """The scan's rows of these pool positions, or None when the pool has no scan to map them to.

    A pool of some of the scan's rows picks them (`_Picked`); a pool of every row (a live
    scan of the whole pool, the usual case) holds the scan's own columns, position for row.
    """
    scan, column = pool.scan, pool.columns.ids
    if scan is None:
        return None
    if isinstance(column, _Picked) and len(column.values) == len(scan.rowids):
        rows: np.ndarray = np.asarray(column.picks, dtype=np.int64)[positions]
        return rows
    if not isinstance(column, _Picked) and len(column) == len(scan.rowids):
        return positions
    return None


def _in_drop_order(ids: list[str], evicted: list[str],
                   skipped: list[dict[str, str]]) -> tuple[list[str], list[dict[str, str]]]:
    """The evicted ids and the skipped rows in the preview's drop order (they were written in rowid order)."""
    rank = {obs_id: k for k, obs_id in enumerate(ids)}
    return sorted(evicted, key=rank.__getitem__), sorted(skipped, key=lambda s: rank[s["id"]])


def _current_rows(brain: Brain, conn: Any, ids: list[Any], also: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """POOL_COLUMNS (and `also`) of the rows with these stored ids, by id as text (the first row of a spelling)."""
    have = brain.features.columns(cs.OBSERVATIONS)
    columns = (*tags.POOL_COLUMNS, *also)
    select = ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in columns)
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(ids), 400):
        part = ids[start:start + 400]
        for r in conn.execute(f"SELECT {select} FROM {cs.OBSERVATIONS} WHERE id IN ({','.join('?' * len(part))})",
                              part).fetchall():
            found.setdefault(mapping.as_text(r[0]), dict(zip(columns, r, strict=False)))
    return found


def _overrides(brain: Brain, conn: Any, ids: list[str]) -> dict[str, str]:
    if not ids or not brain.features.has_table(OVERRIDES):
        return {}
    rows = conn.execute(f"SELECT observation_id, relevance FROM {OVERRIDES} "
                        f"WHERE observation_id IN ({','.join('?' * len(ids))})", ids).fetchall()
    return {r[0]: r[1] for r in rows}


def _line_units(brain: Brain, rows: list[tuple[str, dict[str, Any]]], overrides: dict[str, str],
                tokenizer: Tokenizer) -> list[int]:
    lines = [render_line(obs_id, mapping.minute_timestamp(row["created_at"]),
                         mapping.derive_relevance(row, overrides.get(obs_id))[0], mapping.content_of(row))
             for obs_id, row in rows]
    return count_line_units(lines, tokenizer)[0]


def _still_as_previewed(brain: Brain, conn: Any, chunk: list[tuple[str, int]], tokenizer: Tokenizer,
                        skipped: list[dict[str, str]], changed_units: dict[str, int],
                        also: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """The chunk's (id, units) rows still live, unpinned and as large as previewed, by id; others into `skipped`.

    Each row holds POOL_COLUMNS and `also` as read now, its "id" as stored.
    """
    ids = [i for i, _ in chunk]
    rows = _current_rows(brain, conn, curation.id_probe(ids), also)
    overrides = _overrides(brain, conn, ids)
    present = [(i, rows[i]) for i in ids if i in rows]
    units = dict(zip((i for i, _ in present), _line_units(brain, present, overrides, tokenizer), strict=False))
    fresh: dict[str, dict[str, Any]] = {}
    for obs_id, previewed in chunk:
        row = rows.get(obs_id)
        why = None
        if row is None:
            why = "deleted since the preview"
        elif row["invalid_at"] is not None:
            why = "evicted since the preview (by CLEO or another run)"
        elif overrides.get(obs_id) == curation.PIN_RELEVANCE:
            why = "pinned since the preview"
        elif units[obs_id] != previewed:
            why = "text changed since the preview"
            changed_units[obs_id] = units[obs_id]
        if row is None or why:
            skipped.append({"id": obs_id, "why": why or ""})
        else:
            fresh[obs_id] = row
    return fresh


def _pool_now(brain: Brain, preview: PrunePreview, changed_units: dict[str, int]) -> tuple[int, int, int]:
    """(tokens of the live pool in scope now, rows new since the preview, their tokens); a read only."""
    pool = preview.pool
    where, params = "invalid_at IS NULL", []
    if pool.session is not None:
        where += " AND source_session_id = ?"
        params.append(pool.session)
    live = {mapping.as_text(r[0]) for r in brain.query(f"SELECT id FROM {cs.OBSERVATIONS} WHERE {where}", params)}
    units = count = 0
    columns = pool.columns
    known = _take(columns.ids, list(range(len(columns))))  # every row of the pool, droppable or protected
    for obs_id, previewed in zip(known, columns.units.tolist(), strict=True):
        if obs_id in live:
            units += changed_units.get(obs_id, previewed)
            count += 1
    seen = set(known)
    new_ids = [i for i in live if i not in seen]
    new_units = 0
    for start in range(0, len(new_ids), 400):
        part = new_ids[start:start + 400]
        with brain.lock:
            stored = curation.stored_ids(brain.conn, part)
            rows = _current_rows(brain, brain.conn, list(stored.values()))
            overrides = _overrides(brain, brain.conn, part)
        new_units += sum(_line_units(brain, list(rows.items()), overrides, pool.tokenizer))
    tokenizer = pool.tokenizer
    return (tokenizer.pool_tokens(units + new_units, count + len(new_ids)), len(new_ids),
            tokenizer.pool_tokens(new_units, len(new_ids)) if new_ids else 0)
