"""Recall: candidates, base score, every rerank stage, and the steps it records."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from cleo_tui.recall import rerank
from cleo_tui.recall.recall import recall
from cleo_tui.recall.rerank import RERANK_MARKDOWN, STAGES, RerankStep, format_chain
from cleo_tui.recall.search import match_expression, query_terms
from cleo_tui.recall.traces import RecallTraceInput, TraceResultInput, record_trace_outcome, write_recall_trace
from tests.recall_fixtures import NOW, make_brain, open_hippo

ODD_ID = "O-'quote\"-ü"


@pytest.fixture
def brain(tmp_path):
    b = make_brain(tmp_path)
    yield b
    b.close()


def _by_id(results):
    return {r.memory_id: r for r in results}


def test_ranks_live_observations_patterns_and_learnings(brain):
    results = recall(brain, "database migration schema", 10, True, now=NOW)
    ids = [r.memory_id for r in results]
    assert ids[0] == "O-aaa-1"
    assert {"P-0000aaaa", "L-0000bbbb", ODD_ID} <= set(ids)
    assert "O-aaa-4" not in ids  # evicted: never recalled, however well it matches
    assert [r.rank for r in results] == list(range(1, len(results) + 1))
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    kinds = _by_id(results)
    assert (kinds["P-0000aaaa"].kind, kinds["L-0000bbbb"].kind) == ("pattern", "learning")


def test_steps_form_a_consistent_chain_in_stage_order(brain):
    for result in recall(brain, "database backup", 10, True, now=NOW):
        assert tuple(s.stage for s in result.steps) == STAGES
        assert result.steps[0].score_before == pytest.approx(result.base)
        for before, after in zip(result.steps, result.steps[1:], strict=False):
            assert after.score_before == before.score_after
        for step in result.steps:
            assert step.score_after == pytest.approx(step.score_before * step.multiplier)
        assert result.steps[-1].score_after == result.score
        assert 0.0 <= result.base <= 1.0


def test_without_explain_there_are_no_steps_and_limit_holds(brain):
    results = recall(brain, "database", 2, False, now=NOW)
    assert len(results) == 2 and all(r.steps == () for r in results)


def test_best_base_match_gets_the_most_bm25(brain):
    results = _by_id(recall(brain, "nightly backup", 10, True, now=NOW))
    assert results["O-aaa-2"].base == pytest.approx(1.0)  # the only row holding both words


def test_recency_quality_tier_and_citations_stages(brain):
    steps = {r.memory_id: {s.stage: s for s in r.steps}
             for r in recall(brain, "database", 10, True, now=NOW)}
    assert steps["O-aaa-1"]["recency"].multiplier > steps["O-aaa-2"]["recency"].multiplier  # 1 vs 181 days
    assert steps["O-aaa-1"]["quality"].multiplier == pytest.approx(0.7 + 0.6 * 0.9)
    assert steps["O-aaa-1"]["tier"].multiplier == 1.15 and steps["O-aaa-2"]["tier"].multiplier == 1.0
    assert steps["O-aaa-1"]["citations"].multiplier == pytest.approx(1.10)  # a pattern and a learning cite it
    assert steps["O-aaa-2"]["citations"].multiplier == 1.0
    assert steps["P-0000aaaa"]["citations"].multiplier == pytest.approx(1.10)  # its citation_count is 2


def test_diversity_lowers_a_near_duplicate(brain):
    steps = {r.memory_id: {s.stage: s for s in r.steps}
             for r in recall(brain, "sqlite schema transaction", 10, True, now=NOW)}
    assert steps["O-aaa-1"]["diversity"].multiplier == 1.0
    assert steps["O-aaa-5"]["diversity"].multiplier < 0.7  # almost the same words as O-aaa-1


def test_outcome_history_from_earlier_traces(brain):
    def outcome_step(memory_id):
        result = _by_id(recall(brain, "database", 10, True, now=NOW))[memory_id]
        return next(s for s in result.steps if s.stage == "outcome")

    assert outcome_step("O-aaa-2").multiplier == 1.0
    data = RecallTraceInput(query="db", pipeline="cli", results=(TraceResultInput("O-aaa-2", 0.5),
                                                                  TraceResultInput("O-aaa-3", 0.4)))
    trace_id = write_recall_trace(brain, data)
    record_trace_outcome(brain, trace_id, "default", "positive", ["O-aaa-2"])
    record_trace_outcome(brain, trace_id, "default", "positive", ["O-aaa-2"])
    record_trace_outcome(brain, trace_id, "default", "negative", ["O-aaa-3"])
    assert outcome_step("O-aaa-2").multiplier == pytest.approx(1 + 0.3 * 2 / 3)
    assert outcome_step("O-aaa-2").note == "outcomes +2 −0"
    other_tenant = _by_id(recall(brain, "database", 10, True, now=NOW, tenant_id="acme"))["O-aaa-2"]
    assert next(s for s in other_tenant.steps if s.stage == "outcome").multiplier == 1.0


def test_without_an_fts_table_observations_are_still_found(brain):
    with brain.write() as conn:
        for trigger in ("brain_observations_ai", "brain_observations_ad", "brain_observations_au"):
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("DROP TABLE brain_observations_fts")
    brain.refresh()
    ids = [r.memory_id for r in recall(brain, "database schema", 10, False, now=NOW)]
    assert ids[0] in ("O-aaa-1", "O-aaa-5") and "O-aaa-4" not in ids


@pytest.mark.parametrize("query", ['database" OR NEAR(', "AND OR NOT *", "\x1b[31m; DROP TABLE x", "ü ünïcode"])
def test_hostile_queries_are_words_not_syntax(brain, query):
    recall(brain, query, 5, True, now=NOW)  # must not raise
    assert brain.scalar("SELECT count(*) FROM brain_observations") == 6


def test_unicode_query_matches_and_returns_the_odd_id(brain):
    assert recall(brain, "ünïcode", 5, False, now=NOW)[0].memory_id == ODD_ID


def test_same_query_same_answer(brain):
    first = recall(brain, "database backup", 10, True, now=NOW)
    assert recall(brain, "database backup", 10, True, now=NOW) == first


def test_query_terms_and_match_expression():
    assert query_terms("The the  DB a b") == ["the", "db"]
    assert query_terms("a") == ["a"]
    assert match_expression(['x"y']) == '"x""y"*'


def test_stage_formulas():
    assert rerank.recency("2026-05-01 12:00:00", NOW)[0] == pytest.approx(1.0)
    assert rerank.recency(NOW - timedelta(days=30), NOW)[0] == pytest.approx(0.8 + 0.2 / math.e)
    assert rerank.recency("not a date", NOW)[0] == 1.0
    assert rerank.quality(None)[0] == 1.0 and rerank.quality(7)[0] == pytest.approx(1.3)
    assert rerank.tier("LONG")[0] == 1.15 and rerank.tier(None)[0] == 1.0
    assert rerank.citations(9)[0] == pytest.approx(1.2)
    assert rerank.outcome(0, 50)[0] > 0.7 and rerank.outcome(50, 0)[0] < 1.3
    words = rerank.word_set("alpha beta")
    assert rerank.diversity(words, [words])[0] == 0.5 and rerank.diversity(words, [])[0] == 1.0


def test_chain_text_and_help_markdown():
    steps = [RerankStep("interference", 0.3, 0.42, 0.126), RerankStep("goal", 1.5, 0.126, 0.189)]
    assert format_chain(steps) == "base 0.420 → interference ×0.30 → 0.126 → goal ×1.50 → 0.189"
    assert format_chain([], 0.5) == "score 0.500"
    for stage in STAGES:
        assert f"`{stage}`" in RERANK_MARKDOWN


def test_recall_over_a_hippo_store_uses_its_live_memories(tmp_path):
    hippo = open_hippo(tmp_path / ".hippo" / "hippo.db")
    try:
        results = recall(hippo, "WAL mode advice replaced", 5, True, now=NOW)
        assert [(r.memory_id, r.kind) for r in results] == [("mem-1", "hippo")]  # mem-2 is superseded
        quality = next(s for s in results[0].steps if s.stage == "quality")
        assert quality.multiplier == pytest.approx(0.7 + 0.6 * 0.9)  # its strength
    finally:
        hippo.close()


def _punctuated(brain):
    with brain.write() as conn:
        conn.execute("INSERT INTO brain_observations (id, type, title, narrative) VALUES "
                     "('O-dash', 'discovery', 'flags', 'pass - to read stdin'), "
                     "('O-star', 'discovery', 'globs', 'src/*.py is every module'), "
                     "('O-gone', 'discovery', 'old', 'x - y'), "
                     "('Oplain', 'discovery', 'nothing odd', 'plain words only')")
        conn.execute("UPDATE brain_observations SET invalid_at = '2026-01-01 00:00:00' WHERE id = 'O-gone'")
        conn.execute("INSERT INTO brain_learnings (id, insight, source, confidence) "
                     "VALUES ('L-quote', 'don''t force-push main', 'manual', 0.5)")


@pytest.mark.parametrize("query, expected", [("-", {"O-dash", "L-quote"}), ("*", {"O-star"}),
                                             ("'", {"L-quote"}), ("*.", {"O-star"})])
def test_a_query_of_punctuation_finds_rows_holding_it(brain, query, expected):
    _punctuated(brain)
    found = {r.memory_id for r in recall(brain, query, 50, True, now=NOW)}
    assert expected <= found and "Oplain" not in found and "O-gone" not in found
    assert all(r.memory_id not in ("O-aaa-4",) for r in recall(brain, query, 50, now=NOW))


def test_observation_listing_search_of_punctuation_matches_text(brain):
    from cleo_tui.brain.observations import ObservationQuery, page_observations

    _punctuated(brain)
    for query, expected in (("-", "O-dash"), ("*", "O-star"), ("'", None)):
        ids = {r["id"] for r in page_observations(brain, ObservationQuery(search=query, state="all"), limit=100)}
        assert (expected in ids) if expected else "Oplain" not in ids
        assert "Oplain" not in ids


def test_one_default_limit_and_a_recall_that_matched_nothing_says_so(brain):
    from cleo_tui.recall import recall as recall_module
    from cleo_tui.recall.last_recall import recall_and_record

    assert recall_module.DEFAULT_LIMIT == 10
    empty = recall_and_record(brain, "zzzqqq", now=NOW)
    assert empty.matched_nothing and not empty.can_credit
    found = recall_and_record(brain, "database", now=NOW)
    assert not found.matched_nothing and found.can_credit
