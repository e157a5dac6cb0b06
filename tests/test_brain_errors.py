"""A user's mistake gives one clear paragraph and a non-zero exit, never a traceback.

The CLI runs as a real subprocess (`python -m cleo_tui`), except for the locked
file: the busy timeout is 30 s there, so that case runs `cli.main` in-process
with a short timeout. Tests run as root, where chmod 000 does not stop reads, so
"unreadable" is covered by a directory given as --db and by a locked file.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from cleo_tui import cli
from cleo_tui.brain import BrainNotFound, BrainUnreadable, NotABrain, NotSQLite, connection, open_brain
from tests.brain_fixtures import make_cleo_consolidated


def run_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cleo_tui", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=60)


def run_main(capsys, *args: str) -> subprocess.CompletedProcess:
    """The same CLI in this process (subprocesses cost seconds each): exit code and output."""
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out, err)


def assert_user_error(result: subprocess.CompletedProcess, *phrases: str) -> str:
    assert result.returncode == cli.EXIT_USER_ERROR, result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    message = result.stderr.strip()
    assert message.startswith("cleo-tui: ") and "\n" not in message  # one paragraph
    for phrase in phrases:
        assert phrase in message, message
    return message


def test_no_brain_found_says_where_it_looked_and_how_to_create_one(tmp_path):
    project = tmp_path / "empty-project"
    project.mkdir()
    message = assert_user_error(run_cli("info", cwd=project), "No brain found", str(project),
                                ".cleo/cleo.db", ".cleo/brain.db", "cleo-tui init", "cleo-tui demo")
    assert "--db" in message
    with pytest.raises(BrainNotFound):
        from cleo_tui.brain import locate_brain
        locate_brain(project)


def test_a_file_that_is_not_sqlite(tmp_path, capsys):
    path = tmp_path / "notes.db"
    path.write_text("just some notes, not a database\n")
    assert_user_error(run_cli("info", "--db", str(path)), str(path), "not a SQLite database")
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    assert_user_error(run_main(capsys, "info", "--db", str(empty)), "is empty")
    with pytest.raises(NotSQLite):
        open_brain(path)


def test_sqlite_but_not_a_brain(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    conn.close()
    assert_user_error(run_cli("info", "--db", str(path)), "not a brain", "brain_observations")
    with pytest.raises(NotABrain):
        open_brain(path)


def test_missing_file_and_directory_given_as_db(tmp_path, capsys):
    assert_user_error(run_main(capsys, "info", "--db", str(tmp_path / "nope.db")), "does not exist")
    assert_user_error(run_cli("info", "--db", str(tmp_path)), "is a directory")
    with pytest.raises(BrainUnreadable):
        open_brain(tmp_path)


def test_a_corrupt_sqlite_file(tmp_path, capsys):
    path = make_cleo_consolidated(tmp_path / "cleo.db", journal_mode="delete")
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # keep the header, wreck the schema page
    path.write_bytes(bytes(data))
    assert_user_error(run_main(capsys, "info", "--db", str(path)), str(path), "malformed")


def test_a_locked_brain_is_reported_not_waited_on_forever(tmp_path, monkeypatch, capsys):
    # Rollback-journal mode: an EXCLUSIVE lock keeps readers out (WAL would let them in).
    path = make_cleo_consolidated(tmp_path / "cleo.db", journal_mode="delete")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 50)
    try:
        with pytest.raises(BrainUnreadable, match="locked"):
            open_brain(path)
        assert cli.main(["info", "--db", str(path)]) == cli.EXIT_USER_ERROR
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    err = capsys.readouterr().err
    assert "locked" in err and "Traceback" not in err and "--read-only" in err


def test_bad_flag_values_are_usage_errors(tmp_path, capsys):
    assert_user_error(run_cli("demo", str(tmp_path / "d"), "--observations", "lots"), "--observations")
    assert_user_error(run_main(capsys, "demo", str(tmp_path / "d"), "--observations", "0"), "between")
    assert_user_error(run_main(capsys, "demo", str(tmp_path / "d"), "--observations", "9999999999"), "between")
    assert_user_error(run_main(capsys, "demo", str(tmp_path / "d"), "--seed", "-1"), "--seed")
    assert not (tmp_path / "d").exists()


def test_no_brain_message_points_at_the_global_store(tmp_path, monkeypatch):
    from cleo_tui.brain import BrainNotFound, locate_brain
    from cleo_tui.brain.store import global_brain_path

    project = tmp_path / "project"
    project.mkdir()
    store = global_brain_path()  # under the test's private XDG_DATA_HOME
    store.parent.mkdir(parents=True)
    store.write_bytes(b"")
    with pytest.raises(BrainNotFound) as caught:
        locate_brain(project)
    assert f"--db {store}" in str(caught.value)
