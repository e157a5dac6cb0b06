"""CLEO's `memory find`, reproduced (cleo_tui/recall/cleo_find.py), pinned on CLEO-layout brains."""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from cleo_tui.brain.store import open_brain
from cleo_tui.recall.cleo_find import (
    PreparedQuery,
    cleo_find,
    fetch_order,
    fts_queries,
    interleave,
    prepare_find,
    rrf_fuse,
)
from tests.replay_fixtures import add_rows, cleo_brain, observations


def test_fts_queries_follow_cleos_builder() -> None:
    q = fts_queries("nexus_symbols_fts orphan")
    assert (q.conjunctive, q.disjunctive, q.terms) == (
        '"nexus_symbols_fts"* AND "orphan"*', '"nexus_symbols_fts"* OR "orphan"*', 2)
    # leading/trailing non-word characters go (ASCII \W, as JavaScript), one-character pieces go,
    # duplicates go case-insensitively keeping the first spelling
    assert fts_queries("EPIC: — stripe Stripe a x").conjunctive == '"EPIC"* AND "stripe"*'
    assert fts_queries("café").conjunctive == '"caf"*'  # é is \W to JavaScript's ASCII \w
    assert fts_queries("日本語").terms == 0 and fts_queries("日本語").conjunctive == '""'


@pytest.mark.parametrize("query, expected", [
    ('say "hi" there', '"say"* AND "hi"* AND "there"*'),  # the quotes are stripped at the edges
    ('a"b"c', '"a""b""c"*'),  # inner quotes doubled: a phrase, never syntax
    ("NEAR(x y) OR NOT title:foo ^bar", '"NEAR(x"* AND "OR"* AND "NOT"* AND "title:foo"* AND "bar"*'),
    ("\x1b[31mred\x1b[0m", '"31mred\x1b[0m"*'),
    ("", '""'),
    ("   \u3000\ufeff", '""'),  # JavaScript's trim: the ideographic space and BOM are whitespace
])
def test_fts_queries_neutralise_syntax_and_odd_text(query: str, expected: str) -> None:
    assert fts_queries(query).conjunctive == expected


