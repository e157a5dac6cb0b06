"""Every bad argument is the user's mistake: exit 2, one paragraph on stderr, no traceback (issue 29).

Run in-process through `cli.main` (fast); a few run as real subprocesses where the
process itself matters (argv bytes that are not UTF-8, no terminal).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cleo_tui import cli
from cleo_tui.commands import COMMANDS
from tests.ui_helpers import copy_demo

BAD = "O-\udcff"  # what Python makes of the byte 0xff in argv (surrogateescape)


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    return copy_demo(tmp_path_factory.mktemp("bad-args"))


# (argv with {db} for the demo brain, words the message must hold)
CASES = [
    (["info", "--db", ""], "--db"),
    (["info", "--project", ""], "--project"),
    (["prune", "--db", "", "--budget", "1000", "--apply", "--yes"], "--db"),
    (["prune", "--project", "", "--budget", "1000", "--apply", "--yes"], "--project"),
    (["traces", "--db", ""], "--db"),
    (["recall", "--db", "", "x"], "--db"),
    (["outcome", "--project", "", "--good"], "--project"),
    (["history", "--db", ""], "--db"),
    (["dedup", "--db", ""], "--db"),
    (["observe", "--db", ""], "--db"),
    (["reflect", "--project", ""], "--project"),
    (["--db", ""], "--db"),
    (["history", "--db", "{db}", BAD], "not valid UTF-8"),
    (["traces", "--db", "{db}", "--session", BAD], "not valid UTF-8"),
    (["recall", "--db", "{db}", "--session", BAD, "money"], "not valid UTF-8"),
    (["evict", "--db", "{db}", "O-1", BAD], "not valid UTF-8"),
    (["recall", "--db", "{db}", "--session", "", "money"], "--session is blank"),
    (["traces", "--db", "{db}", "--session", " "], "--session is blank"),
    (["prune", "--db", "{db}", "--budget", "10k", "--session", ""], "--session is blank"),
    (["observe", "--db", "{db}", "--session", ""], "--session is blank"),
    (["reflect", "--db", "{db}", "--model", " "], "--model is blank"),
    (["init", "/proc/nope"], "/proc/nope"),
    (["nosuch"], "not a cleo-tui command"),
    (["infoo"], "info"),
    (["traces", "--db", "{db}", "--since", "garbage"], "--since"),
    (["traces", "--db", "{db}", "--until", "💥"], "--until"),
    (["traces", "--db", "{db}", "--limit", "-1"], "--limit"),
    (["traces", "--db", "{db}", "--limit", "0"], "--limit"),
    (["observe", "--db", "{db}", "--threshold", "-1"], "--threshold"),
    (["observe", "--db", "{db}", "--threshold", "0"], "--threshold"),
    (["traces", "--db", "{db}", "--export", ""], "--export"),
    (["prune", "--db", "{db}", "--budget", "1000", "--hide-from-cleo"], "--apply"),
]


@pytest.mark.parametrize(("argv", "said"), CASES, ids=[" ".join(a).replace("\udcff", "\\xff") for a, _ in CASES])
def test_a_bad_argument_is_exit_2_and_one_paragraph(argv, said, demo_db, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # an empty --project must not fall back to a brain found from here
    copy_demo(tmp_path)
    before = (tmp_path / ".cleo" / "cleo.db").read_bytes()
    code = cli.main([a.replace("{db}", str(demo_db)) for a in argv])
    out, err = capsys.readouterr()
    assert code == cli.EXIT_USER_ERROR, (out, err)
    assert err.startswith("cleo-tui: ") and err.count("\n") == 1, err
    assert "internal error" not in err and "Traceback" not in err
    assert said in err, err
    assert (tmp_path / ".cleo" / "cleo.db").read_bytes() == before  # nothing written where . would lead


def test_a_mistyped_command_lists_the_commands(capsys):
    assert cli.main(["nosuch"]) == cli.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert all(name in err for name in COMMANDS)


def test_an_existing_directory_still_opens_the_tui_and_needs_a_terminal(tmp_path, capsys):
    """`cleo-tui DIR` names a project; without a terminal the TUI never starts (no escape codes)."""
    (tmp_path / "proj").mkdir()
    code = cli.main([str(tmp_path / "proj")])  # pytest's stdin is no terminal
    out, err = capsys.readouterr()
    assert code == cli.EXIT_USER_ERROR and out == ""
    assert "terminal" in err and "not a cleo-tui command" not in err and err.count("\n") == 1


def test_no_terminal_exits_at_once_in_a_real_process(tmp_path):
    """Before: the TUI started on a pipe, wrote escape codes into it and never exited."""
    result = subprocess.run([sys.executable, "-m", "cleo_tui", str(tmp_path)], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=60, cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == "", result
    assert "\x1b" not in result.stderr and "terminal" in result.stderr


def test_a_closed_standard_input_is_no_terminal_either(tmp_path):
    """`cleo-tui <&-` was "internal error: AttributeError: 'NoneType' object has no attribute 'isatty'"."""
    result = subprocess.run([sys.executable, "-m", "cleo_tui", str(tmp_path)], capture_output=True, text=True,
                            timeout=60, cwd=tmp_path, preexec_fn=lambda: os.close(0))
    assert result.returncode == 2 and "standard input is not one" in result.stderr, result.stderr


def test_argv_bytes_that_are_not_utf8_in_a_real_process(demo_db):
    result = subprocess.run([os.fsencode(sys.executable), b"-m", b"cleo_tui", b"history", b"--db",
                             os.fsencode(demo_db), b"O-\xff"], capture_output=True, timeout=60)
    assert result.returncode == 2, result
    assert b"not valid UTF-8" in result.stderr and b"internal error" not in result.stderr


def test_a_path_that_is_not_utf8_is_still_a_path(tmp_path, capsys):
    """Paths may hold any bytes on Linux: only text (ids, sessions, queries) must be UTF-8."""
    db = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/brain-\xff.db"))
    copy_demo(tmp_path)
    os.replace(tmp_path / ".cleo" / "cleo.db", db)
    assert cli.main(["info", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["observations"]["live"] > 0


def test_a_query_of_50001_characters_is_answered(demo_db, capsys):
    """SQLite refuses a LIKE pattern over 50,000 bytes; a long query must not be an internal error."""
    query = "money " + "x" * 50_001
    assert cli.main(["recall", "--db", str(demo_db), "--json", query]) == 0
    assert "results" in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("value", ["1e309", "NaN", "-1e309"])
def test_an_observer_threshold_out_of_range_in_the_project_config_is_a_warning(value, tmp_path, capsys,
                                                                                 monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = copy_demo(tmp_path)
    (db.parent / "config.json").write_text('{"brain": {"observer": {"threshold": ' + value + '}}}')
    code = cli.main(["observe", "--db", str(db)])
    out, err = capsys.readouterr()
    assert code in (0, 1) and "internal error" not in err and "Overflow" not in out + err, (out, err)
    assert "threshold" in out and "default" in out, out


def test_a_brain_left_behind_by_cleo_init_is_named(tmp_path, capsys, monkeypatch):
    """Issue 29.8: after `cleo init` in a project with cleo-tui's own brain, cleo-tui switched to
    CLEO's .cleo/cleo.db without a word about the brain left behind."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no `cleo`: cleo-tui's own brain
    assert cli.main(["init", str(tmp_path)]) == 0
    copy_demo(tmp_path)  # then CLEO sets the project up: .cleo/cleo.db with brain tables
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)
    assert cli.main(["info", "--json"]) == 0
    out, err = capsys.readouterr()
    info = json.loads(out)
    assert info["db"].endswith(".cleo/cleo.db")
    assert info["left_behind"] == [str(tmp_path / ".cleo-tui" / "brain.db")]
    assert ".cleo-tui/brain.db" in err and "not opened" in err
    assert cli.main(["info", "--db", str(tmp_path / ".cleo" / "cleo.db")]) == 0
    assert "left behind" in capsys.readouterr().out  # named by info however the brain was given


