"""The demo brain: deterministic for a seed, and it holds every case the app must show."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections import Counter
from datetime import datetime, timedelta

import pytest

from cleo_tui.brain import BrainError, open_brain
from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.observations import ObservationQuery, count_observations
from cleo_tui.demo.generator import BASE_DATE, generate_demo
from cleo_tui.demo.hostile import HOSTILE
from cleo_tui.demo.rows import content_hash
from cleo_tui.memory.detectors import text_reasons
from cleo_tui.memory.mapping import derive_relevance, reflection_citations

N = 1200
TYPES = {"discovery", "change", "feature", "bugfix", "decision", "refactor", "diary", "session-summary"}
SOURCES = {"agent", "session-debrief", "claude-mem", "manual", "observer-compressed", "sleep-consolidation",
           "auto", "transcript"}


def brain_digest(path) -> str:
    """sha256 over every row of every table (sorted), i.e. the brain's content, not its bytes."""
    conn = sqlite3.connect(path)
    digest = hashlib.sha256()
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    conn.text_factory = bytes  # invalid UTF-8 is part of the content too
    for table in tables:
        digest.update(table.encode())
        for row in sorted(repr(r) for r in conn.execute(f'SELECT * FROM "{table}"')):
            digest.update(row.encode())
    conn.close()
    return digest.hexdigest()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """One demo brain shared by the content tests (read-only)."""
    path = generate_demo(tmp_path_factory.mktemp("demo"), observations=N, seed=42)
    brain = open_brain(path, read_only=True)
    yield brain
    brain.close()


def rows(brain, sql, params=()):
    return [dict(r) for r in brain.query(sql, params)]


def test_same_seed_same_rows_different_seed_different_rows(tmp_path):
    a = generate_demo(tmp_path / "a", observations=300, seed=5)
    b = generate_demo(tmp_path / "b", observations=300, seed=5)
    c = generate_demo(tmp_path / "c", observations=300, seed=6)
    assert brain_digest(a) == brain_digest(b)
    assert brain_digest(a) != brain_digest(c)


def test_refuses_an_existing_brain_and_a_bad_size(tmp_path):
    path = generate_demo(tmp_path, observations=100)
    before = brain_digest(path)
    # Even the smallest demo holds every hostile text and every protected kind.
    conn = sqlite3.connect(path)
    titles = {r[0] for r in conn.execute(f"SELECT title FROM {cs.OBSERVATIONS}")}
    assert {h[0] for h in HOSTILE} <= titles
    kinds = {r[0] for r in conn.execute(f"SELECT source_type FROM {cs.OBSERVATIONS}")}
    assert "manual" in kinds
    conn.close()
    with pytest.raises(BrainError, match="already exists"):
        generate_demo(tmp_path, observations=100)
    assert brain_digest(path) == before
    with pytest.raises(BrainError, match="100"):
        generate_demo(tmp_path / "small", observations=5)


def test_exact_count_every_type_source_tier_and_confidence(demo):
    assert demo.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS}") == N
    values = {c: {r[0] for r in demo.query(f"SELECT DISTINCT {c} FROM {cs.OBSERVATIONS}")}
              for c in ("type", "source_type", "memory_tier", "source_confidence")}
    assert values["type"] == TYPES
    assert SOURCES <= values["source_type"]
    assert {"short", "medium", "long"} <= values["memory_tier"]
    assert {"owner", "task-outcome", "agent", "speculative"} <= values["source_confidence"]
    assert demo.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} WHERE quality_score < 0.4") > 10


