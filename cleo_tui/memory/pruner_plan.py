"""The pruning plan: a pool in drop order with prefix sums, and the prune at any budget.

The drop order does not depend on the budget, so `PreparedPool` computes it once
with the prefix sums of the droppable rows' units; a budget is then a binary
search (O(log n)), which is what lets a budget slider move freely. The rules are
in the `pruner` module docstring.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from cleo_tui.memory import tags
from cleo_tui.memory.pruner_columns import EntryView, PoolColumns, PoolEntry, columns_of_scan
from cleo_tui.memory.token_cache import CountStats
from cleo_tui.memory.tokenizers import Tokenizer

if TYPE_CHECKING:
    from cleo_tui.brain.store import Brain
    from cleo_tui.memory.pool_scan import BrainScan

TARGET_SHARE = 0.8
JSON_PART = 4_096  # rows of a long JSON list made at a time (`PrunePreview.json_rows`)


def target_for(budget: int) -> int:
    """The pool size a prune aims at: 80% of the budget, at least 1."""
    return max(1, math.floor(TARGET_SHARE * budget))


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
        """The name of the tokenizer the pool was measured with."""
        return self.pool.tokenizer.name

    @property
    def dropped(self) -> list[PoolEntry]:
        """Dropped rows, in drop order."""
        return list(self.pool.droppable[:self.drop_count])

    @property
    def dropped_ids(self) -> list[str]:
        """Ids of the dropped rows, in drop order (no entry made)."""
        return self.pool.droppable.ids(self.drop_count)

    @property
    def protected(self) -> Sequence[PoolEntry]:
        """The protected rows, in pool order."""
        return self.pool.protected

    @property
    def kept(self) -> int:
        """Rows the pool keeps (protected ones included)."""
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
            shape = self.json_head(run_id)
            for key, parts in self.json_rows().items():
                shape[key] = [row for part in parts for row in part]
            return shape

    def json_head(self, run_id: int | None = None) -> dict[str, Any]:
        """`to_json` with its long lists ("dropped", "protected") left empty: `json_rows` makes them."""
        return {
            "budget": self.budget, "target": self.target, "tokenizer": self.tokenizer,
            "session": self.pool.session,
            "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
            "fell_back": self.fell_back, "dropped": [], "protected": [],
            "protected_tokens": self.protected_tokens,
            "kept": self.kept, "run_id": run_id,
        }

    def json_rows(self, part: int | None = None) -> dict[str, Iterator[list[dict[str, Any]]]]:
        """The rows of `to_json`'s long lists, each list `part` rows (`JSON_PART`) at a time, made
        when iterated: a printer that takes each part as it comes never holds 100,000 dicts at once."""
        part = part or JSON_PART
        pool = self.pool
        columns = pool.columns
        dropped = pool.droppable.positions[:self.drop_count]
        protected = pool.protected.positions
        return {"dropped": (columns.dropped_json(dropped[at:at + part], pool.tokenizer)
                            for at in range(0, len(dropped), part)),
                "protected": (columns.protected_json(protected[at:at + part])
                              for at in range(0, len(protected), part))}


@dataclass(frozen=True)
class CurvePoint:
    """One budget of a curve: its target, the pool after the prune, the rows dropped."""

    budget: int
    target: int
    tokens_after: int
    dropped: int
    fell_back: bool


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
        """Pool tokens before any drop."""
        return self.tokens_after_dropping(0)

    def _drop_count(self, target: int) -> int:
        """The fewest rows to drop (in order) for the pool to be at or under `target`."""
        droppable = len(self.droppable)
        # tokens_after_dropping only falls as count grows, so "over target" is a
        # prefix of 0..droppable: binary search the first count that fits.
        return bisect_left(WithinTargetAfterDropping(self, target), True, 0, droppable + 1)

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


class WithinTargetAfterDropping(Sequence[bool]):
    """For bisect: whether dropping `count` rows (the index) brings the pool within the target.

    A virtual sequence of booleans, False then True; one past the last droppable row
    means "never fits" and reads True so the search ends there.
    """

    def __init__(self, pool: PreparedPool, target: int) -> None:
        self.pool, self.target = pool, target

    def __len__(self) -> int:
        return len(self.pool.droppable) + 2  # one past the end means "never fits"

    def __getitem__(self, count: int) -> bool:  # type: ignore[override]  # bisect reads ints only
        if count > len(self.pool.droppable):
            return True
        return self.pool.tokens_after_dropping(count) <= self.target


def build_pool(entries: list[PoolEntry], tokenizer: Tokenizer, session: str | None = None,
               count_stats: CountStats | None = None) -> PreparedPool:
    """Sort entries (given in pool order) into drop order, protected ones aside, with prefix sums."""
    return PreparedPool(tokenizer, PoolColumns.of_entries(entries), session, count_stats)


def pool_from_scan(scan: BrainScan, tokenizer: Tokenizer, session: str | None = None,
                   count_stats: CountStats | None = None) -> PreparedPool:
    """The pool of a scan's live rows (one session's, when given), without an object per row.

    The scan must hold line units for that scope (`scan_brain(..., tokenizer, session)`).
    """
    return PreparedPool(tokenizer, columns_of_scan(scan, session), session, count_stats or scan.count_stats,
                        scan=scan)
