"""Are the brain's agents alive? When the observer, reflector and consolidation last ran.

- observer: the newest observer note (`source_type='observer-compressed'`);
- reflector: the newest reflector-synthesized output — a learning with
  `source='reflector-synthesized'`, an edge with provenance `reflector-synthesized:…`,
  or a cleo-tui `reflect` run;
- consolidation: the newest row of `brain_consolidation_events`, where it has rows;
- dream state: `.cleo/sentient-state.json` beside the brain, when present.

Warnings are plain sentences ("no observer note in 12 days while 340
observations arrived"). `brain_liveness` is the one call the CLI's `info` and the
TUI both use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.clock import current_time
from cleo_tui.brain.migrations import RUNS
from cleo_tui.brain.project_config import load_project_settings
from cleo_tui.brain.store import Brain
from cleo_tui.memory import causes as c
from cleo_tui.memory.evidence import ConsolidationEvent, consolidation_events
from cleo_tui.memory.mapping import OBSERVER_SOURCE_TYPE, as_text
from cleo_tui.safe_text import plural

SENTIENT_STATE = "sentient-state.json"
STALE_DAYS = 2                 # quiet for longer than this, while rows arrive, is worth a warning
REFLECTOR_ARRIVALS = 20        # the reflector needs only 3 rows; 20 unreflected rows is a gap
CONSOLIDATION_STALE_DAYS = 7
STATE_KEYS = ("sweepGateActive", "sweepRunId", "killSwitch", "dreamWatermark")


@dataclass(frozen=True)
class DreamState:
    """What `.cleo/sentient-state.json` says (known keys lifted out; the rest kept as read)."""

    path: str
    sweep_gate_active: bool | None = None
    sweep_run_id: Any = None
    kill_switch: Any = None
    dream_watermark: Any = None
    other: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "sweep_gate_active": self.sweep_gate_active, "sweep_run_id": self.sweep_run_id,
                "kill_switch": self.kill_switch, "dream_watermark": self.dream_watermark, "other": self.other,
                "error": self.error}


@dataclass(frozen=True)
class Liveness:
    observer_last_run: str | None
    reflector_last_run: str | None
    reflector_evidence: str | None
    consolidation: ConsolidationEvent | None
    consolidation_table: str  # absent, empty or present
    dream: DreamState | None
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "observer_last_run": self.observer_last_run,
            "reflector_last_run": self.reflector_last_run,
            "reflector_evidence": self.reflector_evidence,
            "consolidation_last": None if self.consolidation is None else self.consolidation.to_dict(),
            "consolidation_table": self.consolidation_table,
            "dream_state": None if self.dream is None else self.dream.to_dict(),
            "warnings": list(self.warnings),
        }


def _parse(stamp: str | None) -> datetime | None:
    """CLEO's `YYYY-MM-DD HH:MM:SS` or ISO with T/Z, as aware UTC; None when it is not a time."""
    if not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _newest(brain: Brain, sql: str, params: tuple[Any, ...] = ()) -> str | None:
    value = brain.scalar(sql, params)
    return None if value is None else as_text(value)


def observer_last_run(brain: Brain) -> str | None:
    if not brain.features.has_column(cs.OBSERVATIONS, "source_type"):
        return None
    return _newest(brain, f"SELECT max(created_at) FROM {cs.OBSERVATIONS} WHERE source_type = ?",
                   (OBSERVER_SOURCE_TYPE,))


def reflector_last_run(brain: Brain) -> tuple[str | None, str | None]:
    """(when, what showed it) of the newest reflector output."""
    found: list[tuple[str, str]] = []
    if brain.features.has_column(cs.LEARNINGS, "source"):
        at = _newest(brain, f"SELECT max(created_at) FROM {cs.LEARNINGS} WHERE source LIKE ?",
                     (c.REFLECTOR_PROVENANCE + "%",))
        if at:
            found.append((at, "a learning with source reflector-synthesized"))
    if brain.features.has_column(cs.EDGES, "provenance"):
        at = _newest(brain, f"SELECT max(created_at) FROM {cs.EDGES} WHERE provenance LIKE ? "
                            "AND (substr(from_id, 1, 8) = 'pattern:' OR substr(from_id, 1, 9) = 'learning:')",
                     (c.REFLECTOR_PROVENANCE + "%",))
        if at:
            found.append((at, "an edge with provenance reflector-synthesized"))
    if brain.features.has_table(RUNS):
        at = _newest(brain, f"SELECT max(created_at) FROM {RUNS} WHERE kind = 'reflect' AND undone_by IS NULL")
        if at:
            found.append((at, "a cleo-tui reflect run"))
    if not found:
        return None, None
    at, what = max(found, key=lambda item: _parse(item[0]) or datetime.min.replace(tzinfo=UTC))
    return at, what


