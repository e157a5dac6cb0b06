"""What CLEO's own automation will do to one observation, in words, and the step that makes CLEO keep it.

The marks themselves are SQL (`cleo_tui.brain.cleo_rules`); here each gets its reason (the row's
values against the rule), the rule with the CLEO function that applies it, and when.

Keeping a row in CLEO: a cleo-tui pin is a relevance override in cleo-tui's own table, which CLEO
never reads — its consolidation deletes a pinned row and its search skips it all the same. What
CLEO does read is `quality_score`. Read from CLEO's consolidation (`runConsolidation`,
brain-lifecycle.ts): step 2 `recomputeQualityScores` only *raises* the quality of cited rows;
step 4 `detectContradictions` (brain-consolidator.ts) lowers by 0.15, on every run, the
lower-quality side of each pair of verified rows it reads as contradicting; step 9a.5
`correlateOutcomes` adds +0.05 / -0.05 on every run for each success / failure recorded in
`brain_usage_log`; nothing recomputes the quality from scratch. So a quality raised to 0.5 (the
value CLEO's own LLM preserve step in sleep-consolidation.ts gives a row it decides to keep) stays
— above the hard-delete cut (0.2), the search cut (0.3), the medium-tier soft eviction (0.3) and
the short-tier eviction in `runTierPromotion` (< 0.5) — unless one of those recurring penalties
applies to the row: then the step is not offered, and the penalty is named.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from cleo_tui.brain import cleo_rules as r
from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain import journal
from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import as_text
from cleo_tui.safe_text import one_line, plural

KEEP_RUN_KIND = "cleo-keep"
CONTRADICTION_PROVENANCE = "consolidation:contradiction"
AT_RISK_LATER = "at-risk-later"

HARD_DELETE_RULE = (
    "CLEO's consolidation (runConsolidation) flags every uncited row older than 30 days "
    "(correlateOutcomes sets prune_candidate = 1) and then hard-deletes (runPruneSweep, step 9f) rows with "
    "prune_candidate = 1, COALESCE(quality_score, 0.5) < 0.2, no citations, older than 30 days — evicted "
    f"rows too, at most {r.PRUNE_CAP} a run")
SEARCH_RULE = ("CLEO's search (searchBrain, behind `cleo memory find`) keeps only rows with quality_score NULL "
               f"or >= {r.SEARCH_QUALITY} (QUALITY_SCORE_THRESHOLD)")
PIN_NOTE = ("A pin protects it in cleo-tui (prune, merges) only: CLEO never reads cleo-tui's pins, so CLEO "
            "will still {what}.")


class KeepError(BrainError):
    """The keep-in-CLEO step cannot be done (row gone, no quality column, a recurring penalty)."""


@dataclass(frozen=True)
class CleoMark:
    """One thing CLEO's automation will do to the row: `mark` (at-risk, hidden, at-risk-later), in words."""

    mark: str
    title: str
    reason: str
    rule: str
    when: str

    def to_dict(self) -> dict[str, str]:
        return {"mark": self.mark, "title": self.title, "reason": self.reason, "rule": self.rule, "when": self.when}


@dataclass(frozen=True)
class KeepAdvice:
    """Whether the keep-in-CLEO step is offered for the row, and why (or why not)."""

    offered: bool
    text: str
    penalties: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"offered": self.offered, "text": self.text, "penalties": list(self.penalties)}


def _row(brain: Brain, observation_id: str, now: str) -> dict[str, Any] | None:
    have = brain.features.columns(cs.OBSERVATIONS)
    cols = {name: (name if name in have else "NULL") for name in
            ("quality_score", "citation_count", "created_at", "invalid_at", "memory_tier", "verified")}
    age = f"julianday('{now}') - julianday(created_at)" if "created_at" in have else "NULL"
    select = ", ".join(f"{expr} AS {name}" for name, expr in cols.items())
    row = brain.query_one(
        f"SELECT {select}, {age} AS age_days, {r.at_risk_sql(brain, now)} AS at_risk, "
        f"{r.flagged_sql(brain)} AS flagged, {r.hidden_sql(brain)} AS hidden "
        f"FROM {cs.OBSERVATIONS} WHERE id = ?", (observation_id,))
    return None if row is None else {k: row[k] for k in row.keys()}


