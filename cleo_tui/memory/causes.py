"""Why an observation was evicted: one SQL rule, used for one row and for a whole brain.

The cause of a soft eviction is inferred, in this order (the first that fits wins):

1. **cleo-tui** (`cleo-tui:<run kind>`): a journal run set this row's `invalid_at`
   to the value it holds now (exact evidence: cleo-tui recorded it). An undo is never a
   cause: it only puts back a value something else wrote first (undoing a restore of a row
   evicted earlier puts back that earlier eviction, whose cause stays).
2. **CLEO's noise sweep** (`cleo-sweep`): `provenance_class = 'noise-purged'` and a
   `brain_backfill_runs` row whose `approved_at` equals the row's `invalid_at` (CLEO's
   `executeSweep` writes one timestamp to both; exact evidence).
3. **CLEO's reflector** (`cleo-reflector`): a `supersedes` edge from a pattern or
   learning to the row, created within `REFLECTOR_WINDOW_S` seconds of its
   `invalid_at` (CLEO writes the edges and the eviction together; its edges carry
   provenance `reflector-synthesized:…`, older brains and the demo may not).
4. **CLEO's consolidation** (`cleo-consolidation`): a `brain_consolidation_events`
   run was under way at `invalid_at` (from `started_at` to `started_at` +
   `duration_ms` + `CONSOLIDATION_SLACK_S`; `UNKNOWN_DURATION_S` when it has no
   duration). Every column of that table is optional.
5. **unknown**, with what was checked.

The rule is one SQL `CASE` expression (`cause_sql`), so the timeline's counts per
cause and the life of a single memory can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.migrations import RUN_CHANGES, RUNS
from cleo_tui.brain.store import Brain

CONSOLIDATION_EVENTS = "brain_consolidation_events"
JOURNAL_ROW_INDEX = f"idx_{RUN_CHANGES}_row"  # created with the journal (migration 1)
REFLECTOR_PROVENANCE = "reflector-synthesized"
REFLECTOR_WINDOW_S = 60
CONSOLIDATION_SLACK_S = 60
UNKNOWN_DURATION_S = 600

CLEO_TUI_PREFIX = "cleo-tui:"
CLEO_REFLECTOR = "cleo-reflector"
CLEO_CONSOLIDATION = "cleo-consolidation"
CLEO_SWEEP = "cleo-sweep"
NOISE_PURGED = "noise-purged"  # the provenance_class CLEO's approved sweep gives a purged row
UNDO_KIND = "undo"
UNKNOWN = "unknown"
DELETED_OUTSIDE = "deleted-outside"
HIPPO_FORGET = "hippo-forget"
HIPPO_SUPERSEDE = "hippo-supersede"

CAUSE_LABELS = {
    CLEO_REFLECTOR: "CLEO's reflector superseded it",
    CLEO_CONSOLIDATION: "CLEO's consolidation evicted it",
    CLEO_SWEEP: "CLEO's noise sweep purged it (an approved sweep run)",
    UNKNOWN: "cause unknown",
    DELETED_OUTSIDE: "deleted outside cleo-tui (no row holds this id)",
    HIPPO_FORGET: "forgotten by hippo (no memories row holds this id)",
    HIPPO_SUPERSEDE: "superseded in hippo",
}


def cause_label(cause: str) -> str:
    """A short sentence for a cause id (`cleo-tui:prune` → "cleo-tui's prune run")."""
    if cause.startswith(CLEO_TUI_PREFIX):
        return f"cleo-tui's {cause[len(CLEO_TUI_PREFIX):]} run"
    return CAUSE_LABELS.get(cause, cause)


@dataclass(frozen=True)
class CauseSql:
    """Pieces of a query over `brain_observations o`: WITH clauses, joins and the CASE expression."""

    ctes: tuple[str, ...]
    joins: str
    case: str
    run_id: str  # expression: the journal run id, or NULL

    def with_clause(self) -> str:
        return ("WITH " + ", ".join(self.ctes) + " ") if self.ctes else ""


def has_journal(brain: Brain) -> bool:
    return brain.supports("journal")


def has_sweep_runs(brain: Brain) -> bool:
    """The brain has CLEO's backfill-run log with approval times, and the provenance column a sweep sets."""
    return brain.supports("sweep_runs")


def sweep_condition(alias: str = "o") -> str:
    """Purged by an approved CLEO sweep: its provenance, and a run approved at the row's invalid_at."""
    return (f"({alias}.provenance_class = '{NOISE_PURGED}' AND EXISTS (SELECT 1 FROM {cs.BACKFILL_RUNS} b "
            f"WHERE b.approved_at = {alias}.invalid_at))")


def has_consolidation_times(brain: Brain) -> bool:
    """The consolidation log exists and says when its runs started."""
    return brain.supports("consolidation_times")


def _json_text(column: str, path: str) -> str:
    """json_extract that yields NULL, not an error, on malformed JSON."""
    return f"CASE WHEN json_valid({column}) THEN json_extract({column}, '{path}') END"


