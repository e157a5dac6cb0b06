"""Chunked writes: a large step written in short transactions under one journal run.

`run_chunks` calls a step in one short write transaction after another (each a
*chunk*), `write_in_chunks` feeds a list of items through it. Inside a chunk the
batches are sized by what the last ones cost (`Pace`, `Slice`), so a chunk ends
near its deadline whatever a row costs (CLEO's full-text triggers make an UPDATE
cost ten times a plain one, and now and then far more); inside a batch the clock
is read before every row (`Slice.while_time`), so a batch whose rows turn slow
ends the chunk one row past its deadline and the rest go into the next chunk.
Between chunks the lock is left free as long as `journal_pacing.Pacer` says (the
WAL checkpointed first, `_rest`), and `RunStats` keeps what the run cost.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from cleo_tui import collector
from cleo_tui.brain.journal_pacing import CHUNK_PAUSE, ChunkBudget, Pacer
from cleo_tui.brain.journal_runs import IN_BATCH
from cleo_tui.brain.other_processes import opened_elsewhere

SLICE_SECONDS = 0.01  # one batch aims at this long, so the clock is read often enough
FIRST_BATCH = 4       # items in a run's first batch, before any cost is known


class Pace:
    """What a run's items and commits cost so far: sizes the batches of its next chunks."""

    def __init__(self, budget: ChunkBudget) -> None:
        self.budget = budget
        self.per_item: float | None = None  # seconds, a moving average
        self.commit = 0.0                   # seconds a COMMIT took, likewise

    def learn(self, items: int, seconds: float, cut: bool = False) -> None:
        """Take in what the last batch cost: a dearer one at once, a cheaper one averaged in.

        Dear rows come in spells (the disk busy with a full-text merge or a checkpoint),
        so the batch after a slow one must already be small; a cheaper batch only
        brings the estimate down gradually. A batch its chunk's clock `cut` is averaged
        in either way: it read all its rows but wrote only some, so its cost a row is
        overstated, and the cut already keeps the chunk short (taken at once, it would
        shrink the next batches to a row or two for many chunks, each paying a batch's
        reads and a pause).
        """
        if items <= 0:
            return
        cost = seconds / items
        if self.per_item is None or (cost >= self.per_item and not cut):
            self.per_item = cost
        else:
            self.per_item = 0.7 * self.per_item + 0.3 * cost

    def learn_commit(self, seconds: float) -> None:
        """Take in what a COMMIT cost: a dearer one at once, a cheaper one averaged in."""
        self.commit = seconds if seconds > self.commit else 0.8 * self.commit + 0.2 * seconds

    def slice(self, began: float) -> Slice:
        """The time budget of a chunk whose transaction began at `began` (perf_counter)."""
        work = max(self.budget.seconds - self.commit, self.budget.seconds / 4)
        return Slice(self, began + work, self.budget.rows)


class Slice:
    """One chunk's share of the clock: `take` says how many items the next batch may hold."""

    def __init__(self, pace: Pace, deadline: float, cap: int) -> None:
        self.pace, self.deadline, self.left = pace, deadline, cap
        self.done = 0     # items done in this chunk (`did`)
        self.cut = False  # a batch stopped at the deadline (its rows turned slow): the chunk ends
        self._taken_at = 0.0
        self._rows = 0    # rows written in this chunk

    def while_time(self, items: Iterable[Any]) -> Iterator[Any]:
        """The items, one by one, until the deadline passes (the chunk's first always).

        Rows come in slow spells (the disk busy: every statement, CLEO's own too,
        costs tens of times the usual for a second or two): a batch sized on the last
        ones' cost would then hold the lock many times the chunk's time. Reading the
        clock before each row ends the chunk one row past its deadline instead.
        """
        for item in items:
            if self._rows and time.perf_counter() >= self.deadline:
                self.cut = True
                return
            self._rows += 1
            yield item

    def take(self, available: int = IN_BATCH) -> int:
        """Items for the next batch (at most `available`); 0 when the chunk is full.

        Until an item is done in this chunk a batch gets at least one, so every chunk
        makes progress: a step whose first batch found nothing to do (an interrupted
        undo's reverts all done, its marks left) still gets a batch after its clock ran out.
        """
        now = time.perf_counter()
        room = self.deadline - now
        if self.done and (room <= 0 or self.cut):
            return 0
        per_item = self.pace.per_item
        if per_item is None:
            count = FIRST_BATCH
        else:
            count = int(min(room, SLICE_SECONDS) / per_item) if per_item > 0 else IN_BATCH
        count = min(count, available, self.left, IN_BATCH)
        if count <= 0:
            if self.done or self.left <= 0 or available <= 0:
                return 0
            count = 1
        self._taken_at = now
        return count

    def did(self, items: int) -> None:
        """`items` of the last batch were done: learn what they cost."""
        self.left -= items
        self.done += items
        self.pace.learn(items, time.perf_counter() - self._taken_at, self.cut)

    @property
    def full(self) -> bool:
        """The chunk can take no more: cut, its cap reached, or past its deadline."""
        return self.cut or self.left <= 0 or time.perf_counter() >= self.deadline


