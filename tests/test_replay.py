"""Replaying CLEO's logged queries (cleo_tui/recall/replay.py) and `cleo-tui replay`."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from cleo_tui.brain.store import open_brain
from cleo_tui.recall.replay import NO_STEP, Step, query_heading, replay, step_of
from tests.brain_fixtures import add_cleo_recall_logs
from tests.replay_fixtures import add_rows, cleo_brain, observations

LOGGED_AT = "2026-11-10 12:00:00"


@pytest.fixture(scope="module")
def logged_brain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A brain with rows and a log whose ids are what the find returns on it (as if CLEO had run it)."""
    path = cleo_brain(tmp_path_factory.mktemp("replay") / "cleo.db")
    observations(path, {
        "O-1": "deploys go through the staging branch",
        "O-2": "staging deploys need the VPN",
        "O-3": "the staging database is reset nightly",
        "O-4": "billing tests need postgres",
        "O-5": "postgres runs in docker for tests",
    }, quality_score=0.7)
    add_rows(path, "brain_learnings", [{"id": "L-1", "insight": "staging deploys fail without the VPN"}])
    add_cleo_recall_logs(path, [
        {"query": "staging deploys", "entry_ids": ["L-1", "O-2", "O-1"], "created_at": LOGGED_AT},
        {"query": "staging deploys", "entry_ids": ["L-1", "O-2", "O-1"], "created_at": LOGGED_AT},
        {"query": "postgres", "entry_ids": ["O-4", "O-5"], "created_at": LOGGED_AT},
        {"query": "postgres", "entry_ids": ["O-4"], "created_at": "2026-11-11 09:00:00"},  # newest: --limit 1
        {"query": "O-1,L-1", "entry_ids": ["L-1", "O-1"], "source": "fetch", "created_at": LOGGED_AT},
        {"query": "staging", "entry_ids": ["O-3", "O-9"], "created_at": LOGGED_AT},  # O-9: deleted since
        {"query": "broken", "entry_ids": "not json", "created_at": LOGGED_AT},
        {"query": "anchor", "entry_ids": ["O-1"], "source": "timeline", "created_at": LOGGED_AT},
    ])
    return path


def run(path: Path, step: Step = NO_STEP, bound: int = 200):  # type: ignore[no-untyped-def]
    brain = open_brain(path, read_only=True)
    try:
        return replay(brain, step, bound)
    finally:
        brain.close()


def by_query(report) -> dict:  # type: ignore[no-untyped-def]
    return {q.logged.query: q for q in report.queries}


def test_agreement_with_the_log_and_why_it_differs(logged_brain: Path) -> None:
    report = run(logged_brain)
    queries = by_query(report)
    assert [q.logged.query for q in report.queries] == ["broken", "staging", "O-1,L-1", "postgres",
                                                        "staging deploys"]  # distinct, newest row first
    assert queries["staging deploys"].agreement == "exact" and queries["staging deploys"].logged.times == 2
    assert queries["O-1,L-1"].agreement == "exact"  # fetch: the ids asked for that exist
    postgres = queries["postgres"]
    assert postgres.agreement == "prefix" and postgres.today == ("O-4", "O-5")
    assert "smaller --limit" in postgres.reasons[0]
    staging = queries["staging"]
    assert staging.agreement == "differs"
    assert any("deleted since" in r and "O-9" in r for r in staging.reasons)
    assert queries["broken"].agreement == "unreadable"
    assert report.skipped == {"source 'timeline' (not find or fetch)": 1}
    assert report.logged_rows == 8
    assert report.agreement_counts() == {"exact": 2, "prefix": 1, "same-set": 0, "differs": 1, "unreadable": 1}


def test_rows_added_after_the_query_are_named(logged_brain: Path, tmp_path: Path) -> None:
    path = Path(shutil.copy(logged_brain, tmp_path / "later.db"))
    observations(path, {"O-new": "staging deploys are frozen on fridays"}, created_at="2026-11-20 08:00:00")
    staging = by_query(run(path))["staging deploys"]
    assert staging.agreement == "prefix" and staging.today == ("L-1", "O-2", "O-1", "O-new")
    assert staging.reasons == ("added after the query: O-new",)  # not a smaller --limit



def test_one_row_added_since_is_said_in_the_singular(tmp_path: Path) -> None:
    """"1 rows added after the query change bm25's statistics"."""
    path = cleo_brain(tmp_path / "cleo.db")
    observations(path, {"O-4": "billing tests need postgres", "O-5": "postgres runs in docker for tests"},
                 quality_score=0.7)
    add_cleo_recall_logs(path, [{"query": "postgres", "entry_ids": ["O-5", "O-4"], "created_at": LOGGED_AT}])
    observations(path, {"O-new": "the nightly build is green"}, created_at="2026-11-20 08:00:00")
    postgres = by_query(run(path))["postgres"]
    assert postgres.agreement == "same-set"
    assert postgres.reasons == ("1 row added after the query changes bm25's statistics (ranking)",)
    observations(path, {"O-newer": "the nightly build is red"}, created_at="2026-11-21 08:00:00")
    assert by_query(run(path))["postgres"].reasons == (
        "2 rows added after the query change bm25's statistics (ranking)",)


