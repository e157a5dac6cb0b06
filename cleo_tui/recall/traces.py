"""Writing recall traces and their outcomes, with hippo-memory's contract (schema v40).

- The trace row and all its result rows commit in one transaction.
- The raw query is never stored: only the first 16 hex of its sha256 (of its
  UTF-8 bytes) and its length in UTF-16 code units, as hippo does.
- `rerank_json` holds hippo's step shape without notes, or NULL when the recall
  did not run in explain mode.
- Every function here is fail-soft: a failure prints one line to stderr and
  returns None, so the recall or outcome that caused it still answers.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from cleo_tui.brain.clock import iso_timestamp
from cleo_tui.brain.connection import inserted_id
from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.migrations import TRACE_OUTCOMES, TRACE_RESULTS, TRACES
from cleo_tui.brain.store import Brain, locate_brain, open_brain
from cleo_tui.recall.rerank import RerankStep
from cleo_tui.safe_text import one_line

PIPELINES = ("api", "cli", "context", "mcp")
OUTCOMES = ("positive", "negative")
DEFAULT_TENANT = "default"
AT_ROOT_BUSY_TIMEOUT_MS = 5000  # hippo's busy timeout: a trace is not worth a long wait

Target = Brain | sqlite3.Connection
TRACE_TABLES = (TRACES, TRACE_RESULTS, TRACE_OUTCOMES)

# hippo-memory's schema v40 (its src/db.ts, migration 40). Created with the first
# trace written, so a brain nobody recalled from holds no trace tables; readers
# (recall/reader.py) treat a brain without them as one with no traces.
TRACE_SCHEMA: tuple[str, ...] = (
    f"""CREATE TABLE IF NOT EXISTS {TRACES} (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        ts TEXT NOT NULL,
        tenant_id TEXT NOT NULL DEFAULT 'default',
        session_id TEXT,
        pipeline TEXT NOT NULL CHECK (pipeline IN ('api','cli','context','mcp')),
        query_hash TEXT NOT NULL,
        query_length INTEGER NOT NULL,
        result_count INTEGER NOT NULL,
        explain_mode INTEGER NOT NULL DEFAULT 0
    )""",
    f"CREATE INDEX IF NOT EXISTS idx_recall_traces_tenant_ts ON {TRACES}(tenant_id, ts DESC)",
    f"""CREATE TABLE IF NOT EXISTS {TRACE_RESULTS} (
        trace_id INTEGER NOT NULL REFERENCES {TRACES}(id) ON DELETE CASCADE,
        tenant_id TEXT NOT NULL DEFAULT 'default',
        memory_id TEXT NOT NULL,
        result_rank INTEGER NOT NULL,
        score REAL NOT NULL,
        rerank_json TEXT,
        PRIMARY KEY (trace_id, result_rank)
    ) WITHOUT ROWID""",
    f"CREATE INDEX IF NOT EXISTS idx_recall_trace_results_tenant_memory ON {TRACE_RESULTS}(tenant_id, memory_id)",
    f"""CREATE TABLE IF NOT EXISTS {TRACE_OUTCOMES} (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        trace_id INTEGER NOT NULL REFERENCES {TRACES}(id) ON DELETE CASCADE,
        ts TEXT NOT NULL,
        tenant_id TEXT NOT NULL DEFAULT 'default',
        outcome TEXT NOT NULL CHECK (outcome IN ('positive','negative')),
        memory_ids_json TEXT NOT NULL
    )""",
    f"CREATE INDEX IF NOT EXISTS idx_recall_trace_outcomes_trace ON {TRACE_OUTCOMES}(trace_id)",)


@dataclass(frozen=True)
class TraceResultInput:
    """One returned memory, in rank order; `rerank_steps` only when explain was on."""

    memory_id: str
    score: float
    rerank_steps: tuple[RerankStep, ...] = ()


@dataclass(frozen=True)
class RecallTraceInput:
    """What a trace records. `at` fixes its time (the demo's fixed clock); default: now."""

    query: str
    pipeline: str
    results: tuple[TraceResultInput, ...] = ()
    tenant_id: str = DEFAULT_TENANT
    session_id: str | None = None
    explain_mode: bool = False
    at: datetime | None = field(default=None, compare=False)


def query_hash(query: str) -> str:
    """First 16 hex of sha256 over the query's UTF-8 bytes (lone surrogates as U+FFFD, like JS)."""
    return hashlib.sha256(_js_utf8(query)).hexdigest()[:16]


def _js_utf8(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")


def utf16_length(query: str) -> int:
    """The query's length as JavaScript's `.length` counts it (UTF-16 code units)."""
    return len(query.encode("utf-16-le", "surrogatepass")) // 2


def warn(what: str, exc: BaseException | str) -> None:
    """The fail-soft report: exactly one line on stderr (a bug's exception named by its class; a
    user's situation, such as a read-only brain, said in its own words)."""
    detail = str(exc) if isinstance(exc, str | BrainError) else f"{type(exc).__name__}: {exc}"
    print(f"cleo-tui: {what}: {one_line(detail, 300)}", file=sys.stderr)


@contextmanager
def transaction(target: Target) -> Iterator[sqlite3.Connection]:
    """One transaction on a Brain (Brain.write) or a bare connection.

    On a connection already inside a transaction a savepoint is used, so the
    caller's transaction decides the commit.
    """
    if isinstance(target, Brain):
        with target.write() as conn:
            yield conn
        return
    if target.in_transaction:
        target.execute("SAVEPOINT cleo_tui_trace")
        try:
            yield target
        except BaseException:
            target.execute("ROLLBACK TO cleo_tui_trace")
            target.execute("RELEASE cleo_tui_trace")
            raise
        target.execute("RELEASE cleo_tui_trace")
        return
    target.execute("BEGIN IMMEDIATE")
    try:
        yield target
    except BaseException:
        target.execute("ROLLBACK")
        raise
    target.execute("COMMIT")


def _rerank_json(result: TraceResultInput, explain: bool) -> str | None:
    if not explain or not result.rerank_steps:
        return None
    return json.dumps([s.to_json() for s in result.rerank_steps], separators=(",", ":"))


def _has_trace_tables(conn: sqlite3.Connection) -> bool:
    placeholders = ", ".join("?" * len(TRACE_TABLES))
    found = conn.execute(f"SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ({placeholders})",
                         TRACE_TABLES).fetchone()[0]
    return int(found) == len(TRACE_TABLES)


def ensure_trace_tables(conn: sqlite3.Connection) -> bool:
    """Create hippo's trace tables where missing (inside the caller's transaction); True if it created any."""
    if _has_trace_tables(conn):
        return False
    for statement in TRACE_SCHEMA:
        conn.execute(statement)
    return True


def _note_new_tables(target: Target) -> None:
    """Let a Brain's feature cache know the trace tables exist now (readers ask it, not the file)."""
    if isinstance(target, Brain) and not all(target.features.has_table(t) for t in TRACE_TABLES):
        target.features.tables = target.features.tables | frozenset(TRACE_TABLES)
        for table in TRACE_TABLES:
            target.features._columns.pop(table, None)


def _insert_trace(conn: sqlite3.Connection, data: RecallTraceInput) -> int:
    if data.pipeline not in PIPELINES:
        raise ValueError(f"pipeline must be one of {', '.join(PIPELINES)}")
    ensure_trace_tables(conn)
    cur = conn.execute(
        f"INSERT INTO {TRACES} (ts, tenant_id, session_id, pipeline, query_hash, query_length, "
        "result_count, explain_mode) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (iso_timestamp(data.at), data.tenant_id, data.session_id, data.pipeline, query_hash(data.query),
         utf16_length(data.query), len(data.results), 1 if data.explain_mode else 0))
    trace_id = inserted_id(cur)
    conn.executemany(
        f"INSERT INTO {TRACE_RESULTS} (trace_id, tenant_id, memory_id, result_rank, score, rerank_json) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [(trace_id, data.tenant_id, r.memory_id, rank, float(r.score), _rerank_json(r, data.explain_mode))
         for rank, r in enumerate(data.results, start=1)])
    return trace_id


