"""CLEO's noise sweeps: the staged and past runs, their rows beside the rows they target, and the veto.

Read from CLEO's source (packages/core/src/memory/):
- `detectNoiseCandidates` (brain-noise-detector.ts), behind `cleo memory sweep`, stages one
  `brain_backfill_runs` row (kind `noise-sweep-2440`, status `staged`) and one
  `brain_observations_staging` row per live, unverified row of the four brain tables with
  `quality_score` NULL or < 0.3: action `purge`, `new_invalid_at` the detection time,
  `new_provenance_class` `noise-purged`, `validation_status` `pending`.
- `executeSweep` (brain-sweep-executor.ts), behind `cleo memory sweep --approve RUN`, accepts only a
  `staged` run, loads **only its `pending` rows**, and in one transaction sets, for a purge,
  `invalid_at` = the approval time (not the staged `new_invalid_at`) and `provenance_class =
  'noise-purged'` — on any row with that id, live or already evicted; for keep / reclassify /
  promote only `provenance_class = 'swept-clean'` (the staged `new_quality_score` is not written).
  It marks the loaded rows `applied` and the run `approved` with `approved_at` = that same time.
- `rollbackSweep`, behind `--rollback RUN`, accepts only a `staged` run: it sets the run
  `rolled-back` and its `pending` rows `skipped`; it reverts nothing (nothing was applied).

So a staging row set to `skipped` before approval is left out of the approve: that is the veto
cleo-tui offers (journalled, undoable). An approved run cannot be rolled back through CLEO.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain import journal
from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import as_text
from cleo_tui.safe_text import one_line

STAGED, APPROVED, ROLLED_BACK = "staged", "approved", "rolled-back"
PENDING, APPLIED, SKIPPED = "pending", "applied", "skipped"
PURGE = "purge"
SWEPT_CLEAN = "swept-clean"
VETO_RUN_KIND = "sweep-veto"
# Per source table: its content column and its date column (as CLEO names them).
TEXT_COLUMNS = {cs.OBSERVATIONS: "narrative", cs.LEARNINGS: "insight", cs.PATTERNS: "pattern",
                cs.DECISIONS: "decision"}
TITLE_COLUMNS = {cs.OBSERVATIONS: "title"}
_RUN_COLUMNS = ("id", "kind", "status", "created_at", "approved_at", "approved_by", "rows_affected", "source")
_ROW_COLUMNS = ("id", "source_table", "source_id", "sweep_run_id", "action", "new_quality_score",
                "new_invalid_at", "new_provenance_class", "validation_status", "created_at")
_CURRENT = ("quality_score", "invalid_at", "provenance_class", "verified", "citation_count", "memory_tier")


class SweepError(BrainError):
    """A sweep step that cannot be done as asked (no such run or row, wrong state)."""


@dataclass(frozen=True)
class StagedRow:
    """One candidate of a sweep run, with the values its target row holds now (None: no such row)."""

    id: str
    source_table: str
    source_id: str
    action: str
    new_quality_score: float | None
    new_invalid_at: str | None
    new_provenance_class: str | None
    validation_status: str
    created_at: str | None
    current: dict[str, Any] | None = None
    title: str = ""
    text: str = ""

    def to_dict(self, full: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "source_table": self.source_table, "source_id": self.source_id,
               "action": self.action,
               "new_quality_score": self.new_quality_score, "new_invalid_at": self.new_invalid_at,
               "validation_status": self.validation_status}
        if full:
            out.update({"new_provenance_class": self.new_provenance_class, "current": self.current,
                        "title": self.title, "text": self.text, "what_approve_writes": what_approve_writes(self)})
        return out


@dataclass
class SweepRun:
    """One run of `brain_backfill_runs` that stages sweep candidates, with its rows."""

    id: str
    kind: str
    status: str
    created_at: str | None
    approved_at: str | None
    approved_by: str | None
    rows_affected: int | None
    source: str | None
    rows: list[StagedRow] = field(default_factory=list)

    def to_dict(self, full: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "status": self.status, "created_at": self.created_at,
                               "approved_at": self.approved_at, "rows": [r.to_dict(full) for r in self.rows]}
        if full:
            out.update({"approved_by": self.approved_by, "rows_affected": self.rows_affected, "source": self.source})
        return out

    @property
    def staged(self) -> bool:
        return self.status == STAGED

    def counts(self) -> dict[str, int]:
        """Rows by validation status."""
        out: dict[str, int] = {}
        for row in self.rows:
            out[row.validation_status] = out.get(row.validation_status, 0) + 1
        return out


def has_sweeps(brain: Brain) -> bool:
    """The brain holds CLEO's run log and staging table (with the columns the review reads)."""
    return brain.supports("sweeps")


def _select(brain: Brain, table: str, names: tuple[str, ...]) -> str:
    have = brain.features.columns(table)
    return ", ".join(f'"{n}"' if n in have else f'NULL AS "{n}"' for n in names)


def _text(value: Any) -> str | None:
    return None if value is None else as_text(value)


