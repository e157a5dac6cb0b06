"""Curation steps on single observations, and undo, each one short journaled transaction.

Every function here writes through `Brain.write()` (which refuses a read-only
brain) and records what it changed in cleo-tui's journal
(`cleo_tui.brain.journal`), so `undo(brain, run_id)` reverses any of them — and
a prune commit (`cleo_tui.memory.pruner.commit_prune`) — exactly.

Run kinds: 'prune', 'evict', 'restore', 'pin', 'unpin', 'undo'.

Every write passes `Brain.write()`, which refuses while CLEO's sweep runs
(brain/sweep_gate.py). Large steps (an undo of a whole-pool prune) are written
in short chunks under one run (journal.run_chunks), so CLEO's
writers never wait long.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any, Literal

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain import journal
from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.migrations import OVERRIDES, RUNS
from cleo_tui.brain.store import Brain
from cleo_tui.safe_text import one_line

# The runs a curation history lists (each a kind of run in the journal).
CurationRunKind = Literal["prune", "evict", "restore", "pin", "unpin", "undo"]
RUN_KINDS: tuple[CurationRunKind, ...] = ("prune", "evict", "restore", "pin", "unpin", "undo")
# The single-row curation steps a user picks (the session maps each to its function).
CurationStep = Literal["pin", "unpin", "evict", "restore", "keep-in-cleo", "sweep-veto"]
PIN_RELEVANCE = "critical"


class CurationError(BrainError):
    """A curation step that cannot be done as asked (missing row, wrong state)."""


def _show(observation_id: str) -> str:
    return one_line(observation_id, 80)


def require_eviction_columns(brain: Brain) -> None:
    if not brain.features.has_column(cs.OBSERVATIONS, "invalid_at"):
        raise CurationError(
            "This brain's brain_observations table has no invalid_at column (a very old CLEO "
            "brain), so observations cannot be soft-evicted or restored; nothing was written.")


def _eviction_values(brain: Brain, invalid_at: str | None, now: str) -> dict[str, str | None]:
    """The columns a soft eviction (or its reversal) sets; updated_at only where it exists."""
    values: dict[str, str | None] = {"invalid_at": invalid_at}
    if brain.features.has_column(cs.OBSERVATIONS, "updated_at"):
        values["updated_at"] = now
    return values


def _state(conn: sqlite3.Connection, observation_id: str) -> tuple[bool, bool]:
    """(exists, live) for one observation, read inside the caller's transaction."""
    stored = stored_ids(conn, [observation_id]).get(observation_id, observation_id)
    row = conn.execute(f"SELECT invalid_at IS NULL FROM {cs.OBSERVATIONS} WHERE id = ?",
                       (stored,)).fetchone()
    return (row is not None, bool(row[0])) if row is not None else (False, False)


def stored_ids(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, Any]:
    """Each id as the brain stores it: a text id, or the INTEGER a CLEO-made row may hold.

    brain_observations.id is declared TEXT in CLEO's schema, but an older or
    foreign writer can leave an integer in it; `id = '123'` then matches nothing.
    Both spellings are looked up through the primary-key index.
    """
    wanted = list(ids)
    found: dict[str, Any] = {}
    for start in range(0, len(wanted), 400):
        probe = id_probe(wanted[start:start + 400])
        rows = conn.execute(f"SELECT id FROM {cs.OBSERVATIONS} WHERE id IN ({','.join('?' * len(probe))})",
                            probe).fetchall()
        for (stored,) in rows:
            found.setdefault(str(stored), stored)
    return found


def id_probe(ids: Iterable[str]) -> list[Any]:
    """Text ids and, for those that spell an integer, the integer too: what `id IN (...)` must look for."""
    part = list(ids)
    return [*part, *(int(i) for i in part if _integer_text(i))]


def _integer_text(text: str) -> bool:
    return text.lstrip("-").isdigit() and len(text) < 19 and str(int(text)) == text


