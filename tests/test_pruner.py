"""The deterministic pruner: seed semantics (property-based), prefix sums, brain commit and undo."""

from __future__ import annotations

import hashlib
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleo_tui.brain import open_brain
from cleo_tui.memory import curation
from cleo_tui.memory.pruner import (
    BadBudget,
    EmptyScope,
    commit_prune,
    deterministic_prune,
    parse_budget,
    prepare_pool,
    prepare_records,
    target_for,
)
from cleo_tui.memory.seed_types import ObservationRecord, ReflectionRecord, render_record
from cleo_tui.memory.tags import compute_coverage_tags, tag_protected_observations
from cleo_tui.memory.tokenizers import get_encoding, utf16_length
from tests.pruner_fixtures import add_observation, add_pattern, new_brain, observation_rows

COVERAGE_RANK = {"reinforced": 0, "cited": 1, "uncited": 2}
RELEVANCE_RANK = {"low": 0, "medium": 1, "high": 2}
_CONTENT = ["note about the build", "refactored the parser module", "user prefers dark mode",
            "TypeError: boom", "edited lib/shared.py", "lib/shared.py again", "status ok", "ü😀 wide text",
            "x" * 120, "completed the migration", "fixed T77 today", "plain words " * 6]


@st.composite
def pools(draw):
    size = draw(st.integers(0, 24))
    observations = [ObservationRecord(
        f"O-{i}", draw(st.sampled_from(_CONTENT)) + draw(st.sampled_from(["", " more", " and more detail"])),
        draw(st.sampled_from(["2026-01-01 10:00", "2026-01-02 09:30", "2026-01-02 09:30", "2025-12-31 23:59"])),
        draw(st.sampled_from(["low", "medium", "medium", "high", "critical"])))
        for i in range(size)]
    ids = [o.id for o in observations] + ["O-missing"]
    reflections = [ReflectionRecord(f"R-{j}", "reflection text",
                                    tuple(draw(st.lists(st.sampled_from(ids), max_size=5))))
                   for j in range(draw(st.integers(0, 8)))]
    return observations, reflections


def naive_tokens(observations, tokenizer):
    """Re-count the whole pool from its rendered text (the slow, obviously right way)."""
    if tokenizer == "chars4":
        return math.ceil(utf16_length("\n".join(render_record(o) for o in observations)) / 4)
    encoding = get_encoding(tokenizer)
    lines = [len(encoding.encode_ordinary(render_record(o))) for o in observations]
    return sum(lines) + max(0, len(lines) - 1)


def naive_prune(observations, reflections, budget, tokenizer="chars4"):
    """Drop one row at a time in drop order, re-counting the pool after each drop."""
    coverage = compute_coverage_tags(observations, reflections)
    protected = tag_protected_observations(observations, reflections)
    order = sorted((i for i, o in enumerate(observations) if not protected[o.id].protected),
                   key=lambda i: (COVERAGE_RANK[coverage[observations[i].id]],
                                  RELEVANCE_RANK[observations[i].relevance], observations[i].timestamp, i))
    target = max(1, math.floor(0.8 * budget))
    kept = list(range(len(observations)))
    dropped = []
    for index in order:
        if naive_tokens([observations[i] for i in kept], tokenizer) <= target:
            break
        kept.remove(index)
        dropped.append(observations[index].id)
    after = naive_tokens([observations[i] for i in kept], tokenizer)
    return dropped, after, after > target