def test_ids_sessions_dates_and_hashes_look_like_cleo(demo):
    obs = rows(demo, f"SELECT id, source_type, source_session_id, created_at, narrative, title, content_hash "
                     f"FROM {cs.OBSERVATIONS}")
    for row in obs:
        pattern = r"O-[0-9a-f]{8}" if row["source_type"] == "observer-compressed" else r"O-[0-9a-z]+-[0-9a-z]+"
        assert re.fullmatch(pattern, row["id"]), row["id"]
        assert row["source_session_id"] is None or row["source_session_id"].startswith("ses_")
        assert len(row["title"]) <= 120
    assert len({r["id"] for r in obs}) == N
    sessions = Counter(r["source_session_id"] for r in obs)
    assert sessions[None] > 0 and len(sessions) > 10
    dates = sorted(datetime.strptime(r["created_at"], "%Y-%m-%d %H:%M:%S") for r in obs)
    base = BASE_DATE.replace(tzinfo=None)
    assert dates[-1] < base and base - dates[0] > timedelta(days=90)  # months of history
    # (The invalid-UTF-8 row is hashed as CLEO saw it before the bytes went in.)
    for row in obs:
        if "\ufffd" not in row["narrative"]:
            assert row["content_hash"] == content_hash(row["narrative"]), row["id"]
    assert content_hash("  Hello World \n") == hashlib.sha256(b"hello world").hexdigest()[:16]
    # CLEO deduplicates identical text, so the demo never repeats a narrative.
    assert demo.scalar(f"SELECT count(DISTINCT content_hash) FROM {cs.OBSERVATIONS}") == N


def test_observer_notes_follow_cleo(demo):
    notes = rows(demo, f"SELECT * FROM {cs.OBSERVATIONS} WHERE source_type = 'observer-compressed'")
    assert len(notes) >= 5
    for note in notes:
        match = re.match(r"\[Observer p([1-5])\] ", note["title"])
        assert match and note["type"] == "change" and note["memory_tier"] == "short"
        priority = int(match.group(1))
        assert note["quality_score"] == pytest.approx(max(0.6, 1.0 - (priority - 1) * 0.1))
        compressed = re.search(r"\(compressed from: ([^)]*)\)$", note["narrative"])
        assert compressed is not None
        sources = compressed.group(1).split(", ")
        edges = rows(demo, f"SELECT * FROM {cs.EDGES} WHERE from_id = ?", (f"observation:{note['id']}",))
        assert sorted(e["to_id"] for e in edges) == sorted(f"observation:{s}" for s in sources)
        assert all(e["edge_type"] == "supersedes" and e["weight"] == 0.9
                   and e["provenance"] == "observer-reflector" for e in edges)
    assert demo.scalar(f"SELECT count(*) FROM {cs.NODES} WHERE node_type = 'observation'") > 0
    # Dangling edges: targets that never existed.
    dangling = demo.scalar(f"SELECT count(*) FROM {cs.EDGES} WHERE to_id LIKE 'observation:%' AND "
                           f"substr(to_id, 13) NOT IN (SELECT id FROM {cs.OBSERVATIONS})")
    assert dangling >= 1


def test_reflections_cite_some_observations_often_and_most_not_at_all(demo):
    assert demo.scalar(f"SELECT count(*) FROM {cs.PATTERNS}") > 3
    assert demo.scalar(f"SELECT count(*) FROM {cs.LEARNINGS}") > 3
    assert demo.scalar(f"SELECT count(*) FROM {cs.DECISIONS}") >= 3
    assert demo.scalar(f"SELECT count(*) FROM {cs.EDGES} WHERE from_id LIKE 'decision:D0%'") >= 3
    for table, ref in ((cs.PATTERNS, "pattern"), (cs.LEARNINGS, "learning")):
        ids = [r[0] for r in demo.query(f"SELECT id FROM {table}")]
        assert all(re.fullmatch(rf"{ref[0].upper()}-[0-9a-f]{{8}}", i) for i in ids)
        cited = demo.scalar(f"SELECT count(DISTINCT from_id) FROM {cs.EDGES} WHERE from_id LIKE ?", (f"{ref}:%",))
        assert cited == len(ids)
    coverage = Counter(len(v) for v in reflection_citations(demo).values())
    assert sum(n for k, n in coverage.items() if k >= 4) >= 3       # reinforced
    assert sum(n for k, n in coverage.items() if 1 <= k <= 3) >= 20  # cited
    assert sum(coverage.values()) < N / 2                             # most are uncited


