"""Helpers for the observer/reflector tests: real brains, real config files, row snapshots."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any

from cleo_tui.brain import Brain, create_brain
from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.clock import cleo_timestamp, utc_now
from cleo_tui.config import config_path

ANTHROPIC_KEY = "sk-ant-test-SECRET-4f9a2c81d0"
OPENAI_KEY = "sk-test-SECRET-77b1e0c2aa"
SESSION = "ses_test1"
TOUCHED_TABLES = (cs.OBSERVATIONS, cs.PATTERNS, cs.LEARNINGS, cs.EDGES, cs.NODES)


def write_own_config(llm: dict[str, Any]) -> None:
    """cleo-tui's config file (the test's private XDG_CONFIG_HOME) with this `llm` section."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"llm": llm}), encoding="utf-8")


def fast_config(timeout: float = 5.0) -> None:
    """No retries (they would add seconds) and a short timeout."""
    write_own_config({"max_retries": 0, "timeout": timeout})


def write_project_config(brain: Brain, config: dict[str, Any]) -> None:
    """CLEO's `<project>/.cleo/config.json` beside the brain."""
    (Path(brain.path).parent / "config.json").write_text(json.dumps(config), encoding="utf-8")


def add_observations(brain: Brain, count: int, session: str | None = SESSION, prefix: str = "O-t",
                     age: timedelta = timedelta(minutes=5), **columns: Any) -> list[str]:
    """`count` live observations created recently (oldest first); returns their ids."""
    ids = []
    with brain.write() as conn:
        for i in range(count):
            oid = f"{prefix}{i:03d}"
            row = {"id": oid, "type": "discovery", "title": f"step {i} of the work",
                   "narrative": f"Narrative of step {i}: edited src/module_{i}.py and ran the tests.",
                   "created_at": cleo_timestamp(utc_now() - age + timedelta(seconds=i)),
                   "source_session_id": session, **columns}
            cols = ", ".join(f'"{c}"' for c in row)
            conn.execute(f"INSERT INTO {cs.OBSERVATIONS} ({cols}) VALUES ({', '.join('?' for _ in row)})",
                         list(row.values()))
            ids.append(oid)
    return ids


def brain_with_observations(tmp_path: Path, count: int = 12, session: str | None = SESSION) -> tuple[Brain, list[str]]:
    brain = create_brain(tmp_path / "project" / ".cleo" / "cleo.db")
    return brain, add_observations(brain, count, session)


def snapshot(brain: Brain, tables: Iterable[str] = TOUCHED_TABLES) -> dict[str, list[tuple]]:
    """Every column of every row of `tables`, in a stable order."""
    out = {}
    for table in tables:
        cols = [r[1] for r in brain.query(f'PRAGMA table_info("{table}")')]
        out[table] = sorted((tuple(r) for r in brain.query(f'SELECT * FROM "{table}"')), key=repr)
        out[table + ":columns"] = [tuple(cols)]
    return out


def without_restored_updated_at(snap: dict[str, list[tuple]], restored: Iterable[str]) -> dict[str, list[tuple]]:
    """`snap` with `updated_at` blanked in the rows whose id is in `restored`, and nothing else.

    Undo stamps a restored row's `updated_at` with the time of the undo (issue 20 item 1),
    so a round trip puts back every column but that one, of those rows only.
    """
    wanted = set(restored)
    out = dict(snap)
    for name, rows in snap.items():
        columns = snap.get(name + ":columns")
        if not columns or "id" not in columns[0] or "updated_at" not in columns[0]:
            continue
        key, stamp = columns[0].index("id"), columns[0].index("updated_at")
        out[name] = sorted((tuple(None if c == stamp and row[key] in wanted else v for c, v in enumerate(row))
                            for row in rows), key=repr)
    return out


def fts_consistent(brain: Brain) -> bool:
    """FTS5's own integrity check of the observations index against its content table."""
    try:
        with brain.write() as conn:
            conn.execute(f"INSERT INTO {cs.OBSERVATIONS_FTS}({cs.OBSERVATIONS_FTS}) VALUES ('integrity-check')")
        return True
    except Exception:
        return False


def notes_answer(ids: list[str], extra: list[dict[str, Any]] | None = None) -> str:
    """A well-formed observer answer over `ids`."""
    notes = [
        {"date": "2026-11-30", "priority": 1, "observation": "Chose SQLite WAL for the brain store.",
         "source_ids": ids[0:3]},
        {"date": "2026-11-30", "priority": 3, "observation": "Tests fail when the cache dir is read-only.",
         "source_ids": ids[3:5]},
        {"date": "2026-11-30", "priority": 5, "observation": "Routine formatting fixes.",
         "source_ids": ids[5:6]},
    ]
    return json.dumps(notes + (extra or []))


def reflection_answer(superseded: list[Any], patterns: list[dict] | None = None,
                      learnings: list[dict] | None = None) -> str:
    return json.dumps({
        "patterns": patterns if patterns is not None else [
            {"pattern": "Run the tests before every commit", "context": "CI is slow"},
            {"pattern": "Keep writes in one short transaction", "context": "CLEO writes concurrently"}],
        "learnings": learnings if learnings is not None else [
            {"insight": "WAL mode avoids reader/writer blocking", "confidence": 0.9},
            {"insight": "Read-only cache dirs break tiktoken", "confidence": 0.4}],
        "superseded": superseded,
    })
