"""Act on a filter: evict/restore/pin everything it shows as one undoable run; export it as JSON, JSONL, Markdown."""

from __future__ import annotations

import gc
import json
import sqlite3
from pathlib import Path

import pytest

from cleo_tui.cli import main
from tests.brain_fixtures import file_digest
from tests.ui_helpers import copy_demo

HOSTILE = "[bold]x[/bold] \x1b[31mred\x1b[0m ``` fence ``` end"


@pytest.fixture
def db(tmp_path) -> Path:
    path = copy_demo(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE brain_observations SET narrative = ? WHERE id = (SELECT id FROM brain_observations "
                     "WHERE type = 'diary' ORDER BY rowid LIMIT 1)", (HOSTILE,))
    return path


def _live_diary(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {r[0] for r in conn.execute("SELECT id FROM brain_observations WHERE type = 'diary' "
                                           "AND invalid_at IS NULL")}


def test_a_filters_rows_are_evicted_as_one_run_after_the_plan_and_undone(db, capsys):
    diary = _live_diary(db)
    assert len(diary) > 5
    assert main(["evict", "--db", str(db), "--type", "diary", "--include-protected", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["run_id"] is None and set(plan["ids"]) == diary and plan["selection"] == "type diary, live"
    assert {"retrievals", "affected_retrievals", "affected_used", "lost"} <= set(plan["impact"])
    assert _live_diary(db) == diary  # the plan wrote nothing
    assert main(["evict", "--db", str(db), "--type", "diary", "--include-protected", "--yes", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["count"] == len(diary) and _live_diary(db) == set()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM cleo_tui_runs WHERE id = ?", (done["run_id"],)).fetchone()[0] == 1
    assert main(["evict", "--db", str(db), "--undo", str(done["run_id"])]) == 0
    assert _live_diary(db) == diary


def test_pin_and_restore_take_the_same_filters(db, capsys):
    assert main(["pin", "--db", str(db), "--type", "diary", "--yes", "--json"]) == 0
    pinned = json.loads(capsys.readouterr().out)["count"]
    with sqlite3.connect(db) as conn:
        overrides = conn.execute("SELECT count(*) FROM cleo_tui_relevance_overrides WHERE relevance = 'critical'")
        assert overrides.fetchone()[0] >= pinned > 0
    assert main(["restore", "--db", str(db), "--since", "2026-13-01"]) == 2  # a date must parse


def test_export_round_trips_the_rows_and_markdown_keeps_hostile_text_as_data(db, tmp_path, capsys):
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        rows = {r["id"]: dict(r) for r in conn.execute("SELECT * FROM brain_observations WHERE type = 'diary'")}
    for fmt in ("json", "jsonl"):
        out = tmp_path / f"diary.{fmt}"
        assert main(["export", "--db", str(db), "--type", "diary", "--format", fmt, "--out", str(out)]) == 0
        text = out.read_text()
        records = json.loads(text) if fmt == "json" else [json.loads(line) for line in text.splitlines()]
        assert {r["id"]: {k: v for k, v in r.items() if k != "tags"} for r in records} == rows
        assert all("coverage" in r["tags"] and "protection_reasons" in r["tags"] for r in records)
    md = tmp_path / "diary.md"
    assert main(["export", "--db", str(db), "--type", "diary", "--format", "md", "--out", str(md)]) == 0
    text = md.read_text()
    assert "\x1b" not in text  # no terminal control survives
    assert "````text\n[bold]x[/bold] ␛[31mred" in text  # a fence longer than any run inside the text
    assert main(["export", "--db", str(db), "--format", "json", "--out", str(md)]) == 2  # asks for --force
    assert main(["export", "--db", str(db), "--format", "json", "--out", str(db)]) == 2  # never over a brain
    capsys.readouterr()


def test_the_plan_counts_only_the_rows_the_step_can_change(db, capsys):
    with sqlite3.connect(db) as conn:
        evicted = conn.execute("SELECT count(*) FROM brain_observations WHERE invalid_at IS NOT NULL").fetchone()[0]
        live = conn.execute("SELECT count(*) FROM brain_observations WHERE invalid_at IS NULL").fetchone()[0]
    assert main(["restore", "--db", str(db), "--state", "all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == evicted
    assert main(["evict", "--db", str(db), "--state", "all", "--include-protected", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == live


def test_the_cli_plans_as_the_observations_pane_does(db, capsys):
    """`cleo-tui evict …` and the pane's A read one plan (`plan_selection`): the same ids, the same
    protected rows left out, and the tokens counted the same way (chars/4 a row)."""
    from cleo_tui.brain import open_brain
    from cleo_tui.memory.bulk import plan_selection
    from cleo_tui.memory.selection import Selection
    from cleo_tui.memory.tags import tag_brain

    brain = open_brain(db, read_only=True)
    try:
        plan = plan_selection(brain, Selection(type="diary"), tag_brain(brain))
    finally:
        brain.close()
    assert main(["evict", "--db", str(db), "--type", "diary", "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["ids"] == plan.ids_for("evict") and said["tokens"] == plan.tokens_of(plan.ids_for("evict"))
    assert said["protected_left_out"] == len(plan.protected) > 0


@pytest.mark.parametrize("flag", ["--search", "--type", "--tier", "--session"])
@pytest.mark.parametrize("command", [["evict", "--yes"], ["pin", "--yes"], ["export", "--format", "json"]])
def test_a_blank_filter_is_refused_not_read_as_no_filter(db, tmp_path, capsys, flag, command):
    """`evict --search "$WORDS" --yes` with WORDS empty must not evict every live observation."""
    gc.collect()  # (the fixture's connection, closed here, checkpoints its write into the file)
    before = file_digest(db)
    out = tmp_path / "out.json"
    argv = [*command, "--db", str(db), flag, "  "] + (["--out", str(out)] if command[0] == "export" else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{flag} is blank" in err and "nothing was written" in err
    assert file_digest(db) == before and not out.exists()


def test_ids_name_observations_directly_and_an_unknown_one_writes_nothing(db, capsys):
    """`cleo-tui evict O-1` said "unrecognized arguments: O-1": the natural way to name one row."""
    with sqlite3.connect(db) as conn:
        decision, discovery = (conn.execute("SELECT id FROM brain_observations WHERE type = ? AND invalid_at IS NULL "
                                            "ORDER BY rowid LIMIT 1", (kind,)).fetchone()[0]
                               for kind in ("decision", "discovery"))
    assert main(["evict", "--db", str(db), decision, discovery, "--include-protected", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert sorted(plan["ids"]) == sorted([decision, discovery]) and decision in plan["selection"]
    assert main(["evict", "--db", str(db), decision, discovery, "--type", "decision", "--include-protected",
                 "--yes", "--json"]) == 0  # with a filter: only the ids it also selects
    assert json.loads(capsys.readouterr().out)["ids"] == [decision]
    with sqlite3.connect(db) as conn:
        states = dict(conn.execute("SELECT id, invalid_at IS NOT NULL FROM brain_observations WHERE id IN (?, ?)",
                                   (decision, discovery)).fetchall())
    assert states == {decision: 1, discovery: 0}

    # ids on both sides of an option are one list (argparse alone took the first run only)
    assert main(["evict", decision, "--db", str(db), discovery, "--state", "all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["selection"].startswith(f"ids {decision}, {discovery}")

    before = file_digest(db)
    assert main(["pin", "--db", str(db), discovery, "O-nope", "--yes"]) == 2
    err = capsys.readouterr().err
    assert "O-nope" in err and "no observation" in err and discovery not in err
    assert file_digest(db) == before


def test_export_takes_ids_too(db, tmp_path, capsys):
    with sqlite3.connect(db) as conn:
        first = conn.execute("SELECT id FROM brain_observations ORDER BY rowid LIMIT 1").fetchone()[0]
    out = tmp_path / "one.json"
    assert main(["export", "--db", str(db), first, "--format", "json", "--out", str(out)]) == 0
    assert [r["id"] for r in json.loads(out.read_text())] == [first]
    assert main(["export", "--db", str(db), "O-nope", "--format", "json", "--out", str(tmp_path / "x.json")]) == 2
    assert "O-nope" in capsys.readouterr().err and not (tmp_path / "x.json").exists()


def test_one_token_is_said_in_the_singular(tmp_path, capsys):
    from tests.pruner_fixtures import add_observation, new_brain

    brain = new_brain(tmp_path)
    add_observation(brain, "O-1", "x")
    brain.close()
    assert main(["evict", "--db", str(tmp_path / ".cleo" / "cleo.db"), "O-1"]) == 0
    out = capsys.readouterr().out
    assert "about 1 token." in out, out
    assert main(["evict", "--db", str(tmp_path / ".cleo" / "cleo.db"), "O-1", "--yes"]) == 0
    with sqlite3.connect(tmp_path / ".cleo" / "cleo.db") as conn:
        summary = conn.execute("SELECT summary FROM cleo_tui_runs ORDER BY id DESC LIMIT 1").fetchone()[0]
    assert summary.startswith("evicted 1 observation: "), summary