@pytest.mark.parametrize("before", [["--db", "{db}"], ["--db={db}"], ["--read-only", "--db", "{db}"]])
def test_options_before_the_command_are_the_commands(before, demo_db, capsys, tmp_path, monkeypatch):
    """`cleo-tui --db FILE info`: the command comes after the options a user typed first (as `git -C DIR
    status` has it). It said "'info' is not a cleo-tui command … Did you mean `cleo-tui info`?"."""
    monkeypatch.chdir(tmp_path)
    argv = [a.replace("{db}", str(demo_db)) for a in before]
    if "--read-only" in argv:  # (not an option of `info`: said by its parser, one paragraph)
        assert cli.main([*argv, "info", "--json"]) == cli.EXIT_USER_ERROR
        err = capsys.readouterr().err
        assert "--read-only" in err and "not a cleo-tui command" not in err, err
        return
    assert cli.main([*argv, "info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["observations"]["live"] > 0
    assert cli.main([*argv, "recall", "invoice", "--limit", "2", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["results"]) == 2


def test_a_directory_named_like_a_command_after_options_is_still_the_project(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "info").mkdir()
    assert cli.main(["--read-only", "info"]) == cli.EXIT_USER_ERROR  # the TUI on ./info: no terminal here
    assert "terminal" in capsys.readouterr().err


def test_serve_on_a_port_in_use_says_so(demo_db):
    """It was "internal error: OSError: [Errno 98] … address already in use"."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "cleo_tui", "serve", "--db", str(demo_db), "--port", str(port)],
                                capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert f"port {port}" in result.stderr and "in use" in result.stderr and "--port 0" in result.stderr
    assert "internal error" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize("host", ["192.0.2.1", "10.255.255.1"])  # (addresses: no name is looked up)
def test_serve_on_a_host_that_is_not_this_machine_says_so(demo_db, host):
    """It was "internal error: OSError: [Errno 99] Cannot assign requested address"."""
    result = subprocess.run([sys.executable, "-m", "cleo_tui", "serve", "--db", str(demo_db), "--host", host,
                             "--port", "0"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert f"--host {host} is not an address of this machine" in result.stderr
    assert "internal error" not in result.stderr and result.stdout == ""


def test_a_host_name_that_does_not_resolve_is_said_too():
    """A name the resolver does not know was "internal error: gaierror" (checked without a lookup)."""
    import socket

    from cleo_tui.commands.common import UsageError
    from cleo_tui.commands.serve_cmd import _cannot_listen

    said = _cannot_listen(socket.gaierror(-2, "Name or service not known"), "nowhere.invalid", 8000)
    assert isinstance(said, UsageError) and "--host nowhere.invalid is not an address of this machine" in str(said)
    other = OSError(5, "Input/output error")
    assert _cannot_listen(other, "127.0.0.1", 8000) is other  # not a user's mistake: left as it is


@pytest.mark.parametrize(("settings", "said"), [
    ('{"tokenizer": "o999"}', "tokenizer: 'o999' is not a tokenizer"),
    ('{"protect": {"recalled_within_days": -3}}', "protect.recalled_within_days"),
    ('{"protect": "yes"}', "`protect` must be an object"),
    ('{"tokenizer": ', "could not be read"),
])
def test_a_bad_setting_is_said_on_stderr_and_the_output_stays_clean(settings, said, demo_db, capsys):
    """A typo in the config file turns a setting off (the tokenizer back to chars4, recall-aware
    protection off): a script's prune must say so, or it evicts what the user meant to protect."""
    from cleo_tui.config import config_path

    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text(settings)
    assert cli.main(["prune", "--db", str(demo_db), "--budget", "20k", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["tokenizer"] == "chars4"
    assert said in err and "config.json" in err, err
    assert err.count("config.json") == 1  # said once


def test_a_good_config_says_nothing(demo_db, capsys):
    from cleo_tui.config import config_path

    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text('{"tokenizer": "cl100k_base", "protect": {"used_by_task": true}}')
    assert cli.main(["prune", "--db", str(demo_db), "--budget", "20k", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["tokenizer"] == "cl100k_base" and err == ""