@settings(max_examples=120, deadline=None)
@given(pools(), st.integers(1, 2000))
def test_seed_rules_hold_for_any_pool_and_budget(pool, budget):
    observations, reflections = pool
    result = deterministic_prune(observations, reflections, budget)
    target = target_for(budget)
    protected = tag_protected_observations(observations, reflections)
    coverage = compute_coverage_tags(observations, reflections)
    by_id = {o.id: o for o in observations}
    assert result.tokens_before == naive_tokens(observations, "chars4")
    assert result.tokens_after == naive_tokens(result.observations, "chars4")
    # protected rows never drop
    assert not [i for i in result.dropped_ids if protected[i].protected]
    # at or under target unless fell back; fell back means nothing droppable is left
    if result.fell_back:
        assert result.tokens_after > target
        assert all(protected[o.id].protected for o in result.observations)
    else:
        assert result.tokens_after <= target
    # nothing drops while the pool is within target
    if result.tokens_before <= target:
        assert result.dropped_ids == []
    # minimality: putting the last dropped row back would exceed the target
    if result.dropped_ids:
        last = result.dropped_ids[-1]
        back = [o for o in observations if o.id not in set(result.dropped_ids[:-1])]
        assert naive_tokens(back, "chars4") > target, last
    # drop order: coverage, relevance, age; every kept droppable row ranks at or after the last dropped
    keys = [(COVERAGE_RANK[coverage[i]], RELEVANCE_RANK[by_id[i].relevance], by_id[i].timestamp)
            for i in result.dropped_ids]
    assert keys == sorted(keys)
    if keys:
        for o in result.observations:
            if not protected[o.id].protected:
                assert (COVERAGE_RANK[coverage[o.id]], RELEVANCE_RANK[o.relevance], o.timestamp) >= keys[-1]
    # kept rows keep their order
    assert [o.id for o in result.observations] == [o.id for o in observations if o.id not in set(result.dropped_ids)]


@settings(max_examples=60, deadline=None)
@given(pools(), st.lists(st.integers(1, 3000), min_size=1, max_size=8),
       st.sampled_from(["chars4", "chars4", "o200k_base"]))
def test_prefix_sums_answer_every_budget_like_a_naive_recount(pool, budgets, tokenizer):
    observations, reflections = pool
    prepared = prepare_records(observations, reflections, tokenizer)
    for budget in budgets:
        preview = prepared.preview(budget)
        dropped, after, fell_back = naive_prune(observations, reflections, budget, tokenizer)
        assert (preview.dropped_ids, preview.tokens_after, preview.fell_back) == (dropped, after, fell_back)
        assert preview.kept == len(observations) - len(dropped)


def test_a_small_pool_prunes_as_the_seed_describes():
    obs = [
        ObservationRecord("a", "old routine status update " * 3, "2026-01-01 09:00", "low"),
        ObservationRecord("b", "newer routine status update " * 3, "2026-01-02 09:00", "low"),
        ObservationRecord("c", "a reinforced medium note " * 3, "2026-01-03 09:00", "medium"),
        ObservationRecord("d", "the user prefers short answers", "2026-01-01 08:00", "medium"),
        ObservationRecord("e", "critical identity fact", "2026-01-01 08:00", "critical"),
    ]
    reflections = [ReflectionRecord(f"r{i}", "summary", ("c",)) for i in range(4)]
    result = deterministic_prune(obs, reflections, budget_tokens=60)
    # reinforced first (c), then low relevance oldest first (a, then b)
    assert result.dropped_ids[:2] == ["c", "a"]
    assert "d" not in result.dropped_ids and "e" not in result.dropped_ids
    assert result.dropped[0].coverage == "reinforced" and "cited by 4 reflections" in result.dropped[0].why
    tiny = deterministic_prune(obs, reflections, budget_tokens=1)
    assert tiny.fell_back and {o.id for o in tiny.observations} == {"d", "e"}
    roomy = deterministic_prune(obs, reflections, budget_tokens=10_000)
    assert roomy.dropped_ids == [] and not roomy.fell_back and roomy.tokens_after == roomy.tokens_before


def test_tiktoken_pool_tokens_are_line_counts_plus_newlines():
    obs = [ObservationRecord(f"o{i}", f"hello world number {i}", "2026-01-01 10:00") for i in range(5)]
    enc = get_encoding("cl100k_base")
    expected = sum(len(enc.encode_ordinary(render_record(o))) for o in obs) + 4
    assert prepare_records(obs, [], "cl100k_base").tokens_before == expected


def test_curve_gives_tokens_and_drops_per_budget():
    obs = [ObservationRecord(f"o{i}", "word " * 20, f"2026-01-0{i + 1} 10:00") for i in range(5)]
    points = prepare_records(obs, []).curve([10, 100, 1000])
    assert [p.budget for p in points] == [10, 100, 1000]
    assert points[0].dropped >= points[1].dropped >= points[2].dropped == 0
    assert points[0].fell_back is False and points[0].tokens_after == 0


