"""Brains and hippo stores for the recall and trace tests, built with the real Brain API."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from cleo_tui.brain import Brain, create_brain, open_brain
from cleo_tui.brain import cleo_schema as cs
from cleo_tui.recall.traces import TRACE_SCHEMA

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)

OBSERVATIONS = [
    # id, title, narrative, created_at, quality, tier, invalid_at
    ("O-aaa-1", "Migrated the database schema", "We migrated the sqlite database schema to version 3 "
     "using a transaction per step.", "2026-04-30 10:00:00", 0.9, "long", None),
    ("O-aaa-2", "Database backup job", "Nightly backup of the database runs at 02:00.",
     "2025-11-01 10:00:00", 0.5, "short", None),
    ("O-aaa-3", "Flaky test in CI", "The login test fails on CI about once a day; retried.",
     "2026-04-20 09:00:00", 0.3, "medium", None),
    ("O-aaa-4", "Old database note", "database database database evicted note", "2026-04-29 09:00:00",
     0.9, "long", "2026-04-30 00:00:00"),
    ("O-aaa-5", "Database schema migrated again", "We migrated the sqlite database schema to version 3 "
     "using a transaction per step, again.", "2026-04-30 11:00:00", 0.9, "long", None),
    ("O-'quote\"-ü", "Unicode and quotes: database ünïcode", "An id with quotes and ü in it; database.",
     "2026-04-28 08:00:00", 0.6, "medium", None),
]

PATTERNS = [("P-0000aaaa", "workflow", "Run database migrations in one transaction", "schema changes",
             "2026-04-25 10:00:00", 2)]
LEARNINGS = [("L-0000bbbb", "Backups of the database must be tested by restoring them", "reflector-synthesized",
              0.8, "2026-04-26 10:00:00")]
EDGES = [("pattern:P-0000aaaa", "observation:O-aaa-1", "supersedes"),
         ("learning:L-0000bbbb", "observation:O-aaa-1", "derived_from")]


def fill_brain(brain: Brain) -> None:
    """Observations, a pattern, a learning and reflection edges."""
    with brain.write() as conn:
        for oid, title, narrative, created, quality, tier, invalid in OBSERVATIONS:
            conn.execute(
                f"INSERT INTO {cs.OBSERVATIONS} (id, type, title, narrative, created_at, quality_score, "
                "memory_tier, invalid_at) VALUES (?, 'discovery', ?, ?, ?, ?, ?, ?)",
                (oid, title, narrative, created, quality, tier, invalid))
        for pid, ptype, pattern, context, extracted, citations in PATTERNS:
            conn.execute(f"INSERT INTO {cs.PATTERNS} (id, type, pattern, context, extracted_at, citation_count) "
                         "VALUES (?, ?, ?, ?, ?, ?)", (pid, ptype, pattern, context, extracted, citations))
        for lid, insight, source, confidence, created in LEARNINGS:
            conn.execute(f"INSERT INTO {cs.LEARNINGS} (id, insight, source, confidence, created_at) "
                         "VALUES (?, ?, ?, ?, ?)", (lid, insight, source, confidence, created))
        for src, dst, kind in EDGES:
            conn.execute(f"INSERT INTO {cs.EDGES} (from_id, to_id, edge_type) VALUES (?, ?, ?)", (src, dst, kind))


def make_brain(directory: Path) -> Brain:
    brain = create_brain(directory / ".cleo" / "cleo.db")
    fill_brain(brain)
    return brain


HIPPO_MEMORIES = [
    # id, content, created, layer, strength, superseded_by
    ("mem-1", "Use WAL mode for the hippo store\nmore text", "2026-04-01T10:00:00.000Z", "semantic", 0.9, None),
    ("mem-2", "Old advice, replaced", "2026-03-01T10:00:00.000Z", "episodic", 0.4, "mem-1"),
]


def make_hippo_store(path: Path) -> Path:
    """A SQLite file shaped like a hippo store: memories, meta and the three v40 trace tables."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("""CREATE TABLE memories (id TEXT PRIMARY KEY, created TEXT NOT NULL,
            layer TEXT NOT NULL, strength REAL NOT NULL, content TEXT NOT NULL,
            tenant_id TEXT NOT NULL DEFAULT 'default', superseded_by TEXT)""")
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('schema_version', '40')")
        for statement in TRACE_SCHEMA:
            conn.execute(statement)
        conn.executemany("INSERT INTO memories (id, content, created, layer, strength, superseded_by) "
                         "VALUES (?, ?, ?, ?, ?, ?)", HIPPO_MEMORIES)
        # Traces as hippo writes them: camelCase steps, one without a multiplier (reranker).
        conn.execute("INSERT INTO recall_traces (ts, tenant_id, session_id, pipeline, query_hash, query_length, "
                     "result_count, explain_mode) VALUES ('2026-04-02T10:00:00.000Z', 'default', 's1', 'cli', "
                     "'0123456789abcdef', 12, 3, 1)")
        conn.executemany(
            "INSERT INTO recall_trace_results (trace_id, tenant_id, memory_id, result_rank, score, rerank_json) "
            "VALUES (1, 'default', ?, ?, ?, ?)",
            [("mem-1", 1, 0.126, '[{"stage":"interference","multiplier":0.3,"scoreBefore":0.42,"scoreAfter":0.126}]'),
             ("mem-2", 2, 0.1, '[{"stage":"reranker","scoreBefore":0.2,"scoreAfter":0.1}]'),
             ("mem-gone", 3, 0.05, "not json")])
        conn.execute("INSERT INTO recall_trace_outcomes (trace_id, ts, tenant_id, outcome, memory_ids_json) "
                     "VALUES (1, '2026-04-02T10:01:00.000Z', 'default', 'positive', '[\"mem-1\"]')")
        conn.execute("INSERT INTO meta VALUES ('last_trace_id', '1'), ('last_retrieval_ids', '[\"mem-1\",\"mem-2\"]')")
    finally:
        conn.close()
    return path


def open_hippo(path: Path) -> Brain:
    return open_brain(make_hippo_store(path))


_TOPICS = ["database", "migration", "schema", "backup", "login", "session", "cache", "deploy", "render",
           "parser", "tokenizer", "budget", "observer", "reflector", "pruner", "journal"]
_VERBS = ["fixed", "added", "refactored", "measured", "documented", "tested", "removed", "tuned"]


def make_big_brain(directory: Path, count: int = 80) -> Brain:
    """A brain with `count` generated observations over a few topics, two sessions, patterns too."""
    brain = make_brain(directory)
    with brain.write() as conn:
        for i in range(count):
            a, b = _TOPICS[i % len(_TOPICS)], _TOPICS[(i * 7 + 3) % len(_TOPICS)]
            verb = _VERBS[i % len(_VERBS)]
            conn.execute(
                f"INSERT INTO {cs.OBSERVATIONS} (id, type, title, narrative, created_at, quality_score, "
                "memory_tier, source_session_id) VALUES (?, 'change', ?, ?, ?, ?, ?, ?)",
                (f"O-gen-{i:03d}", f"{verb.title()} the {a} {b} code", f"We {verb} the {a} and the {b} "
                 f"handling (step {i}).", f"2026-04-{1 + i % 28:02d} {i % 24:02d}:00:00",
                 round(0.2 + (i % 8) / 10, 2), ("short", "medium", "long")[i % 3],
                 ("ses_one", "ses_two", None)[i % 3]))
    return brain
