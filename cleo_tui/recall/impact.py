"""The recall impact of a curation step: which recorded retrievals would lose a result.

Every retrieval the brain recorded (CLEO's `brain_retrieval_log`, cleo-tui's and hippo's
recall traces: `recorded.recorded_retrievals`) returned some ids. A step that evicts a set
of observations (a prune at a budget, a duplicate merge, an approved supersede, a single
evict) takes results away from the retrievals that returned any of them. For that set:

- `retrievals` (N): every recorded retrieval, unreadable ones included (they are recorded,
  but no id of theirs can be lost);
- `affected_retrievals` (K): retrievals that returned at least one id the step evicts;
- `affected_used` (M): affected retrievals among whose lost results is an entry that
  `brain_usage_log` records as used by a task (`used = 1`): "3 of them used by a task".
  CLEO's usage log names the entry and the task, not the retrieval, so "used" is the
  entry's, wherever it was recalled;
- `lost`: the evicted ids that some retrieval returned, each with how many retrievals
  returned it (`recalls`), the newest of them (`last_recalled_at`) and its task uses.

One computation serves the TUI and the CLI. `RecallIndex` is read once (in a worker);
`impact(ids)` answers any set from an inverted index; `plan(drop_order)` prepares a
pruner's drop order once — each retrieval's earliest drop position among its ids, sorted —
so that any budget is a binary search on the number of rows dropped (`DropImpact.at`),
which is what lets the Prune pane's line follow the budget keys. Nothing here writes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.store import Brain
from cleo_tui.memory.distinct import distinct_values
from cleo_tui.recall.recorded import EntryUsage, RecordedRetrieval, entry_usage, recorded_retrievals
from cleo_tui.safe_text import one_line, plural

_NEVER = np.iinfo(np.int64).max  # "not in the drop order": never dropped


@dataclass(frozen=True)
class EntryRecalls:
    """How often one id was recalled, when last, and how often a task used it."""

    recalls: int
    last_recalled_at: str | None
    used: int = 0

    def text(self, compact: bool = False) -> str:
        """`recalled 7×, last 2026-11-28` (compact: `7× 2026-11-28`); "" when never recalled."""
        if not self.recalls:
            return ""
        day = (self.last_recalled_at or "")[:10]
        if compact:
            return f"{self.recalls}× {day}".strip()
        return f"recalled {self.recalls}×" + (f", last {day}" if day else "")


NOT_RECALLED = EntryRecalls(0, None, 0)


@dataclass(frozen=True)
class LostEntry:
    """An evicted id that recorded retrievals returned."""

    id: str
    recalls: int
    last_recalled_at: str | None
    used_by_tasks: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "recalls": self.recalls, "last_recalled_at": self.last_recalled_at,
                "used_by_tasks": self.used_by_tasks}


class LostView(Sequence[LostEntry]):
    """The lost ids of an impact as index codes; each LostEntry is made when read."""

    def __init__(self, source: RecallIndex, codes: np.ndarray) -> None:
        self.source, self.codes = source, codes

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, k):  # type: ignore[no-untyped-def]
        if isinstance(k, slice):
            return [self.source.lost_entry(int(c)) for c in self.codes[k].tolist()]
        return self.source.lost_entry(int(self.codes[k]))

    def __iter__(self) -> Iterator[LostEntry]:
        return (self.source.lost_entry(c) for c in self.codes.tolist())

    def most_recalled(self, limit: int | None = None) -> list[LostEntry]:
        """The lost entries, most recalled first (ties: newest recall, then id); the first `limit`."""
        source = self.source
        codes = self.codes.tolist()
        codes.sort(key=lambda c: (-int(source.recalls[c]), _negated(source.last[c]), source.ids[c]))
        return [source.lost_entry(c) for c in codes[:limit]]


def _negated(stamp: str | None) -> tuple[int, ...]:
    """A sort key that puts the newest stamp first."""
    return tuple(-ord(ch) for ch in _comparable(stamp) or "")


def _comparable(stamp: str | None) -> str | None:
    """CLEO writes `2026-05-01 10:00:00`, traces `2026-05-01T10:00:00Z`: one spelling to compare."""
    return None if stamp is None else stamp.replace("T", " ", 1)


@dataclass(frozen=True)
class RecallImpact:
    """What one step does to recall (see the module docstring for each figure)."""

    retrievals: int
    affected_retrievals: int
    affected_used: int
    lost: Sequence[LostEntry]
    unreadable: int = 0  # recorded retrievals whose returned ids could not be read

    def sentence(self) -> str:
        """The one line every face shows: "12 of 340 recorded recalls would lose a result; 3 of them used by a task"."""
        n, k, m = self.retrievals, self.affected_retrievals, self.affected_used
        if not n:
            return "No recorded recall to weigh this against (no CLEO retrieval log or recall traces)."
        if not k:
            return f"None of {n:,} recorded recall{'s' if n != 1 else ''} would lose a result."
        return (f"{k:,} of {n:,} recorded recall{'s' if n != 1 else ''} would lose a result; "
                f"{m:,} of them used by a task")

    def short(self) -> str:
        """The same figures in fewer words, for a narrow line: "12 of 340 recalls lose a result, 3 used by a task"."""
        n, k, m = self.retrievals, self.affected_retrievals, self.affected_used
        if not n:
            return "no recorded recalls"
        if not k:
            return f"none of {plural(n, 'recall')} loses a result"
        return f"{k:,} of {plural(n, 'recall')} {'loses' if k == 1 else 'lose'} a result, {m:,} used by a task"

    def most_recalled(self, limit: int | None = None) -> list[LostEntry]:
        """The lost entries, most recalled first."""
        if isinstance(self.lost, LostView):
            return self.lost.most_recalled(limit)
        return sorted(self.lost, key=lambda e: (-e.recalls, e.id))[:limit]

    def confirmation(self, named: int = 3) -> str:
        """The sentence and the most recalled of what the step loses, for a confirmation dialog."""
        text = self.sentence()
        lost = self.most_recalled(named)
        if lost:
            text += f" ({len(self.lost):,} recalled memor{'y' if len(self.lost) == 1 else 'ies'} evicted)."
            text += " Most recalled: " + ", ".join(
                f"{one_line(e.id, 40)} ({e.recalls}×{', used by a task' if e.used_by_tasks else ''})"
                for e in lost) + "."
        return text

    def to_json(self) -> dict[str, Any]:
        """`{"retrievals", "affected_retrievals", "affected_used", "lost": [{"id", "recalls", "last_recalled_at"}]}`,
        the lost most recalled first (plus `used_by_tasks` each, and `unreadable`)."""
        lost = self.most_recalled()
        return {"retrievals": self.retrievals, "affected_retrievals": self.affected_retrievals,
                "affected_used": self.affected_used, "lost": [e.to_json() for e in lost],
                "unreadable": self.unreadable}


@dataclass(frozen=True)
class UnavailableImpact:
    """The recorded recalls could not be read: every face says so instead of a figure."""

    problem: str

    def sentence(self) -> str:
        return f"unavailable: {self.problem}"

    short = confirmation = sentence

    def to_json(self) -> dict[str, Any]:
        return {"unavailable": self.problem}


AnyImpact = RecallImpact | UnavailableImpact  # what a face shows: figures, or why there are none


def impact_of(brain: Brain, evicted: Iterable[str] | None = None,
              drop_order: Sequence[str] | None = None, count: int = 0) -> AnyImpact:
    """The recall impact of evicting `evicted`, or of the first `count` rows of `drop_order` (read now)."""
    index, problem = RecallIndex.load_or_problem(brain)
    if index is None:
        return UnavailableImpact(problem or "")
    if drop_order is not None:
        return index.plan(drop_order).at(count)
    return index.impact(evicted or ())


class RecallIndex:
    """Every recorded retrieval's returned ids, indexed both ways (read once; answers many steps)."""

    def __init__(self, retrievals: Sequence[RecordedRetrieval], usage: Mapping[str, EntryUsage]) -> None:
        codes: dict[str, int] = {}
        ids: list[str] = []
        recalls: list[int] = []
        last: list[str | None] = []
        flat_codes: list[int] = []
        flat_retrievals: list[int] = []
        unreadable = 0
        for r_index, retrieval in enumerate(retrievals):
            unreadable += retrieval.malformed
            raw = retrieval.created_at or None
            stamp = _comparable(raw)
            seen: set[int] = set()
            for entry in retrieval.returned:
                code = codes.get(entry)
                if code is None:
                    code = codes[entry] = len(ids)
                    ids.append(entry)
                    recalls.append(0)
                    last.append(None)
                if code in seen:  # an id twice in one retrieval is one recall
                    continue
                seen.add(code)
                flat_codes.append(code)
                flat_retrievals.append(r_index)
                recalls[code] += 1
                if stamp is not None and (last[code] is None or stamp > _comparable(last[code])):  # type: ignore[operator]
                    last[code] = raw
        self.count = len(retrievals)
        self.unreadable = unreadable
        self.codes, self.ids, self.last = codes, ids, last
        self.recalls = np.asarray(recalls, dtype=np.int64)
        self.used = np.asarray([usage[i].used if i in usage else 0 for i in ids], dtype=np.int64)
        self.flat_codes = np.asarray(flat_codes, dtype=np.int64)
        self.flat_retrievals = np.asarray(flat_retrievals, dtype=np.int64)
        order = np.argsort(self.flat_codes, kind="stable")  # postings: the retrievals of each code
        self._postings = self.flat_retrievals[order]
        self._starts = np.searchsorted(self.flat_codes[order], np.arange(len(ids) + 1))

    @classmethod
    def load(cls, brain: Brain) -> RecallIndex:
        """Read every recorded retrieval and CLEO's usage log (a read only; call from a worker)."""
        return cls(recorded_retrievals(brain), entry_usage(brain))

    @classmethod
    def load_or_problem(cls, brain: Brain) -> tuple[RecallIndex | None, str | None]:
        """`load`, or None and why the logs could not be read (a lock, a damaged table): a face then
        says the impact is unavailable instead of failing the step it belongs to."""
        try:
            return cls.load(brain), None
        except (sqlite3.Error, BrainError) as exc:
            return None, f"the recorded recalls could not be read ({one_line(str(exc), 160)})"

    def __len__(self) -> int:
        return self.count

    def recalls_of(self, entry_id: str) -> EntryRecalls:
        """How often `entry_id` was recalled and when last (cheap: for a table cell)."""
        code = self.codes.get(entry_id)
        if code is None:
            return NOT_RECALLED
        return EntryRecalls(int(self.recalls[code]), self.last[code], int(self.used[code]))

    def lost_entry(self, code: int) -> LostEntry:
        return LostEntry(self.ids[code], int(self.recalls[code]), self.last[code], int(self.used[code]))

    def _retrievals_of(self, codes: np.ndarray) -> np.ndarray:
        """The distinct retrievals that returned any of these codes."""
        if not len(codes):
            return np.zeros(0, dtype=np.int64)
        starts, stops = self._starts[codes], self._starts[codes + 1]
        parts = [self._postings[a:b] for a, b in zip(starts.tolist(), stops.tolist(), strict=True)]
        return distinct_values(np.concatenate(parts))

    def impact(self, evicted: Iterable[str]) -> RecallImpact:
        """The impact of evicting exactly these ids (a merge, a supersede, an evict)."""
        get = self.codes.get
        found = sorted({c for c in (get(i) for i in evicted) if c is not None})
        codes = np.asarray(found, dtype=np.int64)
        affected = self._retrievals_of(codes)
        used = self._retrievals_of(codes[self.used[codes] > 0]) if len(codes) else affected
        return RecallImpact(self.count, len(affected), len(used), LostView(self, codes), self.unreadable)

    def plan(self, drop_order: Sequence[str]) -> DropImpact:
        """Prepare a pruner's drop order once: then `at(count)` answers any budget by binary search."""
        return DropImpact(self, drop_order)


