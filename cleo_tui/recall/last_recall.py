"""The last recall: run a recall, trace it, remember it; credit it with an outcome later.

cleo-tui keeps `last_trace_id` and `last_retrieval_ids` in its meta table
(`cleo_tui_meta`; a hippo store's `meta` is only read). Both keys are written
in the same transaction, so they only ever advance together (hippo's lockstep
rule). As in hippo, the trace is written first in its own transaction, and a
recall with no results writes its trace but leaves the last recall as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.migrations import META
from cleo_tui.brain.store import Brain
from cleo_tui.recall.recall import DEFAULT_LIMIT, RecallResult, recall
from cleo_tui.recall.traces import (
    DEFAULT_TENANT,
    RecallTraceInput,
    TraceResultInput,
    credited_ids,
    record_trace_outcome,
    warn,
    write_recall_trace,
)

LAST_TRACE_ID = "last_trace_id"
LAST_RETRIEVAL_IDS = "last_retrieval_ids"
HIPPO_META = "meta"


@dataclass(frozen=True)
class LastRecall:
    """What the last recall returned, and the trace it wrote (None when it wrote none)."""

    trace_id: int | None
    retrieval_ids: tuple[str, ...]


@dataclass(frozen=True)
class RecordedRecall:
    """A recall as answered and recorded. The UI offers crediting only when `can_credit`."""

    results: list[RecallResult]
    trace_id: int | None

    @property
    def matched_nothing(self) -> bool:
        """No live memory matched the query (a trace is still written, with no results)."""
        return not self.results

    @property
    def can_credit(self) -> bool:
        """There is something to credit: a result with an id, and a trace it was recorded in."""
        return self.trace_id is not None and any(r.memory_id for r in self.results)


@dataclass(frozen=True)
class Credit:
    """An outcome recorded against the last recall."""

    outcome_id: int
    trace_id: int
    outcome: str
    memory_ids: tuple[str, ...]


def _meta_table(brain: Brain) -> str | None:
    for table in (META, HIPPO_META):
        if brain.features.has_table(table):
            return table
    return None


def _parse_trace_id(value: str | None) -> int | None:
    text = (value or "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


def _parse_ids(value: str | None) -> tuple[str, ...]:
    try:
        ids = json.loads(value or "[]")
    except ValueError:
        return ()
    return tuple(str(i) for i in ids) if isinstance(ids, list) else ()


def read_last_recall(brain: Brain) -> LastRecall:
    """Both keys, read in one statement so they come from the same commit."""
    table = _meta_table(brain)
    if table is None:
        return LastRecall(None, ())
    rows: dict[str, Any] = {r[0]: r[1] for r in brain.query(f'SELECT key, value FROM "{table}" WHERE key IN (?, ?)',
                                                             (LAST_TRACE_ID, LAST_RETRIEVAL_IDS))}
    return LastRecall(_parse_trace_id(rows.get(LAST_TRACE_ID)), _parse_ids(rows.get(LAST_RETRIEVAL_IDS)))


def save_last_recall(brain: Brain, trace_id: int | None, memory_ids: Iterable[str]) -> None:
    """Advance both keys in one transaction (raises on failure; nothing then changes)."""
    upsert = (f"INSERT INTO {META}(key, value) VALUES (?, ?) "
              "ON CONFLICT(key) DO UPDATE SET value = excluded.value")
    with brain.write() as conn:
        conn.execute(upsert, (LAST_RETRIEVAL_IDS, json.dumps(list(memory_ids), ensure_ascii=False)))
        conn.execute(upsert, (LAST_TRACE_ID, "" if trace_id is None else str(int(trace_id))))


def trace_input(query: str, results: list[RecallResult], pipeline: str, explain: bool,
                session_id: str | None = None, tenant_id: str = DEFAULT_TENANT,
                at: datetime | None = None) -> RecallTraceInput:
    """The trace of a recall's results, in rank order."""
    return RecallTraceInput(
        query=query, pipeline=pipeline, tenant_id=tenant_id, session_id=session_id, explain_mode=explain,
        results=tuple(TraceResultInput(r.memory_id, r.score, r.steps) for r in results), at=at)


def recall_and_record(brain: Brain, query: str, limit: int = DEFAULT_LIMIT, explain: bool = False, *,
                      pipeline: str = "cli", session_id: str | None = None,
                      tenant_id: str = DEFAULT_TENANT, now: datetime | None = None) -> RecordedRecall:
    """Recall, write its trace (fail-soft), then remember it as the last recall.

    A read-only brain answers the recall; its trace failure is the one stderr
    line, and the last recall is left as it was.
    """
    results = recall(brain, query, limit, explain, now=now, tenant_id=tenant_id)
    trace_id = write_recall_trace(brain, trace_input(query, results, pipeline, explain, session_id,
                                                     tenant_id, at=now))
    if results and not brain.read_only:
        try:
            save_last_recall(brain, trace_id, [r.memory_id for r in results])
        except Exception as exc:  # fail-soft like the trace: the recall still answers
            warn("last recall not remembered", exc)
    return RecordedRecall(results, trace_id)


def credit_last_recall(brain: Brain, outcome: str, memory_ids: Iterable[str] | None = None,
                       tenant_id: str = DEFAULT_TENANT, at: datetime | None = None) -> Credit:
    """Record `outcome` against the last recall's trace, for `memory_ids` (default: all it returned).

    Raises BrainError with the reason when nothing can be credited.
    """
    brain.ensure_writable()
    last = read_last_recall(brain)
    if not last.retrieval_ids and last.trace_id is None:
        raise BrainError("There is no recall to credit yet: run `cleo-tui recall QUERY` first.")
    if last.trace_id is None:
        raise BrainError("The last recall wrote no trace (its trace write failed), so there is nothing "
                         "to record the outcome against. Run the recall again.")
    wanted = list(last.retrieval_ids if memory_ids is None else memory_ids)
    with brain.lock:
        credited, reason = credited_ids(brain.conn, last.trace_id, tenant_id, wanted)
    if reason:
        raise BrainError(f"Nothing was recorded: {reason}. Name ids the last recall returned "
                         f"(`cleo-tui traces` shows them), or leave the ids out to credit all of them.")
    outcome_id = record_trace_outcome(brain, last.trace_id, tenant_id, outcome, credited, at=at)
    if outcome_id is None:
        raise BrainError("The outcome could not be written (see the line above); nothing was recorded.")
    return Credit(outcome_id, last.trace_id, outcome, tuple(credited))
