"""The reproduced find against CLEO itself: a brain CLEO v2026.8.9 wrote (tests/cleo_real_brain.py), rebuilt
here row by row with SQL, must answer every query CLEO logged with CLEO's ids in CLEO's order."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cleo_tui.brain.store import open_brain
from cleo_tui.recall.cleo_find import PreparedQuery, prepare_find
from cleo_tui.recall.replay import replay
from tests import cleo_real_brain as real
from tests.brain_fixtures import add_cleo_recall_logs
from tests.replay_fixtures import cleo_brain

TABLES = {"brain_observations": (real.OBSERVATIONS_COLUMNS, real.OBSERVATIONS),
          "brain_learnings": (real.LEARNINGS_COLUMNS, real.LEARNINGS),
          "brain_patterns": (real.PATTERNS_COLUMNS, real.PATTERNS),
          "brain_decisions": (real.DECISIONS_COLUMNS, real.DECISIONS)}


@pytest.fixture(scope="module")
def real_brain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = cleo_brain(tmp_path_factory.mktemp("real") / "cleo.db")
    conn = sqlite3.connect(path)
    for table, (columns, rows) in TABLES.items():
        conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
                         rows)
    conn.commit()
    conn.close()
    add_cleo_recall_logs(path, [{"query": q, "source": s, "entry_ids": ids} for q, s, ids in real.LOGGED])
    return path


def test_every_logged_find_is_reproduced_in_cleos_order(real_brain: Path) -> None:
    brain = open_brain(real_brain, read_only=True)
    try:
        setup = prepare_find(brain)
        assert [s.where for s in setup.sources] == ["brain"] * 4
        finds = [(q, ids) for q, s, ids in real.LOGGED if s == "find-rrf"]
        assert len(finds) == 47
        for query, ids in finds:
            assert PreparedQuery(setup, query).find(len(ids)) == ids, query  # the --limit is not logged
        for query in real.EMPTY:
            assert PreparedQuery(setup, query).find() == [], query
    finally:
        brain.close()


def test_the_replay_agrees_with_cleos_log(real_brain: Path) -> None:
    brain = open_brain(real_brain, read_only=True)
    try:
        report = replay(brain)
    finally:
        brain.close()
    assert len(report.queries) == 45  # 49 rows: 45 distinct (source, query)
    # the newest row of "webhook", "deploy" and "stripe webhook" ran with --limit 1, 5 and 3
    assert report.agreement_counts() == {"exact": 42, "prefix": 3, "same-set": 0, "differs": 0, "unreadable": 0}
    prefix = {q.logged.query: q.reasons for q in report.queries if q.agreement == "prefix"}
    assert set(prefix) == {"webhook", "deploy", "stripe webhook"}
    assert all("smaller --limit" in r[0] for r in prefix.values())
    evicted = report.summary("intends")
    assert evicted.affected == 6 and report.summary("cleo_today").affected == 0  # the evicted row CLEO returns