class ChunkTarget(Protocol):
    """What a chunked run writes through: a Brain (store.py), or a bare connection at recovery."""

    @property
    def conn(self) -> sqlite3.Connection: ...

    @property
    def lock(self) -> AbstractContextManager[Any]: ...

    def write(self, sweep_check: bool = True) -> AbstractContextManager[sqlite3.Connection]: ...


ChunkStep = Callable[[sqlite3.Connection, Slice, bool], bool]  # (conn, slice, first chunk) -> done


@dataclass
class RunStats:
    """What a chunked run cost, measured by the run itself (`run_chunks`)."""

    chunks: int = 0
    held: float = 0.0     # seconds the write lock was held, from BEGIN's grant to COMMIT's end, all chunks
    longest: float = 0.0  # the longest chunk, likewise
    longest_commit: float = 0.0  # the longest COMMIT (writing the chunk's pages to the WAL)
    waited: float = 0.0   # seconds BEGIN waited for the lock (another writer held it)
    paused: float = 0.0   # seconds between chunks (the checkpoints included)
    checkpoints: float = 0.0  # seconds of the pauses spent checkpointing the WAL (the lock free)
    cut: int = 0          # chunks ended at their deadline by rows that turned slow (`Slice.while_time`)
    pauses: int = 0       # pauses taken between chunks (none while nobody else writes, most of the time)
    unneeded: int = 0     # probe pauses left out: no other process had the brain open

    def add_chunk(self, held: float, waited: float, commit: float, cut: bool) -> None:
        """Count one chunk that held the lock `held` s after waiting `waited` s for it."""
        self.chunks += 1
        self.held += held
        self.longest = max(self.longest, held)
        self.longest_commit = max(self.longest_commit, commit)
        self.waited += waited
        self.cut += cut

    def to_json(self) -> dict[str, Any]:
        """The figures for `--json` and the benchmarks (seconds and ms rounded)."""
        return {"chunks": self.chunks, "held_s": round(self.held, 3), "longest_ms": round(self.longest * 1000, 1),
                "longest_commit_ms": round(self.longest_commit * 1000, 1),
                "waited_s": round(self.waited, 3), "paused_s": round(self.paused, 3),
                "checkpoints_s": round(self.checkpoints, 3), "cut": self.cut, "pauses": self.pauses,
                "unneeded_pauses": self.unneeded}


def run_chunks(target: ChunkTarget, step: ChunkStep, budget: ChunkBudget | None = None) -> RunStats:
    """Call `step` in one short write transaction after another until it says it is done; what it cost.

    The first chunk passes the sweep gate (a run that started also finishes). While
    the run lasts, garbage collection waits (`collector.paused`: a full collection of
    a big pool takes hundreds of ms, inside a chunk or making a pause long) and the
    WAL is checkpointed by this run between chunks, never by CLEO's next commit
    (`_own_checkpoints`). How long the lock stays free after each chunk is the
    pacer's decision (`journal_pacing`): as long as a waiting writer needs while
    another connection writes, rarely while nobody does.
    """
    budget = budget or ChunkBudget()
    pace = Pace(budget)
    pacer = Pacer(budget)
    watch = OtherWriters(target)
    stats = RunStats()
    first = True
    with _own_checkpoints(target), collector.paused():
        while True:
            asked = time.perf_counter()
            with target.write(sweep_check=first) as conn:
                began = time.perf_counter()
                part = pace.slice(began)
                done = step(conn, part, first)
                committing = time.perf_counter()
            now = time.perf_counter()
            pace.learn_commit(now - committing)
            held = now - began
            stats.add_chunk(held, began - asked, now - committing, part.cut)
            first = False
            if done:
                return stats
            rest = pacer.pause_after_chunk(held, began - asked)
            if rest and not pacer.live and not watch.anyone_else():
                rest = 0.0  # no other process has the brain open: nobody can be waiting for the lock
                stats.unneeded += 1
                stats.checkpoints += _timed_checkpoint(target)
            if rest:
                stats.checkpoints += _rest(target, rest)
            extra = pacer.after_gap(watch.wrote(), held, rest)
            if extra:
                pause(extra)
            stats.paused += time.perf_counter() - now
            stats.pauses += bool(rest)


