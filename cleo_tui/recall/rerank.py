"""Rerank stages of a recall: one multiplier per stage, each recorded as a RerankStep.

The formulas live in RERANK_MARKDOWN (shown on the help screen) and in the
functions below, one function per stage. Each stage function returns
`(multiplier, note)`; `apply_stage` turns that into a RerankStep.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeGuard

from cleo_tui.brain.numbers import finite_int_or_none, finite_or_none
from cleo_tui.brain.rows import JsonObject

RERANK_MARKDOWN = """\
### How recall ranks memories

**Base score.** The query's words are matched as FTS5 prefix terms (any word
may match). Observations are scored with SQLite FTS5's BM25 over
`brain_observations_fts`; patterns and learnings (which have no FTS table in
a brain) and a hippo store's live memories are scored with BM25 over a
temporary in-memory FTS5 table holding the live ones that contain at least
one query word (a hippo memory's `strength` stands in for quality, and a
superseded one counts as evicted). Without a readable FTS
table, observations are scored the same way as patterns. Each raw BM25 is
turned into a relevance `r = −bm25` and normalised by the best one of the
query. FTS5 clamps the weight of a word found in most rows to almost zero,
which makes BM25 alone useless in small tables, so the base also counts the
share of query words the memory holds (as word prefixes):
`base = 0.7·r/max(r) + 0.3·matched_words/query_words` (0..1).

Then every candidate passes these stages in order; each multiplies the score:

| stage | multiplier | why |
|---|---|---|
| `recency` | `0.8 + 0.2·e^(−age_days/30)` (1.0 without a date) | fresh memories first, old ones still found |
| `quality` | `0.7 + 0.6·q`, q = quality_score in 0..1 (1.0 when unset) | CLEO's own quality judgement |
| `tier` | long ×1.15, medium ×1.05, short or unset ×1.00 | memories CLEO promoted to a longer tier |
| `citations` | `1 + 0.05·min(n, 4)` | n = reflections citing an observation, or a record's `citation_count` |
| `outcome` | `1 + 0.3·(pos − neg)/(pos + neg + 1)` | pos/neg = outcomes credited to it in earlier traces |
| `diversity` | `1 − 0.5·s` | s = the largest word-set (Jaccard) similarity to a result ranked above it |