def eviction_values(brain: Brain, now: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The columns a soft eviction sets (`extra` added, e.g. quality_score to hide it from CLEO's search)."""
    return {**_eviction_values(brain, now, now), **(extra or {})}


def evict_rows(brain: Brain, conn: sqlite3.Connection, run_id: int, ids: Iterable[str],
               now: str, extra: dict[str, Any] | None = None,
               read: dict[str, dict[str, Any]] | None = None, part: journal.Slice | None = None) -> list[str]:
    """Soft-evict each live row of `ids` inside the caller's transaction; returns those evicted.

    Rows already evicted (by CLEO or anyone) or gone are skipped, not overwritten.
    Rows are addressed by the id as stored (see `stored_ids`). `read` gives, by
    id, the live rows the caller has just read in this transaction (their "id" as
    stored and at least the columns `eviction_values` sets): they are not read again.
    `extra` adds columns to set with the eviction (e.g. quality_score). With `part`
    the rows are written while its chunk's clock allows: those evicted are then a
    prefix of the live rows of `ids` (`journal.update_many`).
    """
    values = eviction_values(brain, now, extra)
    wanted = list(ids)
    if read is not None:
        stored = {i: read[i]["id"] for i in wanted if i in read}
        before = {row["id"]: row for i, row in read.items() if i in stored}
    else:
        stored, before = stored_ids(conn, wanted), None
    present = [i for i in wanted if i in stored]
    done = set(journal.update_many(conn, run_id, cs.OBSERVATIONS, "id", [stored[i] for i in present], values,
                                   only_if="invalid_at IS NULL", before=before, part=part))
    return [i for i in present if stored[i] in done]


def evict_observation(brain: Brain, observation_id: str) -> int:
    """Soft-evict one live observation (invalid_at and updated_at set to now); returns the run id."""
    require_eviction_columns(brain)
    with brain.write() as conn:
        exists, live = _state(conn, observation_id)
        if not exists:
            raise CurationError(f"There is no observation {_show(observation_id)}; nothing was evicted.")
        if not live:
            raise CurationError(f"Observation {_show(observation_id)} is already evicted; nothing was changed.")
        run_id = journal.start_run(conn, "evict", f"evicted {observation_id}", {"ids": [observation_id]})
        evict_rows(brain, conn, run_id, [observation_id], cleo_timestamp())
    return run_id


def restore_observation(brain: Brain, observation_id: str) -> int:
    """Make one evicted observation live again (invalid_at cleared, updated_at now); returns the run id."""
    require_eviction_columns(brain)
    with brain.write() as conn:
        exists, live = _state(conn, observation_id)
        if not exists:
            raise CurationError(f"There is no observation {_show(observation_id)}; nothing was restored.")
        if live:
            raise CurationError(f"Observation {_show(observation_id)} is live, not evicted; nothing was changed.")
        run_id = journal.start_run(conn, "restore", f"restored {observation_id}", {"ids": [observation_id]})
        stored = stored_ids(conn, [observation_id])[observation_id]
        journal.update_row(conn, run_id, cs.OBSERVATIONS, {"id": stored},
                           _eviction_values(brain, None, cleo_timestamp()), only_if="invalid_at IS NOT NULL")
    return run_id


def _override(conn: sqlite3.Connection, observation_id: str) -> str | None:
    row = conn.execute(f"SELECT relevance FROM {OVERRIDES} WHERE observation_id = ?",
                       (observation_id,)).fetchone()
    return None if row is None else row[0]


def pin_observation(brain: Brain, observation_id: str, reason: str = "pinned in cleo-tui") -> int:
    """Pin one observation: a 'critical' relevance override, so it is protected; returns the run id.

    An earlier override of another relevance is replaced (journaled, so undo puts it back).
    """
    with brain.write() as conn:
        if not _state(conn, observation_id)[0]:
            raise CurationError(f"There is no observation {_show(observation_id)}; nothing was pinned.")
        current = _override(conn, observation_id)
        if current == PIN_RELEVANCE:
            raise CurationError(f"Observation {_show(observation_id)} is already pinned; nothing was changed.")
        run_id = journal.start_run(conn, "pin", f"pinned {observation_id}", {"ids": [observation_id]})
        if current is not None:
            journal.delete_row(conn, run_id, OVERRIDES, {"observation_id": observation_id})
        journal.insert_row(conn, run_id, OVERRIDES, {
            "observation_id": observation_id, "relevance": PIN_RELEVANCE,
            "reason": reason, "created_at": cleo_timestamp()}, ("observation_id",))
    return run_id


def unpin_observation(brain: Brain, observation_id: str) -> int:
    """Remove the relevance override of one observation; returns the run id."""
    with brain.write() as conn:
        if _override(conn, observation_id) is None:
            raise CurationError(f"Observation {_show(observation_id)} is not pinned; nothing was changed.")
        run_id = journal.start_run(conn, "unpin", f"unpinned {observation_id}", {"ids": [observation_id]})
        journal.delete_row(conn, run_id, OVERRIDES, {"observation_id": observation_id})
    return run_id


def undo(brain: Brain, run_id: int) -> tuple[int, int]:
    """Reverse one run; returns (undo run id, rows restored). See `undo_detailed`."""
    outcome = undo_detailed(brain, run_id)
    return outcome.undo_id, outcome.restored


def undo_detailed(brain: Brain, run_id: int, budget: journal.ChunkBudget | None = None) -> journal.UndoOutcome:
    """Reverse one run in short chunks (each its own transaction); what was restored, skipped, missing.

    A row is restored while the state the run created is still there, whatever
    CLEO changed besides (its reads bump citation_count and updated_at); rows
    changed by someone else in a column the run owns are skipped and named,
    rows deleted since are named as missing (journal module docstring). The
    run is marked undone only when nothing is left; otherwise undo it again later.
    """
    outcomes: list[journal.UndoOutcome] = []
    with brain.lock:  # a read before the run: a done run's changes do not change
        try:
            forward = journal.each_row_once(brain.conn, int(run_id))
        except sqlite3.OperationalError:  # no journal yet: begin_undo says there is no such run
            forward = False

    def chunk(conn: sqlite3.Connection, part: journal.Slice, first: bool) -> bool:
        if first:
            run, undo_id = journal.begin_undo(conn, int(run_id), status=journal.IN_PROGRESS)
            outcomes.append(journal.UndoOutcome(int(run_id), undo_id, forward=forward, undone=run.summary or ""))
        if not journal.undo_some(conn, outcomes[0], part):
            return False
        journal.end_undo(conn, outcomes[0])
        return True

    stats = journal.run_chunks(brain, chunk, budget)
    outcomes[0].stats = stats
    return outcomes[0]


def list_curation_runs(brain: Brain, kinds: Iterable[str] | None = None,
                       limit: int = 200) -> list[journal.Run]:
    """Journal runs, most recent first, optionally only of `kinds`."""
    if not brain.features.has_table(RUNS):
        return []
    with brain.lock:
        return journal.list_runs(brain.conn, tuple(kinds) if kinds else None, limit)


def undo_summary(outcome: journal.UndoOutcome) -> str:
    """What an undo took back, in words: "undid run 4 (pinned O-1): 1 relevance override restored",
    "undid run 7 (pruned 1,106 observations to …): 1,106 observations restored"."""
    restored = ", ".join(outcome.restored_counts()) or "nothing"
    what = f" ({one_line(outcome.undone, 200)})" if outcome.undone else ""
    return f"undid run {outcome.run_id}{what}: {restored} restored"
