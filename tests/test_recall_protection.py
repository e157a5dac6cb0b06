"""Recall-aware protection (opt-in): reasons from CLEO's logs, off without config, never masked by a cache."""

from __future__ import annotations

import json

from cleo_tui.brain.store import open_brain
from cleo_tui.config import ProtectSettings, config_path, protect_settings
from cleo_tui.memory import recall_protection
from cleo_tui.memory.pruner import prepare_pool
from cleo_tui.memory.tags import tag_brain
from tests.brain_fixtures import add_cleo_recall_logs, insert_observations, make_cleo_consolidated, observation

WORDS = ("alpha", "bravo", "charlie", "delta", "echo")
IDS = [observation(i)["id"] for i in range(len(WORDS))]
HOSTILE = "[bold]stripe\x1b[31m webhook\n" + "x" * 300


def brain_with_logs(tmp_path):
    """Five unprotected observations; CLEO recalled two of them (one long ago), a task used one."""
    db = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    insert_observations(db, [observation(i, invalid_at=None, title=f"routine work {w}", narrative=f"routine work {w}")
                             for i, w in enumerate(WORDS)])
    add_cleo_recall_logs(db, retrievals=[
        {"query": "old", "entry_ids": [IDS[0]], "created_at": "2026-01-01 10:00:00"},
        {"query": HOSTILE, "entry_ids": [IDS[1], "O-unknown"], "created_at": "2026-05-28 10:00:00"},
        {"query": "newer", "entry_ids": [IDS[1]], "created_at": "2026-05-29 10:00:00"},
        {"query": "bad", "entry_ids": "not json", "created_at": "2026-05-30 10:00:00"},
        {"query": "object", "entry_ids": '{"a": 1}', "created_at": "2026-05-30 10:00:00"},
    ], usage=[
        {"entry_id": IDS[2], "task_id": "T9", "used": 1, "created_at": "2026-05-01 10:00:00"},
        {"entry_id": IDS[2], "task_id": "T123", "used": 1, "created_at": "2026-05-02 10:00:00"},
        {"entry_id": IDS[3], "task_id": "T5", "used": 0},
        {"entry_id": IDS[4], "task_id": None, "used": 1},
    ])
    return db


def configure(section):
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"protect": section}), encoding="utf-8")


def protected_reasons(db) -> dict[str, list[str]]:
    brain = open_brain(db, read_only=True)
    try:
        pool = prepare_pool(brain)
        return {e.id: list(e.reasons) for e in pool.protected}
    finally:
        brain.close()


def test_off_by_default_nothing_is_protected_by_recall(tmp_path):
    assert protected_reasons(brain_with_logs(tmp_path)) == {}
    assert protect_settings({})[0] == ProtectSettings() and not ProtectSettings().enabled


def test_recalled_within_days_and_used_by_task_protect_with_their_reasons(tmp_path):
    db = brain_with_logs(tmp_path)
    configure({"recalled_within_days": 30, "used_by_task": True})  # now is 2026-06-01 (conftest)
    found = protected_reasons(db)
    assert found == {
        IDS[1]: ["recalled 2026-05-29 (query 'newer')"],
        IDS[2]: ["used by task T123 (and 1 more)"],
        IDS[4]: ["used by a task"],
    }
    assert IDS[0] not in found  # recalled, but 151 days ago
    assert recall_protection.kind_of(found[IDS[1]][0]) == "recalled"
    assert recall_protection.kind_of(found[IDS[2]][0]) == "used by task"


def test_the_newest_recall_is_named_and_a_hostile_query_is_one_short_line(tmp_path):
    brain = open_brain(brain_with_logs(tmp_path), read_only=True)
    try:
        reasons = recall_protection.protection_reasons(brain, ProtectSettings(recalled_within_days=5))
    finally:
        brain.close()
    assert reasons[IDS[1]] == ("recalled 2026-05-29 (query 'newer')",)  # the newest of its two recalls
    (hostile,) = reasons["O-unknown"]  # (an id no row holds: it protects nothing, but reads safely)
    assert hostile.startswith("recalled 2026-05-28 (query '[bold]stripe")
    assert "\n" not in hostile and "\x1b" not in hostile and len(hostile) < 80


def test_a_config_change_shows_at_the_next_scan_through_the_snapshot(tmp_path):
    db = brain_with_logs(tmp_path)
    brain = open_brain(db, read_only=True)
    try:
        assert tag_brain(brain).protected_ids() == []  # writes the scan snapshot
        configure({"used_by_task": True})
        assert sorted(tag_brain(brain).protected_ids()) == sorted([IDS[2], IDS[4]])  # from the snapshot
        assert tag_brain(brain)[IDS[2]].reasons == ["used by task T123 (and 1 more)"]
        configure({})
        assert tag_brain(brain).protected_ids() == []
    finally:
        brain.close()


def test_prune_json_lists_the_reasons(tmp_path, capsys):
    from cleo_tui.cli import main

    db = brain_with_logs(tmp_path)
    configure({"used_by_task": True})
    assert main(["prune", "--db", str(db), "--budget", "10", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert {"id": IDS[4], "reasons": ["used by a task"]} in document["protected"]
    assert IDS[2] not in {row["id"] for row in document["dropped"]}


def test_invalid_settings_are_named_and_off():
    settings, problem = protect_settings({"protect": {"recalled_within_days": "30", "used_by_task": 1}})
    assert settings == ProtectSettings() and "recalled_within_days" in problem and "used_by_task" in problem
    assert protect_settings({"protect": []})[1] is not None


def test_a_log_that_cannot_be_read_stops_the_prune_with_a_message(tmp_path, capsys):
    import sqlite3

    from cleo_tui.cli import main

    db = brain_with_logs(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE brain_usage_log")
    conn.execute("CREATE TABLE gone (entry_id, used)")
    conn.execute("CREATE VIEW brain_usage_log AS SELECT entry_id, used FROM gone")
    conn.execute("DROP TABLE gone")
    conn.commit()
    conn.close()
    configure({"used_by_task": True})
    assert main(["prune", "--db", str(db), "--budget", "10", "--json"]) != 0
    err = capsys.readouterr().err
    assert "Recall-aware protection is on" in err and "Traceback" not in err


def test_the_observations_column_names_the_kind():
    from cleo_tui.ui.panes.observations import protection_kind

    assert protection_kind("recalled 2026-05-29 (query 'a: b')") == "recalled"
    assert protection_kind("used by task T123 (and 1 more)") == "used by task"
    assert protection_kind("used by a task") == "used by task"
    assert protection_kind('error: "TypeError"') == "error"
