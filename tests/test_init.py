"""`cleo-tui init` leaves a project CLEO can still set up and use (issue 20 item 3), judged by
CLEO's own rules (tests/cleo_rule.py), and leaves nothing behind when it fails (issue 19 item 13)."""

from __future__ import annotations

import os
import resource
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cleo_tui import cli
from cleo_tui.brain import KIND_CLEO, KIND_CLEO_TUI, create_project_brain, locate_brain, open_brain
from cleo_tui.brain.migrations import META
from tests.cleo_rule import (
    cleo_treats_as_existing,
    cleo_would_adopt,
    cleo_would_choke_on,
    install_fake_cleo,
)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def no_cleo(tmp_path, monkeypatch):
    """A PATH on which there is no `cleo`."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return empty


@pytest.fixture
def fake_cleo(tmp_path, monkeypatch):
    """A PATH whose `cleo init` does what CLEO's does to a project directory."""
    bin_dir = tmp_path / "bin"
    install_fake_cleo(bin_dir, sys.executable)
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def git_project(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    return path


def test_without_cleo_init_makes_its_own_brain_that_cleo_neither_chokes_on_nor_adopts(tmp_path, no_cleo,
                                                                                      capsys, monkeypatch):
    project = git_project(tmp_path / "p")
    assert cli.main(["init", str(project)]) == 0
    out = capsys.readouterr().out
    own = project / ".cleo-tui" / "brain.db"
    assert str(own) in out and "no `cleo` on PATH" in out
    assert not (project / ".cleo").exists()  # .cleo/ is CLEO's: nothing of cleo-tui's in it
    assert not cleo_would_choke_on(project) and cleo_would_adopt(project) == []
    assert locate_brain(project) == own.resolve()
    brain = open_brain(own)
    assert brain.kind == KIND_CLEO_TUI and not brain.read_only
    brain.close()
    # CLEO sets the project up later: it works, and cleo-tui now opens CLEO's brain.
    install_fake_cleo(tmp_path / "bin", sys.executable)
    done = subprocess.run([str(tmp_path / "bin" / "cleo"), "init"], cwd=project, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert cleo_treats_as_existing(project / ".cleo" / "cleo.db")
    assert locate_brain(project) == (project / ".cleo" / "cleo.db").resolve()


def test_with_cleo_on_path_init_sets_the_project_up_through_cleo(tmp_path, fake_cleo, capsys):
    project = git_project(tmp_path / "p")
    assert cli.main(["init", str(project)]) == 0
    assert "cleo init" in capsys.readouterr().out
    db = project / ".cleo" / "cleo.db"
    assert cleo_treats_as_existing(db) and not cleo_would_choke_on(project)
    assert not (project / ".cleo-tui").exists()
    brain = open_brain(locate_brain(project))
    assert brain.path == db.resolve() and brain.kind == KIND_CLEO
    assert brain.features.has_table(META)  # opened once: cleo-tui's tables are in, CLEO's untouched
    brain.close()
    assert cleo_treats_as_existing(db)


def test_cleo_on_path_but_no_git_repository_falls_back_and_says_why(tmp_path, fake_cleo):
    created = create_project_brain(tmp_path / "p")
    assert not created.by_cleo and created.path == tmp_path / "p" / ".cleo-tui" / "brain.db"
    assert "git" in created.message
    assert not cleo_would_choke_on(tmp_path / "p")


def test_a_failing_cleo_init_falls_back_unless_cleo_was_required(tmp_path, fake_cleo, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_CLEO_FAIL", "disk on fire")
    project = git_project(tmp_path / "p")
    assert cli.main(["init", "--with-cleo", str(project)]) == cli.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "exit 3" in err and "disk on fire" in err and "--standalone" in err
    assert not (project / ".cleo-tui").exists()
    created = create_project_brain(project)
    assert not created.by_cleo and "disk on fire" in created.message and created.path.is_file()


def test_with_cleo_required_but_absent_is_a_user_error(tmp_path, no_cleo, capsys):
    assert cli.main(["init", "--with-cleo", str(git_project(tmp_path / "p"))]) == cli.EXIT_USER_ERROR
    assert "no `cleo` on PATH" in capsys.readouterr().err
    assert cli.main(["init", "--with-cleo", "--standalone", str(tmp_path)]) == cli.EXIT_USER_ERROR
    assert "not allowed with" in capsys.readouterr().err


def test_standalone_ignores_cleo_and_init_refuses_to_overwrite(tmp_path, fake_cleo, capsys):
    project = git_project(tmp_path / "p")
    assert cli.main(["init", "--standalone", str(project)]) == 0
    assert (project / ".cleo-tui" / "brain.db").is_file() and not (project / ".cleo").exists()
    capsys.readouterr()
    for flags in ([], ["--standalone"]):
        assert cli.main(["init", *flags, str(project)]) == cli.EXIT_USER_ERROR
        assert "already exists" in capsys.readouterr().err
    # A project CLEO already set up is never initialised again by cleo-tui.
    other = git_project(tmp_path / "q")
    (other / ".cleo").mkdir()
    sqlite3.connect(other / ".cleo" / "cleo.db").close()
    assert cli.main(["init", "--standalone", str(other)]) == cli.EXIT_USER_ERROR
    assert "already exists" in capsys.readouterr().err and not (other / ".cleo-tui").exists()


def _limit_file_size() -> None:
    """A disk that is full after 16 KB: writes past it fail (EFBIG) instead of killing the process."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))


def test_init_on_a_full_disk_leaves_nothing_behind(tmp_path):
    project = tmp_path / "p"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "cleo_tui", "init", str(project)], capture_output=True,
                          text=True, timeout=60, env=env, preexec_fn=_limit_file_size)
    assert done.returncode == cli.EXIT_USER_ERROR, done.stderr
    message = done.stderr.strip()
    assert message.startswith("cleo-tui: Cannot create") and "\n" not in message and "Traceback" not in message
    assert not project.exists()  # no 0-byte brain, no .partial, not even the directories it made