def test_budget_bar_splits_the_pool_into_protected_kept_and_dropped():
    obs = [ObservationRecord(f"o{i}", "word " * 20, "2026-01-01 10:00", "critical" if i == 0 else "low")
           for i in range(5)]
    pool = prepare_records(obs, [])
    bars = [pool.preview(budget).bar() for budget in (10, 100, 1000)]
    assert len({protected for protected, _, _ in bars}) == 1  # protected never changes
    assert [dropped for _, _, dropped in bars] == sorted((d for _, _, d in bars), reverse=True)
    for bar in bars:
        assert abs(sum(bar) - pool.tokens_before) <= 2  # rounding of three parts


def test_parse_budget():
    assert [parse_budget(x) for x in ("8000", "12k", "1.5K", "2m", "12_000")] == [8000, 12000, 1500, 2_000_000, 12000]
    for bad in ("0", "-3", "ten", "1.2345k", ""):
        with pytest.raises(BadBudget, match="positive whole number"):
            parse_budget(bad)


# --- over a brain ------------------------------------------------------------------


def _fill(brain, n, seed=0):
    """n observations with varied columns, a few citing patterns, some protected."""
    import random
    rng = random.Random(seed)
    for i in range(n):
        add_observation(
            brain, f"O-{i:03d}",
            rng.choice(["routine note", "refactor work on the module", "status update"]) * rng.randint(1, 4),
            created_at=f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 1{rng.randint(0, 9)}:00:00",
            quality_score=rng.choice([None, 0.2, 0.5, 0.9]), type=rng.choice(["discovery", "change", "decision"]),
            source_session_id=rng.choice(["ses_a", "ses_b", None]),
            updated_at=rng.choice([None, "2026-01-01 00:00:00"]),
            source_type=rng.choice(["agent"] * 9 + ["manual"]))
    for p in range(5):
        add_pattern(brain, f"P-{p}", "a pattern", cites=[f"O-{rng.randrange(n):03d}" for _ in range(6)])


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 10**6), st.integers(10, 60), st.floats(0.05, 0.9))
def test_commit_then_undo_restores_every_column_of_every_row(seed, size, share):
    with tempfile.TemporaryDirectory() as tmp:
        brain = new_brain(Path(tmp))
        _fill(brain, size, seed)
        before = observation_rows(brain)
        pool = prepare_pool(brain)
        preview = pool.preview(max(1, int(pool.tokens_before * share)))
        if preview.drop_count == 0:  # all protected, or within target: nothing to commit
            with pytest.raises(curation.CurationError):
                commit_prune(brain, preview)
        else:
            run_id = commit_prune(brain, preview)
            evicted = {r[0] for r in brain.query("SELECT id FROM brain_observations WHERE invalid_at IS NOT NULL")}
            assert evicted == set(preview.dropped_ids)
            run = curation.list_curation_runs(brain, ["prune"])[0]
            assert run.id == run_id and run.params["ids"] == preview.dropped_ids
            assert (run.params["budget"], run.params["tokens_after"]) == (preview.budget, preview.tokens_after)
            _, restored = curation.undo(brain, run_id)
            assert restored == preview.drop_count
        # every column back, but updated_at: an undo stamps it now (CLEO's reads move it anyway)
        assert [r[:15] + r[16:] for r in observation_rows(brain)] == [r[:15] + r[16:] for r in before]
        brain.close()


def test_a_commit_s_run_says_its_figures_as_the_app_writes_them(tmp_path):
    brain = new_brain(tmp_path)
    _fill(brain, 200)
    pool = prepare_pool(brain)
    preview = pool.preview(2_000)
    commit_prune(brain, preview)
    run = curation.list_curation_runs(brain, ["prune"])[0]
    assert run.summary == f"pruned {preview.drop_count} observations to 2,000 tokens (chars4)"


