"""The recall impact of a step: which recorded retrievals lose a result, on CLEO-layout brains."""

from __future__ import annotations

import json
import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from cleo_tui.brain.store import open_brain
from cleo_tui.recall.impact import EntryRecalls, RecallIndex
from cleo_tui.recall.recorded import EntryUsage, RecordedRetrieval
from tests.brain_fixtures import (
    add_cleo_recall_logs,
    file_digest,
    insert_observations,
    make_cleo_consolidated,
    observation,
)
from tests.recall_fixtures import make_hippo_store

A, B, C, D = (observation(i)["id"] for i in range(4))


def cleo_brain(tmp_path):
    """Four observations, five logged retrievals (one not JSON, one NULL-ish, one with unknown ids), usage."""
    db = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    words = ("alpha", "bravo", "charlie", "delta")  # no identifier: none of them is protected
    insert_observations(db, [observation(i, invalid_at=None, title=f"routine work {w}", narrative=f"routine work {w}")
                             for i, w in enumerate(words)])
    add_cleo_recall_logs(db, retrievals=[
        {"query": "stripe webhook", "entry_ids": [A, B, "D-decision1"], "created_at": "2026-05-01 10:00:00"},
        {"query": "[red]x\x1b[31m\x00", "entry_ids": "not json", "created_at": "2026-05-02 10:00:00"},
        {"query": "b again", "entry_ids": [B, B, "O-nobody"], "created_at": "2026-05-03 10:00:00"},
        {"query": "c", "entry_ids": [C], "source": "fetch", "created_at": "2026-05-04 10:00:00"},
        {"query": "nothing", "entry_ids": '{"ids": 1}', "created_at": "2026-05-05 10:00:00"},
    ], usage=[
        {"entry_id": B, "task_id": "T123", "used": 1, "created_at": "2026-05-03 11:00:00"},
        {"entry_id": C, "task_id": "T9", "used": 0, "created_at": "2026-05-04 11:00:00"},
        {"entry_id": "O-unknown", "task_id": None, "used": 1},
    ])
    return db


def test_a_set_loses_the_retrievals_that_returned_any_of_it(tmp_path):
    db = cleo_brain(tmp_path)
    before = file_digest(db)
    brain = open_brain(db, read_only=True)
    try:
        index = RecallIndex.load(brain)
    finally:
        brain.close()
    assert file_digest(db) == before  # read only
    assert len(index) == 5 and index.unreadable == 2
    impact = index.impact([B, D])
    assert (impact.retrievals, impact.affected_retrievals, impact.affected_used) == (5, 2, 2)
    assert [e.to_json() for e in impact.lost] == [
        {"id": B, "recalls": 2, "last_recalled_at": "2026-05-03 10:00:00", "used_by_tasks": 1}]
    only_c = index.impact([C])  # its usage row says used = 0: not a use
    assert (only_c.affected_retrievals, only_c.affected_used) == (1, 0)
    nothing = index.impact(["O-nobody-here", D])
    assert (nothing.affected_retrievals, len(nothing.lost)) == (0, 0)
    assert nothing.sentence() == "None of 5 recorded recalls would lose a result."
    assert impact.sentence() == "2 of 5 recorded recalls would lose a result; 2 of them used by a task"
    assert impact.short() == "2 of 5 recalls lose a result, 2 used by a task"
    assert only_c.short() == "1 of 5 recalls loses a result, 0 used by a task"  # ("1 of 5 recalls lose")
    assert impact.confirmation().endswith(f"(1 recalled memory evicted). Most recalled: {B} (2×, used by a task).")
    assert index.recalls_of(B) == EntryRecalls(2, "2026-05-03 10:00:00", 1)
    assert index.recalls_of(B).text() == "recalled 2×, last 2026-05-03"
    assert index.recalls_of(B).text(compact=True) == "2× 2026-05-03"
    assert index.recalls_of(D).text() == ""


