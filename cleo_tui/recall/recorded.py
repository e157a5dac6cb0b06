"""Every retrieval the brain has recorded, whoever made it: CLEO's log and the recall traces.

CLEO logs each `memory find`, `fetch`, hybrid search and timeline in `brain_retrieval_log`
(the raw query, the returned ids as a JSON list in rank order, its `source`), and which
entries a task used in `brain_usage_log`. cleo-tui's recalls and hippo's are traces in the
seed's tables. This module reads all of them into one shape, so the recall impact, the
replay and the Traces pane see the same list. It never writes, and a row it cannot read
(ids that are not JSON, NULLs, a table from an older CLEO missing a column) is kept and
marked, never raised.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from cleo_tui.brain.cleo_schema import RETRIEVAL_LOG, USAGE_LOG
from cleo_tui.brain.migrations import TRACE_RESULTS, TRACES
from cleo_tui.brain.store import KIND_HIPPO, Brain
from cleo_tui.memory.mapping import as_text

RetrievalOrigin = Literal["cleo", "cleo-tui", "hippo"]


@dataclass(frozen=True)
class RecordedRetrieval:
    """One recorded retrieval: who made it, when, and the ids it returned in rank order.

    `query` is CLEO's raw query text (data: it may hold anything) and None for traces,
    which keep only a hash. `source` is CLEO's `source` (`find-rrf`, `fetch`, …) or the
    trace's pipeline. `malformed` says the returned ids could not be read as a JSON list.
    """

    origin: RetrievalOrigin
    id: int
    created_at: str
    source: str
    query: str | None
    session_id: str | None
    returned: tuple[str, ...]
    malformed: bool = False

    @property
    def key(self) -> str:
        """Unique across origins: `cleo:12`, `cleo-tui:5`, `hippo:7`."""
        return f"{self.origin}:{self.id}"


@dataclass(frozen=True)
class EntryUsage:
    """What `brain_usage_log` says of one entry: how often a task used it, which tasks, when last."""

    used: int
    tasks: tuple[str, ...]
    last_used_at: str | None


def has_retrieval_log(brain: Brain) -> bool:
    """The brain holds CLEO's retrieval log with the columns it has always had."""
    return {"id", "query", "entry_ids", "source", "created_at"} <= brain.features.columns(RETRIEVAL_LOG)


def parse_entry_ids(raw: object) -> tuple[tuple[str, ...], bool]:
    """CLEO's `entry_ids` (a JSON list of ids) as a tuple, and whether it was malformed."""
    if raw is None:
        return (), True
    try:
        value = json.loads(as_text(raw))
    except (ValueError, RecursionError):
        return (), True
    if not isinstance(value, list):
        return (), True
    return tuple(as_text(v) for v in value if isinstance(v, str | int)), False


def iter_cleo_retrievals(brain: Brain, page: int = 5000) -> Iterator[RecordedRetrieval]:
    """CLEO's logged retrievals, newest first, read page by page by id."""
    if not has_retrieval_log(brain):
        return
    session = "session_id" if brain.features.has_column(RETRIEVAL_LOG, "session_id") else "NULL"
    before: int | None = None
    while True:
        where = "" if before is None else "WHERE id < ?"
        rows = brain.query(f"SELECT id, created_at, source, query, {session}, entry_ids FROM {RETRIEVAL_LOG} "
                           f"{where} ORDER BY id DESC LIMIT ?", ([] if before is None else [before]) + [page])
        for row in rows:
            ids, malformed = parse_entry_ids(row[5])
            yield RecordedRetrieval("cleo", int(row[0]), as_text(row[1]), as_text(row[2]),
                                    None if row[3] is None else as_text(row[3]),
                                    None if row[4] is None else as_text(row[4]), ids, malformed)
        if len(rows) < page:
            return
        before = int(rows[-1][0])


def iter_trace_retrievals(brain: Brain) -> Iterator[RecordedRetrieval]:
    """The recall traces (cleo-tui's, or hippo's in a hippo store) with their results, newest first."""
    if not all(brain.features.has_table(t) for t in (TRACES, TRACE_RESULTS)):
        return
    origin: RetrievalOrigin = "hippo" if brain.kind == KIND_HIPPO else "cleo-tui"
    rows = brain.query(f"SELECT t.id, t.ts, t.pipeline, t.session_id, r.memory_id FROM {TRACES} t "
                       f"LEFT JOIN {TRACE_RESULTS} r ON r.trace_id = t.id ORDER BY t.id DESC, r.result_rank")
    current: tuple[int, str, str, str | None] | None = None
    ids: list[str] = []
    for row in rows:
        head = (int(row[0]), as_text(row[1]), as_text(row[2]), None if row[3] is None else as_text(row[3]))
        if current is not None and head[0] != current[0]:
            yield RecordedRetrieval(origin, current[0], current[1], current[2], None, current[3], tuple(ids))
            ids = []
        current = head
        if row[4] is not None:
            ids.append(as_text(row[4]))
    if current is not None:
        yield RecordedRetrieval(origin, current[0], current[1], current[2], None, current[3], tuple(ids))


def recorded_retrievals(brain: Brain) -> list[RecordedRetrieval]:
    """Every recorded retrieval of every origin, CLEO's first, each newest first."""
    return [*iter_cleo_retrievals(brain), *iter_trace_retrievals(brain)]


def entry_usage(brain: Brain) -> dict[str, EntryUsage]:
    """Per entry id, what `brain_usage_log` records as used by a task (`used = 1`); empty without the table."""
    if not {"entry_id", "used"} <= brain.features.columns(USAGE_LOG):
        return {}
    columns = brain.features.columns(USAGE_LOG)
    task = "task_id" if "task_id" in columns else "NULL"
    created = "created_at" if "created_at" in columns else "NULL"
    rows = brain.query(f"SELECT entry_id, {task}, {created} FROM {USAGE_LOG} WHERE used = 1 ORDER BY {created}")
    tallies: dict[str, tuple[int, dict[str, None], str | None]] = {}
    for row in rows:
        entry = as_text(row[0])
        used, tasks, last = tallies.get(entry, (0, {}, None))
        if row[1] is not None:
            tasks[as_text(row[1])] = None
        stamp = None if row[2] is None else as_text(row[2])
        tallies[entry] = (used + 1, tasks, stamp if stamp is not None and (last is None or stamp > last) else last)
    return {entry: EntryUsage(used, tuple(tasks), last) for entry, (used, tasks, last) in tallies.items()}
