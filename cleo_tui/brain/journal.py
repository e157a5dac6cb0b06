"""The curation journal: every write cleo-tui makes is recorded so it can be undone.

A *run* is one curation step (a prune commit, one eviction, a pin, a reflector
apply ...). Each row it touched is recorded with the values of the columns it
changed, before and after.

Undo (`undo_run`, or chunked through `cleo_tui.memory.curation.undo`) works row
by row and survives CLEO living in the brain meanwhile:

- a row the run *updated* is put back when the columns the run owns (every
  column it wrote except `CLEO_BOOKKEEPING`, e.g. `invalid_at`, `quality_score`,
  an override's relevance) still hold what the run set — whatever else CLEO
  changed. CLEO's `memory find`/`fetch` bump `citation_count` and `updated_at`
  on every hit, evicted rows included; a restored row gets `updated_at` = now;
- a row the run *inserted* is deleted while its columns (CLEO's bookkeeping
  aside) are as inserted; a row it *deleted* is put back while the key is free;
- a row someone else changed in an owned column is *skipped* and named; a row
  that vanished (CLEO's consolidation hard-deletes) is *missing* and named.

Each change row remembers the undo that reversed it (`undone_by`), so a partly
undone run can be undone again for what is left; the run itself is marked
undone only when nothing is left.

Large steps are written in chunks (`run_chunks`), each its own short
transaction that holds the write lock about `CHUNK_SECONDS`, under one run
whose `status` is 'in_progress' until its last chunk commits ('done'); see
`journal_chunks` for how the chunks are sized and `journal_pacing` for the
pauses between them.
A run left in progress by a crash or kill is **rolled back** the next time the
brain is opened for writing (`recover_interrupted`): its changes are reverted in
reverse order (exactly: the before values, where
the row still holds the run's after values) and the run and its change rows are
deleted, so the brain is exactly as before the step. A run whose writer process
is still alive (another cleo-tui) is left alone: the writer is told by its pid and
its start time (`process_start`), so a pid the system gave to a later process
does not keep a dead writer's run in place.

The journal is written in one module per job; this module gathers their public
names, so callers write `from cleo_tui.brain import journal` and `journal.X`:

- `journal_runs`: recording runs and their changes, reading the journal;
- `journal_undo`: undo, row by row;
- `journal_chunks`: chunked writes (`run_chunks`, `write_in_chunks`, `RunStats`,
  the checkpoints between chunks), and `journal_pacing`: how long the lock stays
  free between two chunks;
- `journal_recovery` (and `journal_owner`, who owns a run): rolling back a run a
  crash left in progress.
"""

from __future__ import annotations

from cleo_tui.brain.journal_chunks import (
    FIRST_BATCH,
    SLICE_SECONDS,
    ChunkStep,
    ChunkTarget,
    Pace,
    RunStats,
    Slice,
    pause,
    run_chunks,
    write_in_chunks,
)
from cleo_tui.brain.journal_owner import process_start
from cleo_tui.brain.journal_pacing import (
    BUSY_DELAYS_MS,
    CHUNK_PAUSE,
    CHUNK_ROWS,
    CHUNK_SECONDS,
    PAUSE_MARGIN,
    QUIET_STRETCH,
    SLOW_SPELL,
    ChunkBudget,
    Pacer,
    poll_gap,
)
from cleo_tui.brain.journal_recovery import interrupted_notes, interrupted_runs, recover_interrupted, rollback_some
from cleo_tui.brain.journal_runs import (
    DONE,
    IN_BATCH,
    IN_PROGRESS,
    Run,
    delete_row,
    finish_run,
    get_run,
    insert_row,
    list_runs,
    next_seq,
    pending_count,
    record_many,
    run_changes,
    start_run,
    touching,
    update_many,
    update_row,
)
from cleo_tui.brain.journal_undo import (
    CLEO_BOOKKEEPING,
    LATER,
    READ_BOOKKEEPING,
    UndoOutcome,
    begin_undo,
    each_row_once,
    end_undo,
    reverse_change,
    undo_changes,
    undo_run,
    undo_some,
)

__all__ = [
    "BUSY_DELAYS_MS",
    "CHUNK_PAUSE",
    "CHUNK_ROWS",
    "CHUNK_SECONDS",
    "CLEO_BOOKKEEPING",
    "DONE",
    "FIRST_BATCH",
    "IN_BATCH",
    "IN_PROGRESS",
    "LATER",
    "PAUSE_MARGIN",
    "QUIET_STRETCH",
    "READ_BOOKKEEPING",
    "SLICE_SECONDS",
    "SLOW_SPELL",
    "ChunkBudget",
    "ChunkStep",
    "ChunkTarget",
    "Pace",
    "Pacer",
    "Run",
    "RunStats",
    "Slice",
    "UndoOutcome",
    "begin_undo",
    "delete_row",
    "each_row_once",
    "end_undo",
    "finish_run",
    "get_run",
    "insert_row",
    "interrupted_notes",
    "interrupted_runs",
    "list_runs",
    "next_seq",
    "pause",
    "pending_count",
    "poll_gap",
    "process_start",
    "record_many",
    "recover_interrupted",
    "reverse_change",
    "rollback_some",
    "run_changes",
    "run_chunks",
    "start_run",
    "touching",
    "undo_changes",
    "undo_run",
    "undo_some",
    "update_many",
    "update_row",
    "write_in_chunks",
]