def _quality(value: Any) -> str:
    try:
        return "NULL" if value is None else f"{float(value):.2f}"
    except (TypeError, ValueError):
        return one_line(str(value), 20)


def _last_consolidation(brain: Brain) -> str:
    from cleo_tui.memory.evidence import consolidation_events  # the consolidation log reader
    events = consolidation_events(brain, 1)
    if events and events[0].started_at:
        return f"it runs at the end of a CLEO session; last ran {one_line(events[0].started_at, 30)}"
    return "it runs at the end of a CLEO session; this brain logs no run yet"


def cleo_marks(brain: Brain, observation_id: str) -> list[CleoMark]:
    """What CLEO's next consolidation and its search will do to this observation (empty: nothing)."""
    now = r.now_text()
    row = _row(brain, observation_id, now)
    if row is None:
        return []
    marks: list[CleoMark] = []
    quality, citations, age = row["quality_score"], row["citation_count"], row["age_days"]
    if row["at_risk"]:
        flag = ("prune_candidate = 1 already" if row["flagged"] else
                "prune_candidate not set yet: correlateOutcomes sets it in the same run, just before")
        marks.append(CleoMark(
            r.AT_RISK, "its next consolidation will delete it (hard DELETE, no undo)",
            f"quality {_quality(quality)} < {r.HARD_DELETE_QUALITY}, {citations or 0} citations, created "
            f"{float(age):.0f} days ago (> {r.PRUNE_AGE_DAYS}); {flag}",
            HARD_DELETE_RULE, f"at CLEO's next consolidation ({_last_consolidation(brain)})"))
    elif (r.can_hard_delete(brain) and quality is not None and _below(quality, r.HARD_DELETE_QUALITY)
          and not citations and age is not None):
        created = as_text(row["created_at"])
        from_day = _plus_days(created, r.PRUNE_AGE_DAYS)
        marks.append(CleoMark(
            AT_RISK_LATER, "its consolidation will delete it once it is 30 days old",
            f"quality {_quality(quality)} < {r.HARD_DELETE_QUALITY}, no citations, created {float(age):.0f} days ago",
            HARD_DELETE_RULE, f"at the first consolidation after {from_day}"))
    if row["hidden"]:
        extra = ""
        if row["memory_tier"] == "medium" and age is not None and float(age) > r.PRUNE_AGE_DAYS:
            extra = ("; and as a medium-tier row older than 30 days, CLEO's next consolidation soft-evicts it "
                     "(softEvictLowQualityMedium, step 5: quality < 0.30)")
        marks.append(CleoMark(
            r.HIDDEN, "invisible to its search: `cleo memory find` never returns it",
            f"live, quality {_quality(quality)} < {r.SEARCH_QUALITY}{extra}", SEARCH_RULE, "now"))
    return marks


def _below(value: Any, cut: float) -> bool:
    try:
        return float(value) < cut
    except (TypeError, ValueError):
        return False


def _plus_days(stamp: str, days: int) -> str:
    from datetime import datetime
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return f"{one_line(stamp, 30)} + {days} days"
    return (moment + timedelta(days=days)).strftime("%Y-%m-%d")


