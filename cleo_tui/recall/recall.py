"""Recall: rank live observations, patterns and learnings for a query, step by step.

`recall()` only reads the brain. Writing the trace and remembering the last
recall is `cleo_tui.recall.last_recall.recall_and_record`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cleo_tui.brain.clock import utc_now
from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import reflection_citations
from cleo_tui.recall import rerank
from cleo_tui.recall.reader import outcome_counts
from cleo_tui.recall.rerank import RerankStep
from cleo_tui.recall.search import Candidate, find_candidates

DEFAULT_LIMIT = 10
MAX_LIMIT = 1000
DIVERSITY_WINDOW = 3  # the diversity stage looks at limit × 3 results
BM25_WEIGHT = 0.7


@dataclass(frozen=True)
class RecallResult:
    """One ranked memory. `steps` holds the rerank chain when recall ran with explain."""

    rank: int
    memory_id: str
    kind: str
    title: str
    score: float
    base: float
    created_at: str | None
    steps: tuple[RerankStep, ...] = ()


@dataclass
class _Scored:
    candidate: Candidate
    base: float
    steps: list[RerankStep]

    @property
    def score(self) -> float:
        return self.steps[-1].score_after if self.steps else self.base

    def apply(self, stage: str, value: tuple[float, str]) -> None:
        self.steps.append(rerank.apply_stage(stage, self.score, value[0], value[1]))


def _citation_counts(brain: Brain, candidates: list[Candidate]) -> dict[str, int]:
    """Coverage of each observation (reflections citing it); citation_count for the others."""
    observation_ids = [c.memory_id for c in candidates if c.kind == "observation"]
    cited = reflection_citations(brain, observation_ids) if observation_ids else {}
    return {c.memory_id: len(cited.get(c.memory_id, ())) if c.kind == "observation" else c.citation_count
            for c in candidates}


def base_score(candidate: Candidate, best_relevance: float) -> float:
    """`0.7·r/max(r) + 0.3·share of query words present` (see RERANK_MARKDOWN)."""
    bm25 = candidate.relevance / best_relevance if best_relevance > 0 else 0.0
    return BM25_WEIGHT * bm25 + (1.0 - BM25_WEIGHT) * candidate.term_share


def _first_stages(brain: Brain, candidates: list[Candidate], now: datetime, tenant_id: str) -> list[_Scored]:
    """Base score and every stage before diversity, for every candidate."""
    best = max((c.relevance for c in candidates), default=0.0)
    cited = _citation_counts(brain, candidates)
    outcomes = outcome_counts(brain, [c.memory_id for c in candidates], tenant_id)
    scored = []
    for c in candidates:
        item = _Scored(c, base_score(c, best), [])
        item.apply("recency", rerank.recency(c.created_at, now))
        item.apply("quality", rerank.quality(c.quality_score))
        item.apply("tier", rerank.tier(c.memory_tier))
        item.apply("citations", rerank.citations(cited.get(c.memory_id, 0)))
        item.apply("outcome", rerank.outcome(*outcomes.get(c.memory_id, (0, 0))))
        scored.append(item)
    return scored


def _order(items: list[_Scored]) -> list[_Scored]:
    """Best score first; ties by memory id so the order is the same every time."""
    return sorted(items, key=lambda s: (-s.score, s.candidate.memory_id))


def _diversify(items: list[_Scored]) -> list[_Scored]:
    """The diversity stage over `items` in their current order, then re-sorted."""
    above: list[frozenset[str]] = []
    for item in items:
        words = rerank.word_set(item.candidate.text)
        item.apply("diversity", rerank.diversity(words, above))
        above.append(words)
    return _order(items)


def _dedupe(candidates: list[Candidate]) -> list[Candidate]:
    """One candidate per memory id (a brain may hold the same id twice), best match kept."""
    best: dict[str, Candidate] = {}
    for c in candidates:
        if c.memory_id not in best or c.relevance > best[c.memory_id].relevance:
            best[c.memory_id] = c
    return list(best.values())


def recall(brain: Brain, query: str, limit: int = DEFAULT_LIMIT, explain: bool = False, *,
           now: datetime | None = None, tenant_id: str = "default") -> list[RecallResult]:
    """The `limit` best live memories for `query`, each with its rerank steps when `explain`.

    `now` fixes the moment recency is measured from (the demo passes its own);
    outcome history counts outcomes recorded for `tenant_id`.
    """
    limit = max(1, min(int(limit), MAX_LIMIT))
    candidates = _dedupe(find_candidates(brain, query, pool=max(100, limit * 10)))
    ranked = _order(_first_stages(brain, candidates, now or utc_now(), tenant_id))
    final = _diversify(ranked[: limit * DIVERSITY_WINDOW])[:limit]
    return [RecallResult(rank=i + 1, memory_id=s.candidate.memory_id, kind=s.candidate.kind,
                         title=s.candidate.title, score=s.score, base=s.base,
                         created_at=s.candidate.created_at,
                         steps=tuple(s.steps) if explain else ())
            for i, s in enumerate(final)]