def write_recall_trace(target: Target, data: RecallTraceInput) -> int | None:
    """Insert a trace and its results in one transaction; the new trace id, or None (fail-soft)."""
    try:
        with transaction(target) as conn:
            trace_id = _insert_trace(conn, data)
        _note_new_tables(target)
        return trace_id
    except Exception as exc:  # fail-soft by contract: the recall must still answer
        warn("recall trace not written", exc)
        return None


def _brain_path(root: str | Path) -> Path:
    path = Path(root).expanduser()
    return path if path.is_file() else locate_brain(path)


def write_recall_trace_at_root(root: str | Path, data: RecallTraceInput,
                               busy_timeout_ms: int = AT_ROOT_BUSY_TIMEOUT_MS) -> int | None:
    """Open the brain at `root` (a brain file or a project directory) briefly, write, close.

    Fail-soft, including when the brain cannot be found or opened.
    """
    try:
        brain = open_brain(_brain_path(root))
    except Exception as exc:
        warn("recall trace not written (brain not opened)", exc)
        return None
    try:
        brain.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        return write_recall_trace(brain, data)
    finally:
        brain.close()


def credited_ids(conn: sqlite3.Connection, trace_id: int, tenant_id: str,
                 memory_ids: Iterable[str]) -> tuple[list[str], str | None]:
    """(ids to credit, why nothing can be credited) under the seed's two checks.

    1. the trace exists and belongs to `tenant_id`;
    2. only ids that trace returned count (in the order given, each once); an empty id (a result
       whose row has no id) names no memory, so it is never credited.
    """
    row = (conn.execute(f"SELECT tenant_id FROM {TRACES} WHERE id = ?", (trace_id,)).fetchone()
           if _has_trace_tables(conn) else None)
    if row is None:
        return [], f"trace {trace_id} does not exist"
    if row[0] != tenant_id:
        return [], f"trace {trace_id} belongs to another tenant"
    returned = {r[0] for r in conn.execute(
        f"SELECT memory_id FROM {TRACE_RESULTS} WHERE trace_id = ?", (trace_id,))}
    given = list(dict.fromkeys(memory_ids))
    credited = [i for i in given if i and i in returned]
    if not credited:
        return [], ("a result whose row has no id names no memory, so it cannot be credited" if given == [""] else
                    f"none of the ids were returned by trace {trace_id}")
    return credited, None


def record_trace_outcome(target: Target, trace_id: int, tenant_id: str, outcome: str,
                         memory_ids: Iterable[str], at: datetime | None = None) -> int | None:
    """Record a positive or negative outcome against a trace; the outcome row id, or None.

    Nothing is written (one stderr line says why) when the trace is missing or
    of another tenant, or when none of `memory_ids` was returned by it.
    Fail-soft: never raises.
    """
    try:
        if outcome not in OUTCOMES:
            warn("recall trace outcome skipped", "outcome must be positive or negative")
            return None
        with transaction(target) as conn:
            credited, reason = credited_ids(conn, int(trace_id), tenant_id, list(memory_ids))
            if reason:
                warn("recall trace outcome skipped", reason)
                return None
            cur = conn.execute(
                f"INSERT INTO {TRACE_OUTCOMES} (trace_id, ts, tenant_id, outcome, memory_ids_json) "
                "VALUES (?, ?, ?, ?, ?)",
                (int(trace_id), iso_timestamp(at), tenant_id, outcome, json.dumps(credited, ensure_ascii=False)))
            return inserted_id(cur)
    except Exception as exc:
        warn("recall trace outcome not written", exc)
        return None

