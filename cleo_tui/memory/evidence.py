"""The evidence behind an eviction cause, read for one row (see `causes` for the rule)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain import journal
from cleo_tui.brain.migrations import RUNS
from cleo_tui.brain.records import get_record, record_text
from cleo_tui.brain.store import Brain
from cleo_tui.memory import causes as c
from cleo_tui.memory.mapping import as_text
from cleo_tui.memory.sweeps import SweepRun, run_for_eviction
from cleo_tui.safe_text import plural

TEXT_CHARS = 160


@dataclass(frozen=True)
class Reflection:
    """A pattern or learning whose `supersedes` edge names the evicted row."""

    node_id: str
    exists: bool
    text: str
    provenance: str | None
    edge_created_at: str | None
    seconds_from_eviction: float | None


@dataclass(frozen=True)
class ConsolidationEvent:
    """One row of CLEO's `brain_consolidation_events` (every field optional)."""

    id: int | None
    trigger: str | None
    session_id: str | None
    started_at: str | None
    duration_ms: int | None
    succeeded: bool | None
    steps: Any  # parsed step_results_json, or None
    steps_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "trigger": self.trigger, "session_id": self.session_id,
                "started_at": self.started_at, "duration_ms": self.duration_ms, "succeeded": self.succeeded,
                "steps": self.steps, "steps_error": self.steps_error}


@dataclass(frozen=True)
class EvictionCause:
    """Why a memory is gone: the cause id, a sentence, the evidence and what was checked."""

    cause: str
    label: str
    at: str | None
    evidence: tuple[str, ...] = ()
    checked: tuple[str, ...] = ()
    run_id: int | None = None
    run_kind: str | None = None
    reflections: tuple[Reflection, ...] = ()
    consolidation: tuple[ConsolidationEvent, ...] = field(default=())
    sweep: SweepRun | None = None  # CLEO's approved sweep run that purged it (cause cleo-sweep)

    def to_dict(self) -> dict[str, Any]:
        return {"cause": self.cause, "label": self.label, "at": self.at, "evidence": list(self.evidence),
                "checked": list(self.checked), "run_id": self.run_id, "run_kind": self.run_kind,
                "reflections": [r.__dict__ for r in self.reflections],
                "consolidation": [e.to_dict() for e in self.consolidation],
                "sweep_run": None if self.sweep is None else self.sweep.to_dict()}


def _opt_int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def _event(row: Any, names: list[str]) -> ConsolidationEvent:
    values = dict(zip(names, row, strict=False))
    raw, steps, error = values.get("step_results_json"), None, None
    if raw is not None:
        try:
            steps = json.loads(as_text(raw))
        except ValueError as exc:
            error = f"malformed step_results_json ({exc})"
    succeeded = values.get("succeeded")
    return ConsolidationEvent(
        _opt_int(values.get("id")), None if values.get("trigger") is None else as_text(values["trigger"]),
        None if values.get("session_id") is None else as_text(values["session_id"]),
        None if values.get("started_at") is None else as_text(values["started_at"]),
        _opt_int(values.get("duration_ms")), None if succeeded is None else bool(succeeded), steps, error)


_EVENT_COLUMNS = ("id", "trigger", "session_id", "step_results_json", "duration_ms", "succeeded", "started_at")


def _event_select(brain: Brain) -> tuple[str, list[str]]:
    names = [n for n in _EVENT_COLUMNS if brain.features.has_column(c.CONSOLIDATION_EVENTS, n)]
    return ", ".join(f'"{n}"' for n in names) or "NULL", names or ["_"]


def consolidation_events(brain: Brain, newest: int = 1) -> list[ConsolidationEvent]:
    """The newest consolidation events (by started_at, else rowid)."""
    if not brain.features.has_table(c.CONSOLIDATION_EVENTS):
        return []
    cols, names = _event_select(brain)
    order = "julianday(started_at) DESC, rowid DESC" if brain.supports("consolidation_times") else "rowid DESC"
    return [_event(r, names) for r in brain.query(
        f"SELECT {cols} FROM {c.CONSOLIDATION_EVENTS} ORDER BY {order} LIMIT ?", (int(newest),))]


