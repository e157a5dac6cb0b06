"""Helpers for the tokenizer, tag, pruner and curation tests: real brains via the Brain API."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cleo_tui.brain import Brain, create_brain
from cleo_tui.brain import cleo_schema as cs


def new_brain(tmp_path: Path) -> Brain:
    """A fresh brain in CLEO's layout at tmp_path/.cleo/cleo.db."""
    return create_brain(tmp_path / ".cleo" / "cleo.db")


_HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # maps the WAL index, as any reader does
print("open", flush=True)
sys.stdin.read()  # until the test is done with it
conn.close()
"""


@contextmanager
def held_open_by_another_process(db_path: Path | str) -> Iterator[None]:
    """Another process (as CLEO's would) has the brain open, idle, for the block's length."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(db_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        yield
    finally:
        holder.communicate("", timeout=30)


def routine_brain(tmp_path: Path, count: int) -> Brain:
    """A new brain of `count` alike rows ("routine work item N", ids O-00, O-01 … as wide as `count` needs)."""
    brain = new_brain(tmp_path)
    width = max(2, len(str(count - 1)))
    for i in range(count):
        add_observation(brain, f"O-{i:0{width}d}", f"routine work item {i} " * 6,
                        created_at=f"2026-01-{i % 28 + 1:02d} 10:00:00")
    return brain


def add_observation(brain: Brain, id: str, narrative: str = "", created_at: str = "2026-01-01 10:00:00",
                    **columns: Any) -> None:
    """Insert one observation (type 'discovery', title from the narrative unless given)."""
    row = {"id": id, "type": "discovery", "title": (narrative or id)[:120], "narrative": narrative,
           "created_at": created_at, **columns}
    cols = ", ".join(f'"{c}"' for c in row)
    with brain.write() as conn:
        conn.execute(f"INSERT INTO {cs.OBSERVATIONS} ({cols}) VALUES ({', '.join('?' for _ in row)})",
                     list(row.values()))


def add_pattern(brain: Brain, pattern_id: str, text: str, cites: Iterable[str] = (),
                edge_type: str = "derived_from") -> None:
    """Insert one live pattern with edges to the observations it cites."""
    with brain.write() as conn:
        conn.execute(f"INSERT INTO {cs.PATTERNS} (id, type, pattern, context) VALUES (?, 'workflow', ?, '')",
                     (pattern_id, text))
        for obs in cites:
            conn.execute(f"INSERT OR IGNORE INTO {cs.EDGES} (from_id, to_id, edge_type) VALUES (?, ?, ?)",
                         (f"pattern:{pattern_id}", f"observation:{obs}", edge_type))


def observation_rows(brain: Brain) -> list[tuple]:
    """Every column of every observation, ordered by id (to compare before/after)."""
    return [tuple(r) for r in brain.query(f"SELECT * FROM {cs.OBSERVATIONS} ORDER BY id")]


def simulate_time(monkeypatch: Any, brain: Brain, perf_counter: Callable[[], float],
                  sleep: Callable[[float], None], per_row: Callable[[int], None]) -> None:
    """Run chunked writes on a simulated clock: `journal_chunks.time` replaced (nothing sleeps), and
    `per_row(rowid)` called for every observation a write evicts or restores, to advance it (a
    temporary trigger on the test's own connection: the brain file is not changed)."""
    from types import SimpleNamespace

    from cleo_tui.brain import journal_chunks

    monkeypatch.setattr(journal_chunks, "time", SimpleNamespace(perf_counter=perf_counter, sleep=sleep))
    brain.conn.create_function("row_written", 1, per_row)
    brain.conn.execute("CREATE TEMP TRIGGER row_cost AFTER UPDATE OF invalid_at ON brain_observations "
                       "BEGIN SELECT row_written(new.rowid); END")


def small_tagged_brain(tmp_path: Path) -> Brain:
    """Five observations (a decision, a low-quality one, two sharing a file, one unique file) and three
    patterns citing one of them: every tag kind, small enough for any test."""
    brain = new_brain(tmp_path)
    add_observation(brain, "O-a", "Chose SQLite for storage", type="decision")
    add_observation(brain, "O-b", "Routine status update", quality_score=0.2)
    add_observation(brain, "O-c", "Edited src/only/here.py", source_session_id="ses_1")
    add_observation(brain, "O-d", "Old note about lib/x.py", created_at="2025-12-01 09:00:00")
    add_observation(brain, "O-e", "Another note about lib/x.py", source_session_id="ses_1")
    for i in range(3):
        add_pattern(brain, f"P-{i}", f"pattern {i}", cites=["O-a"])
    return brain