def _float(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def list_runs(brain: Brain, run_id: str | None = None, with_rows: bool = True,
              row_limit: int | None = None) -> list[SweepRun]:
    """Runs that staged sweep candidates (or `run_id`), newest first, each with its rows."""
    if not brain.supports("sweeps"):
        return []
    where = "WHERE id = ?" if run_id is not None else \
        f"WHERE id IN (SELECT DISTINCT sweep_run_id FROM {cs.SWEEP_STAGING}) OR kind LIKE 'noise-sweep%'"
    order = "created_at DESC, id DESC" if brain.features.has_column(cs.BACKFILL_RUNS, "created_at") else "id DESC"
    rows = brain.query(f"SELECT {_select(brain, cs.BACKFILL_RUNS, _RUN_COLUMNS)} FROM {cs.BACKFILL_RUNS} "
                       f"{where} ORDER BY {order}", [run_id] if run_id is not None else [])
    runs = [SweepRun(as_text(r[0]), as_text(r[1]), as_text(r[2]), _text(r[3]), _text(r[4]), _text(r[5]),
                     _int(r[6]), _text(r[7])) for r in rows]
    if with_rows:
        for run in runs:
            run.rows = staged_rows(brain, run.id, row_limit)
    return runs


def staged_rows(brain: Brain, run_id: str, limit: int | None = None) -> list[StagedRow]:
    """The candidates of one run (staging order), each with its target row's current values and text."""
    rows = brain.query(f"SELECT {_select(brain, cs.SWEEP_STAGING, _ROW_COLUMNS)} FROM {cs.SWEEP_STAGING} "
                       "WHERE sweep_run_id = ? ORDER BY rowid LIMIT ?", (run_id, -1 if limit is None else int(limit)))
    out = []
    for r in rows:
        table, source_id = as_text(r[1]), as_text(r[2])
        current, title, text = _target(brain, table, source_id)
        out.append(StagedRow(as_text(r[0]), table, source_id, as_text(r[4]), _float(r[5]), _text(r[6]), _text(r[7]),
                             as_text(r[8]), _text(r[9]), current, title, text))
    return out


def _target(brain: Brain, table: str, source_id: str) -> tuple[dict[str, Any] | None, str, str]:
    """The target row's current values, its title and its whole text; (None, "", "") when it is gone."""
    if table not in TEXT_COLUMNS or not brain.features.has_column(table, "id"):
        return None, "", ""
    cols = [*_CURRENT, TEXT_COLUMNS[table], TITLE_COLUMNS.get(table, TEXT_COLUMNS[table])]
    row = brain.query_one(f'SELECT {_select(brain, table, tuple(cols))} FROM "{table}" WHERE id = ?', (source_id,))
    if row is None:
        return None, "", ""
    current = {name: row[i] for i, name in enumerate(_CURRENT)}
    text = as_text(row[len(_CURRENT)]) if row[len(_CURRENT)] is not None else ""
    title = as_text(row[len(_CURRENT) + 1]) if row[len(_CURRENT) + 1] is not None else ""
    return current, title, text or title


def what_approve_writes(row: StagedRow) -> dict[str, str] | None:
    """What CLEO's `executeSweep` will write to the target when the run is approved (None: nothing)."""
    if row.validation_status != PENDING:
        return None
    if row.action == PURGE:
        return {"invalid_at": "<the approval time>", "provenance_class": "noise-purged"}
    return {"provenance_class": SWEPT_CLEAN}


def purge_ids(run: SweepRun) -> list[str]:
    """Ids a run's approve would purge: its pending purge rows."""
    return [r.source_id for r in run.rows if r.action == PURGE and r.validation_status == PENDING]


def run_for_eviction(brain: Brain, source_table: str, source_id: str, invalid_at: str) -> SweepRun | None:
    """The approved run whose approval time is this row's invalid_at (the run that purged it), with
    this row's staging entry, or None."""
    if not brain.features.has_column(cs.BACKFILL_RUNS, "approved_at"):
        return None
    found = brain.query_one(f"SELECT {_select(brain, cs.BACKFILL_RUNS, _RUN_COLUMNS)} FROM {cs.BACKFILL_RUNS} "
                            "WHERE approved_at = ? ORDER BY id LIMIT 1", (invalid_at,))
    if found is None:
        return None
    run = SweepRun(as_text(found[0]), as_text(found[1]), as_text(found[2]), _text(found[3]), _text(found[4]),
                   _text(found[5]), _int(found[6]), _text(found[7]))
    if brain.supports("sweeps"):
        run.rows = [r for r in staged_rows(brain, run.id)
                    if r.source_id == source_id and r.source_table == source_table]
    return run


def veto_row(brain: Brain, staging_id: str) -> int:
    """Set one pending candidate of a staged run to `skipped`, so CLEO's approve leaves it out
    (executeSweep loads only pending rows); journalled, undo puts `pending` back. Returns the run id."""
    if not brain.supports("sweeps"):
        raise SweepError("This brain has no CLEO sweep tables (brain_backfill_runs, brain_observations_staging).")
    with brain.write() as conn:
        row = conn.execute(f"SELECT s.validation_status, r.status, s.sweep_run_id, s.source_id "
                           f"FROM {cs.SWEEP_STAGING} s LEFT JOIN {cs.BACKFILL_RUNS} r ON r.id = s.sweep_run_id "
                           "WHERE s.id = ?",
                           (staging_id,)).fetchone()
        shown = one_line(staging_id, 60)
        if row is None:
            raise SweepError(f"There is no sweep candidate {shown}; nothing was changed.")
        if row[1] != STAGED:
            raise SweepError(f"Candidate {shown} belongs to run {one_line(as_text(row[2]), 60)}, which is "
                             f"{one_line(str(row[1]), 20)}, not staged: only a staged run can be changed. "
                             "Nothing was changed.")
        if row[0] != PENDING:
            raise SweepError(f"Candidate {shown} is {one_line(str(row[0]), 20)}, not pending; nothing was changed.")
        run_id = journal.start_run(conn, VETO_RUN_KIND, f"vetoed sweep candidate {staging_id} "
                                   f"({as_text(row[3])}) of run {as_text(row[2])}", {"ids": [staging_id]})
        journal.update_row(conn, run_id, cs.SWEEP_STAGING, {"id": staging_id}, {"validation_status": SKIPPED},
                           only_if="validation_status = 'pending'")
    return run_id