def events_at(brain: Brain, at: str) -> list[ConsolidationEvent]:
    """Consolidation runs under way at `at` (the window of `causes.consolidation_cte`)."""
    if not brain.supports("consolidation_times"):
        return []
    cols, names = _event_select(brain)
    ids = [r[0] for r in brain.query(f"WITH {c.consolidation_cte(brain)} SELECT id FROM ev "
                                     "WHERE julianday(?) BETWEEN ev.t0 - 1.0 / 86400.0 AND ev.t1", (at,))]
    key = "id" if brain.features.has_column(c.CONSOLIDATION_EVENTS, "id") else "rowid"
    return [_event(brain.query_one(f"SELECT {cols} FROM {c.CONSOLIDATION_EVENTS} WHERE {key} = ?", (i,)), names)
            for i in ids]


def reflections_of(brain: Brain, observation_id: str, invalid_at: str | None) -> list[Reflection]:
    """Patterns and learnings with a `supersedes` edge to the row, each with its distance in time."""
    if not brain.supports("graph_edges"):
        return []
    rows = brain.query(
        f"SELECT e.from_id, e.provenance, e.created_at, "
        f"abs(julianday(e.created_at) - julianday(?)) * 86400.0 FROM {cs.EDGES} e "
        "WHERE e.to_id = ? AND e.edge_type = 'supersedes' "
        "AND (substr(e.from_id, 1, 8) = 'pattern:' OR substr(e.from_id, 1, 9) = 'learning:') "
        "ORDER BY e.created_at", (invalid_at, f"observation:{observation_id}"))
    out = []
    for from_id, provenance, created, distance in rows:
        kind, record = get_record(brain, as_text(from_id))
        out.append(Reflection(as_text(from_id), record is not None,
                              record_text(kind, record)[:TEXT_CHARS] if record else "",
                              None if provenance is None else as_text(provenance),
                              None if created is None else as_text(created),
                              None if distance is None else round(float(distance), 1)))
    return out


def _journal_evidence(brain: Brain, run_id: int, at: str) -> tuple[list[str], str | None]:
    with brain.lock:
        run = journal.get_run(brain.conn, run_id)
    if run is None:
        return [f"journal run {run_id} set invalid_at = {at}"], None
    text = [f"cleo-tui run {run.id} ({run.kind}, {run.created_at}) set invalid_at = {at}"]
    if run.summary:
        text.append(f"run {run.id}: {run.summary}")
    if run.undone_by is not None:
        text.append(f"run {run.id} was undone by run {run.undone_by}, but this row was not put back "
                    "(it had changed since)")
    return text, run.kind


def _span(seconds: float) -> str:
    """A distance in time in the largest sensible unit."""
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def _checked(brain: Brain, at: str, reflections: list[Reflection]) -> list[str]:
    """What the rule looked at and did not find, in words."""
    out = []
    if brain.supports("journal"):
        out.append(f"cleo-tui's journal: no run set this row's invalid_at to {at}")
    else:
        out.append(f"cleo-tui's journal: this brain has no {RUNS} table")
    if brain.supports("sweep_runs"):
        out.append(f"CLEO's sweeps: no run of {cs.BACKFILL_RUNS} was approved at {at} with this row marked "
                   f"{c.NOISE_PURGED}")
    if not brain.supports("graph_edges"):
        out.append(f"graph: this brain has no {cs.EDGES} table")
    elif reflections:
        nearest = min((r.seconds_from_eviction for r in reflections if r.seconds_from_eviction is not None),
                      default=None)
        out.append(f"graph: {plural(len(reflections), 'supersedes edge')} from patterns or learnings, none within "
                   f"{c.REFLECTOR_WINDOW_S} s of the eviction"
                   + (f" (nearest {_span(nearest)} away)" if nearest is not None else ""))
    else:
        out.append("graph: no supersedes edge from a pattern or learning names this row")
    if not brain.features.has_table(c.CONSOLIDATION_EVENTS):
        out.append(f"consolidation: this brain has no {c.CONSOLIDATION_EVENTS} table")
    elif not brain.supports("consolidation_times"):
        out.append(f"consolidation: {c.CONSOLIDATION_EVENTS} has no started_at column")
    elif brain.scalar(f"SELECT count(*) FROM {c.CONSOLIDATION_EVENTS}") == 0:
        out.append(f"consolidation: {c.CONSOLIDATION_EVENTS} is empty")
    else:
        out.append(f"consolidation: no run of {c.CONSOLIDATION_EVENTS} was under way at {at}")
    return out