def test_json_lists_the_lost_most_recalled_first(tmp_path):
    brain = open_brain(cleo_brain(tmp_path), read_only=True)
    try:
        impact = RecallIndex.load(brain).impact([A, B, C])
    finally:
        brain.close()
    document = impact.to_json()
    assert set(document) >= {"retrievals", "affected_retrievals", "affected_used", "lost"}
    assert [e["id"] for e in document["lost"]] == [B, C, A]  # 2 recalls; then 1 each, newest first
    assert document["affected_retrievals"] == 3 and document["affected_used"] == 2


def test_a_brain_without_logs_or_traces_has_nothing_to_weigh(tmp_path):
    db = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    brain = open_brain(db, read_only=True)
    try:
        impact = RecallIndex.load(brain).impact([A])
    finally:
        brain.close()
    assert (impact.retrievals, impact.affected_retrievals) == (0, 0)
    assert impact.sentence().startswith("No recorded recall")


def test_hippo_traces_count_and_nothing_is_written(tmp_path):
    path = make_hippo_store(tmp_path / "hippo.db")
    before = file_digest(path)
    brain = open_brain(path, read_only=True)
    try:
        index = RecallIndex.load(brain)
    finally:
        brain.close()
    assert file_digest(path) == before
    impact = index.impact(["mem-2"])
    assert (impact.retrievals, impact.affected_retrievals) == (1, 1)
    assert impact.lost[0].last_recalled_at == "2026-04-02T10:00:00.000Z"  # as hippo wrote it


def test_demo_traces_count(brain):
    index = RecallIndex.load(brain)
    traced = [r for r in index.ids]
    assert len(index) > 0 and traced
    impact = index.impact(traced[:1])
    assert impact.affected_retrievals >= 1


def _retrieval(k: int, ids: list[str]) -> RecordedRetrieval:
    return RecordedRetrieval("cleo", k, f"2026-05-{1 + k % 28:02d} 10:00:00", "find-rrf", "q", None, tuple(ids))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 30), max_size=6), max_size=25), st.permutations(list(range(40))),
       st.sets(st.integers(0, 30)))
def test_every_budget_of_a_drop_order_is_the_set_impact_of_its_prefix(returned, order, used):
    retrievals = [_retrieval(k, [f"O-{i}" for i in ids]) for k, ids in enumerate(returned)]
    usage = {f"O-{i}": EntryUsage(1, ("T1",), None) for i in used}
    index = RecallIndex(retrievals, usage)
    drop = [f"O-{i}" for i in order]
    plan = index.plan(drop)
    for count in range(len(drop) + 1):
        prepared, plain = plan.at(count), index.impact(drop[:count])
        assert (prepared.affected_retrievals, prepared.affected_used) == (
            plain.affected_retrievals, plain.affected_used)
        assert sorted(e.id for e in prepared.lost) == sorted(e.id for e in plain.lost)
        evicted = set(drop[:count])  # the plainest reading of the definitions
        assert plain.affected_retrievals == sum(1 for ids in returned if evicted & {f"O-{i}" for i in ids})
        assert plain.affected_used == sum(1 for ids in returned
                                          if evicted & {f"O-{i}" for i in ids if i in used})



def _cli_json(capsys, *argv):
    from cleo_tui.cli import main

    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_prune_json_carries_the_impact_of_what_it_drops(tmp_path, capsys):
    db = cleo_brain(tmp_path)
    document = _cli_json(capsys, "prune", "--db", str(db), "--budget", "10", "--json")
    dropped = {row["id"] for row in document["dropped"]}
    assert B in dropped and C in dropped
    impact = document["impact"]
    assert set(impact) >= {"retrievals", "affected_retrievals", "affected_used", "lost"}
    logged = [[A, B], [B], [C]]  # the readable retrievals' observation ids
    assert impact["retrievals"] == 5
    assert impact["affected_retrievals"] == sum(1 for ids in logged if dropped & set(ids))
    assert impact["affected_used"] == sum(1 for ids in logged if B in ids and B in dropped)
    assert {e["id"] for e in impact["lost"]} == dropped & {A, B, C}
    assert all(set(e) >= {"id", "recalls", "last_recalled_at"} for e in impact["lost"])
    from cleo_tui.cli import main

    assert main(["prune", "--db", str(db), "--budget", "10"]) == 0
    assert ("recall:    3 of 5 recorded recalls would lose a result; 2 of them used by a task"
            in capsys.readouterr().out)


