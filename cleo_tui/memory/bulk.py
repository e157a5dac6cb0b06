"""Evict, restore or pin every observation a selection shows, as one journalled run.

Large selections are written in short chunks (`journal.write_in_chunks`), so CLEO never waits
long; the run is 'in_progress' until its last chunk, so an interrupted one is rolled back on the
next open, and `undo` reverses it as any other run. A row that changed state since it was
selected (CLEO evicted it, someone pinned it) is left alone and counted.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Literal

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain import journal
from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.migrations import OVERRIDES
from cleo_tui.brain.store import Brain
from cleo_tui.memory import curation
from cleo_tui.memory.selection import Selection, has_id, selected_rows
from cleo_tui.memory.tags import TagTable
from cleo_tui.safe_text import plural

BulkAction = Literal["evict", "restore", "pin"]
ACTIONS: tuple[BulkAction, ...] = ("evict", "restore", "pin")
PAST = {"evict": "evicted", "restore": "restored", "pin": "pinned"}


@dataclass
class BulkResult:
    """What a bulk step did: its run, the ids written, and how many were left as they were."""

    action: BulkAction
    run_id: int | None = None
    done: list[str] = field(default_factory=list)
    left: int = 0
    stats: journal.RunStats | None = None

    def to_json(self) -> dict[str, object]:
        return {"action": self.action, "run_id": self.run_id, "count": len(self.done), "ids": self.done,
                "left_alone": self.left,
                "writes": None if self.stats is None else self.stats.to_json()}


@dataclass(frozen=True)
class SelectionPlan:
    """What a bulk step on a selection would touch: ids, their tokens (characters / 4, rounded up), the
    protected among them."""

    selection: Selection
    ids: list[str]
    tokens: int
    protected: dict[str, list[str]]  # protected id → its reasons
    live: dict[str, bool]  # id → live now
    protection_known: bool = True  # False: planned before every row's protection was computed (`protected`
    # then holds only what was known: an evict must wait)
    without_id: int = 0  # rows shown that have no id: counted and exported, but no step can write them
    row_tokens: dict[str, int] = field(default_factory=dict)  # id → its tokens (characters / 4, rounded up)

    @property
    def described(self) -> str:
        return self.selection.describe()

    @property
    def shown(self) -> int:
        """How many rows the selection shows, those without an id too."""
        return len(self.ids) + self.without_id

    def headline(self) -> str:
        """"412 observations selected by: type diary, before 2026-06-01, live"."""
        return f"{self.shown:,} observation{'' if self.shown == 1 else 's'} selected by: {self.described}"

    def ids_for(self, action: BulkAction, include_protected: bool = False) -> list[str]:
        """The ids `action` can change, in list order: a pin every row shown, a restore the evicted
        ones, an evict the live ones, the protected among them only with `include_protected`."""
        if action == "pin":
            return list(self.ids)
        if action == "restore":
            return [i for i in self.ids if not self.live[i]]
        return [i for i in self.ids if self.live[i] and (include_protected or i not in self.protected)]

    def tokens_of(self, ids: list[str]) -> int:
        """The tokens (characters / 4, rounded up) of these rows of the plan."""
        return sum(self.row_tokens[i] for i in ids)


def plan_selection(brain: Brain, selection: Selection, tags: TagTable | None) -> SelectionPlan:
    """Read what `selection` shows now (ids in list order, tokens, protection from `tags`)."""
    ids: list[str] = []
    tokens = 0
    protected: dict[str, list[str]] = {}
    live: dict[str, bool] = {}
    without_id = 0
    row_tokens: dict[str, int] = {}
    for row in selected_rows(brain, selection, tags):
        counted = -(-int(row.get("narrative_length") or len(str(row.get("title") or ""))) // 4)  # ceil, as chars4
        tokens += counted
        if not has_id(row):
            without_id += 1
            continue
        observation_id = str(row["id"])
        row_tokens[observation_id] = counted
        ids.append(observation_id)
        live[observation_id] = row.get("invalid_at") is None
        tag = tags.get(observation_id) if tags is not None else None
        if tag is not None and tag.protected:
            protected[observation_id] = list(tag.reasons)
    return SelectionPlan(selection, ids, tokens, protected, live,
                         protection_known=tags is not None and not tags.protection_pending, without_id=without_id,
                         row_tokens=row_tokens)


def _pin_rows(conn: sqlite3.Connection, run_id: int, ids: list[str], now: str) -> list[str]:
    """Pin each of `ids` not already pinned (an override of another relevance is replaced, journalled)."""
    current = dict(conn.execute(f"SELECT observation_id, relevance FROM {OVERRIDES} WHERE observation_id IN "
                                "(SELECT value FROM json_each(?))", (json.dumps(ids),)).fetchall())
    pinned = []
    for observation_id in ids:
        if current.get(observation_id) == curation.PIN_RELEVANCE:
            continue
        if observation_id in current:
            journal.delete_row(conn, run_id, OVERRIDES, {"observation_id": observation_id})
        journal.insert_row(conn, run_id, OVERRIDES, {"observation_id": observation_id,
                                                    "relevance": curation.PIN_RELEVANCE,
                                                    "reason": "pinned in cleo-tui (bulk)", "created_at": now},
                           ("observation_id",))
        pinned.append(observation_id)
    return pinned


def apply_bulk(brain: Brain, action: BulkAction, ids: list[str], described: str,
               budget: journal.ChunkBudget | None = None) -> BulkResult:
    """Evict, restore or pin `ids` (the selection `described`) in short chunks under one run."""
    if action != "pin":
        curation.require_eviction_columns(brain)
    result = BulkResult(action)
    now = cleo_timestamp()
    restore_values = curation.eviction_values(brain, now, {}) | {"invalid_at": None}

    def summary(count: int) -> str:
        return f"{PAST[action]} {plural(count, 'observation')}: {described}"

    def start(conn: sqlite3.Connection) -> None:
        result.run_id = journal.start_run(conn, action, summary(len(ids)),
                                          {"selection": described, "count": len(ids)}, status=journal.IN_PROGRESS)

    def step(conn: sqlite3.Connection, batch: list[str], part: journal.Slice) -> int | None:
        assert result.run_id is not None
        if action == "evict":
            done = curation.evict_rows(brain, conn, result.run_id, batch, now)
        elif action == "restore":
            stored = curation.stored_ids(conn, batch)
            done_stored = set(journal.update_many(conn, result.run_id, cs.OBSERVATIONS, "id",
                                                  [stored[i] for i in batch if i in stored], restore_values,
                                                  only_if="invalid_at IS NOT NULL"))
            done = [i for i in batch if stored.get(i) in done_stored]
        else:
            done = _pin_rows(conn, result.run_id, batch, now)
        result.done.extend(done)
        return None  # a batch is sized to the chunk's time (write_in_chunks): all of it, every time

    def finish(conn: sqlite3.Connection) -> None:
        assert result.run_id is not None
        journal.finish_run(conn, result.run_id, summary(len(result.done)))

    result.stats = journal.write_in_chunks(brain, ids, step, start, finish, budget)
    result.left = len(ids) - len(result.done)
    return result