class DropImpact:
    """The impact of dropping the first `count` rows of one drop order, for any count.

    Each retrieval is affected from its earliest drop position among the ids it returned
    on; those positions sorted, "affected at count" is how many are below count. The same
    for the positions of used entries, and for the lost ids themselves.
    """

    def __init__(self, index: RecallIndex, drop_order: Sequence[str]) -> None:
        self.index = index
        first: dict[int, int] = {}  # code → its first drop position (a dict: numpy scalars are slow one by one)
        get, setdefault = index.codes.get, first.setdefault
        for k, entry in enumerate(drop_order):
            code = get(entry)
            if code is not None:
                setdefault(code, k)
        position = np.full(len(index.ids), _NEVER, dtype=np.int64)
        position[np.fromiter(first, dtype=np.int64, count=len(first))] = np.fromiter(
            first.values(), dtype=np.int64, count=len(first))
        at = position[index.flat_codes]
        self._first = _sorted_minimum(index.count, index.flat_retrievals, at)
        used_at = np.where(index.used[index.flat_codes] > 0, at, _NEVER)
        self._first_used = _sorted_minimum(index.count, index.flat_retrievals, used_at)
        dropped = np.flatnonzero(position != _NEVER)
        order = np.argsort(position[dropped], kind="stable")
        self._lost_codes = dropped[order]
        self._lost_positions = position[dropped][order]

    def at(self, count: int) -> RecallImpact:
        """The impact of dropping the first `count` rows (three binary searches)."""
        index = self.index
        affected = int(np.searchsorted(self._first, count, side="left"))
        used = int(np.searchsorted(self._first_used, count, side="left"))
        lost = int(np.searchsorted(self._lost_positions, count, side="left"))
        return RecallImpact(index.count, affected, used, LostView(index, self._lost_codes[:lost]), index.unreadable)


def _sorted_minimum(count: int, groups: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The smallest value of each of `count` groups (`_NEVER` for a group with none), sorted."""
    first = np.full(count, _NEVER, dtype=np.int64)
    if len(values):
        np.minimum.at(first, groups, values)
    return np.sort(first)