def recurring_penalties(brain: Brain, observation_id: str) -> list[str]:
    """CLEO steps that lower this row's quality again on every consolidation (named, with the function)."""
    out: list[str] = []
    have = brain.features.columns(cs.OBSERVATIONS)
    verified = brain.query_one(f"SELECT verified FROM {cs.OBSERVATIONS} WHERE id = ?", (observation_id,)) \
        if "verified" in have else None
    if verified is not None and verified[0] and brain.supports("graph_edges"):
        node = f"observation:{observation_id}"
        prov = "AND provenance = ?" if brain.features.has_column(cs.EDGES, "provenance") else ""
        params = [node, node] + ([CONTRADICTION_PROVENANCE] if prov else [])
        n = brain.scalar(f"SELECT count(*) FROM {cs.EDGES} WHERE edge_type = 'contradicts' "
                         f"AND (from_id = ? OR to_id = ?) {prov}", params)
        if n:
            out.append("detectContradictions reads it as contradicting another verified row "
                       f"({plural(n, 'contradicts edge')}): each consolidation lowers the lower-quality side by 0.15")
    if {"entry_id", "outcome", "used"} <= brain.features.columns(cs.USAGE_LOG):
        outcomes = {as_text(o): int(n or 0) for o, n in brain.query(
            f"SELECT outcome, SUM(used) FROM {cs.USAGE_LOG} WHERE entry_id = ? "
            "AND outcome IN ('success', 'failure') GROUP BY outcome", (observation_id,))}
        if outcomes.get("failure", 0) > 0 and outcomes.get("success", 0) <= 0:
            out.append("brain_usage_log records it used in a failed task: correlateOutcomes lowers it by 0.05 "
                       "on every consolidation")
    return out


def keep_advice(brain: Brain, observation_id: str, marks: list[CleoMark] | None = None) -> KeepAdvice:
    """Whether to offer the keep-in-CLEO step, what a pin does not do, and why (see the module docstring)."""
    marks = cleo_marks(brain, observation_id) if marks is None else marks
    kinds = {m.mark for m in marks}
    if not kinds:
        return KeepAdvice(False, "CLEO's rules leave this row alone for now.")
    what = " and ".join(w for k, w in ((r.AT_RISK, "delete it"), (AT_RISK_LATER, "delete it once 30 days old"),
                                       (r.HIDDEN, "leave it out of every search")) if k in kinds)
    pin = PIN_NOTE.format(what=what)
    if not brain.features.has_column(cs.OBSERVATIONS, "quality_score"):
        return KeepAdvice(False, pin + " This brain has no quality_score column, so there is no step CLEO reads.")
    penalties = recurring_penalties(brain, observation_id)
    if penalties:
        return KeepAdvice(False, pin + " Raising its quality would not last: " + "; ".join(penalties) + ".",
                          tuple(penalties))
    return KeepAdvice(True, pin + f" K raises its quality_score to {r.KEEP_QUALITY} (the value CLEO's own "
                      "preserve step gives a row it keeps): above CLEO's delete and search cuts, and no recurring "
                      "CLEO penalty applies to it, so its consolidation keeps it. Journalled: undo puts the old "
                      "quality back.")


def keep_in_cleo(brain: Brain, observation_id: str) -> int:
    """Raise one observation's quality_score to KEEP_QUALITY (journalled, undoable); returns the run id."""
    advice = keep_advice(brain, observation_id)
    if not advice.offered:
        raise KeepError(f"{one_line(observation_id, 80)}: not kept in CLEO. {advice.text} Nothing was written.")
    values: dict[str, Any] = {"quality_score": r.KEEP_QUALITY}
    if brain.features.has_column(cs.OBSERVATIONS, "updated_at"):
        values["updated_at"] = cleo_timestamp()
    with brain.write() as conn:
        run_id = journal.start_run(conn, KEEP_RUN_KIND, f"raised quality of {observation_id} to "
                                   f"{r.KEEP_QUALITY} so CLEO keeps it", {"ids": [observation_id]})
        if not journal.update_row(conn, run_id, cs.OBSERVATIONS, {"id": observation_id}, values,
                                  only_if="quality_score IS NULL OR quality_score < ?",
                                  only_if_params=(r.KEEP_QUALITY,)):
            raise KeepError(f"{one_line(observation_id, 80)} is gone or was raised meanwhile; nothing was written.")
    return run_id