def test_one_query_and_one_lost_result_are_said_in_the_singular(tmp_path: Path) -> None:
    """"0 of 1 queries lose a result (1 results lost)", "skipped: 1 log rows"."""
    from cleo_tui.recall.replay import summary_lines

    path = cleo_brain(tmp_path / "cleo.db")
    observations(path, {"O-4": "billing tests need postgres"}, quality_score=0.7)
    add_cleo_recall_logs(path, [{"query": "postgres", "entry_ids": ["O-4"], "created_at": LOGGED_AT},
                                {"query": "O-4", "entry_ids": ["O-4"], "source": "timeline", "created_at": LOGGED_AT}])
    brain = open_brain(path, read_only=True)
    try:
        lines = summary_lines(replay(brain, step_of(["O-4"], hide=False, label="evict O-4"), 200))
    finally:
        brain.close()
    assert "As eviction intends: 1 of 1 query loses a result (1 result lost); mean recall@k 0.000." in lines
    assert "skipped: 1 log row, source 'timeline' (not find or fetch)" in lines

def test_a_step_loses_results_only_as_eviction_intends_unless_hidden(logged_brain: Path) -> None:
    quiet = run(logged_brain, step_of({"O-2"}, hide=False, label="evict O-2"))
    staging = by_query(quiet)["staging deploys"]
    assert staging.today == ("L-1", "O-2", "O-1")
    assert staging.cleo_today.recall == 1.0 and not staging.cleo_today.lost  # CLEO ignores invalid_at
    intends = staging.intends
    assert intends.returned == ("L-1", "O-1") and intends.recall == round(2 / 3, 4)
    assert [(x.id, x.rank, x.cause) for x in intends.lost] == [("O-2", 2, "evicted by this step")]
    fetched = by_query(quiet)["O-1,L-1"]
    assert fetched.cleo_today.recall == 1.0 and fetched.intends.recall == 1.0  # O-2 was not fetched

    hidden = by_query(run(logged_brain, step_of({"O-2"}, hide=True, label="evict O-2")))["staging deploys"]
    assert hidden.cleo_today.returned == ("L-1", "O-1")
    assert hidden.cleo_today.lost[0].cause == "hidden from CLEO's search by this step"
    assert run(logged_brain, step_of({"O-2"}, hide=False, label="x")).summary("intends").affected == 2  # +"staging"


def test_a_lost_result_is_replaced_by_the_next_match(tmp_path: Path) -> None:
    path = cleo_brain(tmp_path / "cleo.db")
    observations(path, {f"O-{i:02d}": f"cache warmup step {i}" for i in range(12)})
    brain = open_brain(path, read_only=True)
    try:
        from cleo_tui.recall.cleo_find import cleo_find
        today = cleo_find(brain, "cache warmup")
    finally:
        brain.close()
    add_cleo_recall_logs(path, [{"query": "cache warmup", "entry_ids": today}])
    (q,) = run(path, step_of({today[0]}, hide=False, label="x")).queries
    assert q.agreement == "exact"
    (lost,) = q.intends.lost
    assert lost.rank == 1 and lost.replaced_by is not None and lost.replaced_by not in today
    assert q.intends.new == (lost.replaced_by,)


def test_rows_evicted_before_count_as_eviction_intends(logged_brain: Path, tmp_path: Path) -> None:
    path = Path(shutil.copy(logged_brain, tmp_path / "evicted.db"))
    conn = sqlite3.connect(path)
    conn.execute("UPDATE brain_observations SET invalid_at = '2026-11-12 10:00:00' WHERE id = 'O-1'")
    conn.commit()
    conn.close()
    staging = by_query(run(path))["staging deploys"]
    assert staging.agreement == "exact"  # CLEO still returns it
    assert [(x.id, x.cause) for x in staging.intends.lost] == [("O-1", "evicted before this step")]


