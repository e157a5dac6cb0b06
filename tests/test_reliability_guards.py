"""Hostile targets and odd files (issue 19): exports that must never overwrite a brain, a
device or a directory; odd --db files; user mistakes that must be one paragraph, exit 2.

Promise (DESIGN §4): no data loss, a user's problem is one clear paragraph, never a traceback.
"""

from __future__ import annotations

import os
import random
import sqlite3
import stat
from pathlib import Path

import pytest

from cleo_tui.files import ExportExists, ExportRefused, check_export_target, write_export_atomically
from cleo_tui.recall.demo_traces import add_demo_traces
from tests.brain_fixtures import file_digest
from tests.recall_fixtures import make_brain
from tests.reliability_fixtures import record, run_cli

THEME = "file problems"


@pytest.fixture
def traced(tmp_path: Path) -> Path:
    """A CLEO brain with demo recall traces; returns the brain's path."""
    brain = make_brain(tmp_path)
    add_demo_traces(brain, random.Random(7))
    brain.close()
    return tmp_path / ".cleo" / "cleo.db"


def _one_paragraph(code: int, err: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err
    assert err.count("\n") == 1 and err.startswith("cleo-tui: ")


def test_export_refuses_the_brain_its_side_files_sqlite_files_and_non_regular_files(traced, tmp_path):
    before = file_digest(traced)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t(x)").connection.close()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    refused = {"the open brain": traced, "its -wal": Path(f"{traced}-wal"), "its -shm": Path(f"{traced}-shm"),
               "another SQLite file": other, "a FIFO": fifo, "a directory": tmp_path, "/dev/null": Path("/dev/null")}
    for what, target in refused.items():
        code, out, err = run_cli("traces", "--db", str(traced), "--export", str(target), "--force")
        _one_paragraph(code, err)
        assert "Exported" not in out, what
    assert file_digest(traced) == before
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    record(THEME, "traces --export --force at the open brain, its -wal/-shm, another SQLite file, a FIFO, "
                  "a directory, /dev/null", "exit 2 with one paragraph; nothing written; the brain's bytes unchanged",
           "passed", fixed="the export replaced whatever the path named, the brain included (issue 19.1)",
           targets=len(refused))


def test_export_needs_force_keeps_the_mode_and_writes_through_a_symlink(traced, tmp_path):
    existing = tmp_path / "old.jsonl"
    existing.write_text("keep me\n", encoding="utf-8")
    existing.chmod(0o644)
    code, out, err = run_cli("traces", "--db", str(traced), "--export", str(existing))
    _one_paragraph(code, err)
    assert "already exists" in err and "--force" in err
    assert existing.read_text(encoding="utf-8") == "keep me\n"
    code, out, err = run_cli("traces", "--db", str(traced), "--export", str(existing), "--force")
    assert code == 0, err
    assert stat.S_IMODE(existing.stat().st_mode) == 0o644
    assert existing.read_text(encoding="utf-8").startswith("{")
    link = tmp_path / "link.jsonl"
    link.symlink_to(existing)
    code, out, err = run_cli("traces", "--db", str(traced), "--export", str(link), "--force")
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(existing)
    assert stat.S_IMODE(existing.stat().st_mode) == 0o644
    new = tmp_path / "new.jsonl"
    code, out, err = run_cli("traces", "--db", str(traced), "--export", str(new))
    assert code == 0 and new.is_file()
    record(THEME, "traces --export over an existing file (0644), through a symlink, to a new file",
           "refused without --force ('already exists'); with it: the mode kept, the symlink kept and its "
           "target written", "passed", fixed="the export replaced the symlink and set mode 0600 (issue 19.1)")


def test_export_guard_domain_function(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(ExportRefused, match="loop"):
        check_export_target(loop)
    plain = tmp_path / "a.txt"
    plain.write_text("x", encoding="utf-8")
    with pytest.raises(ExportExists):
        write_export_atomically(plain, lambda handle: handle.write("y"))
    assert write_export_atomically(plain, lambda handle: handle.write("yz"), force=True) == 2
    assert plain.read_text(encoding="utf-8") == "yz"
