"""How long a chunked run leaves SQLite's write lock free between two chunks: the pacing decision.

No clock and no connection here: `Pacer` is told what each chunk and pause saw
and answers how long to pause (`journal_chunks.run_chunks` does the sleeping).

A chunk holds the write lock for about `ChunkBudget.seconds` (its COMMIT
included), then leaves it free long enough for a writer waiting in SQLite's busy
handler to get in. That handler (CLEO's, like ours: `busy_timeout`) sleeps
BUSY_DELAYS_MS between two tries, so a writer that has waited w seconds tries
again at most `poll_gap(w)` later: the lock must stay free at least that long or
the writer sleeps through the gap, waits for the whole next chunk and, its sleeps
growing, may starve.

A writer sleeping in the busy handler leaves no trace anywhere (SQLite releases
every lock before it sleeps); the only way to know one is there is to leave the
lock free for a poll gap and see whether someone committed (`PRAGMA
data_version`). So the pauses themselves are the probe, and the pacer decides how
often to probe:

- **live** (someone committed in the last pause, or our BEGIN had to wait for the
  lock): every chunk is followed by a pause as long as a waiting writer's sleep
  (`ChunkBudget.pause_after`), longer after a chunk of a slow spell of the disk;
- **quiet** (the last pause saw nobody): chunks follow each other with no pause
  for up to `QUIET_STRETCH` of holding the lock (two chunks), then a probe pause.
  A writer that arrives meanwhile has waited less than 128 ms when the pause
  comes, so it sleeps at most 25 ms and the probe pause (30 ms) lets it in: its
  wait stays under about 160 ms, and from then on the run is live again. On a
  quiet brain this halves the pauses of a whole-pool commit, which were nearly
  half of its wall time (benchmarks.live_writes, quiet case).
- **alone** (no other process has the brain open, `other_processes`): nobody can
  be waiting, so `journal_chunks.run_chunks` leaves the probe out as well and only
  checkpoints there. A process that opens the brain meanwhile is seen at the next
  probe, as a writer arriving in a quiet stretch is let in by it. On the demo
  brain this took a quiet whole-pool commit from 1.6 to 1.4 times a bare UPDATE.
"""

from __future__ import annotations

BUSY_DELAYS_MS = (1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100)  # SQLite's sqliteDefaultBusyCallback
PAUSE_MARGIN = 0.005  # the waiting writer must also be scheduled and take the lock
SLOW_SPELL = 2.0      # a chunk that held the lock this many times its budget: the disk is in a slow spell
# A chunk holds the write lock about this long, its COMMIT included (or ends after this
# many rows): CLEO's writers wait at most about one chunk (the bound is 250 ms).
# At 1,000,000 rows the disk, not the CPU, sets the pace: a row's UPDATE costs 20-50x the
# usual for a second or two now and then (the writes of CLEO's full-text merges and the
# checkpoints queueing up), so a chunk aims well below the bound to leave room for one.
CHUNK_ROWS = 100_000
CHUNK_SECONDS = 0.06
# Between chunks the lock is left free at least this long, longer after a long chunk
# (`ChunkBudget.pause_after`: a gap shorter than a waiting writer's sleep would starve it).
CHUNK_PAUSE = 0.03
# While nobody else writes, the lock is held up to this long between two pauses: a writer that
# started waiting within it has waited under 128 ms, so it sleeps at most 25 ms (`poll_gap`).
QUIET_STRETCH = 0.125
BEGIN_WAITED = 0.001  # our BEGIN waited this long for the lock: another writer held it


def poll_gap(waited: float) -> float:
    """How long a writer that has already waited `waited` seconds may sleep before its next try."""
    total = 0.0
    for delay in BUSY_DELAYS_MS:
        total += delay / 1000
        if waited < total:
            return delay / 1000
    return BUSY_DELAYS_MS[-1] / 1000


class ChunkBudget:
    """How long a chunk may hold the write lock (COMMIT included), and a cap on its items.

    `pause` is the least time the lock is left free between two chunks; the pause
    actually taken is longer when the chunk ran long (`poll_gap`). A `pause` of 0
    (tests that ask so) turns pacing off: chunks follow each other at once.
    """

    def __init__(self, rows: int | None = None, seconds: float | None = None, pause: float | None = None) -> None:
        self.rows = rows or CHUNK_ROWS
        self.seconds = CHUNK_SECONDS if seconds is None else seconds
        self.pause = CHUNK_PAUSE if pause is None else pause

    def pause_after(self, held: float) -> float:
        """The lock-free time after a chunk that kept the lock `held` seconds (0 in tests that ask so)."""
        if self.pause == 0:
            return 0.0
        return max(self.pause, poll_gap(held) + PAUSE_MARGIN)


class Pacer:
    """Decides, chunk after chunk, whether and how long the lock is left free (module docstring).

    A run starts quiet: before its first chunk nobody can have been waiting for it.
    """

    def __init__(self, budget: ChunkBudget) -> None:
        self.budget = budget
        self.live = False
        self.stretch = 0.0         # seconds the lock was held since the last pause
        self.wrote_before = False  # someone committed in the pause before the last one

    @property
    def pacing(self) -> bool:
        """False when the budget asks for no pauses at all."""
        return self.budget.pause > 0

    def pause_after_chunk(self, held: float, begin_waited: float) -> float:
        """Seconds to leave the lock free after a chunk that held it `held` s (0: go straight on).

        `begin_waited`: how long the chunk's BEGIN waited for the lock (another writer
        held it: the brain is live). After a chunk of a slow spell (`SLOW_SPELL` times
        the budget's seconds) the lock stays free at least as long as the chunk held
        it: CLEO's own writes are slow in the spell too, and a chunk right after them
        would stack on them.
        """
        if not self.pacing:
            return 0.0
        self.stretch += held
        slow = held > SLOW_SPELL * self.budget.seconds
        if begin_waited >= BEGIN_WAITED or slow:
            self.live = True
        if not self.live and self.stretch + self.budget.seconds <= QUIET_STRETCH:
            return 0.0
        rest = self.budget.pause_after(self.stretch)  # a waiter may have waited since the last pause
        if slow:
            rest = max(rest, held)
        self.stretch = 0.0
        return rest

    def after_gap(self, others_wrote: bool, held: float, rest: float) -> float:
        """Take in whether another connection committed since the last chunk; an extra pause to take.

        `rest` is the pause just taken after a chunk that held the lock `held` s (0: none).
        Someone wrote: the brain is live. After a pause nobody used it is quiet, except
        that when someone wrote in the pause before but not in this one, a writer may
        have missed this one (not scheduled in time) and its sleeps have grown: wait
        one of them out (`held` + `rest`: how long such a writer has waited).
        """
        if not rest:
            self.live = self.live or others_wrote
            return 0.0
        went_quiet = self.wrote_before and not others_wrote
        self.wrote_before = others_wrote
        self.live = others_wrote
        if went_quiet:
            return poll_gap(held + rest) + PAUSE_MARGIN
        return 0.0