def test_hostile_log_rows_are_replayed_or_skipped_never_raised(tmp_path: Path) -> None:
    path = cleo_brain(tmp_path / "cleo.db")
    observations(path, {"O-1": "stripe webhook"})
    conn = sqlite3.connect(path)  # a log table without CLEO's NOT NULLs (a hand-edited or older file)
    conn.execute("CREATE TABLE brain_retrieval_log (id INTEGER PRIMARY KEY AUTOINCREMENT, query TEXT, "
                 "entry_ids TEXT, entry_count INTEGER, source TEXT, tokens_used INTEGER, session_id TEXT, "
                 "created_at TEXT DEFAULT (datetime('now')))")
    conn.executemany("INSERT INTO brain_retrieval_log(query, entry_ids, source, created_at) VALUES (?, ?, ?, ?)",
                     [(None, '["O-1"]', "find-rrf", None), ("q", None, None, None), ("stripe", None, "find-rrf", None)])
    conn.commit()
    conn.close()
    add_cleo_recall_logs(path, [
        {"query": "stripe " * 15_000, "entry_ids": ["O-1"]},
        {"query": "\x1b[31m\x00\x07", "entry_ids": ["O-1"]},
        {"query": "stripe", "entry_ids": '{"not": "a list"}'},
        {"query": "stripe", "entry_ids": ["O-1", 7, None]},
        {"query": "", "entry_ids": []},
    ])
    report = run(path)
    assert [q.logged.query[:7] for q in report.queries] == ["", "stripe", "\x1b[31m\x00\x07", "stripe "]
    stripe = report.queries[1]
    assert stripe.logged.times == 3 and stripe.agreement == "differs"  # the newest row: null dropped, 7 kept
    assert stripe.reasons[0] == "deleted since (no row holds them): 7"
    assert report.queries[0].today == () and report.queries[2].today == ()
    assert report.queries[3].today == ("O-1",)  # 100 kB of one word: one term
    heading = query_heading(report.queries[3])
    assert len(heading) < 400 and "(105,000 characters)" in heading
    assert "\\x1b[31m\\x00\\x07" in query_heading(report.queries[2])  # control bytes shown as escapes
    assert report.skipped == {"no query text": 1, "source '' (not find or fetch)": 1}
    json.dumps(report.to_json())


def test_the_bound_keeps_the_newest_distinct_queries(logged_brain: Path) -> None:
    report = run(logged_brain, bound=2)
    assert [q.logged.query for q in report.queries] == ["broken", "staging"]


# -- the command ---------------------------------------------------------------------------------
def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from cleo_tui.cli import main

    code = main(["replay", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_and_text(logged_brain: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "--db", str(logged_brain), "--json", "--evict", "O-2")
    assert code == 0
    data = json.loads(out)
    assert data["agreement"]["exact"] == 2 and data["eviction_intends"]["affected_queries"] == 2
    assert data["cleo_today"]["affected_queries"] == 0 and data["step"]["evict"] == 1
    assert data["step"]["label"] == "evict 1 row"
    first = {q["query"]: q for q in data["queries"]}["staging deploys"]
    assert first["eviction_intends"]["lost"][0]["id"] == "O-2"
    code, out, _ = cli(capsys, "--db", str(logged_brain), "--evict", "O-2", "--hide-from-cleo")
    assert code == 0 and "As CLEO behaves today: 2 of 5 queries lose a result" in out


def test_cli_budget_step(logged_brain: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "--db", str(logged_brain), "--json", "--budget", "10")
    data = json.loads(out)
    assert code == 0 and data["step"]["label"].startswith("prune at 10 tokens") and data["step"]["evict"] > 0


@pytest.mark.parametrize("args, words", [
    (["--budget", "lots"], "budget"),
    (["--budget", "-5"], "budget"),
    (["--limit", "0"], "--limit"),
    (["--limit", "many"], "--limit"),
    (["--evict", " , "], "--evict wants"),
    (["--evict", "O-nope"], "names no row"),
    (["--hide-from-cleo"], "--hide-from-cleo describes a step"),
    (["--tokenizer", "chars4"], "--tokenizer counts tokens for --budget"),
    (["--budget", "100", "--evict", "O-1"], "not allowed with"),
])
def test_cli_mistakes_exit_2_in_one_paragraph(logged_brain: Path, capsys: pytest.CaptureFixture[str],
                                               args: list[str], words: str) -> None:
    code, out, err = cli(capsys, "--db", str(logged_brain), *args)
    assert code == 2 and out == ""
    assert words in err and "Traceback" not in err and err.strip().count("\n") == 0


def test_cli_on_a_brain_without_logged_retrievals_says_so_and_no_zeros(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from cleo_tui import cli

    path = cleo_brain(tmp_path / ".cleo" / "cleo.db")
    observations(path, {"O-01": "nothing recalled yet"})
    assert cli.main(["replay", "--db", str(path), "--budget", "10"]) == 0
    out = capsys.readouterr().out
    assert "CLEO has logged no retrievals in this brain" in out
    assert "Agreement" not in out and "0 of 0 queries" not in out, out