def sentient_state_path(brain: Brain) -> Path:
    """`.cleo/sentient-state.json` of the brain's project."""
    folder = Path(brain.path).parent
    return folder / SENTIENT_STATE if folder.name == ".cleo" else folder / ".cleo" / SENTIENT_STATE


def read_dream_state(path: Path) -> DreamState | None:
    """The sentient state file, None when absent; a malformed file is reported, not raised."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        return DreamState(str(path), error=f"cannot read it ({exc.strerror or exc})")
    try:
        data = json.loads(text)
    except ValueError as exc:
        return DreamState(str(path), error=f"not valid JSON ({exc})")
    if not isinstance(data, dict):
        return DreamState(str(path), error="not a JSON object")
    gate = data.get("sweepGateActive")
    return DreamState(str(path), gate if isinstance(gate, bool) else None, data.get("sweepRunId"),
                      data.get("killSwitch"), data.get("dreamWatermark"),
                      {k: v for k, v in data.items() if k not in STATE_KEYS})


@dataclass(frozen=True)
class _Arrivals:
    count: int
    newest: str | None


def _arrivals_since(brain: Brain, at: str | None) -> _Arrivals:
    """Observations (not observer notes) created after `at` (all of them when None), and the newest.

    Asked of CLEO's indexes: every row after `at` less the observer notes among them, the newest
    by walking the date index back to the first row that is no note. The same question asked of
    every row walked each record's overflow pages to reach its source type and date: the liveness
    read took 1.15 s of CPU (0.16 s now) at a million real-layout rows, on every open, beside the
    first scan's look."""
    if not brain.features.has_table(cs.OBSERVATIONS):
        return _Arrivals(0, None)
    after, params = ("created_at > ?", [at]) if at is not None else ("1", [])
    count = int(brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} WHERE {after}", params) or 0)
    not_a_note, noted = "1", []
    if brain.features.has_column(cs.OBSERVATIONS, "source_type"):
        count -= int(brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} WHERE source_type = ? AND {after}",
                                  [OBSERVER_SOURCE_TYPE, *params]) or 0)
        not_a_note, noted = "source_type IS NOT ?", [OBSERVER_SOURCE_TYPE]
    newest = brain.scalar(f"SELECT created_at FROM {cs.OBSERVATIONS} WHERE {not_a_note} AND {after} "
                          "AND created_at IS NOT NULL ORDER BY created_at DESC LIMIT 1", [*noted, *params])
    return _Arrivals(count, None if newest is None else as_text(newest))


def _days(now: datetime, at: str | None) -> int | None:
    moment = _parse(at)
    return None if moment is None else max(0, (now - moment).days)


def _kept_coming(last_run: str | None, arrivals: _Arrivals, days: int) -> bool:
    """Observations went on arriving for more than `days` after the last run.

    An agent that stopped writing is idle, not a dead observer: only rows that
    kept arriving while the job stayed silent make a warning.
    """
    start, end = _parse(last_run), _parse(arrivals.newest)
    return start is not None and end is not None and (end - start).total_seconds() > days * 86400


def _quiet_warning(what: str, noun: str, at: str | None, arrivals: _Arrivals, minimum: int,
                   now: datetime) -> str | None:
    """`no <noun> in N days while M observations arrived`, when that is so."""
    if arrivals.count < minimum:
        return None
    if at is None:
        return f"{what}: no {noun} at all while {plural(arrivals.count, 'observation')} arrived"
    days = _days(now, at)
    if days is None or days <= STALE_DAYS or not _kept_coming(at, arrivals, STALE_DAYS):
        return None
    return f"{what}: no {noun} in {plural(days, 'day')} while {plural(arrivals.count, 'observation')} arrived"


