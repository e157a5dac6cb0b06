"""Recall traces for the demo brain, made by running real recalls over its own content.

Deterministic for a given brain and random generator: queries are drawn from
the brain's own titles, and every timestamp (trace, outcome, eviction) comes
from a fixed clock that starts one hour after the newest observation — never
from the wall clock. The result shows every state the Traces pane can show:
traces with and without explain steps, positive, negative and mixed outcomes,
a result whose memory was soft-evicted afterwards (through the journal, so it
can be undone) and one whose memory no longer exists (forgotten).
"""

from __future__ import annotations

import random
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain import journal
from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.store import Brain
from cleo_tui.memory.curation import evict_rows
from cleo_tui.memory.mapping import as_text
from cleo_tui.recall.last_recall import save_last_recall, trace_input
from cleo_tui.recall.recall import recall
from cleo_tui.recall.rerank import parse_timestamp
from cleo_tui.recall.traces import (
    DEFAULT_TENANT,
    RecallTraceInput,
    TraceResultInput,
    record_trace_outcome,
    write_recall_trace,
)

FALLBACK_START = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
QUERY_COUNT = 12
STEP = timedelta(minutes=37)
PIPELINE_WEIGHTS = {"cli": 5, "api": 3, "context": 3, "mcp": 1}
SAMPLE_ROWS = 400  # newest live observations the queries are drawn from
FORGOTTEN_ID = "O-forgotten-demo"

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]{3,}")


def _clock_start(brain: Brain) -> datetime:
    """One hour after the newest observation, or a fixed date in an empty brain."""
    newest = None
    if brain.features.has_column(cs.OBSERVATIONS, "created_at"):
        newest = parse_timestamp(brain.scalar(f"SELECT max(created_at) FROM {cs.OBSERVATIONS}"))
    return (newest or FALLBACK_START) + timedelta(hours=1)


def _titles(brain: Brain) -> list[str]:
    """Titles of the newest live observations, in a stable order."""
    if not brain.features.has_column(cs.OBSERVATIONS, "title"):
        return []
    live = "invalid_at IS NULL" if brain.features.has_column(cs.OBSERVATIONS, "invalid_at") else "1"
    rows = brain.query(f"SELECT title FROM {cs.OBSERVATIONS} WHERE {live} ORDER BY rowid DESC LIMIT ?",
                       (SAMPLE_ROWS,))
    return [as_text(r[0]) for r in rows if r[0]]


def demo_queries(brain: Brain, rng: random.Random, count: int = QUERY_COUNT) -> list[str]:
    """Queries of two or three words taken from the brain's own titles."""
    titles = [t for t in _titles(brain) if len(_WORD.findall(t)) >= 2]
    queries = []
    for title in rng.sample(titles, min(count, len(titles))):
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(title)))
        queries.append(" ".join(rng.sample(words, min(len(words), rng.choice((2, 3))))))
    return queries


def _sessions(brain: Brain) -> list[str | None]:
    if not brain.features.has_column(cs.OBSERVATIONS, "source_session_id"):
        return [None]
    rows = brain.query(f"SELECT DISTINCT source_session_id FROM {cs.OBSERVATIONS} "
                       "WHERE source_session_id IS NOT NULL ORDER BY 1 LIMIT 20")
    return [None, *(as_text(r[0]) for r in rows)]


def _record_outcomes(brain: Brain, rng: random.Random, index: int, trace_id: int, ids: list[str],
                     at: datetime) -> None:
    """Positive on the top results of some traces, negative on the tail of others, both on a few."""
    if index % 3 == 0:
        record_trace_outcome(brain, trace_id, DEFAULT_TENANT, "positive", ids[: rng.choice((1, 2))],
                             at=at + timedelta(minutes=2))
    if index % 4 == 1:
        record_trace_outcome(brain, trace_id, DEFAULT_TENANT, "negative", ids[-1:], at=at + timedelta(minutes=3))


def _evict_one(brain: Brain, memory_id: str, at: datetime) -> None:
    """Soft-evict a recalled observation through the journal (undoable like any eviction)."""
    stamp = cleo_timestamp(at)
    with brain.write() as conn:
        run_id = journal.start_run(conn, "evict", f"evicted {memory_id} (demo: recalled, then evicted)",
                                   {"ids": [memory_id]}, created_at=stamp)
        evict_rows(brain, conn, run_id, [memory_id], stamp)


def _with_forgotten(data: RecallTraceInput) -> RecallTraceInput:
    """The trace with one more result, at rank 2, whose memory exists nowhere (forgotten).

    Its score sits between its neighbours', as if it had been recalled before it was deleted.
    """
    scores = [r.score for r in data.results[:2]]
    ghost = TraceResultInput(FORGOTTEN_ID, sum(scores) / len(scores) if scores else 0.5)
    return replace(data, results=(*data.results[:1], ghost, *data.results[1:]))


def add_demo_traces(brain: Brain, rng: random.Random) -> int:
    """Run demo recalls, trace them, record outcomes; returns how many traces were written."""
    queries = demo_queries(brain, rng)
    sessions = _sessions(brain)
    pipelines, weights = zip(*PIPELINE_WEIGHTS.items(), strict=True)
    at = _clock_start(brain)
    written: list[tuple[int, list[str]]] = []
    for index, query in enumerate(queries):
        at += STEP
        explain = index % 2 == 0
        results = recall(brain, query, rng.choice((3, 5, 8)), explain, now=at)
        data = trace_input(query, results, rng.choices(pipelines, weights)[0], explain,
                           rng.choice(sessions), at=at)
        trace_id = write_recall_trace(brain, data)
        if trace_id is None:
            continue
        ids = [r.memory_id for r in results]
        written.append((trace_id, ids))
        if ids:
            _record_outcomes(brain, rng, index, trace_id, ids, at)
    observations = [i for _, ids in written for i in ids if i.startswith("O-")]
    if observations:
        _evict_one(brain, observations[0], at + timedelta(minutes=5))
    if queries:
        at += STEP
        data = _with_forgotten(trace_input(queries[0], recall(brain, queries[0], 4, True, now=at), "cli",
                                           True, at=at))
        trace_id = write_recall_trace(brain, data)
        if trace_id is not None:
            written.append((trace_id, [r.memory_id for r in data.results]))
    if written:
        save_last_recall(brain, *written[-1])
    return len(written)