def explain_eviction(brain: Brain, observation_id: str, invalid_at: str) -> EvictionCause:
    """The cause of one evicted observation with its evidence (the rule of `causes.cause_of`)."""
    found = c.cause_of(brain, observation_id)
    cause, run_id = found if found else (c.UNKNOWN, None)
    reflections = reflections_of(brain, observation_id, invalid_at)
    if cause.startswith(c.CLEO_TUI_PREFIX) and run_id is not None:
        evidence, kind = _journal_evidence(brain, run_id, invalid_at)
        return EvictionCause(cause, c.cause_label(cause), invalid_at, tuple(evidence), (), run_id, kind,
                             tuple(reflections))
    if cause == c.CLEO_SWEEP:
        return sweep_cause(brain, cs.OBSERVATIONS, observation_id, invalid_at, tuple(reflections))
    if cause == c.CLEO_REFLECTOR:
        near = [r for r in reflections if r.seconds_from_eviction is not None
                and r.seconds_from_eviction <= c.REFLECTOR_WINDOW_S]
        evidence = [f"supersedes edge from {r.node_id} created {r.edge_created_at} "
                    f"({r.seconds_from_eviction:.0f} s from the eviction; provenance {r.provenance or 'none'})"
                    + ("" if r.exists else "; that record no longer exists") for r in near]
        return EvictionCause(cause, c.cause_label(cause), invalid_at, tuple(evidence), (), None, None, tuple(near))
    if cause == c.CLEO_CONSOLIDATION:
        events = events_at(brain, invalid_at)
        evidence = [f"consolidation run {e.id} (trigger {e.trigger or '?'}) started {e.started_at}, "
                    f"took {'?' if e.duration_ms is None else e.duration_ms} ms" for e in events]
        return EvictionCause(cause, c.cause_label(cause), invalid_at, tuple(evidence), (), None, None,
                             tuple(reflections), tuple(events))
    return EvictionCause(c.UNKNOWN, c.cause_label(c.UNKNOWN), invalid_at, (),
                         tuple(_checked(brain, invalid_at, reflections)), None, None, tuple(reflections))


def sweep_cause(brain: Brain, table: str, row_id: str, invalid_at: str,
                reflections: tuple[Reflection, ...] = ()) -> EvictionCause:
    """The cleo-sweep cause with its run as evidence (the run approved at `invalid_at`)."""
    run = run_for_eviction(brain, table, row_id, invalid_at)
    evidence = [f"provenance_class = {c.NOISE_PURGED}, as CLEO's executeSweep writes it"]
    if run is not None:
        evidence.append(f"sweep run {run.id} ({run.kind}, created {run.created_at or '?'}) approved at "
                        f"{run.approved_at} by {run.approved_by or '?'}: the same time as invalid_at")
        evidence += [f"its staging row {r.id}: action {r.action}, {r.validation_status}" for r in run.rows]
    return EvictionCause(c.CLEO_SWEEP, c.cause_label(c.CLEO_SWEEP), invalid_at, tuple(evidence), (), None, None,
                         reflections, sweep=run)
