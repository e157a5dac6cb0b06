"""A scan's findings table (`FindingsTable`): each entry's identifiers and text reasons as
positions in one list of distinct strings, in flat arrays, with what runs over every entry
(identifier counts, which entries protect, which hold an identifier) done on the arrays.

At a million real-layout rows the table has 926,092 entries naming 13.7 million identifiers,
55,946 distinct. As tuples of tuples it held about 200 MB of Python objects, took 5.5 s to
decode from a snapshot and 0.6 s to count; as arrays (CSR: per entry an offset into one array
of string positions, two bytes each while there are at most 65,536 strings) it holds about
35 MB, loads as the arrays it was saved as, and counts in one `np.bincount` per part.

`table[k]` still gives entry k as `Findings` (identifiers, text reasons), for the callers that
need one entry. A fold grows a table without copying it (`appended`): the entries it adds
form a second part beside the first, copied again by the next fold until there are more than
`OVERLAY_MAX` of them, when both parts become one.
"""

from __future__ import annotations

import itertools
import operator
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from cleo_tui.memory.detectors import Findings
from cleo_tui.memory.distinct import distinct_values
from cleo_tui.memory.pool_scan.containers import OVERLAY_MAX

NO_FINDINGS: Findings = ((), ())  # table[0] of every findings table
ARRAYS = ("strings", "string_ends", "id_starts", "id_positions", "reason_starts", "reason_positions")
_OCCURRENCE_STEP = 1 << 18  # identifier occurrences counted at a time (`_Part.add_counts`; a C call each)
_WEIGHTED_STEP = 65_536  # entries held by several rows, counted at a time (`_Part.add_counts`)
_ENTRY_STEP = 65_536  # entries whose occurrences are flagged at a time (`_repeated`)
RECENT = 32_768  # findings a `TableBuilder` holds by value (then it forgets them and starts again)