@pytest.fixture(scope="module")
def brain_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One brain for the module: the tests only read it (the graph test writes to a copy)."""
    path = cleo_brain(tmp_path_factory.mktemp("find") / "cleo.db")
    observations(path, {
        "O-a": "stripe webhook signature check failed on retry",
        "O-b": "the stripe webhook handler needs idempotency keys",
        "O-c": "stripe invoices are sent nightly",
        "O-d": "webhook retries back off exponentially",
        "O-low": "stripe webhook noise row",
        "O-null": "stripe webhook row without a quality score",
        "O-evicted": "stripe webhook evicted by a prune",
        "O-orphans": "orphaned rows in nexus",
    }, quality_score=0.8)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE brain_observations SET quality_score = 0.29 WHERE id = 'O-low'")
    conn.execute("UPDATE brain_observations SET quality_score = NULL WHERE id = 'O-null'")
    conn.execute("UPDATE brain_observations SET invalid_at = '2026-11-20 10:00:00' WHERE id = 'O-evicted'")
    conn.commit()
    conn.close()
    add_rows(path, "brain_learnings", [{"id": "L-1", "insight": "stripe webhooks need a raw body"}])
    add_rows(path, "brain_patterns", [{"id": "P-1", "pattern": "verify the stripe webhook signature first"}])
    add_rows(path, "brain_decisions", [{"id": "D001", "decision": "stripe webhook handler lives in api/"}])
    return path


def find(db: Path, query: str, **kwargs: object) -> list[str]:
    brain = open_brain(db, read_only=True)
    try:
        return cleo_find(brain, query, **kwargs)  # type: ignore[arg-type]
    finally:
        brain.close()


def test_find_filters_quality_ignores_invalid_at_and_interleaves_tables(brain_path: Path) -> None:
    ids = find(brain_path, "stripe webhook")
    # a decision, a pattern, a learning, then the observations (round robin, each table by bm25)
    assert ids[:3] == ["D001", "P-1", "L-1"]
    assert set(ids[3:]) == {"O-a", "O-b", "O-null", "O-evicted"}  # AND: O-c and O-d hold one term only
    assert "O-low" not in ids  # quality 0.29 < 0.3
    assert "O-evicted" in ids  # CLEO's find ignores invalid_at


def test_find_falls_back_to_or_per_table_and_matches_prefixes(brain_path: Path) -> None:
    # no row holds both terms: each table falls back to OR on its own
    ids = find(brain_path, "invoices exponentially")
    assert set(ids) == {"O-c", "O-d"}
    assert find(brain_path, "orphan") == ["O-orphans"]  # a prefix term finds "orphaned"


def test_find_limit_defaults_to_ten_and_cuts_after_fusion(tmp_path: Path) -> None:
    path = cleo_brain(tmp_path / "cleo.db")
    observations(path, {f"O-{i:02d}": f"deploy note number {i} " + "filler " * i for i in range(30)})
    assert len(find(path, "deploy")) == 10
    assert find(path, "deploy", limit=3) == find(path, "deploy")[:3]  # shorter rows first: bm25
    assert find(path, "deploy")[0] == "O-00"


def test_find_path_without_fusion_concatenates_tables(brain_path: Path) -> None:
    ids = find(brain_path, "stripe webhook", limit=2, path="fts")
    assert ids[:3] == ["D001", "P-1", "L-1"] and len(ids) == 5  # up to `limit` from every table


def test_graph_neighbours_take_slots_and_never_pass(brain_path: Path, tmp_path: Path) -> None:
    """A node `concept:<query>` with neighbours: their node ids fill fused slots, then are filtered out."""
    brain_path = Path(shutil.copy(brain_path, tmp_path / "graph.db"))
    conn = sqlite3.connect(brain_path)
    for node in ("concept:stripe", "observation:O-a", "observation:O-b"):
        conn.execute("INSERT INTO brain_page_nodes(id, node_type, label) VALUES (?, 'concept', ?)", (node, node))
    for target in ("observation:O-a", "observation:O-b"):
        for edge in ("supports", "cites"):  # two edges each: a neighbour listed twice scores above rank 1
            conn.execute("INSERT INTO brain_page_edges(from_id, to_id, edge_type) VALUES ('concept:stripe', ?, ?)",
                         (target, edge))
    conn.commit()
    conn.close()
    assert find(brain_path, "stripe", limit=1) == []  # both fused slots (2 × limit) went to graph nodes
    assert find(brain_path, "stripe", limit=2) == ["D001", "P-1"]  # four slots: two nodes, then the first two


def test_missing_and_stale_indexes_are_rebuilt_in_memory(brain_path: Path, tmp_path: Path) -> None:
    expected = find(brain_path, "stripe webhook")
    bare = cleo_brain(tmp_path / "bare.db", all_fts=False)  # only the observations index exists
    conn = sqlite3.connect(bare)
    src = sqlite3.connect(brain_path)
    for table in ("brain_observations", "brain_learnings", "brain_patterns", "brain_decisions"):
        cols = [r[1] for r in src.execute(f"PRAGMA table_info({table})")]
        rows = src.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY rowid").fetchall()
        conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' for _ in cols)})", rows)
    conn.execute("DROP TRIGGER brain_observations_ai")  # rows added behind the index's back: stale
    conn.execute("INSERT INTO brain_observations(id, type, title, narrative, created_at) VALUES "
                 "('O-late', 'discovery', 'stripe webhook late', 'stripe webhook late', '2026-11-02 10:00:00')")
    conn.commit()
    conn.close()
    brain = open_brain(bare, read_only=True)
    try:
        setup = prepare_find(brain)
        assert [s.where for s in setup.sources] == ["memory", "memory", "memory", "memory"]
        assert any("does not exist yet" in n for n in setup.notes)
        assert any("holds" in n and "rows" in n for n in setup.notes)
        rebuilt = PreparedQuery(setup, "stripe webhook").find()
        assert rebuilt[:3] == expected[:3] and set(rebuilt) == {*expected, "O-late"}
    finally:
        brain.close()


def test_leaving_rows_out_keeps_cleos_order_of_the_rest(brain_path: Path) -> None:
    brain = open_brain(brain_path, read_only=True)
    try:
        prepared = PreparedQuery(prepare_find(brain), "stripe")
        today = prepared.find(limit=4, path="fts")
        after = prepared.find(limit=4, path="fts", leave_out={today[3]})
        assert today[3] not in after and after[:3] == today[:3] and len(after) == len(today)
        assert prepared.find(limit=4, path="fts") == today  # reusing the fetched lists changes nothing
    finally:
        brain.close()


@pytest.mark.parametrize("query", [
    None, "", " \t\n", "\x00", "x\x00y stripe", '"""', "*", "AND OR NOT", "stripe*", "(stripe", "col:stripe",
    "\x1b]8;;http://x\x07link", "[bold]stripe[/bold]", "\ufffd stripe",
])
def test_hostile_queries_answer_without_raising(brain_path: Path, query: str | None) -> None:
    ids = find(brain_path, query or "")
    assert isinstance(ids, list) and len(ids) <= 10
    if query in ("stripe*", "(stripe", "\ufffd stripe"):
        assert ids[:3] == ["D001", "P-1", "L-1"]  # the odd parts are neutralised, the word still matches
    if query in ("col:stripe", "[bold]stripe[/bold]"):
        assert ids == []  # one quoted phrase "col stripe" / "bold stripe bold": no row holds it


