"""Export traces as JSONL: one (query hash, shown, outcomes) training triple per line.

Each line is one trace, oldest first:

    {"trace_id": 7, "ts": "...Z", "tenant_id": "default", "session_id": null,
     "pipeline": "cli", "query_hash": "16 hex", "query_length": 25, "explain_mode": true,
     "shown": [{"memory_id": "O-…", "rank": 1, "score": 0.42}, …],
     "outcomes": [{"outcome": "positive", "memory_ids": ["O-…"], "ts": "...Z"}, …]}

The raw query is never part of it (the trace tables do not hold it). The file
is written beside its final name and renamed into place, so a failed export
never leaves half a file.

`export_retrievals` writes CLEO's own retrievals beside the traces, oldest first, each
line saying whose it is ("kind": "cleo", "cleo-tui" or "hippo"). CLEO keeps the raw
query; the export keeps the traces' convention all the same — its hash and length
(`query_hash`, `query_length`, as a trace would have them) — and adds the text itself
only when asked (`with_query_text`):

    {"kind": "cleo", "retrieval_id": 12, "ts": "2026-05-01 10:00:00", "source": "find-rrf",
     "session_id": null, "query_hash": "16 hex", "query_length": 14, "entry_count": 2,
     "tokens_used": 100, "malformed_entry_ids": false,
     "shown": [{"memory_id": "O-…", "rank": 1}, …], "outcomes": [],
     "usage": [{"memory_id": "O-…", "task_id": "T12", "used": true, "outcome": "success", "ts": "…"}]}
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from cleo_tui.brain.rows import JsonObject
from cleo_tui.brain.store import Brain
from cleo_tui.files import write_export_atomically
from cleo_tui.recall.reader import TraceFilter, TraceSummary, iter_traces, trace_outcomes, trace_results
from cleo_tui.recall.recorded import RecordedRetrieval, usage_of
from cleo_tui.recall.retrievals import RetrievalFilter, iter_retrievals
from cleo_tui.recall.traces import query_hash, utf16_length


def export_record(brain: Brain, trace: TraceSummary) -> JsonObject:
    """The JSONL record of one trace."""
    shown = [{"memory_id": r.memory_id, "rank": r.rank, "score": r.score}
             for r in trace_results(brain, trace.id, resolve=False)]
    outcomes = [{"outcome": o.outcome, "memory_ids": list(o.memory_ids), "ts": o.ts}
                for o in trace_outcomes(brain, trace.id)]
    return {"trace_id": trace.id, "ts": trace.ts, "tenant_id": trace.tenant_id, "session_id": trace.session_id,
            "pipeline": trace.pipeline, "query_hash": trace.query_hash, "query_length": trace.query_length,
            "explain_mode": trace.explain_mode, "shown": shown, "outcomes": outcomes}


def iter_export_records(brain: Brain, flt: TraceFilter = TraceFilter()) -> Iterator[JsonObject]:
    """Records of every matching trace, oldest first."""
    for trace in reversed(list(iter_traces(brain, flt))):
        yield export_record(brain, trace)


def export_traces(brain: Brain, path: str | Path, flt: TraceFilter = TraceFilter(), force: bool = False) -> int:
    """Write the matching traces to `path` as JSONL (UTF-8); returns how many were written.

    The target is guarded (`cleo_tui.files`): never the brain, a SQLite file or a
    device; an existing file is replaced only with `force`, keeping its mode.
    """
    def write(handle: IO[str]) -> int:
        count = 0
        for record in iter_export_records(brain, flt):
            handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
            count += 1
        return count

    return write_export_atomically(path, write, brain_path=brain.path, force=force)


def read_export(path: str | Path) -> list[JsonObject]:
    """The records of an exported file (the reverse of export_traces)."""
    with open(Path(path).expanduser(), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def cleo_export_record(brain: Brain, retrieval: RecordedRetrieval, with_query_text: bool = False) -> JsonObject:
    """The JSONL record of one of CLEO's retrievals (its query whole in `retrieval`)."""
    query = retrieval.query
    uses = usage_of(brain, retrieval.returned)
    record = {
        "kind": "cleo", "retrieval_id": retrieval.id, "ts": retrieval.created_at, "source": retrieval.source,
        "session_id": retrieval.session_id, "query_hash": None if query is None else query_hash(query),
        "query_length": None if query is None else utf16_length(query), "entry_count": retrieval.entry_count,
        "tokens_used": retrieval.tokens_used, "malformed_entry_ids": retrieval.malformed,
        "shown": [{"memory_id": memory_id, "rank": rank} for rank, memory_id in enumerate(retrieval.returned, 1)],
        "outcomes": [],  # CLEO records no outcome against a retrieval; its usage log is per entry
        "usage": [{"memory_id": memory_id, "task_id": e.task_id, "used": e.used, "outcome": e.outcome,
                   "ts": e.created_at}
                  for memory_id in dict.fromkeys(retrieval.returned) for e in (uses[memory_id].events
                                                                                if memory_id in uses else ())],
    }
    if with_query_text:
        record["query"] = query
    return record


def iter_retrieval_records(brain: Brain, flt: RetrievalFilter | None = None,
                           with_query_text: bool = False) -> Iterator[JsonObject]:
    """Records of every matching retrieval of every kind (all without `flt`), oldest first."""
    for listed in iter_retrievals(brain, flt or RetrievalFilter(), oldest_first=True, query_chars=None):
        if listed.cleo is not None:
            yield cleo_export_record(brain, listed.cleo, with_query_text)
        elif listed.trace is not None:
            yield {"kind": listed.kind, **export_record(brain, listed.trace)}


def write_retrievals(handle: IO[str], brain: Brain, flt: RetrievalFilter | None = None,
                     with_query_text: bool = False) -> int:
    """Write CLEO's retrievals and the traces matching `flt` to `handle` as JSONL; returns how many."""
    count = 0
    for record in iter_retrieval_records(brain, flt, with_query_text):
        handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        count += 1
    return count


def export_retrievals(brain: Brain, path: str | Path, flt: RetrievalFilter | None = None,
                      with_query_text: bool = False, force: bool = False) -> int:
    """`write_retrievals` to the file `path`; returns how many.

    CLEO's raw queries are left out (hash and length only) unless `with_query_text`.
    Guarded like `export_traces`.
    """
    return write_export_atomically(path, lambda handle: write_retrievals(handle, brain, flt, with_query_text),
                                   brain_path=brain.path, force=force)
