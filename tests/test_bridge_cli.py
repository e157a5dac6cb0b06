"""`cleo-tui bridge`: its JSON keys, the prune preview's marks, 80 columns, and regenerating through CLEO."""

from __future__ import annotations

import json
import os
import sqlite3
import stat

import pytest

from cleo_tui.cli import main
from tests.ui_helpers import HOSTILE_TITLE, copy_demo

CONTRACT = {"observations", "learnings", "patterns", "decisions", "tokens"}


@pytest.fixture
def project(tmp_path):
    """The small demo brain in a CLEO project, plus an evicted row with hostile text newest of all."""
    db = copy_demo(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO brain_observations(id, type, title, narrative, created_at, invalid_at) "
                 "VALUES ('O-hostile', 'discovery', ?, 'n', '2026-05-31 23:00:00', '2026-05-31 23:30:00')",
                 ("\x1b[31mred\x1b[0m " + HOSTILE_TITLE,))
    conn.commit()
    conn.close()
    return tmp_path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_lists_what_cleo_injects(project, capsys):
    code, out, err = run(capsys, "bridge", "--project", str(project), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert CONTRACT <= set(data)
    assert data["observations"][0] == "O-hostile" and len(data["observations"]) == 10
    conn = sqlite3.connect(project / ".cleo" / "cleo.db")
    decisions = conn.execute("SELECT count(*) FROM brain_decisions").fetchone()[0]
    conn.close()
    assert len(data["decisions"]) == min(5, decisions) and data["patterns"]
    assert isinstance(data["learnings"], list)  # the small demo's learnings have all decayed below 0.6
    assert data["tokens"] == -(-data["chars"] // 4)
    assert data["marks"]["evicted_injected"] == ["O-hostile"]
    first = data["sections"]["observations"]["items"][0]
    assert first["marks"] == ["evicted"] and first["tokens"] == -(-len(first["line"]) // 4)
    assert data["mode"] == "cli" and data["handoff"]["state"] == "unknown"
    assert "\x1b" not in out  # JSON escapes the control bytes


def test_after_budget_marks_what_the_prune_would_evict(project, capsys):
    code, out, _ = run(capsys, "bridge", "--project", str(project), "--json")
    now = json.loads(out)
    code, out, err = run(capsys, "bridge", "--project", str(project), "--json", "--after-budget", "2k")
    assert code == 0, err
    after = json.loads(out)
    assert after["observations"] == now["observations"] and after["text"] == now["text"]
    code, out, _ = run(capsys, "prune", "--project", str(project), "--budget", "2k", "--json")
    dropped = {d["id"] for d in json.loads(out)["dropped"]}
    injected = set(after["observations"]) | set(after["learnings"]) | set(after["patterns"]) | set(after["decisions"])
    assert after["marks"]["evicting_injected"] and set(after["marks"]["evicting_injected"]) == dropped & injected
    assert after["marks"]["evicting"] == len(dropped)


def test_text_fits_eighty_columns_and_shows_hostile_text_literally(project, capsys):
    code, out, err = run(capsys, "bridge", "--project", str(project))
    assert code == 0, err
    assert "\x1b" not in out and "␛[31mred" in out
    assert "␛[31mred␛[0m [bold red]x[/]" in out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "Recent Observations (10" in out and "[evicted]" in out


@pytest.mark.parametrize("argv, words", [
    (["--after-budget", "lots"], "--after-budget"),
    (["--yes"], "--refresh"),
])
def test_mistakes_exit_two(project, capsys, argv, words):
    code, _, err = run(capsys, "bridge", "--project", str(project), *argv)
    assert code == 2 and words in err and "Traceback" not in err


def stand_in_cleo(folder, answer="Memory bridge unchanged at .cleo/memory-bridge.md", status=0):
    """A `cleo` on PATH that records its arguments and working directory, and answers like CLEO."""
    folder.mkdir()
    record = folder / "calls.txt"
    script = folder / "cleo"
    script.write_text(f'#!/bin/sh\necho "$PWD|$*" >> "{record}"\necho "{answer}"\nexit {status}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return record


def test_refresh_runs_cleo_in_the_project_and_shows_its_answer(project, capsys, monkeypatch, tmp_path):
    record = stand_in_cleo(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    code, out, err = run(capsys, "bridge", "--project", str(project), "--refresh", "--yes")
    assert code == 0, err
    assert record.read_text().splitlines() == [f"{project.resolve()}|refresh-memory"]
    assert "answered (exit 0)" in out and "Memory bridge unchanged" in out
    assert not (project / ".cleo" / "memory-bridge.md").exists()  # CLEO writes the file, never cleo-tui


def test_refresh_asks_first_and_needs_cleo(project, capsys, monkeypatch, tmp_path):
    record = stand_in_cleo(tmp_path / "bin", status=3)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    code, _, err = run(capsys, "bridge", "--project", str(project), "--refresh")  # no terminal, no --yes
    assert code == 2 and "--yes" in err and not record.exists()
    code, out, _ = run(capsys, "bridge", "--project", str(project), "--refresh", "--yes", "--json")
    assert code == 1 and json.loads(out)["refresh"]["returncode"] == 3  # CLEO's failure is reported
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    code, _, err = run(capsys, "bridge", "--project", str(project), "--refresh", "--yes")
    assert code == 2 and "not found" in err