def test_a_commit_on_a_changed_pool_evicts_what_was_previewed(tmp_path):
    from cleo_tui.memory.pruner import commit_preview
    brain = new_brain(tmp_path)
    _fill(brain, 30)
    pool = prepare_pool(brain)
    preview = pool.preview(pool.tokens_before // 2)
    add_observation(brain, "O-new", "arrived after the preview")
    result = commit_preview(brain, preview)
    assert sorted(result.evicted) == sorted(preview.dropped_ids) and result.new_rows == 1
    assert brain.scalar("SELECT invalid_at FROM brain_observations WHERE id = 'O-new'") is None
    curation.undo(brain, result.run_id)
    fresh = prepare_pool(brain).preview(pool.tokens_before // 2)
    curation.pin_observation(brain, fresh.dropped_ids[0])  # pinned after the preview: left alone
    second = commit_preview(brain, fresh)
    assert second.skipped == [{"id": fresh.dropped_ids[0], "why": "pinned since the preview"}]
    assert sorted(second.evicted) == sorted(fresh.dropped_ids[1:])
    brain.close()


def test_preview_on_a_read_only_brain_writes_nothing(tmp_path):
    brain = new_brain(tmp_path)
    _fill(brain, 30)
    path = brain.path
    brain.close()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    ro = open_brain(path, read_only=True)
    progress = []
    pool = prepare_pool(ro, "o200k_base", progress=lambda done, total: progress.append((done, total)))
    assert pool.preview(100).drop_count > 0 and progress[-1] == (30, 30)
    ro.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


def test_session_scope_prunes_only_that_session(tmp_path):
    brain = new_brain(tmp_path)
    _fill(brain, 40)
    pool = prepare_pool(brain, session="ses_a")
    in_session = {r[0] for r in brain.query("SELECT id FROM brain_observations WHERE source_session_id = 'ses_a'")}
    assert {e.id for e in pool.droppable + pool.protected} == in_session
    assert set(pool.preview(1).dropped_ids) <= in_session
    with pytest.raises(EmptyScope, match="ses_zzz"):
        prepare_pool(brain, session="ses_zzz")
    brain.close()


def test_a_write_by_cleo_while_the_pool_is_prepared_does_not_block_the_commit(tmp_path, monkeypatch):
    import sqlite3

    from cleo_tui.memory import pruner, tags
    brain = new_brain(tmp_path)
    _fill(brain, 30)
    real_scan = tags.scan_brain

    def scan_while_cleo_writes(*args, **kwargs):
        scan = real_scan(*args, **kwargs)
        cleo = sqlite3.connect(brain.path)  # another process's connection, as CLEO's would be
        cleo.execute("UPDATE brain_observations SET quality_score = 0.99 WHERE id = 'O-000'")
        cleo.commit()
        cleo.close()
        return scan

    monkeypatch.setattr(tags, "scan_brain", scan_while_cleo_writes)
    preview = pruner.prepare_pool(brain).preview(100)
    result = pruner.commit_preview(brain, preview)
    left = {s["id"] for s in result.skipped}
    assert set(result.evicted) == set(preview.dropped_ids) - left and left <= {"O-000"}
    brain.close()


def test_cleo_writing_another_session_does_not_block_a_session_commit(tmp_path):
    import sqlite3

    brain = new_brain(tmp_path)
    _fill(brain, 40)
    pool = prepare_pool(brain, session="ses_a")
    preview = pool.preview(pool.tokens_before)  # the 80% target drops a few rows, not all
    assert preview.drop_count
    cleo = sqlite3.connect(brain.path)
    cleo.execute("INSERT INTO brain_observations(id, type, title, narrative, source_session_id) "
                 "VALUES ('O-new', 'discovery', 'elsewhere', 'written by CLEO meanwhile', 'ses_b')")
    cleo.commit()
    run_id = commit_prune(brain, preview)
    assert run_id and brain.scalar("SELECT count(*) FROM brain_observations WHERE invalid_at IS NOT NULL") \
        == preview.drop_count
    # A write inside the session does make the next preview stale.
    second = prepare_pool(brain, session="ses_a").preview(1)
    assert second.drop_count
    cleo.execute("INSERT INTO brain_observations(id, type, title, narrative, source_session_id) "
                 "VALUES ('O-new-a', 'discovery', 'here', 'written by CLEO in ses_a', 'ses_a')")
    cleo.commit()
    cleo.close()
    commit_prune(brain, second)  # not blocked; the new row is not part of it
    assert brain.scalar("SELECT invalid_at FROM brain_observations WHERE id = 'O-new-a'") is None
    brain.close()


def _pool_facts(pool):
    """What decides every preview of a pool: drop order with sizes and reasons, protected rows."""
    return ([(e.id, e.coverage, e.citation_count, e.relevance, e.relevance_reason, e.units) for e in pool.droppable],
            [(e.id, e.reasons, e.units) for e in pool.protected], pool.tokens_before)


@pytest.mark.parametrize("session", [None, "ses_a"])
def test_new_rows_fold_into_a_prepared_pool_and_the_tags_as_a_full_prepare_would(tmp_path, session):
    from cleo_tui.memory.tags import tag_brain, update_tags
    brain = new_brain(tmp_path)
    _fill(brain, 40, seed=3)
    add_observation(brain, "O-uniq", "Edited src/only/here.py today", created_at="2026-05-05 10:00:00",
                    source_session_id="ses_a")
    pool = prepare_pool(brain, session=session)
    tags = tag_brain(brain)
    assert "unique identifier" in tags["O-uniq"].reasons[0]
    # CLEO writes: a row sharing O-uniq's identifier, plain rows, a pattern citing old rows;
    # the user evicts one row and pins another.
    add_observation(brain, "O-new1", "Looked at src/only/here.py again", created_at="2026-12-01 10:00:00",
                    source_session_id="ses_a")
    add_observation(brain, "O-new2", "routine note from today", created_at="2026-01-01 00:00:00",
                    source_session_id="ses_a")
    add_observation(brain, "O-new3", "status update elsewhere", source_session_id="ses_b")
    add_pattern(brain, "P-new", "a new pattern", cites=["O-000", "O-001", "O-002"])
    curation.evict_observation(brain, "O-003")
    curation.pin_observation(brain, "O-004")
    brain.refresh()
    changed = ["O-003", "O-004"]
    folded = pool.refreshed(brain, changed)
    assert _pool_facts(folded) == _pool_facts(prepare_pool(brain, session=session))
    assert folded.high_water > pool.high_water
    updated = update_tags(brain, tags, changed)
    full = tag_brain(brain)
    assert dict(updated) == dict(full)
    assert not updated["O-uniq"].protected and tags["O-uniq"].protected  # the old table is unchanged
    assert updated["O-000"].citation_count == tags["O-000"].citation_count + 1
    brain.close()


def test_a_fold_judges_again_the_citations_of_reflections_that_left_or_arrived(tmp_path):
    """Old edges count again when their reflection arrives late, and stop when it is evicted."""
    from cleo_tui.brain import cleo_schema as cs
    from cleo_tui.memory.tags import tag_brain, update_tags
    brain = new_brain(tmp_path)
    _fill(brain, 30, seed=5)
    add_pattern(brain, "P-old", "an old pattern", cites=["O-005", "O-006"])
    with brain.write() as conn:  # edges written before their pattern (CLEO's order is not guaranteed)
        for obs in ("O-006", "O-007"):
            conn.execute(f"INSERT INTO {cs.EDGES} (from_id, to_id, edge_type) VALUES (?, ?, 'derived_from')",
                         ("pattern:P-late", f"observation:{obs}"))
    pool = prepare_pool(brain)
    tags = tag_brain(brain)
    _ = tags.scan.citation_counts  # as the UI's coverage filter would have it
    before = {i: tags[i].citation_count for i in ("O-005", "O-006", "O-007")}
    with brain.write() as conn:
        conn.execute(f"UPDATE {cs.PATTERNS} SET invalid_at = '2026-06-01 00:00:00' WHERE id = 'P-old'")
        conn.execute(f"INSERT INTO {cs.PATTERNS} (id, type, pattern, context) VALUES ('P-late', 'workflow', "
                     "'a late pattern', '')")
    add_observation(brain, "O-new", "a new row", created_at="2026-12-01 10:00:00")
    brain.refresh()
    folded = pool.refreshed(brain)
    assert _pool_facts(folded) == _pool_facts(prepare_pool(brain))
    updated = update_tags(brain, tags)
    assert dict(updated) == dict(tag_brain(brain))
    assert [updated[i].citation_count - before[i] for i in before] == [-1, 0, 1]
    assert updated.citation_counts() == tag_brain(brain).citation_counts()
    assert list(updated.scan.citation_counts) == list(tag_brain(brain).scan.citation_counts)
    assert tags["O-005"].citation_count == before["O-005"]  # the old table is unchanged
    brain.close()