def journal_run(alias: str = "o") -> str:
    """SQL: the newest journal run that set this row's invalid_at to the value it holds, or NULL.

    The row key is rebuilt as the journal writes it (`{"id": "<id>"}`), so each
    evicted row is one lookup in the journal's (table_name, row_key) index,
    however many rows a prune wrote.
    """
    inv = _json_text("c.after_json", "$.invalid_at")
    # INDEXED BY: with ORDER BY run_id the planner may otherwise walk the primary key, once per row.
    return (f"(SELECT c.run_id FROM {RUN_CHANGES} c INDEXED BY {JOURNAL_ROW_INDEX} "
            f"WHERE c.table_name = '{cs.OBSERVATIONS}' "
            f"AND c.row_key = '{{\"id\": ' || json_quote({alias}.id) || '}}' AND {inv} = {alias}.invalid_at "
            f"AND NOT EXISTS (SELECT 1 FROM {RUNS} u WHERE u.id = c.run_id AND u.kind = '{UNDO_KIND}') "
            "ORDER BY c.run_id DESC LIMIT 1)")


def consolidation_cte(brain: Brain) -> str:
    """`ev(id, t0, t1)`: each consolidation run's window as julian days."""
    has = brain.features.columns(CONSOLIDATION_EVENTS)
    duration = "duration_ms" if "duration_ms" in has else "NULL"
    key = "id" if "id" in has else "rowid"
    return (f"ev AS MATERIALIZED (SELECT {key} AS id, julianday(started_at) AS t0, julianday(started_at) + "
            f"(COALESCE({duration}, {UNKNOWN_DURATION_S * 1000}) / 1000.0 + {CONSOLIDATION_SLACK_S}) / 86400.0 "
            f"AS t1 FROM {CONSOLIDATION_EVENTS} WHERE julianday(started_at) IS NOT NULL)")


def reflector_condition(alias: str = "o") -> str:
    """A supersedes edge from a pattern or learning within the window of the row's invalid_at."""
    return (f"EXISTS (SELECT 1 FROM {cs.EDGES} e WHERE e.to_id = 'observation:' || {alias}.id "
            "AND +e.edge_type = 'supersedes' "  # '+': walk the to_id index, not every supersedes edge
            "AND (substr(e.from_id, 1, 8) = 'pattern:' OR substr(e.from_id, 1, 9) = 'learning:') "
            f"AND abs(julianday(e.created_at) - julianday({alias}.invalid_at)) * 86400.0 <= {REFLECTOR_WINDOW_S})")


def consolidation_condition(alias: str = "o") -> str:
    return (f"EXISTS (SELECT 1 FROM ev WHERE julianday({alias}.invalid_at) "
            f"BETWEEN ev.t0 - 1.0 / 86400.0 AND ev.t1)")


def cause_sql(brain: Brain, alias: str = "o") -> CauseSql:
    """The cause rule for rows of `brain_observations {alias}` whose invalid_at is set."""
    ctes: list[str] = []
    joins = ""
    branches: list[str] = []
    run_id = "NULL"
    if brain.supports("journal"):
        joins = f" LEFT JOIN {RUNS} tui ON tui.id = {journal_run(alias)}"
        branches.append(f"WHEN tui.kind IS NOT NULL THEN '{CLEO_TUI_PREFIX}' || tui.kind")
        run_id = "tui.id"
    if brain.supports("sweep_runs"):
        branches.append(f"WHEN {sweep_condition(alias)} THEN '{CLEO_SWEEP}'")
    if brain.supports("graph_edges"):
        branches.append(f"WHEN {reflector_condition(alias)} THEN '{CLEO_REFLECTOR}'")
    if brain.supports("consolidation_times"):
        ctes.append(consolidation_cte(brain))
        branches.append(f"WHEN {consolidation_condition(alias)} THEN '{CLEO_CONSOLIDATION}'")
    case = f"CASE {' '.join(branches)} ELSE '{UNKNOWN}' END" if branches else f"'{UNKNOWN}'"
    return CauseSql(tuple(ctes), joins, case, run_id)


def cause_of(brain: Brain, observation_id: str) -> tuple[str, int | None] | None:
    """(cause, journal run id) of one evicted observation; None when it is live or absent."""
    if not brain.features.has_column(cs.OBSERVATIONS, "invalid_at"):
        return None
    sql = cause_sql(brain)
    row = brain.query_one(
        f"{sql.with_clause()}SELECT {sql.case}, {sql.run_id} FROM {cs.OBSERVATIONS} o{sql.joins} "
        "WHERE o.id = ? AND o.invalid_at IS NOT NULL", (observation_id,))
    return None if row is None else (str(row[0]), None if row[1] is None else int(row[1]))


def evicted_with_causes(brain: Brain, day: str | None = None, limit: int = 10_000) -> list[tuple[str, str, str]]:
    """(id, invalid_at, cause) of evicted observations, newest eviction first; `day` = YYYY-MM-DD only."""
    if not brain.features.has_column(cs.OBSERVATIONS, "invalid_at"):
        return []
    sql = cause_sql(brain)
    where, params = "o.invalid_at IS NOT NULL", []
    if day is not None:  # a range on invalid_at walks its index
        where += " AND o.invalid_at >= ? AND o.invalid_at < ?"
        params = [day, day + "~"]
    rows = brain.query(f"{sql.with_clause()}SELECT o.id, o.invalid_at, {sql.case} FROM {cs.OBSERVATIONS} o"
                       f"{sql.joins} WHERE {where} ORDER BY o.invalid_at DESC LIMIT ?", [*params, int(limit)])
    return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]