Candidates are sorted after the outcome stage; the diversity stage then walks
them in that order, and the final order is by the last score. `--why` prints
each result's chain: `base 0.420 → recency ×0.95 → 0.399 → …`.
"""

STAGES = ("recency", "quality", "tier", "citations", "outcome", "diversity")
RECENCY_DAYS = 30.0
TIER_MULTIPLIERS = {"long": 1.15, "medium": 1.05, "short": 1.0}
CITATION_STEP = 0.05
CITATION_CAP = 4
OUTCOME_WEIGHT = 0.3
DIVERSITY_WEIGHT = 0.5

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class RerankStep:
    """One stage's effect on one result's score (hippo's RerankStep, Python names).

    `multiplier` is None for a stage that replaces the score instead of scaling it
    (hippo's `reranker`); `note` is human detail that is never persisted.
    """

    stage: str
    multiplier: float | None
    score_before: float
    score_after: float
    note: str = ""

    def to_json(self) -> JsonObject:
        """hippo's persisted shape: {stage, multiplier?, scoreBefore, scoreAfter}, no note."""
        out: JsonObject = {"stage": self.stage}
        if self.multiplier is not None:
            out["multiplier"] = self.multiplier
        out["scoreBefore"] = self.score_before
        out["scoreAfter"] = self.score_after
        return out


def _is_number(value: object) -> TypeGuard[float]:
    """An int or float that is not a bool (JSON numbers)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def apply_stage(stage: str, score: float, multiplier: float, note: str = "") -> RerankStep:
    """The step of a scaling stage applied to `score`."""
    return RerankStep(stage, multiplier, score, score * multiplier, note)


def parse_timestamp(value: object) -> datetime | None:
    """CLEO's `YYYY-MM-DD HH:MM:SS`, ISO-8601 with T/Z, or a bare date; None when unreadable."""
    text = str(value or "").strip()
    if not text:
        return None
    text = text.replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def recency(created_at: object, now: datetime) -> tuple[float, str]:
    """`0.8 + 0.2·e^(−age_days/30)`; 1.0 when the date is missing or unreadable."""
    moment = parse_timestamp(created_at)
    if moment is None:
        return 1.0, "no readable date"
    age_days = max(0.0, (now - moment).total_seconds() / 86400.0)
    return 0.8 + 0.2 * math.exp(-age_days / RECENCY_DAYS), f"{age_days:.0f} days old"


def quality(score: object) -> tuple[float, str]:
    """`0.7 + 0.6·q`, q clamped to 0..1; 1.0 when there is no quality score."""
    number = finite_or_none(score) if isinstance(score, (int, float)) else None
    if number is None:
        return 1.0, "no quality score"
    q = min(1.0, max(0.0, number))
    return 0.7 + 0.6 * q, f"quality {q:.2f}"


def tier(memory_tier: object) -> tuple[float, str]:
    """long ×1.15, medium ×1.05, anything else ×1.00."""
    name = str(memory_tier or "").strip().lower()
    return TIER_MULTIPLIERS.get(name, 1.0), f"tier {name or 'unset'}"


def citations(count: int) -> tuple[float, str]:
    """`1 + 0.05·min(n, 4)`."""
    n = max(0, finite_int_or_none(count) or 0)
    return 1.0 + CITATION_STEP * min(n, CITATION_CAP), f"cited by {n}"


def outcome(positive: int, negative: int) -> tuple[float, str]:
    """`1 + 0.3·(pos − neg)/(pos + neg + 1)`: between 0.7 and 1.3."""
    return (1.0 + OUTCOME_WEIGHT * (positive - negative) / (positive + negative + 1),
            f"outcomes +{positive} −{negative}")


def word_set(text: str) -> frozenset[str]:
    """Lower-cased words of `text` (its first 4,000 characters), for similarity."""
    return frozenset(w.lower() for w in _WORD.findall(text[:4000]))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def diversity(words: frozenset[str], above: list[frozenset[str]]) -> tuple[float, str]:
    """`1 − 0.5·s`, s = the largest Jaccard similarity to a result ranked above."""
    similarity = max((jaccard(words, other) for other in above), default=0.0)
    return 1.0 - DIVERSITY_WEIGHT * similarity, f"similarity {similarity:.2f} to a result above"


SCORE_DECIMALS = 3  # scores are shown as 0.420
FACTOR_DECIMALS = (2, 3, 4, 5, 6)


def _shown_score(value: float) -> float:
    return round(value, SCORE_DECIMALS)


def format_factor(multiplier: float, before: float, after: float) -> str:
    """`×0.95`: a step's multiplier with the fewest decimals (2 to 6) that make it add up.

    Shown scores have three decimals; the factor is shown so that the shown
    score before times the shown factor, rounded to three decimals, is the
    shown score after (`1.000 ×0.995 → 0.995`, not `×1.00`). When the true
    multiplier cannot do that at six decimals (the shown score before was
    itself rounded), the factor between the two shown scores is given instead.
    """
    shown_before, shown_after = _shown_score(before), _shown_score(after)

    def adds_up(factor: float) -> bool:
        return _shown_score(shown_before * factor) == shown_after

    if shown_before != 0.0:
        for candidate in (multiplier, shown_after / shown_before):
            for decimals in FACTOR_DECIMALS:
                if adds_up(round(candidate, decimals)):
                    return f"×{round(candidate, decimals):.{decimals}f}"
    return f"×{multiplier:.{FACTOR_DECIMALS[0]}f}"


def format_chain(steps: list[RerankStep] | tuple[RerankStep, ...], final: float | None = None) -> str:
    """`base 0.420 → recency ×0.95 → 0.399 → …`; a replacing stage shows no ×."""
    if not steps:
        return "" if final is None else f"score {final:.3f}"
    parts = [f"base {steps[0].score_before:.3f}"]
    for step in steps:
        if step.multiplier is None:
            parts.append(f"{step.stage} → {step.score_after:.3f}")
        else:
            factor = format_factor(step.multiplier, step.score_before, step.score_after)
            parts.append(f"{step.stage} {factor} → {step.score_after:.3f}")
    return " → ".join(parts)


def steps_from_json(items: object) -> list[RerankStep]:
    """Steps read back from `rerank_json` (hippo or cleo-tui); raises ValueError when malformed."""
    if not isinstance(items, list):
        raise ValueError("rerank_json is not a list")
    steps = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("stage"), str):
            raise ValueError("a rerank step has no stage")
        multiplier = item.get("multiplier")
        before, after = item.get("scoreBefore"), item.get("scoreAfter")
        if not all(isinstance(v, (int, float)) and finite_or_none(v) is not None for v in (before, after)):
            raise ValueError("a rerank step has no finite scores")
        assert isinstance(before, (int, float)) and isinstance(after, (int, float))  # checked just above
        if multiplier is not None and (not isinstance(multiplier, (int, float)) or finite_or_none(multiplier) is None):
            raise ValueError("a rerank step has a bad multiplier")
        steps.append(RerankStep(item["stage"], None if multiplier is None else float(multiplier),
                                float(before), float(after)))
    return steps
