"""Recall-aware protection (opt-in): memories the agent recalled lately, or that a task used, never drop.

Off unless the config file says so (`config.protect_settings`):

    {"protect": {"recalled_within_days": 30, "used_by_task": true}}

- `recalled_within_days = N`: an observation that a recorded retrieval returned in the last
  N days is protected, with the reason "recalled 2026-11-28 (query 'stripe webhook')" (the
  newest such recall; CLEO's raw query shown on one line, cut short) — or "(trace 12)" for
  a recall trace, which keeps no query text;
- `used_by_task = true`: an observation that `brain_usage_log` records as used by a task
  (`used = 1`) is protected: "used by task T123" (the newest task, and how many more).

The reasons are read from the brain with every scan (`pool_scan` calls `protection_reasons`),
never stored with a scan's snapshot, so a change of the config or of the logs shows at the
next scan. The logs are read in SQL (CLEO's `entry_ids` through `json_each`, rows that are not
a JSON list skipped), which is what lets this layer read them without the recall layer.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from datetime import datetime, timedelta

from cleo_tui.brain.cleo_schema import RETRIEVAL_LOG, USAGE_LOG
from cleo_tui.brain.clock import cleo_timestamp, current_time
from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.migrations import TRACE_RESULTS, TRACES
from cleo_tui.brain.store import Brain
from cleo_tui.config import ProtectSettings, load_config, protect_settings
from cleo_tui.memory.mapping import as_text
from cleo_tui.safe_text import one_line

QUERY_SHOWN = 40  # characters of a query a reason shows
RECALLED, USED = "recalled", "used by task"  # the kinds of these reasons (the Observations column's short name)

Reasons = Mapping[str, tuple[str, ...]]


def configured() -> ProtectSettings:
    """The protection rules the config file asks for (all off when it says nothing, or something invalid)."""
    return protect_settings(load_config()[0])[0]


def now() -> datetime:
    """$CLEO_TUI_NOW when set (ISO), else the clock (`clock.current_time`)."""
    return current_time()


def kind_of(reason: str) -> str | None:
    """`recalled` or `used by task` for a reason of this module, else None."""
    if reason.startswith(RECALLED + " "):
        return RECALLED
    if reason.startswith((USED + " ", "used by a task")):
        return USED
    return None


class ProtectionUnreadable(BrainError):
    """Recall-aware protection is on, but CLEO's logs could not be read: nothing may drop unguarded."""


def protection_reasons(brain: Brain, settings: ProtectSettings | None = None,
                       moment: datetime | None = None) -> dict[str, tuple[str, ...]]:
    """Observation id → its recall-aware protection reasons (empty when the rules are off).

    Raises ProtectionUnreadable when the rules are on and the logs cannot be read: a prune
    that silently lost the protection the user asked for could drop what it should keep.
    """
    settings = configured() if settings is None else settings
    if not settings.enabled:
        return {}
    try:
        return _reasons(brain, settings, moment)
    except sqlite3.Error as exc:
        raise ProtectionUnreadable(
            f"Recall-aware protection is on (config `protect`), but CLEO's retrieval or usage log could not be "
            f"read ({one_line(str(exc), 160)}); nothing was judged. Turn the rule off or repair the log.") from None


def _reasons(brain: Brain, settings: ProtectSettings, moment: datetime | None) -> dict[str, tuple[str, ...]]:
    reasons: dict[str, list[str]] = {}
    if settings.recalled_within_days is not None:
        since = (moment or now()) - timedelta(days=settings.recalled_within_days)
        for entry, reason in _recalled_since(brain, cleo_timestamp(since)).items():
            reasons.setdefault(entry, []).append(reason)
    if settings.used_by_task:
        for entry, reason in _used_by_tasks(brain).items():
            reasons.setdefault(entry, []).append(reason)
    return {entry: tuple(found) for entry, found in reasons.items()}


def _recalled_since(brain: Brain, since: str) -> dict[str, str]:
    """id → "recalled DAY (query '…')" for the newest retrieval at or after `since` that returned it."""
    newest: dict[str, tuple[str, str]] = {}  # id → (comparable stamp, reason)

    def keep(entry: object, stamp: object, what: str) -> None:
        if entry is None or stamp is None:
            return
        day = as_text(stamp).replace("T", " ", 1)
        key = as_text(entry)
        if key not in newest or day > newest[key][0]:
            newest[key] = (day, f"{RECALLED} {day[:10]} ({what})")

    if {"entry_ids", "created_at", "query"} <= brain.features.columns(RETRIEVAL_LOG):
        listed = "CASE WHEN json_valid(r.entry_ids) AND json_type(r.entry_ids) = 'array' THEN r.entry_ids ELSE '[]' END"
        rows = brain.query(f"SELECT j.value, r.created_at, r.query FROM {RETRIEVAL_LOG} r, json_each({listed}) j "
                           "WHERE replace(r.created_at, 'T', ' ') >= ? AND j.type IN ('text', 'integer') "
                           "ORDER BY r.id", [since])
        for entry, stamp, query in rows:
            shown = "no query" if query is None else f"query '{one_line(as_text(query), QUERY_SHOWN)}'"
            keep(entry, stamp, shown)
    if brain.features.has_table(TRACES) and brain.features.has_table(TRACE_RESULTS):
        rows = brain.query(f"SELECT r.memory_id, t.ts, t.id FROM {TRACES} t JOIN {TRACE_RESULTS} r "
                           "ON r.trace_id = t.id WHERE replace(t.ts, 'T', ' ') >= ?", [since])
        for entry, stamp, trace in rows:
            keep(entry, stamp, f"trace {trace}")
    return {entry: reason for entry, (_, reason) in newest.items()}


def _used_by_tasks(brain: Brain) -> dict[str, str]:
    """id → "used by task T123" (the newest task that used it; "and N more" when others did)."""
    columns = brain.features.columns(USAGE_LOG)
    if not {"entry_id", "used"} <= columns:
        return {}
    task = "task_id" if "task_id" in columns else "NULL"
    order = "created_at, id" if {"created_at", "id"} <= columns else "rowid"
    tasks: dict[str, dict[str | None, None]] = {}
    for entry, task_id in brain.query(f"SELECT entry_id, {task} FROM {USAGE_LOG} WHERE used = 1 ORDER BY {order}"):
        if entry is None:
            continue
        named = tasks.setdefault(as_text(entry), {})
        key = None if task_id is None else one_line(as_text(task_id), 40)
        named.pop(key, None)
        named[key] = None  # the newest last
    out = {}
    for entry, named in tasks.items():
        last = list(named)[-1]
        more = len(named) - 1
        out[entry] = (f"{USED} {last}" if last is not None else "used by a task") + (
            f" (and {more} more)" if more else "")
    return out
