"""Small reads about observations that the panes need: existence, sessions with live rows.

Also the wording of a damaged-file failure, so the UI never speaks SQL itself.
"""

from __future__ import annotations

import sqlite3

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.store import Brain


def largest_rowid(brain: Brain) -> int:
    """The observations' largest rowid (0 when there are none): read from the end of the table's
    b-tree at once, it stands for their count where a count would read every row."""
    return int(brain.scalar(f"SELECT coalesce(max(rowid), 0) FROM {cs.OBSERVATIONS}") or 0)


def observation_exists(brain: Brain, observation_id: str) -> bool:
    """True when an observation (live or evicted) has exactly this id."""
    if not brain.features.has_table(cs.OBSERVATIONS):
        return False
    return brain.scalar(f"SELECT 1 FROM {cs.OBSERVATIONS} WHERE id = ?", (observation_id,)) is not None


def live_sessions(brain: Brain, limit: int = 200) -> list[tuple[str, int]]:
    """(session id, live rows) for the sessions with live observations, most recent first."""
    if not (brain.features.has_column(cs.OBSERVATIONS, "source_session_id")
            and brain.features.has_column(cs.OBSERVATIONS, "invalid_at")):
        return []
    rows = brain.query(
        f"SELECT source_session_id, COUNT(*) FROM {cs.OBSERVATIONS} WHERE invalid_at IS NULL "
        "AND source_session_id IS NOT NULL AND source_session_id != '' GROUP BY source_session_id "
        "ORDER BY MAX(created_at) DESC LIMIT ?", (limit,))
    return [(str(r[0]), int(r[1])) for r in rows]




def is_database_error(error: BaseException) -> bool:
    """True for SQLite's own failures (a damaged file, a file changed under us)."""
    return isinstance(error, sqlite3.DatabaseError)


def database_failure_text(error: BaseException) -> tuple[str, str]:
    """(title, body) for a SQLite failure, saying what was (not) written and how to check the file."""
    return ("The brain could not be read",
            f"SQLite said: {error}.\n\nThe file may be damaged, or another program changed it while it was open. "
            "Nothing was written unless a message said so; reopen the brain, or check it with "
            "`sqlite3 FILE 'PRAGMA integrity_check'`.")