def test_nul_in_a_term_falls_back_to_like_as_cleo_does(brain_path: Path) -> None:
    brain = open_brain(brain_path, read_only=True)
    try:
        prepared = PreparedQuery(prepare_find(brain), "webhook\x00x")
        ids = prepared.find()
        assert prepared.fell_back == {"decisions", "patterns", "learnings", "observations"}
        # SQLite's LIKE reads the pattern up to the NUL: '%webhook' finds rows ending in "webhook" only
        assert ids == [] or all(i.startswith(("O", "L", "P", "D")) for i in ids)
    finally:
        brain.close()


def test_a_100_kb_query_is_answered_quickly(brain_path: Path) -> None:
    query = ("stripe webhook " * 7000)[:100_000]
    started = time.perf_counter()
    ids = find(brain_path, query)
    assert time.perf_counter() - started < 2
    assert ids[:3] == ["D001", "P-1", "L-1"]  # deduplicated to two terms


def test_fusion_and_interleaving_helpers() -> None:
    assert interleave([["a1", "a2"], ["b1"], ["c1", "c2", "c3"]]) == ["a1", "b1", "c1", "a2", "c2", "c3"]
    assert rrf_fuse([["a", "b", "c"], ["x", "x"]]) == ["x", "a", "b", "c"]  # x: 1/60 + 1/61
    assert rrf_fuse([["a", "b"], ["x", "y"]]) == ["a", "x", "b", "y"]  # ties: first list first (stable)


def test_fetch_returns_existing_ids_grouped_by_kind() -> None:
    assert fetch_order(["O-1", "L-1", "D-1", "zz", "P-1", "O-gone"], {"O-1", "L-1", "D-1", "P-1", "zz"}) == [
        "D-1", "P-1", "L-1", "O-1"]


def test_ranking_the_index_alone_gives_cleos_statement_order(tmp_path: Path) -> None:
    """CLEO's own statement (join, quality filter, ORDER BY bm25, LIMIT) is the oracle: many ties,
    quality NULL, below, at and above 0.3, and a text quality (SQLite orders text above numbers)."""
    path = cleo_brain(tmp_path / "cleo.db")
    texts = ["alpha beta", "alpha beta", "alpha gamma delta", "alpha", "beta alpha alpha"]
    qualities = [None, 0.2, 0.3, 0.8, "high", 0.29999]
    add_rows(path, "brain_observations", [
        {"id": f"O-{i:03d}", "narrative": texts[i % 5], "title": texts[(i * 7) % 5],
         "quality_score": qualities[(i * 3) % 6]} for i in range(300)])
    conn = sqlite3.connect(path)
    brain = open_brain(path, read_only=True)
    try:
        setup = prepare_find(brain)
        source = setup.sources[3]
        for query in ("alpha", "alpha beta", "gamma beta", "zzz"):
            expressions = fts_queries(query)
            for limit in (1, 10, 60, 500):
                oracle = [r[0] for r in conn.execute(
                    "SELECT o.id FROM brain_observations_fts fts JOIN brain_observations o ON o.rowid = fts.rowid "
                    "WHERE brain_observations_fts MATCH ? AND (o.quality_score IS NULL OR o.quality_score >= ?) "
                    "ORDER BY bm25(brain_observations_fts) LIMIT ?", (expressions.conjunctive, 0.3, limit))]
                with PreparedQuery(setup, query) as prepared:
                    assert prepared._kept(source, expressions.conjunctive, limit, ()) == oracle, (query, limit)
    finally:
        brain.close()
        conn.close()
