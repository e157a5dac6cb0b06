"""CLEO's own rules over an observation, as SQL: what its next consolidation deletes, what its search hides.

Read from CLEO's source (packages/core/src/memory/):
- **Hard delete** — `runConsolidation` (brain-lifecycle.ts) runs step 9a.5 `correlateOutcomes`
  (quality-feedback.ts), which sets `prune_candidate = 1` on every row with
  `COALESCE(citation_count, 0) = 0` created more than 30 days ago (adding the column first when
  the brain lacks it), then step 9f `runPruneSweep` (brain-maintenance.ts), which DELETEs rows
  with `prune_candidate = 1 AND COALESCE(quality_score, 0.5) < 0.2 AND COALESCE(citation_count, 0)
  = 0 AND julianday('now') - julianday(created_at) > 30` — live and evicted alike, at most 500 a
  run. So a row meeting the last three conditions goes at the next consolidation whether or not it
  is flagged yet: `AT_RISK` is that set, and `FLAGGED` says whether the flag is already set.
- **Search** — `searchBrain` (brain-search.ts) keeps only rows with `quality_score IS NULL OR
  quality_score >= QUALITY_SCORE_THRESHOLD` (0.3, quality-scoring.ts), in its FTS5 and its LIKE
  paths: a live row below 0.3 is never returned by `cleo memory find`.

Each rule is one SQL condition over `brain_observations` (so the Observations table, its filter,
the counts in the header and `info` can never disagree), judged at `now_text()` — the real time,
or `$CLEO_TUI_NOW` when set (tests and screenshots). A column the brain lacks makes the rule
false, as it makes CLEO's own statement fail (CLEO catches that and deletes nothing).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.clock import current_time
from cleo_tui.brain.store import Brain

HARD_DELETE_QUALITY = 0.2   # runPruneSweep: COALESCE(quality_score, 0.5) < 0.2
SEARCH_QUALITY = 0.3        # QUALITY_SCORE_THRESHOLD: searchBrain drops rows below it
PRUNE_AGE_DAYS = 30         # correlateOutcomes and runPruneSweep: older than 30 days
PRUNE_CAP = 500             # runPruneSweep: at most this many deletes a run (all tables)
KEEP_QUALITY = 0.5          # the quality CLEO's own LLM "preserve" step gives a row it keeps
_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")

AT_RISK, HIDDEN = "at-risk", "hidden"
MARKS = (AT_RISK, HIDDEN)


def rules_now() -> datetime:
    """The moment CLEO's rules are judged at (`clock.current_time`: `$CLEO_TUI_NOW` in tests)."""
    return current_time()


def now_text() -> str:
    """`rules_now()` as `YYYY-MM-DD HH:MM:SS` (safe to put in SQL: digits and separators only)."""
    text = rules_now().astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    assert _STAMP.match(text)
    return text


def can_hard_delete(brain: Brain) -> bool:
    """The columns `runPruneSweep` reads are there (prune_candidate is added by CLEO itself if missing)."""
    return {"quality_score", "citation_count", "created_at"} <= brain.features.columns(cs.OBSERVATIONS)


def can_hide(brain: Brain) -> bool:
    return {"quality_score", "invalid_at"} <= brain.features.columns(cs.OBSERVATIONS)


def at_risk_sql(brain: Brain, now: str | None = None, alias: str = "") -> str:
    """SQL: CLEO's next consolidation hard-deletes the row (live or evicted)."""
    if not can_hard_delete(brain):
        return "0"
    p = f"{alias}." if alias else ""
    when = now or now_text()
    # quality_score < 0.2 is COALESCE(quality_score, 0.5) < 0.2 (NULL reads 0.5) and walks its index.
    return (f"({p}quality_score < {HARD_DELETE_QUALITY} AND COALESCE({p}citation_count, 0) = 0 "
            f"AND julianday('{when}') - julianday({p}created_at) > {PRUNE_AGE_DAYS})")


def flagged_sql(brain: Brain, alias: str = "") -> str:
    """SQL: `prune_candidate = 1` already (0 when the brain has no such column yet)."""
    p = f"{alias}." if alias else ""
    return f"({p}prune_candidate = 1)" if brain.features.has_column(cs.OBSERVATIONS, "prune_candidate") else "0"


def hidden_sql(brain: Brain, alias: str = "") -> str:
    """SQL: live, but below CLEO's search threshold."""
    if not can_hide(brain):
        return "0"
    p = f"{alias}." if alias else ""
    # "+": walk the quality index (few rows below 0.3), not the invalid_at one (most rows are live).
    return f"(+{p}invalid_at IS NULL AND {p}quality_score < {SEARCH_QUALITY})"


def mark_sql(brain: Brain, mark: str, now: str | None = None, alias: str = "") -> str:
    """The condition of one mark (`at-risk` or `hidden`)."""
    if mark == AT_RISK:
        return at_risk_sql(brain, now, alias)
    if mark == HIDDEN:
        return hidden_sql(brain, alias)
    raise ValueError(f"unknown mark {mark!r}")


def mark_counts(brain: Brain, now: str | None = None) -> dict[str, int]:
    """`{"at_risk": N, "hidden_from_cleo_search": M}` over brain_observations (0 without the table)."""
    if not brain.features.has_table(cs.OBSERVATIONS):
        return {"at_risk": 0, "hidden_from_cleo_search": 0}
    count = int(brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} WHERE {at_risk_sql(brain, now)}"))
    hidden = int(brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} WHERE {hidden_sql(brain)}"))
    return {"at_risk": count, "hidden_from_cleo_search": hidden}