def _repeated(flags: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """`np.repeat(flags, counts)`, `_ENTRY_STEP` entries at a time: numpy's repeat keeps the GIL,
    and at a million rows (13.7 million occurrences) one call held it 37 ms beside the UI thread."""
    if not len(flags):
        return np.zeros(0, dtype=flags.dtype)
    return np.concatenate([np.repeat(flags[start:start + _ENTRY_STEP], counts[start:start + _ENTRY_STEP])
                           for start in range(0, len(flags), _ENTRY_STEP)])


def _positions_dtype(strings: int) -> type[np.integer]:
    """The narrowest dtype holding a position among `strings` strings."""
    return np.uint16 if strings <= 1 << 16 else np.int32


@dataclass(frozen=True)
class _Part:
    """Consecutive entries: entry k's identifiers are `strings[p]` for p in
    `id_positions[id_starts[k]:id_starts[k + 1]]`, its text reasons likewise."""

    id_starts: np.ndarray        # int64, one more than entries
    id_positions: np.ndarray     # uint16 or int32
    reason_starts: np.ndarray    # int64
    reason_positions: np.ndarray  # uint16 or int32

    def __len__(self) -> int:
        return len(self.id_starts) - 1

    @classmethod
    def encoded(cls, entries: Iterable[Findings], where: dict[str, int], strings: list[str]) -> _Part:
        """`entries` as a part, each new string appended to `strings` (and put in `where`)."""
        encoder = _Encoder(where, strings)
        for findings in entries:
            encoder.add(findings)
        return encoder.part()

    @classmethod
    def joined(cls, first: _Part, second: _Part) -> _Part:
        """The entries of both, in order (a copy of both)."""
        def starts(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return np.concatenate([a, b[1:] + a[-1]])

        def positions(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            dtype = np.result_type(a.dtype, b.dtype)
            return np.concatenate([a.astype(dtype, copy=False), b.astype(dtype, copy=False)])

        return cls(starts(first.id_starts, second.id_starts), positions(first.id_positions, second.id_positions),
                   starts(first.reason_starts, second.reason_starts),
                   positions(first.reason_positions, second.reason_positions))

    def entry(self, k: int, strings: list[str]) -> Findings:
        ids = self.id_positions[self.id_starts[k]:self.id_starts[k + 1]].tolist()
        reasons = self.reason_positions[self.reason_starts[k]:self.reason_starts[k + 1]].tolist()
        return (tuple([strings[p] for p in ids]) if ids else (),
                tuple([strings[p] for p in reasons]) if reasons else ())

    def entries_with(self, occurrences: np.ndarray) -> np.ndarray:
        """The entry (in this part) of each position in `id_positions`."""
        return np.searchsorted(self.id_starts, occurrences, side="right") - 1

    def add_counts(self, totals: np.ndarray, per_entry: np.ndarray) -> None:
        """Add to `totals` (per string) each entry's identifiers, `per_entry[k]` times each."""
        starts, positions = self.id_starts, self.id_positions
        lengths = np.diff(starts)
        # The entries of one live row each (most of them) by bincounts without weights, a step of
        # occurrences at a time (bincount makes its input int64: 110 MB at once for 13.7 million);
        # those of several rows, weighted, a step of entries at a time.
        once = _repeated(per_entry == 1, lengths)
        for start in range(0, len(positions), _OCCURRENCE_STEP):
            end = start + _OCCURRENCE_STEP
            totals += np.bincount(positions[start:end][once[start:end]], minlength=len(totals))
        several = np.flatnonzero(per_entry > 1)
        step = _WEIGHTED_STEP
        for start in range(0, len(several), step):
            chosen = several[start:start + step]
            counts = lengths[chosen]
            at = np.repeat(starts[chosen] - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
            weights = np.repeat(per_entry[chosen], counts)
            totals += np.bincount(positions[at], weights=weights, minlength=len(totals)).astype(np.int64)

    def protecting(self, weak: np.ndarray) -> np.ndarray:
        """bool per entry: it has a text reason, or an identifier where `weak` is True."""
        protected = np.diff(self.reason_starts) > 0
        if len(weak):
            protected[self.entries_with(np.flatnonzero(weak[self.id_positions]))] = True
        return protected

    def holding_flagged(self, flags: np.ndarray) -> np.ndarray:
        """bool per entry: it has an identifier where `flags` is True."""
        held = np.zeros(len(self), dtype=bool)
        if len(flags):
            held[self.entries_with(np.flatnonzero(flags[self.id_positions]))] = True
        return held

    def holding(self, positions: np.ndarray) -> np.ndarray:
        """The entries (in this part) with an identifier at one of `positions`."""
        if not len(positions):
            return np.zeros(0, dtype=np.int64)
        return distinct_values(self.entries_with(np.flatnonzero(np.isin(self.id_positions, positions))))


class _Encoder:
    """Builds a part an entry at a time (in `array`s: four bytes a position, no object each)."""

    def __init__(self, where: dict[str, int], strings: list[str]) -> None:
        self.where, self.strings = where, strings
        self.id_starts, self.id_positions = array("q", [0]), array("i")
        self.reason_starts, self.reason_positions = array("q", [0]), array("i")

    def _position(self, value: str) -> int:
        at = self.where.get(value)
        if at is None:
            at = self.where[value] = len(self.strings)
            self.strings.append(value)
        return at

    def __len__(self) -> int:
        return len(self.id_starts) - 1

    def entry(self, k: int) -> Findings:
        """Entry k added so far."""
        strings = self.strings
        ids = self.id_positions[self.id_starts[k]:self.id_starts[k + 1]]
        reasons = self.reason_positions[self.reason_starts[k]:self.reason_starts[k + 1]]
        return tuple([strings[p] for p in ids]), tuple([strings[p] for p in reasons])

    def add(self, findings: Findings) -> None:
        ids, reasons = findings
        self.id_positions.extend(map(self._position, ids))
        self.id_starts.append(len(self.id_positions))
        self.reason_positions.extend(map(self._position, reasons))
        self.reason_starts.append(len(self.reason_positions))

    def part(self) -> _Part:
        dtype = _positions_dtype(len(self.strings))
        return _Part(np.frombuffer(self.id_starts, dtype=np.int64).copy(),
                     np.frombuffer(self.id_positions, dtype=np.int32).astype(dtype),
                     np.frombuffer(self.reason_starts, dtype=np.int64).copy(),
                     np.frombuffer(self.reason_positions, dtype=np.int32).astype(dtype))


class FindingsTable(Sequence[Findings]):
    """The distinct findings of a scan's rows (see the module docstring); entry 0 is `NO_FINDINGS`."""

    def __init__(self, strings: list[str], base: _Part, grown: _Part | None = None) -> None:
        self.strings = strings  # every identifier and reason, once (only ever appended to, by `appended`)
        self.base, self.grown = base, grown
        self._split = len(base)
        self._where: dict[str, int] | None = None

    @classmethod
    def of(cls, entries: Iterable[Findings]) -> FindingsTable:
        """A table of these entries (the first must be `NO_FINDINGS`)."""
        strings: list[str] = []
        return cls(strings, _Part.encoded(entries, {}, strings))

    @classmethod
    def empty(cls) -> FindingsTable:
        """The table of no findings: `NO_FINDINGS` alone."""
        return cls.of([NO_FINDINGS])

    @property
    def parts(self) -> list[_Part]:
        return [self.base] if self.grown is None else [self.base, self.grown]

    def __len__(self) -> int:
        return self._split + (len(self.grown) if self.grown is not None else 0)

    def __getitem__(self, k):  # type: ignore[no-untyped-def]
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(k)
        part, j = self._located(k)
        return part.entry(j, self.strings)

    def _located(self, k: int) -> tuple[_Part, int]:
        """The part holding entry k (0 <= k < len), and k's place in it."""
        if k < self._split:
            return self.base, k
        assert self.grown is not None
        return self.grown, k - self._split

    def identifiers_where(self, k: int, flags: Sequence[bool]) -> list[str]:
        """Entry k's identifiers whose strings are flagged (a bool per string: a list is read
        fastest, for the few positions of one entry), in order."""
        part, j = self._located(k)
        starts = part.id_starts
        strings = self.strings
        return [strings[p] for p in part.id_positions[starts.item(j):starts.item(j + 1)].tolist() if flags[p]]

    def text_reasons(self, k: int) -> tuple[str, ...]:
        """Entry k's text reasons."""
        part, j = self._located(k)
        start, end = part.reason_starts.item(j), part.reason_starts.item(j + 1)
        strings = self.strings
        return tuple([strings[p] for p in part.reason_positions[start:end].tolist()]) if end > start else ()

    def __iter__(self) -> Iterator[Findings]:
        return (self[k] for k in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (FindingsTable, list)):
            return len(self) == len(other) and all(map(operator.eq, self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FindingsTable({len(self)} entries, {len(self.strings)} strings)"

    @property
    def where(self) -> dict[str, int]:
        """Position of each string in `strings` (made when first asked: 5 ms at 56,000 strings)."""
        if self._where is None or len(self._where) != len(self.strings):
            self._where = {s: k for k, s in enumerate(self.strings)}
        return self._where

    def appended(self, entries: list[Findings]) -> FindingsTable:
        """This table with `entries` after it; this one is left as it was, and its first part is
        shared, not copied (the added entries are copied again by the next fold, until there are
        more than `OVERLAY_MAX`: then the two parts are joined)."""
        if not entries:
            return self
        strings, where = list(self.strings), dict(self.where)
        return self._with(_Part.encoded(entries, where, strings), strings, where)

    def _with(self, added: _Part, strings: list[str], where: dict[str, int]) -> FindingsTable:
        """This table's entries and `added`'s, over `strings` (this table's, and more after them)."""
        grown = added if self.grown is None else _Part.joined(self.grown, added)
        table = FindingsTable(strings, self.base, grown) if len(grown) <= OVERLAY_MAX else \
            FindingsTable(strings, _Part.joined(self.base, grown))
        table._where = where
        return table

    def identifier_counts(self, per_entry: np.ndarray) -> np.ndarray:
        """int64 per string of `strings`: how many times it is an identifier of an entry, each
        entry counted `per_entry[k]` times (its live rows)."""
        totals = np.zeros(len(self.strings), dtype=np.int64)
        offset = 0
        for part in self.parts:
            part.add_counts(totals, per_entry[offset:offset + len(part)])
            offset += len(part)
        return totals

    def protecting(self, weak: np.ndarray) -> np.ndarray:
        """bool per entry: it has a text reason, or an identifier whose string is `weak` (bool per string)."""
        return np.concatenate([part.protecting(weak) for part in self.parts])

    def holding_flagged(self, flags: np.ndarray) -> np.ndarray:
        """bool per entry: it has an identifier whose string is flagged (bool per string)."""
        return np.concatenate([part.holding_flagged(flags) for part in self.parts])

    def holding(self, identifiers: Iterable[str]) -> set[int]:
        """The entries with any of these identifiers."""
        where = self.where
        positions = np.array([where[x] for x in identifiers if x in where], dtype=np.int64)
        found: set[int] = set()
        offset = 0
        for part in self.parts:
            found.update((part.holding(positions) + offset).tolist())
            offset += len(part)
        return found

    def arrays(self, prefix: str = "") -> dict[str, np.ndarray]:
        """The table as arrays to store, named `prefix` + one of `ARRAYS` (`from_arrays` reads them
        back): its strings as UTF-8 (lone surrogates kept) with their ends in characters, and its
        entries as one part."""
        part = self.base if self.grown is None else _Part.joined(self.base, self.grown)
        text = "".join(self.strings)
        ends = np.cumsum(np.fromiter(map(len, self.strings), dtype=np.int64, count=len(self.strings)))
        arrays: tuple[np.ndarray, ...] = (np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8), ends,
                                          part.id_starts, part.id_positions, part.reason_starts, part.reason_positions)
        return {prefix + name: array for name, array in zip(ARRAYS, arrays, strict=True)}

    @classmethod
    def from_arrays(cls, stored: Mapping[str, np.ndarray], prefix: str = "") -> FindingsTable:
        """The table `arrays(prefix)` stored (in a dict or an open npz file); KeyError, ValueError
        (or UnicodeDecodeError) if they are not there or do not add up."""
        arrays = {name: stored[prefix + name] for name in ARRAYS}
        text = bytes(arrays["strings"]).decode("utf-8", "surrogatepass")
        ends = arrays["string_ends"].astype(np.int64).tolist()
        if ends != sorted(ends) or (ends and ends[-1] != len(text)) or (ends and ends[0] < 0):
            raise ValueError("damaged")
        strings = [text[a:b] for a, b in itertools.pairwise([0, *ends])]
        if len(set(strings)) != len(strings):
            raise ValueError("damaged")  # (a string counted under two positions would count wrong)
        dtype = _positions_dtype(len(strings))
        columns = []
        for name in ("id", "reason"):
            starts, positions = arrays[f"{name}_starts"].astype(np.int64), arrays[f"{name}_positions"]
            if positions.dtype.kind not in "iu" or not len(starts) or starts[0] != 0 or starts[-1] != len(positions) \
                    or (np.diff(starts) < 0).any() or (len(positions) and (int(positions.min()) < 0 or
                                                                           int(positions.max()) >= len(strings))):
                raise ValueError("damaged")
            columns += [starts, positions.astype(dtype, copy=False)]
        part = _Part(*columns)
        if len(part.id_starts) != len(part.reason_starts) or not len(part) or \
                part.id_starts[1] != 0 or part.reason_starts[1] != 0:
            raise ValueError("damaged")  # (entry 0 is NO_FINDINGS)
        return cls(strings, part)


class TableBuilder:
    """A table grown by a scan an entry at a time (`add`), without an object per entry: the
    entries it adds with equal findings share one (found by their hash: the dict holds ints,
    not the findings, which a cold scan of a million rows would otherwise keep until its end)."""

    def __init__(self, table: FindingsTable) -> None:
        self.table = table
        self.strings, self.where = list(table.strings), dict(table.where)
        self.encoder = _Encoder(self.where, self.strings)
        self.seen: dict[int, int] = {hash(NO_FINDINGS): 0}
        self.recent: dict[Findings, int] = {}

    def add(self, findings: Findings) -> int:
        """The entry holding `findings` (a new one unless this builder added them already).

        The last `RECENT` findings added are also held themselves, by value: an entry found there
        is not decoded from the arrays to be compared (half the rows of a cold scan of the demo
        brain repeat another's findings: `add` 0.20-0.25 → 0.13-0.17 s at 100,000 rows); bounded, so a
        million rows' findings are not all held at once."""
        at = self.recent.get(findings)
        if at is not None:
            return at
        key = hash(findings)
        at = self.seen.get(key)
        if at is None or self._entry(at) != findings:
            at = len(self.table) + len(self.encoder)
            self.encoder.add(findings)
            self.seen.setdefault(key, at)
        if len(self.recent) >= RECENT:
            self.recent.clear()
        self.recent[findings] = at
        return at

    def _entry(self, at: int) -> Findings:
        split = len(self.table)
        return self.table[at] if at < split else self.encoder.entry(at - split)

    def built(self) -> FindingsTable:
        """The table with the entries added (the given one if none were)."""
        if not len(self.encoder):
            return self.table
        return self.table._with(self.encoder.part(), self.strings, self.where)


__all__ = ["NO_FINDINGS", "FindingsTable", "TableBuilder"]
