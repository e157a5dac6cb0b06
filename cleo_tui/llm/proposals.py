"""Proposals awaiting review: what the observer or reflector suggested, kept in the brain.

A proposal row (`cleo_tui_proposals`) holds the input lines the model saw, what
it proposed, its raw answer, the model and usage, and a fingerprint of the
input rows. Its status goes pending → applied → undone, or pending →
discarded. Applying writes through the curation journal (run id kept on the
row), so undoing a proposal is undoing that run. The proposal row itself is
cleo-tui's bookkeeping, not curation: it is written directly.

The reviewer's marks (accept/reject per item) are kept with the proposal in
`cleo_tui_proposal_marks`, so they survive moving between proposals and
closing the app, and applying from the marks writes exactly what is marked.
Items are keyed `note:<i>`, `pattern:<i>`, `learning:<i>`, `superseded:<i>`
(indexes in the proposal's lists). Defaults: notes, patterns and learnings
accepted; superseded observations kept live (not evicted).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cleo_tui.brain import journal
from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.connection import inserted_id
from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.migrations import PROPOSAL_MARKS, PROPOSALS
from cleo_tui.brain.store import Brain

OBSERVER = "observer"
REFLECTOR = "reflector"
NOTE, PATTERN, LEARNING, SUPERSEDED = "note", "pattern", "learning", "superseded"
PENDING, APPLIED, DISCARDED, UNDONE = "pending", "applied", "discarded", "undone"
STATUSES = (PENDING, APPLIED, DISCARDED, UNDONE)


class ProposalError(BrainError):
    """A proposal that does not exist, or is not in a state that allows the action."""


@dataclass
class Proposal:
    """One stored proposal. `items` is {"notes": [...]} or {"patterns", "learnings", "superseded"}."""

    id: int
    kind: str
    status: str
    created_at: str
    session_id: str | None
    provider: str | None
    model: str | None
    input: list[dict[str, Any]]
    items: dict[str, Any]
    raw_response: str | None
    usage: dict[str, Any] | None
    pool_fingerprint: str | None
    decision: dict[str, Any] | None = None
    decided_at: str | None = None
    run_id: int | None = None

    @property
    def notes(self) -> list[dict[str, Any]]:
        return list(self.items.get("notes", []))

    @property
    def patterns(self) -> list[dict[str, Any]]:
        return list(self.items.get("patterns", []))

    @property
    def learnings(self) -> list[dict[str, Any]]:
        return list(self.items.get("learnings", []))

    @property
    def superseded(self) -> list[dict[str, Any]]:
        """[{"id", "reason"}] as the model proposed them (unknown ids already dropped)."""
        return list(self.items.get("superseded", []))

    @property
    def input_ids(self) -> list[str]:
        return [row["id"] for row in self.input]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "kind": self.kind, "status": self.status, "created_at": self.created_at,
            "session_id": self.session_id, "provider": self.provider, "model": self.model,
            "input": self.input, **self.items, "raw_response": self.raw_response, "usage": self.usage,
            "pool_fingerprint": self.pool_fingerprint, "decision": self.decision,
            "decided_at": self.decided_at, "run_id": self.run_id,
        }


_COLUMNS = ("id, kind, status, created_at, session_id, provider, model, input_json, proposal_json, "
            "raw_response, usage_json, pool_fingerprint, decision_json, decided_at, run_id")


def _loads(text: Any, default: Any) -> Any:
    try:
        value = json.loads(text) if text else default
    except (TypeError, ValueError):
        return default
    return value if isinstance(value, type(default)) else default


def _from_row(row: sqlite3.Row | tuple[Any, ...]) -> Proposal:
    return Proposal(
        id=row[0], kind=row[1], status=row[2], created_at=row[3], session_id=row[4], provider=row[5],
        model=row[6], input=_loads(row[7], []), items=_loads(row[8], {}), raw_response=row[9],
        usage=_loads(row[10], {}) or None, pool_fingerprint=row[11], decision=_loads(row[12], {}) or None,
        decided_at=row[13], run_id=row[14],
    )


def create_proposal(brain: Brain, kind: str, session_id: str | None, provider: str, model: str,
                    input_rows: list[dict[str, Any]], items: dict[str, Any], raw_response: str,
                    usage: dict[str, Any], pool_fingerprint: str | None) -> Proposal:
    """Keep a new pending proposal; returns it as stored."""
    with brain.write() as conn:
        cur = conn.execute(
            f"INSERT INTO {PROPOSALS}(kind, status, created_at, session_id, provider, model, input_json, "
            "proposal_json, raw_response, usage_json, pool_fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (kind, PENDING, cleo_timestamp(), session_id, provider, model,
             json.dumps(input_rows, ensure_ascii=False), json.dumps(items, ensure_ascii=False),
             raw_response, json.dumps(usage), pool_fingerprint))
        proposal_id = inserted_id(cur)
    return get_proposal(brain, proposal_id)


def read_proposal(conn: sqlite3.Connection, proposal_id: int) -> Proposal:
    """The proposal, read on `conn` (inside a write transaction when applying)."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM {PROPOSALS} WHERE id = ?", (proposal_id,)).fetchone()
    if row is None:
        raise ProposalError(f"There is no proposal {proposal_id}. `cleo-tui reflect --list` lists the proposals.")
    return _from_row(row)


