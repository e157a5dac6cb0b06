"""Export traces as JSONL: one (query hash, shown, outcomes) training triple per line.

Each line is one trace, oldest first:

    {"trace_id": 7, "ts": "...Z", "tenant_id": "default", "session_id": null,
     "pipeline": "cli", "query_hash": "16 hex", "query_length": 25, "explain_mode": true,
     "shown": [{"memory_id": "O-…", "rank": 1, "score": 0.42}, …],
     "outcomes": [{"outcome": "positive", "memory_ids": ["O-…"], "ts": "...Z"}, …]}

The raw query is never part of it (the trace tables do not hold it). The file
is written beside its final name and renamed into place, so a failed export
never leaves half a file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from cleo_tui.brain.store import Brain
from cleo_tui.files import write_export_atomically
from cleo_tui.recall.reader import TraceFilter, TraceSummary, iter_traces, trace_outcomes, trace_results


def export_record(brain: Brain, trace: TraceSummary) -> dict:
    """The JSONL record of one trace."""
    shown = [{"memory_id": r.memory_id, "rank": r.rank, "score": r.score}
             for r in trace_results(brain, trace.id, resolve=False)]
    outcomes = [{"outcome": o.outcome, "memory_ids": list(o.memory_ids), "ts": o.ts}
                for o in trace_outcomes(brain, trace.id)]
    return {"trace_id": trace.id, "ts": trace.ts, "tenant_id": trace.tenant_id, "session_id": trace.session_id,
            "pipeline": trace.pipeline, "query_hash": trace.query_hash, "query_length": trace.query_length,
            "explain_mode": trace.explain_mode, "shown": shown, "outcomes": outcomes}


def iter_export_records(brain: Brain, flt: TraceFilter = TraceFilter()) -> Iterator[dict]:
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


def read_export(path: str | Path) -> list[dict]:
    """The records of an exported file (the reverse of export_traces)."""
    with open(Path(path).expanduser(), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