def test_dedup_json_carries_the_impact_of_merging(tmp_path, capsys):
    db = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    text = "The deploy script reads the staging credentials from the vault before every release run"
    insert_observations(db, [observation(1, id="O-one", title=text, narrative=text, invalid_at=None),
                             observation(2, id="O-two", title=text + ".", narrative=text + ".", invalid_at=None)])
    add_cleo_recall_logs(db, retrievals=[{"query": "deploy", "entry_ids": ["O-one", "O-two"]},
                                         {"query": "vault", "entry_ids": ["O-two"]}])
    document = _cli_json(capsys, "dedup", "--db", str(db), "--json")
    assert len(document["clusters"]) == 1
    evicted = set(document["clusters"][0]["merge"])
    impact = document["impact"]
    assert impact["retrievals"] == 2
    assert impact["affected_retrievals"] == sum(1 for ids in (["O-one", "O-two"], ["O-two"]) if evicted & set(ids))
    assert [e["id"] for e in impact["lost"]] == sorted(evicted)


def _odd_log_brain(tmp_path, log_sql):
    db = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    insert_observations(db, [observation(0, invalid_at=None)])
    conn = sqlite3.connect(db)
    conn.execute(log_sql)
    conn.commit()
    conn.close()
    return db


def test_a_log_without_constraints_holding_nulls_degrades(tmp_path):
    db = _odd_log_brain(tmp_path, "CREATE TABLE brain_retrieval_log (id INTEGER PRIMARY KEY, query TEXT, "
                                  "entry_ids TEXT, source TEXT, created_at TEXT)")
    conn = sqlite3.connect(db)
    conn.executemany("INSERT INTO brain_retrieval_log (query, entry_ids, source, created_at) VALUES (?, ?, ?, ?)",
                     [(None, None, None, None), ("q", json.dumps([A, None, 7, {"x": 1}]), None, None),
                      ("q" * 100_000, json.dumps([A]), "find-rrf", "2026-05-01 10:00:00")])
    conn.commit()
    conn.close()
    brain = open_brain(db, read_only=True)
    try:
        impact = RecallIndex.load(brain).impact([A, "7"])
    finally:
        brain.close()
    assert (impact.retrievals, impact.unreadable, impact.affected_retrievals) == (3, 1, 2)
    assert {e.id: e.recalls for e in impact.lost} == {A: 2, "7": 1}
    assert [e.last_recalled_at for e in impact.lost if e.id == A] == ["2026-05-01 10:00:00"]


def test_a_log_that_cannot_be_read_is_named_not_raised(tmp_path):
    db = _odd_log_brain(tmp_path, "CREATE VIEW brain_retrieval_log AS SELECT id, query, entry_ids, source, "
                                  "created_at FROM a_table_gone")
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE a_table_gone (id, query, entry_ids, source, created_at)")
    conn.commit()
    conn.execute("DROP TABLE a_table_gone")
    conn.commit()
    conn.close()
    brain = open_brain(db, read_only=True)
    try:
        index, problem = RecallIndex.load_or_problem(brain)
    finally:
        brain.close()
    assert index is None and "could not be read" in problem


def test_prune_json_says_the_impact_is_unavailable_when_the_log_cannot_be_read(tmp_path, capsys):
    db = _odd_log_brain(tmp_path, "CREATE VIEW brain_retrieval_log AS SELECT 1 AS id, 'q' AS query, "
                                  "'[]' AS entry_ids, 'x' AS source, json_extract('{', '$') AS created_at")
    document = _cli_json(capsys, "prune", "--db", str(db), "--budget", "10", "--json")
    assert "could not be read" in document["impact"]["unavailable"]