def _consolidation_state(brain: Brain) -> tuple[str, ConsolidationEvent | None]:
    if not brain.features.has_table(c.CONSOLIDATION_EVENTS):
        return "absent", None
    events = consolidation_events(brain, 1)
    return ("present", events[0]) if events else ("empty", None)


def _consolidation_warnings(table: str, event: ConsolidationEvent | None, arrived_total: int,
                            brain: Brain, now: datetime) -> list[str]:
    if table == "empty" and arrived_total:
        return [f"consolidation: {c.CONSOLIDATION_EVENTS} holds no run while {arrived_total:,} observations exist"]
    if event is None:
        return []
    out = []
    if event.succeeded is False:
        out.append(f"consolidation: its last run ({event.id}, {event.started_at or 'no time'}) did not succeed")
    days = _days(now, event.started_at)
    arrivals = _arrivals_since(brain, event.started_at) if event.started_at else _Arrivals(0, None)
    if days is not None and days > CONSOLIDATION_STALE_DAYS and arrivals.count \
            and _kept_coming(event.started_at, arrivals, CONSOLIDATION_STALE_DAYS):
        out.append(f"consolidation: no run in {plural(days, 'day')} while "
                   f"{plural(arrivals.count, 'observation')} arrived")
    return out


def _dream_warnings(dream: DreamState | None) -> list[str]:
    if dream is None:
        return []
    if dream.error:
        return [f"dream state: {dream.path} is {dream.error}"]
    out = []
    if dream.sweep_gate_active:
        out.append(f"dream state: CLEO's sweep gate is active (run {dream.sweep_run_id}); a sweep is applying "
                   "and other writers should wait")
    if dream.kill_switch:
        out.append(f"dream state: the kill switch is set ({dream.kill_switch})")
    return out


def brain_liveness(brain: Brain, now: datetime | None = None) -> Liveness:
    """When the observer, reflector and consolidation last ran, the dream state, and warnings."""
    now = now or datetime.now(UTC)
    settings = load_project_settings(brain)
    observer = observer_last_run(brain)
    reflector, evidence = reflector_last_run(brain)
    table, event = _consolidation_state(brain)
    dream = read_dream_state(sentient_state_path(brain))
    warnings: list[str] = []
    if brain.features.has_table(cs.OBSERVATIONS):
        if settings.observer_enabled:
            w = _quiet_warning("observer", "observer note", observer, _arrivals_since(brain, observer),
                               settings.observer_threshold, now)
            warnings += [w] if w else []
        if settings.reflector_enabled:
            w = _quiet_warning("reflector", "reflector-synthesized pattern or learning", reflector,
                               _arrivals_since(brain, reflector), REFLECTOR_ARRIVALS, now)
            warnings += [w] if w else []
        warnings += _consolidation_warnings(table, event, _arrivals_since(brain, None).count, brain, now)
    warnings += _dream_warnings(dream)
    return Liveness(observer, reflector, evidence, event, table, dream, tuple(warnings))


def read_liveness(brain: Brain) -> Liveness:
    """`brain_liveness` as of `clock.current_time`, on a reader connection of its own (call from a
    worker thread)."""
    reader = brain.reader()
    try:
        return brain_liveness(reader, current_time())
    finally:
        reader.close()


_DAYS = re.compile(r"\bin (\d+) days\b")


def warning_mark(warnings: Sequence[str]) -> str:
    """The header's short mark for liveness warnings: "⚠ observer idle 12 d" (+N more)."""
    if not warnings:
        return ""
    first = warnings[0]
    who = first.split(":", 1)[0]
    days = _DAYS.search(first)
    if days:
        what = f"{who} idle {days.group(1)} d"
    elif "at all" in first:
        what = f"{who} never ran"
    elif who == "dream state":
        what = "sweep active" if "sweep gate" in first else "dream state"
    else:
        what = f"{who} failing" if "did not succeed" in first else who
    more = f" +{len(warnings) - 1}" if len(warnings) > 1 else ""
    return f"⚠ {what}{more}"