class OtherWriters:
    """Whether another connection (CLEO) committed since the last look (SQLite's `data_version`),
    and whether another process has the brain open at all (`other_processes`)."""

    def __init__(self, target: ChunkTarget) -> None:
        self.target = target
        self.version = self._read()
        with target.lock:
            try:
                self.path = str(target.conn.execute("PRAGMA database_list").fetchone()[2] or "")
            except sqlite3.Error:
                self.path = ""

    def anyone_else(self) -> bool:
        """True unless no other process has the brain open (then nobody can be waiting to write)."""
        return opened_elsewhere(self.path)

    def _read(self) -> int | None:
        """The writing connection's data_version (None when it cannot be read)."""
        with self.target.lock:
            try:
                return int(self.target.conn.execute("PRAGMA data_version").fetchone()[0])
            except sqlite3.Error:
                return None

    def wrote(self) -> bool:
        """True when another connection committed since the last call."""
        version = self._read()
        changed, self.version = version != self.version, version
        return changed


def write_in_chunks(target: ChunkTarget, items: list[Any],
                    step: Callable[[sqlite3.Connection, list[Any], Slice], int | None],
                    start: Callable[[sqlite3.Connection], None],
                    finish: Callable[[sqlite3.Connection], None],
                    budget: ChunkBudget | None = None) -> RunStats:
    """Write `items` in short transactions (`run_chunks`): `start` in the first, `finish` in the last.

    `step(conn, batch, part)` writes one batch and returns how many of its items
    it did (None: all); fewer when `part`'s clock ran out (`Slice.while_time`):
    the rest go into the next chunk. Batches are sized so a chunk holds the lock
    about `budget.seconds`.
    """
    position = 0

    def chunk(conn: sqlite3.Connection, part: Slice, first: bool) -> bool:
        nonlocal position
        if first:
            start(conn)
        while position < len(items):
            count = part.take(len(items) - position)
            if not count:
                return False
            did = step(conn, items[position:position + count], part)
            did = count if did is None else did
            position += did
            part.did(did)
            if did < count:
                return False
        finish(conn)
        return True

    return run_chunks(target, chunk, budget)


def pause(seconds: float | None = None) -> None:
    """Leave the write lock free between two chunks, long enough for a waiting writer to take it."""
    time.sleep(CHUNK_PAUSE if seconds is None else seconds)  # not a synchronisation: the busy handler needs the gap


def _rest(target: ChunkTarget, seconds: float) -> float:
    """The pause between two chunks: checkpoint what the last chunks wrote, then sleep; the checkpoint's seconds.

    The checkpoint comes first, right after the COMMIT: SQLite checkpoints in whichever
    connection's commit finds 1,000 frames in the WAL, so a CLEO writer that took the
    lock in the pause would otherwise copy our chunk's pages in its own commit
    (measured: hundreds of ms). While ours runs, CLEO's commit skips its checkpoint
    (the checkpoint lock is taken). A CLEO write during ours leaves its own frames
    uncopied and keeps the WAL from starting over, so every later CLEO commit in the
    pause would checkpoint (two fsyncs each): checkpoint again until all is copied,
    for as long as the pause lasts. The checkpoints' time counts towards the pause
    (the lock is free meanwhile).
    """
    if seconds <= 0:
        return 0.0
    started = time.perf_counter()
    end = started + seconds
    while not _checkpoint(target) and time.perf_counter() < end:
        pass
    checkpoint = time.perf_counter() - started
    pause(max(0.0, end - time.perf_counter()))
    return checkpoint


def _timed_checkpoint(target: ChunkTarget) -> float:
    """One passive checkpoint of what the last chunks wrote (the WAL kept short, as a pause would); its seconds."""
    started = time.perf_counter()
    _checkpoint(target)
    return time.perf_counter() - started


def _checkpoint(target: ChunkTarget) -> bool:
    """A passive checkpoint of the WAL; False when frames are left uncopied (a writer wrote meanwhile)."""
    with target.lock:
        try:
            busy, frames, copied = target.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.OperationalError:
            return True  # busy or not in WAL mode: CLEO's connection or the next pause does it
    return bool(busy) or frames == copied


@contextmanager
def _own_checkpoints(target: ChunkTarget) -> Iterator[None]:
    """For a run's length, this connection checkpoints the WAL in the pauses, not at its COMMIT.

    SQLite's auto-checkpoint runs in whichever connection's commit makes the WAL
    pass 1000 pages: with ours writing thousands, that would often be CLEO's next
    insert, which would then copy our pages and wait for it. The pause checkpoints
    instead, with the lock free; the setting is put back (and a last checkpoint
    done) at the end.
    """
    with target.lock:
        prior = target.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        target.conn.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        yield
    finally:
        with target.lock:
            target.conn.execute(f"PRAGMA wal_autocheckpoint = {int(prior)}")
            try:
                target.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.OperationalError:
                pass

