"""The index and sequence types a scan shares between folds instead of copying them.

- `HashIndex`: position by value in two numpy arrays (a dict entry per id costs 60 MB at a million);
- `OverlaidMapping`: the entries a fold changed, over the mapping it started from;
- `AppendedList`: a list with the items a fold appended after it (a grown column of objects).

Past `OVERLAY_MAX` added entries, each is folded into one plain container again.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from cleo_tui.memory import packed_strings as packed


class HashIndex(Mapping[Any, int]):
    """Position by value, as `dict(zip(values, range(len(values))))` answers it (the last
    position of a repeated value), in two arrays instead of a dict entry per value (60 MB
    for a million ids): a scan's ids.

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
        """The last position of `key`, or `default`."""
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


def index_with_appended(index: Mapping[Any, int], ids: Sequence[Any], old: int) -> Mapping[Any, int]:
    """`index` once the values from `old` on were appended to `ids`: those layered over it
    (a few rows cost a few entries, not a copy), or an index built again when they are many."""
    base, top = (index.base, dict(index.top)) if isinstance(index, OverlaidMapping) else (index, {})
    top.update(zip(ids[old:], range(old, len(ids)), strict=True))
    if not isinstance(base, HashIndex):
        return overlaid(base, top)
    return HashIndex(ids) if len(top) > OVERLAY_MAX else OverlaidMapping(base.over(ids), top)


def positions_of(index: Mapping[str, int], keys: Sequence[Any]) -> np.ndarray:
    """int64 row of each key in a scan's `index` (a layered one too), -1 where it is not."""
    if isinstance(index, HashIndex):
        return index.positions(keys)
    if isinstance(index, OverlaidMapping) and isinstance(index.base, HashIndex):
        top = index.top
        at = index.base.positions(keys)
        for n, key in enumerate(keys):
            if key in top:
                at[n] = top[key]
        return at
    get = index.get
    return np.array([get(k, -1) for k in keys], dtype=np.int64)


class OverlaidMapping(Mapping[Any, Any]):
    """A read-only mapping: `top`'s entries over `base`'s (neither is changed)."""

    def __init__(self, base: Mapping[Any, Any], top: dict[Any, Any]) -> None:
        self.base, self.top = base, top

    def __getitem__(self, key: Any) -> Any:
        top = self.top
        return top[key] if key in top else self.base[key]

    def get(self, key: Any, default: Any = None) -> Any:
        """`top`'s value of key, else `base`'s, else `default`."""
        top = self.top
        return top[key] if key in top else self.base.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.top or key in self.base

    def __iter__(self) -> Iterator[Any]:
        yield from self.top
        yield from (k for k in self.base if k not in self.top)

    def __len__(self) -> int:
        return len(self.base) + sum(1 for k in self.top if k not in self.base)


OVERLAY_MAX = 20_000  # past this many entries on top, one plain dict is cheaper to read


def overlaid(base: Mapping[Any, Any], top: dict[Any, Any]) -> Mapping[Any, Any]:
    """`top` over `base` without copying `base`; layers do not stack (the tops are merged), and a
    large top is folded into a plain dict."""
    if isinstance(base, OverlaidMapping):
        layer: OverlaidMapping = base
        base, top = layer.base, {**layer.top, **top}
    if len(top) > OVERLAY_MAX:
        return {**base, **top}
    return OverlaidMapping(base, top)



class AppendedList(Sequence[Any]):
    """A list with more items after it, without copying the list (a column a fold grew).

    Growing one again copies only its added items; past `OVERLAY_MAX` of them it becomes one list."""

    def __init__(self, base: list[Any], extra: list[Any]) -> None:
        self.base, self.extra, self._split = base, extra, len(base)

    @classmethod
    def of(cls, items: Sequence[Any], more: list[Any]) -> Sequence[Any]:
        """`items` with `more` after them: appended to a list without copying it, else one new list."""
        base, extra = (items.base, [*items.extra, *more]) if isinstance(items, AppendedList) else (items, more)
        if not isinstance(base, list) or len(extra) > OVERLAY_MAX:
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
        return list(self) == list(other) if isinstance(other, (list, AppendedList)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]



def taken_in_order(values: Sequence[Any], order: np.ndarray | None) -> list[Any]:
    """values[i] for each i of order (all of them, as they are, when order is None)."""
    if order is None:
        return values if isinstance(values, list) else list(values)
    if len(order) < 2:
        return [values[i] for i in order.tolist()]
    return list(operator.itemgetter(*order.tolist())(values))