def get_proposal(brain: Brain, proposal_id: int) -> Proposal:
    if not brain.features.has_table(PROPOSALS):
        raise ProposalError(f"There is no proposal {proposal_id}: this brain holds no cleo-tui proposals.")
    with brain.lock:
        return read_proposal(brain.conn, proposal_id)


def list_proposals(brain: Brain, status: str | None = None, kind: str | None = None,
                   limit: int = 200) -> list[Proposal]:
    """Most recent first; empty when the brain has no proposals table (never migrated)."""
    if not brain.features.has_table(PROPOSALS):
        return []
    where, params = [], []
    if status is not None:
        where.append("status = ?")
        params.append(status)
    if kind is not None:
        where.append("kind = ?")
        params.append(kind)
    sql = f"SELECT {_COLUMNS} FROM {PROPOSALS}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return [_from_row(r) for r in brain.query(sql + " ORDER BY id DESC LIMIT ?", [*params, limit])]


def require_pending(conn: sqlite3.Connection, proposal_id: int, kind: str) -> Proposal:
    """Read the proposal inside the caller's transaction; refuse if not a pending `kind` one."""
    proposal = read_proposal(conn, proposal_id)
    if proposal.kind != kind:
        raise ProposalError(f"Proposal {proposal_id} was made by the {proposal.kind}, not the {kind}.")
    if proposal.status != PENDING:
        raise ProposalError(f"Proposal {proposal_id} is {proposal.status}, not pending; only a pending "
                            "proposal can be applied or discarded.")
    return proposal


def chosen_indexes(indexes: Iterable[Any], count: int, what: str, proposal_id: int) -> list[int]:
    """Distinct, in-range indexes in ascending order; anything else is the caller's mistake."""
    indexes = list(indexes)
    bad = [i for i in indexes if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < count]
    if bad:
        numbered = f"numbered 0 to {count - 1}" if count else "none to choose"
        raise ProposalError(f"Proposal {proposal_id} has {count} {what} ({numbered}); "
                            f"{', '.join(map(repr, bad))} is not one of them.")
    return sorted(set(indexes))


def mark_decided(conn: sqlite3.Connection, proposal_id: int, status: str,
                 decision: dict[str, Any] | None = None, run_id: int | None = None) -> None:
    """Record the reviewer's decision on the proposal row (same transaction as the writes)."""
    conn.execute(f"UPDATE {PROPOSALS} SET status = ?, decision_json = COALESCE(?, decision_json), "
                 "decided_at = ?, run_id = COALESCE(?, run_id) WHERE id = ?",
                 (status, None if decision is None else json.dumps(decision, ensure_ascii=False),
                  cleo_timestamp(), run_id, proposal_id))


def discard_proposal(brain: Brain, proposal_id: int) -> Proposal:
    """Set a pending proposal aside; nothing else in the brain changes."""
    with brain.write() as conn:
        proposal = read_proposal(conn, proposal_id)
        if proposal.status != PENDING:
            raise ProposalError(f"Proposal {proposal_id} is {proposal.status}; only a pending one can be discarded.")
        mark_decided(conn, proposal_id, DISCARDED)
    return get_proposal(brain, proposal_id)


@dataclass(frozen=True)
class UndoResult:
    """What undoing an applied proposal did; `outcome` names the rows it could not restore."""

    proposal_id: int
    run_id: int
    undo_run_id: int
    restored: int
    outcome: journal.UndoOutcome | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"proposal_id": self.proposal_id, "run_id": self.run_id,
                               "undo_run_id": self.undo_run_id, "restored": self.restored}
        if self.outcome is not None:
            out.update({k: v for k, v in self.outcome.to_json().items() if k in
                        ("skipped", "missing", "remaining", "complete")})
        return out


def undo_proposal(brain: Brain, proposal_id: int) -> UndoResult:
    """Undo what applying the proposal wrote and mark it 'undone', in one transaction.

    Goes through `journal.undo_changes`: rows changed since by someone else are
    skipped and rows deleted since are missing, both named in the outcome (as
    `prune --undo` reports them). Skipped changes stay pending: the proposal is
    marked 'undone' only once nothing is left, so undoing it again retries them.
    """
    with brain.write() as conn:
        proposal = read_proposal(conn, proposal_id)
        if proposal.status != APPLIED or proposal.run_id is None:
            raise ProposalError(f"Proposal {proposal_id} is {proposal.status}; only an applied proposal can be undone.")
        outcome = journal.undo_changes(conn, proposal.run_id, f"undo of {proposal.kind} proposal {proposal_id}")
        if outcome.complete:
            conn.execute(f"UPDATE {PROPOSALS} SET status = ? WHERE id = ?", (UNDONE, proposal_id))
    return UndoResult(proposal_id, proposal.run_id, outcome.undo_id, outcome.restored, outcome)