def test_every_protected_kind_and_evicted_rows(demo):
    obs = rows(demo, f"SELECT * FROM {cs.OBSERVATIONS}")
    reasons = Counter(reason.split(":")[0] for row in obs for reason in text_reasons(row["narrative"] or ""))
    assert reasons["user assertion"] >= 3 and reasons["completion"] >= 3 and reasons["error"] >= 5
    assert any(r["title"].startswith("Task complete: T") for r in obs)
    assert any("error TS2345" in (r["narrative"] or "") for r in obs)
    assert any("E11000" in (r["narrative"] or "") for r in obs)
    assert any("Traceback (most recent call last)" in (r["narrative"] or "") for r in obs)
    assert any(re.search(r"\bcommit [0-9a-f]{8}\b", r["narrative"] or "") for r in obs)
    relevance = Counter(derive_relevance(r)[0] for r in obs)
    assert relevance["critical"] >= 5 and relevance["low"] >= 10 and relevance["high"] >= 5
    assert any(r["source_type"] == "manual" for r in obs)
    assert any(r["source_confidence"] == "owner" for r in obs)
    live = count_observations(demo, ObservationQuery(state="live"))
    evicted = count_observations(demo, ObservationQuery(state="evicted"))
    assert live + evicted == N and evicted >= 20
    superseded = demo.scalar(
        f"SELECT count(*) FROM {cs.OBSERVATIONS} o JOIN {cs.EDGES} e ON e.to_id = 'observation:' || o.id "
        f"WHERE o.invalid_at IS NOT NULL AND e.edge_type = 'supersedes' AND e.from_id NOT LIKE 'observation:%'")
    assert superseded >= 1  # the reflector's superseded rows are the evicted ones
    for row in obs:
        if row["invalid_at"]:
            assert row["updated_at"] == row["invalid_at"] and row["invalid_at"] >= row["created_at"]


def test_hostile_texts_are_stored_raw(demo):
    narratives = [r[0] for r in demo.query(f"SELECT narrative FROM {cs.OBSERVATIONS}")]
    blob = "\n".join(n for n in narratives if n and len(n) < 5000)
    for needle in ("[bold red]x[/]", "[link=http://example.com]click[/link]", "\x1b[31m", "\x1b]8;;",
                   "\x1b]52;c;", "\x00", "\x07", "\u202e", "\ufffd"):
        assert needle in blob, repr(needle)
    assert max(len(n or "") for n in narratives) >= 200_000
    titles = "".join(r[0] for r in demo.query(f"SELECT title FROM {cs.OBSERVATIONS}"))
    assert "\x1b" not in titles and "\x07" not in titles  # CLEO strips ESC and BEL from titles
    raw = demo.scalar(f"SELECT CAST(narrative AS BLOB) FROM {cs.OBSERVATIONS} WHERE title = ?",
                      ("Latin-1 bytes in a narrative",))
    assert b"caf\xe9" in raw  # invalid UTF-8 as stored, not "fixed"
    bad_json = demo.scalar(f"SELECT facts_json FROM {cs.OBSERVATIONS} WHERE title = 'Malformed facts JSON'")
    with pytest.raises(json.JSONDecodeError):
        json.loads(bad_json)


def test_fts_index_follows_the_rows(demo):
    assert demo.features.fts
    assert demo.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS_FTS}") == N
    found = count_observations(demo, ObservationQuery(search="rounding"))
    like = demo.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} WHERE title LIKE '%rounding%' "
                       f"OR narrative LIKE '%rounding%'")
    assert found == like > 0


def test_an_interrupted_run_leaves_no_half_brain_and_reports_progress(tmp_path):
    seen = []

    def progress(done, total):
        seen.append((done, total))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        generate_demo(tmp_path, observations=200, progress=progress)
    assert seen == [(200, 200)]
    assert list((tmp_path / ".cleo").iterdir()) == []
    generate_demo(tmp_path, observations=200)  # and the directory is usable again
    assert (tmp_path / ".cleo" / "cleo.db").is_file()
