"""Which observations the observer and reflector show the model, as CLEO picks them.

Observer: live observations that are not observer notes, of the session,
newest first, up to 30; fewer than 2 → the same over the last 24 hours.
Reflector: live observations of the session (raw and notes), up to 50;
fewer than 3 → the last 48 hours. Without a session, every live row counts.
The narrative is cut in SQL, so a 1 MB narrative never leaves SQLite.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.clock import cleo_timestamp, utc_now
from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import OBSERVER_SOURCE_TYPE, as_text

OBSERVER_LIMIT = 30
OBSERVER_MIN_ROWS = 2
OBSERVER_WINDOW = timedelta(hours=24)
REFLECTOR_LIMIT = 50
REFLECTOR_MIN_ROWS = 3
REFLECTOR_WINDOW = timedelta(hours=48)
EXCERPT = 200
# Cut as bytes: SQLite's text functions stop at a NUL, and CLEO narratives may hold one.
EXCERPT_BYTES = EXCERPT * 20

SCOPE_SESSION = "session"
SCOPE_ALL = "all live observations"


@dataclass(frozen=True)
class InputRow:
    """One observation as the model sees it (text collapsed to one line)."""

    id: str
    created_at: str
    title: str
    excerpt: str
    source_type: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "created_at": self.created_at, "title": self.title,
                "excerpt": self.excerpt, "source_type": self.source_type}


@dataclass(frozen=True)
class Selection:
    """The rows chosen, how (`scope`), and for the observer the uncompressed count."""

    rows: tuple[InputRow, ...]
    scope: str
    uncompressed: int = 0

    @property
    def ids(self) -> list[str]:
        return [row.id for row in self.rows]


def _one_line(value: Any) -> str:
    return " ".join(as_text(value).split())


def _column(brain: Brain, column: str, expr: str | None = None) -> str:
    if brain.features.has_column(cs.OBSERVATIONS, column):
        return f'{expr or column} AS "{column}"'
    return f"NULL AS \"{column}\""


def _filters(brain: Brain, notes: bool, session_id: str | None, since: str | None) -> tuple[list[str], list[Any]]:
    has = brain.features.columns(cs.OBSERVATIONS)
    where, params = [], []
    if "invalid_at" in has:
        where.append("invalid_at IS NULL")
    if not notes and "source_type" in has:
        where.append("(source_type IS NULL OR source_type != ?)")
        params.append(OBSERVER_SOURCE_TYPE)
    if session_id is not None:
        where.append("source_session_id = ?" if "source_session_id" in has else "0")
        params += [session_id] if "source_session_id" in has else []
    if since is not None:
        where.append("created_at >= ?" if "created_at" in has else "0")
        params += [since] if "created_at" in has else []
    return where or ["1"], params


def _read(brain: Brain, where: list[str], params: list[Any], limit: int) -> tuple[InputRow, ...]:
    cols = ", ".join(["id", _column(brain, "created_at"), _column(brain, "title"),
                      _column(brain, "narrative", f"substr(CAST(narrative AS BLOB), 1, {EXCERPT_BYTES})"),
                      _column(brain, "source_type")])
    order = "created_at DESC, rowid DESC" if brain.features.has_column(cs.OBSERVATIONS, "created_at") else "rowid DESC"
    rows = brain.query(f"SELECT {cols} FROM {cs.OBSERVATIONS} WHERE {' AND '.join(where)} "
                       f"ORDER BY {order} LIMIT ?", [*params, limit])
    return tuple(InputRow(as_text(r["id"]), _one_line(r["created_at"]), _one_line(r["title"]),
                          _one_line(r["narrative"])[:EXCERPT], _one_line(r["source_type"])) for r in rows)


def _count_uncompressed(brain: Brain, where: list[str], params: list[Any]) -> int:
    """Rows matching `where` that no observer note supersedes yet."""
    total = brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} WHERE {' AND '.join(where)}", params) or 0
    if not brain.supports("graph_edges") or not brain.features.has_column(cs.OBSERVATIONS, "source_type"):
        return int(total)
    compressed = brain.scalar(
        f"SELECT count(*) FROM {cs.OBSERVATIONS} WHERE {' AND '.join(where)} AND id IN ("
        f"SELECT substr(e.to_id, 13) FROM {cs.EDGES} e WHERE e.edge_type = 'supersedes' "
        f"AND e.to_id LIKE 'observation:%' AND e.from_id IN ("
        f"SELECT 'observation:' || id FROM {cs.OBSERVATIONS} WHERE source_type = ?))",
        [*params, OBSERVER_SOURCE_TYPE]) or 0
    return int(total) - int(compressed)


def _select(brain: Brain, notes: bool, session_id: str | None, limit: int, minimum: int,
            window: timedelta, count: bool) -> Selection:
    where, params = _filters(brain, notes, session_id, None)
    rows = _read(brain, where, params, limit)
    scope = SCOPE_SESSION if session_id is not None else SCOPE_ALL
    if session_id is not None and len(rows) < minimum:
        since = cleo_timestamp(utc_now() - window)
        where, params = _filters(brain, notes, None, since)
        rows = _read(brain, where, params, limit)
        scope = f"last {int(window.total_seconds() // 3600)} hours (too few rows in the session)"
    return Selection(rows, scope, _count_uncompressed(brain, where, params) if count else 0)


def observer_selection(brain: Brain, session_id: str | None) -> Selection:
    """The observer's input rows and the count its threshold is compared with."""
    return _select(brain, False, session_id, OBSERVER_LIMIT, OBSERVER_MIN_ROWS, OBSERVER_WINDOW, True)


def reflector_selection(brain: Brain, session_id: str | None) -> Selection:
    """The reflector's input rows (raw observations and observer notes)."""
    return _select(brain, True, session_id, REFLECTOR_LIMIT, REFLECTOR_MIN_ROWS, REFLECTOR_WINDOW, False)


def fingerprint(brain: Brain, ids: Sequence[str]) -> str:
    """A hash of the rows' state (validity, update time, text), to spot a stale proposal."""
    cols = [c for c in ("id", "invalid_at", "updated_at", "title", "narrative")
            if brain.features.has_column(cs.OBSERVATIONS, c)]
    rows = brain.query(f"SELECT {', '.join(cols)} FROM {cs.OBSERVATIONS} "
                       "WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id", [json.dumps(list(ids))])
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps([as_text(v) if v is not None else None for v in row]).encode("utf-8"))
    return digest.hexdigest()[:32]