# --- review marks ------------------------------------------------------------------


def item_keys(proposal: Proposal) -> list[str]:
    """Every item's key, in review order: notes, or patterns, learnings, then superseded ids."""
    if proposal.kind == OBSERVER:
        return [f"{NOTE}:{i}" for i in range(len(proposal.notes))]
    return ([f"{PATTERN}:{i}" for i in range(len(proposal.patterns))]
            + [f"{LEARNING}:{i}" for i in range(len(proposal.learnings))]
            + [f"{SUPERSEDED}:{i}" for i in range(len(proposal.superseded))])


def default_marks(proposal: Proposal) -> dict[str, bool]:
    """Marks before any choice: additions accepted, superseded rows kept (not evicted)."""
    return {key: not key.startswith(SUPERSEDED + ":") for key in item_keys(proposal)}


def decided_marks(proposal: Proposal) -> dict[str, bool]:
    """What a decided proposal's decision chose (applied or undone), or nothing (discarded)."""
    keys = item_keys(proposal)
    if proposal.status == DISCARDED:
        return {key: False for key in keys}
    decision = proposal.decision or {}
    chosen = {NOTE: set(decision.get("stored", [])), PATTERN: set(decision.get("accepted_patterns", [])),
              LEARNING: set(decision.get("accepted_learnings", []))}
    approved = set(decision.get("approved_superseded", []))
    out = {}
    for key in keys:
        kind, index = key.split(":")
        out[key] = (proposal.superseded[int(index)]["id"] in approved if kind == SUPERSEDED
                    else int(index) in chosen[kind])
    return out


def _stored_marks(conn: sqlite3.Connection, proposal_id: int) -> dict[str, bool]:
    try:
        rows = conn.execute(f"SELECT item_key, accepted FROM {PROPOSAL_MARKS} WHERE proposal_id = ?",
                            (proposal_id,)).fetchall()
    except sqlite3.OperationalError:  # a brain opened read-only before migration 4: no marks kept yet
        return {}
    return {row[0]: bool(row[1]) for row in rows}


def marks_of(conn: sqlite3.Connection, proposal: Proposal) -> dict[str, bool]:
    """The proposal's marks, read on `conn`: stored marks over the defaults (pending), else its decision."""
    if proposal.status != PENDING:
        return decided_marks(proposal)
    current = default_marks(proposal)
    current.update({k: v for k, v in _stored_marks(conn, proposal.id).items() if k in current})
    return current


def marks(brain: Brain, proposal_id: int) -> dict[str, bool]:
    """{item key: accepted} for every item of the proposal (see the module docstring)."""
    proposal = get_proposal(brain, proposal_id)
    with brain.lock:
        return marks_of(brain.conn, proposal)


def set_mark(brain: Brain, proposal_id: int, item_key: str, accepted: bool) -> dict[str, bool]:
    """Accept (True) or reject one item of a pending proposal, kept in the brain; returns all marks.

    Raises ProposalError (no such proposal or item, not pending) or ReadOnlyBrain.
    """
    with brain.write() as conn:
        proposal = read_proposal(conn, proposal_id)
        if proposal.status != PENDING:
            raise ProposalError(f"Proposal {proposal_id} is {proposal.status}; only a pending proposal's "
                                "marks can change.")
        if item_key not in item_keys(proposal):
            raise ProposalError(f"Proposal {proposal_id} has no item {item_key!r}.")
        conn.execute(f"INSERT INTO {PROPOSAL_MARKS}(proposal_id, item_key, accepted, marked_at) VALUES (?, ?, ?, ?) "
                     "ON CONFLICT(proposal_id, item_key) DO UPDATE SET accepted = excluded.accepted, "
                     "marked_at = excluded.marked_at", (proposal_id, item_key, int(bool(accepted)), cleo_timestamp()))
        return marks_of(conn, proposal)


def marked_indexes(proposal: Proposal, current: dict[str, bool], kind: str) -> list[int]:
    """Indexes of the accepted items of one kind."""
    return [int(key.split(":")[1]) for key in item_keys(proposal) if key.startswith(kind + ":") and current.get(key)]


def marked_superseded(proposal: Proposal, current: dict[str, bool]) -> list[str]:
    """Superseded observation ids marked for eviction, in the proposal's order."""
    return [proposal.superseded[i]["id"] for i in marked_indexes(proposal, current, SUPERSEDED)]
