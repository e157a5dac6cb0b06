"""A column of short ASCII strings (a scan's ids and dates) as one fixed-width bytes array.

A million ids and dates as Python strings cost about 150 MB (a 60-70 byte object and an
8-byte pointer each), a copy of their lists touches every object, and every full garbage
collection walks them. Packed, they cost their characters (about 15 and 19 bytes a row),
copying is one memcpy, and the collector never looks inside. A string is made when read.

Only columns that fit are packed: every value ASCII, without NUL (numpy drops trailing
NULs), and at most `PACK_WIDTH_MAX` long (the width is the longest value's). Any other
column stays the list it was, so the functions here take either.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

PACK_WIDTH_MAX = 64
_READ_PART = 65_536  # strings made at a time when iterating
# Strings decoded, hashed or packed in one C call (`hashes`, `pack`): such a call never lets
# another thread in (it runs no bytecode), and 65,536 at a time held the GIL 10-25 ms each
# (a packed million cited ids: 70 ms in three calls) while a first open's tags loaded beside
# the UI thread; 16,384 hold it a few ms, at no measurable cost.
_C_PART = 16_384
_KEPT_AS_LISTS: ContextVar[bool] = ContextVar("kept_as_lists", default=False)


class PackedStrings(Sequence[str]):
    """A read-only sequence of strings held as a numpy `S` array (see the module docstring)."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        if isinstance(index, slice):
            return list(map(bytes.decode, self.data[index].tolist()))
        value: bytes = self.data.item(index)
        return value.decode()

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self.data), _READ_PART):
            yield from map(bytes.decode, self.data[start:start + _READ_PART].tolist())

    def __contains__(self, value: object) -> bool:
        key = _packable_one(value, self.width)
        return key is not None and bool((self.data == key).any())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedStrings):
            return len(self) == len(other) and bool((self.data == other.data).all())
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (compared by value, as the list it replaces)

    def __repr__(self) -> str:
        return f"PackedStrings({len(self)} × S{self.width})"

    @property
    def width(self) -> int:
        return int(self.data.dtype.itemsize)

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    def hashes(self) -> np.ndarray:
        """int64 `hash()` of each string (as of `map(hash, column)`, a part at a time, without a
        generator step per string)."""
        data = self.data
        parts = [np.fromiter(map(hash, map(bytes.decode, data[start:start + _C_PART].tolist())), dtype=np.int64)
                 for start in range(0, len(data), _C_PART)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def take(self, positions: Iterable[int] | np.ndarray) -> list[str]:
        """The strings at these positions (in one pass in C, then one decode each)."""
        at = positions if isinstance(positions, np.ndarray) else np.fromiter(positions, dtype=np.int64)
        return list(map(bytes.decode, self.data[at].tolist()))

    def tolist(self) -> list[str]:
        return list(self)


def pack(values: Sequence[str]) -> Sequence[str]:
    """`values` packed when they fit (module docstring), else as they are (always within `kept_as_lists`).

    Checked and packed `_C_PART` values at a time (each part at its own width, joined at the
    widest), so that no single C call holds the GIL long (see `_C_PART`)."""
    if isinstance(values, PackedStrings) or _KEPT_AS_LISTS.get():
        return values
    parts = []
    for start in range(0, len(values), _C_PART):
        part = values[start:start + _C_PART]
        if not _packable(part):
            return values
        parts.append(np.array(part, dtype=f"S{max(1, max(map(len, part), default=1))}"))
    return PackedStrings(np.concatenate(parts) if parts else np.zeros(0, dtype="S1"))


@contextmanager
def kept_as_lists() -> Iterator[None]:
    """Within it (in this thread), `pack` leaves columns as the lists they are.

    For a command that reads a brain once, prints and exits (`prune --json`): packing saves
    memory in a process that keeps its scan, but a one-shot command only pays for it, packing
    the ids and dates and making strings of them again for its output (0.03-0.04 s of CPU at
    100,000 rows, of about 1.1 s)."""
    token = _KEPT_AS_LISTS.set(True)
    try:
        yield
    finally:
        _KEPT_AS_LISTS.reset(token)


def _packable(values: Sequence[Any]) -> bool:
    try:
        joined = "".join(values)  # (a TypeError for a value that is no string: in C, not a loop in Python)
    except TypeError:
        return False
    return joined.isascii() and "\x00" not in joined and max(map(len, values), default=0) <= PACK_WIDTH_MAX


def _packable_one(value: object, width: int) -> bytes | None:
    """`value` as the bytes a packed column of `width` would hold, or None if it cannot be there."""
    if type(value) is not str or not value.isascii() or "\x00" in value or len(value) > width:
        return None
    return value.encode()


def take(column: Sequence[str], positions: Sequence[int] | np.ndarray) -> list[str]:
    """column[i] for each position, packed or not."""
    if isinstance(column, PackedStrings):
        return column.take(positions)
    at = positions.tolist() if isinstance(positions, np.ndarray) else positions
    return [column[i] for i in at]


def empty(column: Sequence[str]) -> np.ndarray:
    """bool per string: it is empty (in C, `_C_PART` strings at a time when not packed)."""
    if isinstance(column, PackedStrings):
        return np.asarray(column.data == b"")
    parts = [np.fromiter(map(operator.not_, column[start:start + _C_PART]), dtype=bool)
             for start in range(0, len(column), _C_PART)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)


def reordered(column: Sequence[str], order: np.ndarray) -> Sequence[str]:
    """The column in `order` (positions), packed if it was."""
    if isinstance(column, PackedStrings):
        return PackedStrings(column.data[order])
    return take(column, order)


def appended(column: Sequence[str], values: list[str]) -> Sequence[str]:
    """A new column: `column` then `values` (the given one is left as it was)."""
    if not values:
        return column
    if isinstance(column, PackedStrings):
        if _packable(values):
            return PackedStrings(np.concatenate([column.data, np.array(values, dtype="S")]))
        return [*column, *values]
    return [*column, *values]


def replaced(column: Sequence[str], changes: Mapping[int, str]) -> Sequence[str]:
    """A new column with the values at some positions changed (the given one is left as it was)."""
    if not changes:
        return column
    if isinstance(column, PackedStrings):
        values = list(changes.values())
        if _packable(values):
            wide = max(column.width, max(map(len, values)))
            data = column.data.astype(f"S{wide}")  # (a copy, at the wider width if need be)
            data[np.fromiter(changes, dtype=np.int64, count=len(changes))] = np.array(values, dtype=f"S{wide}")
            return PackedStrings(data)
        column = list(column)
    else:
        column = list(column)
    for i, value in changes.items():
        column[i] = value
    return column


def date_order(created: Sequence[str], rowids: np.ndarray) -> np.ndarray:
    """The positions sorted by (date, rowid): in arrays when the dates are packed."""
    if isinstance(created, PackedStrings):
        return np.lexsort((rowids, created.data)).astype(np.int64)
    return np.array(sorted(range(len(created)), key=lambda i: (created[i], int(rowids[i]))), dtype=np.int64)


__all__ = ["PackedStrings", "appended", "date_order", "pack", "reordered", "replaced", "take"]
