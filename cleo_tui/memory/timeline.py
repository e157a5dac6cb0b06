"""The brain's days: what was added and evicted each day, and what was live at its end.

Every count is a SQL aggregate grouped by day (the first ten characters of the
UTC timestamp); Python only walks the days, never the rows, so 100,000
observations cost a few grouped scans. `live` and `live_tokens` are the state at
the end of each day: rows created that day or before, minus those evicted by
then. Tokens are chars/4 of each row's content (narrative, else title), rounded
up — the pruner's own count renders more than the content and may use another
tokenizer, so these are for the chart, not for a budget. Rows whose date is not
a date are counted under `undated`, not in any day.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.migrations import TRACES
from cleo_tui.brain.store import Brain
from cleo_tui.memory import causes as c
from cleo_tui.memory.mapping import OBSERVER_SOURCE_TYPE

TOKENIZER = "chars4"
MAX_FILLED_DAYS = 3660  # beyond ten years of calendar, list only the days with activity
NO_SOURCE = "(none)"
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass
class Day:
    day: str
    added: int = 0
    added_by_source: dict[str, int] = field(default_factory=dict)
    evicted: dict[str, int] = field(default_factory=dict)
    live: int = 0
    live_tokens: int = 0
    observer_notes: int = 0
    reflections: int = 0
    recalls: int = 0  # recall traces and CLEO's logged retrievals (brain_retrieval_log)

    @property
    def evicted_total(self) -> int:
        return sum(self.evicted.values())

    def to_dict(self) -> dict[str, Any]:
        return {"day": self.day, "added": self.added, "added_by_source": dict(self.added_by_source),
                "evicted": dict(self.evicted), "live": self.live, "live_tokens": self.live_tokens,
                "observer_notes": self.observer_notes, "reflections": self.reflections, "recalls": self.recalls}


@dataclass
class Timeline:
    days: list[Day]
    tokenizer: str = TOKENIZER
    undated: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"days": [d.to_dict() for d in self.days], "tokenizer": self.tokenizer,
                "undated": dict(self.undated), "notes": list(self.notes)}


def is_day(text: str) -> bool:
    """`YYYY-MM-DD` naming a real calendar day."""
    if not _DAY.match(text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _content_tokens(brain: Brain, table: str, narrative: str, title: str) -> str:
    """SQL: chars/4 of the row's content, rounded up."""
    has = brain.features.columns(table)
    text = f"COALESCE({title}, '')" if title in has else "''"
    if narrative in has:
        text = f"CASE WHEN trim(COALESCE({narrative}, '')) != '' THEN {narrative} ELSE {text} END"
    return f"(length({text}) + 3) / 4"


class _Days:
    """Day rows being filled from grouped queries; undated counts kept aside."""

    def __init__(self) -> None:
        self.by_day: dict[str, Day] = {}
        self.undated: dict[str, int] = {}

    def get(self, day: Any, what: str, count: int) -> Day | None:
        text = "" if day is None else str(day)
        if not is_day(text):
            self.undated[what] = self.undated.get(what, 0) + int(count)
            return None
        return self.by_day.setdefault(text, Day(text))


def _observation_days(brain: Brain, days: _Days, gone: dict[str, tuple[int, int]]) -> None:
    """Added, by source, observer notes and tokens in one scan; evictions by cause in another."""
    o = cs.OBSERVATIONS
    has = brain.features.columns(o)
    tokens = _content_tokens(brain, o, "narrative", "title")
    source = "source_type" if "source_type" in has else "NULL"
    # A row stops being live at the later of its creation and eviction days.
    gone_day = ("CASE WHEN invalid_at IS NOT NULL THEN max(substr(created_at, 1, 10), substr(invalid_at, 1, 10)) "
                "END" if "invalid_at" in has else "NULL")
    rows = brain.query(f"SELECT substr(created_at, 1, 10), {source}, {gone_day}, count(*), sum({tokens}) "
                       f"FROM {o} GROUP BY 1, 2, 3")
    for day, src, lost_on, count, tok in rows:
        d = days.get(day, "added", count)
        if d is None:
            continue
        d.added += int(count)
        key = NO_SOURCE if src is None else str(src)
        d.added_by_source[key] = d.added_by_source.get(key, 0) + int(count)
        d.observer_notes += int(count) if src == OBSERVER_SOURCE_TYPE else 0
        d.live_tokens += int(tok or 0)  # tokens added that day; made cumulative in _accumulate
        if lost_on is not None and is_day(str(lost_on)):
            old = gone.get(str(lost_on), (0, 0))
            gone[str(lost_on)] = (old[0] + int(count), old[1] + int(tok or 0))
    if "invalid_at" not in has:
        return
    sql = c.cause_sql(brain)
    for day, cause, count in brain.query(
            f"{sql.with_clause()}SELECT substr(o.invalid_at, 1, 10), {sql.case}, count(*) FROM {o} o{sql.joins} "
            "WHERE o.invalid_at IS NOT NULL GROUP BY 1, 2"):
        d = days.get(day, "evicted", count)
        if d is not None:
            d.evicted[str(cause)] = d.evicted.get(str(cause), 0) + int(count)


