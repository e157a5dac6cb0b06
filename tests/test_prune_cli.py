"""`cleo-tui prune`: preview JSON, bytes unchanged without --apply, confirm, commit, undo, runs."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3

import pytest

from cleo_tui.brain import open_brain
from cleo_tui.cli import main
from tests.pruner_fixtures import add_observation, add_pattern, new_brain, observation_rows


@pytest.fixture
def project(tmp_path):
    brain = new_brain(tmp_path)
    for i in range(30):
        add_observation(brain, f"O-{i:02d}", f"routine work item {i} " * 5,
                        created_at=f"2026-01-{i % 28 + 1:02d} 10:00:00",
                        source_session_id="ses_x" if i % 2 else None)
    add_observation(brain, "O-keep", "The user prefers terse commit messages")
    add_pattern(brain, "P-1", "a pattern", cites=["O-00", "O-01"])
    brain.close()
    return tmp_path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Terminal(io.StringIO):
    """Standard input that says it is a terminal."""

    def isatty(self):
        return True


def _evicted(db):
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT count(*) FROM brain_observations WHERE invalid_at IS NOT NULL").fetchone()[0]
    finally:
        conn.close()


def test_preview_json_has_the_design_keys_and_writes_nothing(project, capsys):
    db = project / ".cleo" / "cleo.db"
    before = _digest(db)
    code, out, err = run(capsys, "prune", "--project", str(project), "--budget", "0.5k", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert set(data) >= {"budget", "target", "tokenizer", "tokens_before", "tokens_after", "fell_back",
                         "dropped", "protected", "kept", "run_id"}
    assert (data["budget"], data["target"], data["tokenizer"], data["run_id"]) == (500, 400, "chars4", None)
    assert data["tokens_after"] <= 400 < data["tokens_before"]
    assert set(data["dropped"][0]) >= {"id", "coverage", "relevance", "created_at", "tokens", "why"}
    assert data["dropped"][0]["coverage"] == "cited"  # cited rows drop before uncited ones
    assert {"id": "O-keep", "reasons": ['user assertion: "user prefers"']} in data["protected"]
    assert data["kept"] + len(data["dropped"]) == 31
    assert _digest(db) == before


def test_human_preview_and_tokenizer_choice(project, capsys):
    code, out, _ = run(capsys, "prune", "--project", str(project), "--budget", "500", "--tokenizer", "o200k_base",
                       "--session", "ses_x")
    assert code == 0
    assert "session ses_x" in out and "(o200k_base)" in out and "Preview only: nothing was written" in out
    assert "Dropped, in drop order:" in out and "O-keep" not in out  # O-keep is in no session
    code, out, _ = run(capsys, "prune", "--project", str(project), "--budget", "1M")
    assert code == 0 and "Nothing to drop" in out


def test_bad_budget_and_flag_mistakes_are_one_line_errors(project, capsys):
    for argv, message in ((["--budget", "lots"], "positive whole number"),
                          ([], "exactly one of"),
                          (["--budget", "1k", "--runs"], "not allowed with argument --budget"),
                          (["--undo", "x"], "run id"),
                          (["--undo", "42"], "no run 42"),
                          (["--budget", "1k", "--session", "nope"], "No live observation")):
        code, _out, err = run(capsys, "prune", "--project", str(project), *argv)
        assert code == 2 and message in err and "Traceback" not in err, (argv, err)


def test_apply_without_yes_refuses_without_a_terminal(project, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    db = project / ".cleo" / "cleo.db"
    code, _, err = run(capsys, "prune", "--project", str(project), "--budget", "500", "--apply")
    assert code == 2 and "--apply needs --yes" in err
    assert _evicted(db) == 0


def test_apply_asks_on_a_terminal(project, capsys, monkeypatch):
    db = project / ".cleo" / "cleo.db"
    monkeypatch.setattr("sys.stdin", _Terminal())
    monkeypatch.setattr("builtins.input", lambda: "n")  # (the question is written before it: `confirmed`)
    code, _, err = run(capsys, "prune", "--project", str(project), "--budget", "500", "--apply")
    assert code == 2 and "Not confirmed" in err and _evicted(db) == 0
    monkeypatch.setattr("builtins.input", lambda: "y")
    code, out, _ = run(capsys, "prune", "--project", str(project), "--budget", "500", "--apply")
    assert code == 0 and "Committed as run 1" in out and _evicted(db) > 0


def test_apply_yes_commits_and_undo_restores(project, capsys):
    db = project / ".cleo" / "cleo.db"
    ro = open_brain(db, read_only=True)
    before = observation_rows(ro)
    ro.close()
    code, out, _ = run(capsys, "prune", "--db", str(db), "--budget", "500", "--apply", "--yes", "--json")
    data = json.loads(out)
    assert code == 0 and data["run_id"] == 1 and _evicted(db) == len(data["dropped"]) > 0
    code, out, _ = run(capsys, "prune", "--db", str(db), "--runs", "--json")
    runs = json.loads(out)
    assert runs[0]["kind"] == "prune" and runs[0]["count"] == len(data["dropped"]) and runs[0]["budget"] == 500
    code, out, _ = run(capsys, "prune", "--db", str(db), "--undo", "1", "--json")
    assert json.loads(out) == {"undone": 1, "run_id": 2, "restored": len(data["dropped"]), "skipped": [],
                               "missing": [], "remaining": 0, "complete": True}
    ro = open_brain(db, read_only=True)
    assert [r[:15] + r[16:] for r in observation_rows(ro)] == [r[:15] + r[16:] for r in before]  # updated_at: now
    ro.close()
    code, out, _ = run(capsys, "prune", "--db", str(db), "--runs")
    assert "undone by run 2" in out and "undo of run 1" in out


def test_hostile_text_never_reaches_the_terminal_raw(tmp_path, capsys):
    brain = new_brain(tmp_path)
    for i in range(10):
        add_observation(brain, f"O-\x1b]8;;x\x07{i}", f"\x1b[31m[bold]red[/bold] \x00 boom {i} " * 4,
                        created_at=f"2026-01-0{i % 9 + 1} 10:00:00\x1b[2J")
    brain.close()
    code, out, err = run(capsys, "prune", "--project", str(tmp_path), "--budget", "200")
    assert code == 0, err
    assert "\x1b" not in out and "\x00" not in out and "\x07" not in out
    assert "O-␛]8;;x␇" in out and "10:00:00␛[2J" in out  # shown literally, as visible characters


def test_apply_json_states_the_pool_against_the_target_and_what_was_left(project, capsys):
    db = project / ".cleo" / "cleo.db"
    code, out, _ = run(capsys, "prune", "--db", str(db), "--budget", "500", "--apply", "--yes", "--json",
                       "--hide-from-cleo")
    data = json.loads(out)
    assert code == 0 and data["skipped"] == [] and data["new_rows"] == 0 and data["hidden_from_cleo"] is True
    assert (data["tokens_now"] == data["tokens_after"]
            and data["within_target"] is (data["tokens_now"] <= data["target"]))
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM brain_observations WHERE invalid_at IS NOT NULL "
                        "AND quality_score = 0.2").fetchone()[0] == data["evicted"] > 0
    conn.close()


def test_apply_text_says_what_eviction_does_in_cleo(project, capsys):
    db = project / ".cleo" / "cleo.db"
    code, out, _ = run(capsys, "prune", "--db", str(db), "--budget", "500", "--apply", "--yes")
    assert code == 0 and "Committed as run 1" in out and "The pool is now" in out
    assert "still return evicted rows" in out and "--hide-from-cleo" in out


def test_a_command_runs_without_cyclic_collection_and_puts_the_collector_back(project, capsys, monkeypatch):
    """A one-shot command's pool lives to its end: full collections would only walk it (see cli.dispatch)."""
    import gc

    from cleo_tui.commands import prune_cmd
    seen = []
    real = prune_cmd.cmd_prune
    monkeypatch.setattr(prune_cmd, "cmd_prune", lambda args: (seen.append(gc.isenabled()), real(args))[1])
    assert gc.isenabled()
    code, out, _ = run(capsys, "prune", "--db", str(project / ".cleo" / "cleo.db"), "--budget", "400", "--json")
    assert code == 0 and json.loads(out)["budget"] == 400
    assert seen == [False] and gc.isenabled()


def test_apply_hide_from_cleo_text_says_the_rows_were_hidden(project, capsys):
    """Issue 29.8: the text output of `--apply --hide-from-cleo` never said the rows were hidden."""
    from cleo_tui.memory.cleo_effects import HIDDEN_FROM_CLEO
    db = project / ".cleo" / "cleo.db"
    code, out, _ = run(capsys, "prune", "--db", str(db), "--budget", "500", "--apply", "--yes", "--hide-from-cleo")
    assert code == 0 and "Committed as run 1" in out and HIDDEN_FROM_CLEO in out
    assert "still return evicted rows" not in out
