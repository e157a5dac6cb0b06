"""The "Last Session" section of CLEO's memory bridge: the handoff of the last ended session.

`getLastHandoff` (CLEO's sessions/handoff.ts) reads CLEO's `sessions` table (the task store, in
the same `cleo.db` since 2026.6.0, in `tasks.db` before): ended sessions with an `ended_at`,
newest end first, the first whose `handoff_json` parses (else `debrief_json`'s `handoff`).
No sessions table here: the section is "unknown", said so.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleo_tui.brain.connection import connect
from cleo_tui.brain.store import Brain
from cleo_tui.memory.bridge_sections import chars4_tokens
from cleo_tui.memory.js_values import JsTypeError, js_date_ms, js_join, js_text, js_truthy
from cleo_tui.safe_text import one_line


@dataclass(frozen=True)
class Handoff:
    """The "Last Session" section: `state` is found, none (CLEO writes no section) or unknown."""

    state: str
    session_id: str | None = None
    lines: tuple[str, ...] = ()
    note: str = ""
    problem: str | None = None

    @property
    def tokens(self) -> int:
        return chars4_tokens("\n".join(self.lines)) if self.lines else 0

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "session_id": self.session_id, "lines": list(self.lines),
                "tokens": self.tokens, "note": self.note, **({"problem": self.problem} if self.problem else {})}


SESSION_COLUMNS = ("id", "status", "ended_at", "handoff_json", "debrief_json")


def _no_js_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # JSON.parse refuses NaN and Infinity; Python's json accepts them


def _js_json(text: str) -> Any:
    return json.loads(text, parse_constant=_no_js_constants)


def pick_handoff(rows: Iterable[sqlite3.Row | dict[str, Any]]) -> tuple[str, Any] | None:
    """`getLastHandoff`: ended sessions (status 'ended' and an ended_at), newest end first, the first whose
    handoff_json parses, else whose debrief_json holds a truthy `handoff`."""
    ended = [r for r in rows if r["status"] == "ended" and js_truthy(r["ended_at"])]
    ended.sort(key=lambda r: _sort_key(js_date_ms(r["ended_at"])))
    for row in ended:
        if isinstance(row["handoff_json"], str):
            try:
                return js_text(row["id"]), _js_json(row["handoff_json"])
            except (ValueError, RecursionError):
                pass
        if isinstance(row["debrief_json"], str):
            try:
                debrief = _js_json(row["debrief_json"])
            except (ValueError, RecursionError):
                continue
            if isinstance(debrief, dict) and js_truthy(debrief.get("handoff")):
                return js_text(row["id"]), debrief["handoff"]
    return None


def _sort_key(ms: float) -> tuple[int, float]:
    """Newest first; an unreadable end date (NaN in JavaScript, whose sort then leaves it anywhere) last."""
    return (1, 0.0) if math.isnan(ms) else (0, -ms)


def _list_field(handoff: dict[str, Any], key: str) -> str | None:
    """`h[key].length > 0 ? h[key].join(', ') : skip`, as JavaScript runs it."""
    value = handoff.get(key)
    if value is None:
        raise JsTypeError(f"{key} is missing, and CLEO reads its .length")
    if isinstance(value, list):
        return js_join(value, ", ") if value else None
    if isinstance(value, str) and value:
        raise JsTypeError(f"{key} is text, which has no .join()")
    return None


def handoff_lines(session_id: str, handoff: Any) -> list[str]:
    """The "Last Session" lines CLEO writes for a handoff (JsTypeError where Node would throw)."""
    if not isinstance(handoff, dict):
        if handoff is None:
            raise JsTypeError("the handoff is null")
        handoff = {}  # a number, text or list: every field reads as undefined
    lines = ["## Last Session", "", f"- **Session**: {session_id}"]
    if js_truthy(handoff.get("lastTask")):
        lines.append(f"- **Last focused task**: {js_text(handoff['lastTask'])}")
    for key, label in (("tasksCompleted", "Completed"), ("nextSuggested", "Next suggested"),
                       ("openBlockers", "Open blockers")):
        text = _list_field(handoff, key)
        if text is not None:
            lines.append(f"- **{label}**: {text}")
    if js_truthy(handoff.get("note")):
        lines.append(f"- **Note**: {js_text(handoff['note'])}")
    return [*lines, ""]


def _sessions_source(brain: Brain) -> tuple[sqlite3.Connection | None, str, bool]:
    """(connection, where, owned): the brain's own sessions table, else a `tasks.db` beside an old brain.db."""
    if brain.features.has_table("sessions"):
        return brain.conn, "sessions", False
    beside = Path(brain.path).parent / "tasks.db"
    if Path(brain.path).parent.name == ".cleo" and beside.is_file():
        try:
            return connect(beside, True), f"{beside.name}'s sessions", True
        except Exception:
            return None, str(beside.name), False
    return None, "", False


def read_handoff(brain: Brain) -> Handoff:
    """The Last Session section CLEO would write, or why there is none (or why it cannot be known)."""
    conn, where, owned = _sessions_source(brain)
    if conn is None:
        return Handoff("unknown", note="no sessions table in this brain file (CLEO keeps sessions in its task "
                                       "store); the Last Session section cannot be shown")
    try:
        return _handoff_from(brain, conn, where)
    finally:
        if owned:
            conn.close()


def _handoff_from(brain: Brain, conn: sqlite3.Connection, where: str) -> Handoff:
    try:
        with brain.lock:
            have = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
            lacking = [c for c in SESSION_COLUMNS if c not in have]
            if lacking:
                return Handoff("none", note=f"{where} lacks {', '.join(lacking)}: CLEO's read of its sessions "
                                            "fails, so it writes no Last Session section")
            rows = conn.execute(f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions").fetchall()
    except sqlite3.DatabaseError as exc:
        return Handoff("unknown", note=f"{where} could not be read ({one_line(exc, 100)})")
    picked = pick_handoff([dict(zip(SESSION_COLUMNS, row, strict=True)) for row in rows])
    if picked is None:
        return Handoff("none", note="no ended session holds a handoff: CLEO writes no Last Session section")
    session_id, handoff = picked
    try:
        return Handoff("found", session_id, tuple(handoff_lines(session_id, handoff)), note=f"from {where}")
    except JsTypeError as exc:
        return Handoff("found", session_id, (), note=f"from {where}", problem=str(exc))