def _simple_counts(brain: Brain, days: _Days, table: str, column: str, what: str) -> None:
    if not brain.features.has_column(table, column):
        return
    for day, count in brain.query(f'SELECT substr("{column}", 1, 10), count(*) FROM "{table}" GROUP BY 1'):
        d = days.get(day, what, count)
        if d is not None:
            setattr(d, what, getattr(d, what) + int(count))


def _hippo_days(brain: Brain, days: _Days, gone: dict[str, tuple[int, int]]) -> list[str]:
    """hippo keeps no eviction time: a superseded memory leaves `live` on the day it was created."""
    has = brain.features.columns("memories")
    if "created" not in has:
        return ["this hippo store's memories table has no created column"]
    layer = "layer" if "layer" in has else "NULL"
    superseded = "superseded_by IS NOT NULL" if "superseded_by" in has else "0"
    tokens = _content_tokens(brain, "memories", "content", "content")
    for day, src, count, tok, sup, sup_tok in brain.query(
            f"SELECT substr(created, 1, 10), {layer}, count(*), sum({tokens}), sum({superseded}), "
            f"sum(CASE WHEN {superseded} THEN {tokens} ELSE 0 END) FROM memories GROUP BY 1, 2"):
        d = days.get(day, "added", count)
        if d is None:
            continue
        d.added += int(count)
        key = NO_SOURCE if src is None else str(src)
        d.added_by_source[key] = d.added_by_source.get(key, 0) + int(count)
        d.live_tokens += int(tok or 0)
        old = gone.get(d.day, (0, 0))
        gone[d.day] = (old[0] + int(sup or 0), old[1] + int(sup_tok or 0))
    return [("hippo records no eviction time: a superseded memory is left out of `live` from the day it was "
             "created, and `evicted` stays empty; forgotten memories have no row and are not counted"),
            "added_by_source counts hippo's layers"]


def _calendar(found: dict[str, Day]) -> list[Day]:
    """Every day from the first to the last with activity (gaps included), when that is not absurd."""
    if not found:
        return []
    first, last = date.fromisoformat(min(found)), date.fromisoformat(max(found))
    if (last - first).days > MAX_FILLED_DAYS:
        return [found[k] for k in sorted(found)]
    out = []
    for n in range((last - first).days + 1):
        key = (first + timedelta(days=n)).isoformat()
        out.append(found.get(key) or Day(key))
    return out


def _accumulate(ordered: list[Day], gone: dict[str, tuple[int, int]]) -> None:
    """Turn per-day additions (count, tokens) into the state at the end of each day."""
    live = tokens = 0
    for d in ordered:
        lost = gone.get(d.day, (0, 0))
        live += d.added - lost[0]
        tokens += d.live_tokens - lost[1]
        d.live, d.live_tokens = live, tokens


def brain_timeline(brain: Brain, since: str | None = None) -> Timeline:
    """The brain's days (from `since`, YYYY-MM-DD, inclusive); state at each day's end."""
    days = _Days()
    gone: dict[str, tuple[int, int]] = {}
    notes: list[str] = []
    if not brain.supports("observations") or not brain.features.has_table(cs.OBSERVATIONS):
        notes += _hippo_days(brain, days, gone) if brain.features.has_table("memories") else []
    else:
        _observation_days(brain, days, gone)
        _simple_counts(brain, days, cs.PATTERNS, "extracted_at", "reflections")
        _simple_counts(brain, days, cs.LEARNINGS, "created_at", "reflections")
        if not brain.features.has_column(cs.OBSERVATIONS, "invalid_at"):
            notes.append("this brain has no invalid_at column: nothing can be evicted")
    _simple_counts(brain, days, TRACES, "ts", "recalls")
    _simple_counts(brain, days, cs.RETRIEVAL_LOG, "created_at", "recalls")  # CLEO's own retrievals count too
    ordered = _calendar(days.by_day)
    _accumulate(ordered, {k: v for k, v in gone.items()})
    if since is not None:
        ordered = [d for d in ordered if d.day >= since]
    notes.append(f"live_tokens are {TOKENIZER} (length of the content / 4, rounded up), for the chart only")
    return Timeline(ordered, TOKENIZER, days.undated, notes)
