"""The CLI frame: --version, `info` (text and JSON), `init`, `demo`, as real subprocesses."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sqlite3
import subprocess
import sys

import pytest
import sqlite_utils

from cleo_tui import __version__, cli
from cleo_tui.brain import cleo_schema as cs
from cleo_tui.commands import COMMANDS
from tests.ui_helpers import copy_demo

INFO_KEYS = {"db", "kind", "observations", "patterns", "learnings", "traces"}


def run_cli(*args: str, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cleo_tui", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=60, env=env)


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"cleo-tui {__version__}"


def test_info_json_has_the_stable_keys_and_counts(tmp_path, capsys, monkeypatch):
    copy_demo(tmp_path, observations=300, seed=3)
    db = tmp_path / ".cleo" / "cleo.db"
    result = run_cli("info", "--db", str(db), "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert INFO_KEYS <= set(info)
    assert info["db"] == str(db) and info["kind"] == "cleo-tui"
    assert set(info["observations"]) == {"live", "evicted"}
    assert info["observations"]["live"] + info["observations"]["evicted"] == 300
    assert info["observations"]["evicted"] > 0
    conn = sqlite3.connect(db)
    assert info["patterns"] == conn.execute(f"SELECT count(*) FROM {cs.PATTERNS}").fetchone()[0] > 0
    assert info["learnings"] == conn.execute(f"SELECT count(*) FROM {cs.LEARNINGS}").fetchone()[0] > 0
    assert info["traces"] == conn.execute("SELECT count(*) FROM recall_traces").fetchone()[0]
    # Found by walking up from a subdirectory, and printed as text.
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path / "src")
    assert cli.main(["info"]) == 0
    assert f"{info['observations']['live']} live" in capsys.readouterr().out


def test_init_creates_every_reference_column_the_fts_table_and_triggers(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `cleo` on it: cleo-tui makes its own brain
    result = run_cli("init", str(tmp_path), env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    db = tmp_path / ".cleo-tui" / "brain.db"
    assert str(db) in result.stdout
    conn = sqlite3.connect(db)
    db_view = sqlite_utils.Database(conn)  # its introspection, against the reference layout
    layout = cs.cleo_layout()
    for table, columns in layout["columns"].items():
        have = {c.name: c for c in db_view.table(table).columns}
        for column in columns:
            assert column["name"] in have, (table, column["name"])
            got = have[column["name"]]
            assert (got.type, got.notnull, got.default_value, got.is_pk) == (
                column["type"], column["notnull"], column["default"], column["pk"]), (table, column)
        indexes = {i.name: i for i in db_view.table(table).indexes}
        for index in layout["indexes"].get(table, []):
            got_index = indexes[index["name"]]
            assert (got_index.columns, got_index.unique, got_index.partial) == (
                index["columns"], index["unique"], index["partial"]), index
    assert db_view.table(cs.OBSERVATIONS).detect_fts() == cs.OBSERVATIONS_FTS
    triggers = {t.name for t in db_view.table(cs.OBSERVATIONS).triggers}
    assert triggers == {"brain_observations_ai", "brain_observations_ad", "brain_observations_au"}
    # The triggers keep the FTS table in step with inserts, updates and deletes.
    conn.execute(f"INSERT INTO {cs.OBSERVATIONS}(id, type, title, narrative) "
                 "VALUES ('O-1', 'discovery', 'zebra crossing', 'a narrative about giraffes')")
    match = f"SELECT id FROM {cs.OBSERVATIONS_FTS} WHERE {cs.OBSERVATIONS_FTS} MATCH ?"
    assert conn.execute(match, ("giraffes",)).fetchall() == [("O-1",)]
    conn.execute(f"UPDATE {cs.OBSERVATIONS} SET narrative = 'now about okapis' WHERE id = 'O-1'")
    assert conn.execute(match, ("giraffes",)).fetchall() == []
    assert conn.execute(match, ("okapis",)).fetchall() == [("O-1",)]
    conn.execute(f"DELETE FROM {cs.OBSERVATIONS} WHERE id = 'O-1'")
    assert conn.execute(match, ("okapis",)).fetchall() == []
    conn.close()
    assert cli.main(["init", str(tmp_path)]) == cli.EXIT_USER_ERROR
    assert "already exists" in capsys.readouterr().err


def test_demo_command_writes_a_brain_and_refuses_to_overwrite(tmp_path, capsys):
    result = run_cli("demo", str(tmp_path), "--observations", "150", "--seed", "11")
    assert result.returncode == 0, result.stderr
    assert "150 observations" in result.stdout
    capsys.readouterr()
    assert cli.main(["info", "--db", str(tmp_path / ".cleo" / "cleo.db"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert sum(info["observations"].values()) == 150
    assert cli.main(["demo", str(tmp_path)]) == cli.EXIT_USER_ERROR
    assert "already exists" in capsys.readouterr().err


def test_demo_into_a_file_says_so(tmp_path, capsys):
    """`cleo-tui demo /etc/passwd` was "internal error: NotADirectoryError"."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    assert cli.main(["demo", str(a_file)]) == cli.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "is a file" in err and "internal error" not in err
    assert a_file.read_text() == "mine\n"


def test_the_registry_names_exactly_the_commands_its_modules_register():
    registered: dict[str, str] = {}
    for module in set(COMMANDS.values()):

        def add(name: str, module: str = module, **kwargs: object) -> argparse.ArgumentParser:
            registered[name] = module
            return argparse.ArgumentParser()

        importlib.import_module(module).register(add)
    assert registered == COMMANDS


def test_help_lists_every_command_and_a_flag_mistake_is_one_paragraph(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    assert done.value.code == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in COMMANDS)
    assert cli.main(["traces", "--show", "1", "--export", "x.jsonl"]) == cli.EXIT_USER_ERROR
    err = capsys.readouterr().err.strip()
    assert err.startswith("cleo-tui: traces: argument --export") and "not allowed with" in err
    assert "\n" not in err and "usage:" not in err and "`cleo-tui traces --help`" in err
    assert cli.main(["info", "--bogus"]) == cli.EXIT_USER_ERROR  # said by the command, not by cleo-tui's parser
    err = capsys.readouterr().err.strip()
    assert err == "cleo-tui: info: unrecognized arguments: --bogus. Run `cleo-tui info --help` for the options.", err


def test_the_live_writes_benchmark_shows_its_writer_option(capsys):
    """Issue 29.17: `--writer` (the CLEO-like writer, useful beside the TUI) was hidden from --help."""
    from benchmarks import live_writes
    with pytest.raises(SystemExit):
        live_writes.main(["--help"])
    assert "--writer DB" in capsys.readouterr().out


def test_info_text_lines_up_its_values_and_writes_counts_as_history_does(tmp_path, capsys):
    """"consolidation: …" stood a column right of every other value, and counts had no separators
    ("14399 live") where `history` writes 14,399."""
    db = copy_demo(tmp_path, observations=1_200, seed=3)
    assert cli.main(["info", "--db", str(db)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if ": " in line]
    starts = {line.index(": ") + 2 + (len(line.split(": ", 1)[1]) - len(line.split(": ", 1)[1].lstrip()))
              for line in lines}
    assert len(starts) == 1, lines
    live = next(line for line in lines if line.startswith("observations:"))
    assert re.search(r"\d,\d{3} live", live), live
