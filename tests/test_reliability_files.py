"""File problems: read-only file and directory, full disk, the brain deleted or replaced while
open, files that are not (readable) SQLite, a brain from a newer cleo-tui.

Promise (DESIGN §4 and COMMON): a user's problem is one clear paragraph, never a traceback,
and nothing is written half-way.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleo_tui.brain import ReadOnlyBrain, open_brain
from cleo_tui.brain.errors import BrainUnwritable
from cleo_tui.brain.observations import ObservationQuery, count_observations
from cleo_tui.memory.curation import evict_observation
from cleo_tui.memory.pruner import commit_prune, prepare_pool
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.widgets.modals import MessageModal
from tests.brain_fixtures import file_digest
from tests.reliability_fixtures import (
    build_minimal_brain,
    integrity,
    record,
    run_cli,
    settle_expecting_failure,
    table_dump,
)
from tests.ui_helpers import settle

THEME = "file problems"


def _brain(folder: Path) -> Path:
    """An old CLEO brain.db with its WAL folded in (so the file alone is the brain)."""
    path = build_minimal_brain(folder / ".cleo" / "brain.db")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


@contextlib.contextmanager
def unwritable(target: Path) -> Iterator[str]:
    """Make `target` unwritable for real: `chattr +i` as root (root ignores mode bits), else chmod."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(target)], check=True)
        how = "chattr +i (root)"
    else:
        mode = target.stat().st_mode
        target.chmod(0o555 if target.is_dir() else 0o444)
        how = "chmod a-w"
    try:
        yield how
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(target)], check=True)
        else:
            target.chmod(mode)


@pytest.mark.parametrize("what", ["file", "directory"])
def test_unwritable_file_or_directory_opens_read_only(tmp_path, what):
    path = _brain(tmp_path)
    digest = file_digest(path)
    with unwritable(path if what == "file" else path.parent) as how:
        brain = open_brain(path)
        assert brain.read_only and "not writable" in brain.read_only_reason
        assert count_observations(brain) > 0
        with pytest.raises(ReadOnlyBrain, match="read-only"):
            evict_observation(brain, "O-plain0001")
        brain.close()
        code, out, err = run_cli("prune", "--budget", "100", "--apply", "--yes", "--db", str(path))
        assert code == 2 and err.startswith("cleo-tui: This brain is read-only") and "Traceback" not in err
        code, out, err = run_cli("info", "--db", str(path))
        assert code == 0 and "observations:" in out
    assert file_digest(path) == digest
    record(THEME, f"unwritable brain {what} ({how})", "opens read-only with the reason; writes refused "
           "with one paragraph (exit 2); reads work; the file is unchanged", "passed")


def test_read_only_flag_writes_nothing(tmp_path):
    path = _brain(tmp_path)
    digest = file_digest(path)
    brain = open_brain(path, read_only=True)
    assert brain.read_only_reason == "opened with --read-only"
    with pytest.raises(ReadOnlyBrain):
        commit_prune(brain, prepare_pool(brain).preview(100))
    brain.close()
    code, _out, _err = run_cli("info", "--db", str(path), "--json")
    assert code == 0
    assert file_digest(path) == digest
    record(THEME, "--read-only / read-only open, then a prune commit", "ReadOnlyBrain; file bytes unchanged",
           "passed")


def test_full_disk_writes_nothing_and_says_so(tmp_path):
    path = _brain(tmp_path)
    brain = open_brain(path)
    before = table_dump(path)
    preview = prepare_pool(brain).preview(100)
    pages = brain.scalar("PRAGMA page_count")
    brain.conn.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full: no page may be added
    big = "x" * 200_000  # a journal entry this size needs new pages
    with pytest.raises(BrainUnwritable, match="full"):
        with brain.write() as conn:
            conn.execute("INSERT INTO cleo_tui_runs(kind, created_at, summary) VALUES ('prune', 'now', ?)", (big,))
    with pytest.raises(BrainUnwritable, match=r"disk .* is full"):
        for _ in range(3):  # the prune's journal rows outgrow the last free pages
            commit_prune(brain, preview)
            brain.conn.execute("UPDATE brain_observations SET invalid_at = NULL")
    assert not brain.conn.in_transaction
    brain.conn.execute("UPDATE brain_observations SET invalid_at = NULL")
    brain.conn.execute("DELETE FROM cleo_tui_run_changes")
    brain.conn.execute("DELETE FROM cleo_tui_runs")
    brain.conn.execute("PRAGMA max_page_count = 1073741823")  # space again: the same commit works
    assert commit_prune(brain, prepare_pool(brain).preview(100)) > 0
    brain.close()
    assert integrity(path) == "ok"
    assert set(table_dump(path)) == set(before)
    record(THEME, "full disk (PRAGMA max_page_count on the writing connection)", "BrainUnwritable 'the disk "
           "holding … is full; nothing was written', the transaction rolled back, the connection usable; "
           "integrity ok", "passed", fixed="a full disk surfaced as a raw sqlite3.OperationalError")


def test_brain_deleted_while_open_refuses_writes(tmp_path):
    path = _brain(tmp_path)
    brain = open_brain(path)
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    assert count_observations(brain) > 0  # reads go on from the open file
    with pytest.raises(BrainUnwritable, match="deleted, moved or replaced"):
        evict_observation(brain, "O-plain0001")
    brain.close()
    assert not path.exists()
    record(THEME, "brain file deleted while open", "reads go on; writes refused with a clear message "
           "(SQLite would write into the unlinked file and lose everything)", "passed",
           fixed="writes went on into the deleted (or replaced) file: every change silently lost")


async def test_brain_replaced_while_open_refuses_writes_in_the_tui(tmp_path):
    path = _brain(tmp_path)
    other = _brain(tmp_path / "other")
    brain = open_brain(path)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        os.replace(other, path)  # e.g. restored from a backup or re-created by CLEO
        replaced = file_digest(path)
        app.screen.query_one("#obs-table").focus()
        await pilot.press("e", "y")
        await settle_expecting_failure(app, pilot)
        assert isinstance(app.screen, MessageModal)
        shown = "\n".join(s.text for s in app.screen._compositor.render_strips())
        assert "replaced" in shown and "nothing was written" in shown
    brain.close()
    assert file_digest(path) == replaced
    check = open_brain(path, read_only=True)
    assert count_observations(check, ObservationQuery(state="evicted")) == 0
    check.close()
    record(THEME, "brain file replaced by another while the TUI has it open, then evict",
           "popup: deleted, moved or replaced … nothing was written; neither file changed", "passed")


CORRUPT = {
    "a text file": lambda p: p.write_text("hello, I am not a database\n"),
    "an empty file": lambda p: p.write_bytes(b""),
    "SQLite header then garbage": lambda p: p.write_bytes(b"SQLite format 3\x00" + os.urandom(3000)),
    "a directory": lambda p: p.mkdir(),
}


@pytest.mark.parametrize("case", list(CORRUPT))
def test_not_a_sqlite_brain_gives_one_paragraph(tmp_path, case):
    path = tmp_path / "brain.db"
    CORRUPT[case](path)
    for args in (("info",), ("prune", "--budget", "100"), ("recall", "word"), ()):
        code, _out, err = run_cli(*args, "--db", str(path))  # () = the TUI itself
        assert code == 2, (args, err)
        assert err.startswith("cleo-tui: ") and err.count("\n") == 1 and "Traceback" not in err
    record(THEME, f"--db names {case}", "CLI and TUI: exit 2 with one paragraph", "passed")


def test_damaged_pages_give_one_paragraph(tmp_path):
    path = _brain(tmp_path)
    conn = sqlite3.connect(path)
    page_size, pages = conn.execute("PRAGMA page_size").fetchone()[0], conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    with open(path, "r+b") as handle:  # the second half of the file overwritten
        handle.seek(page_size * (pages // 2))
        handle.write(b"\xde\xad" * (page_size * (pages - pages // 2) // 2))
    for args in (("prune", "--budget", "100"), ("recall", "plain")):
        code, _out, err = run_cli(*args, "--db", str(path))
        assert code == 2 and "damaged" in err and "internal error" not in err, (args, err)
    record(THEME, "brain with damaged pages (second half overwritten)", "exit 2: 'the brain file is damaged', "
           "not an internal error", "passed",
           fixed="a damaged brain gave 'internal error: DatabaseError' (exit 70)")


def test_brain_from_a_newer_cleo_tui_opens_read_only(tmp_path):
    path = _brain(tmp_path)
    brain = open_brain(path)  # migrates: cleo-tui's tables exist
    brain.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE cleo_tui_meta SET value = '999' WHERE key = 'schema_version'")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    digest = file_digest(path)
    brain = open_brain(path)
    assert brain.read_only and brain.read_only_reason == "it was written by a newer cleo-tui"
    brain.close()
    code, _out, err = run_cli("prune", "--budget", "100", "--apply", "--yes", "--db", str(path))
    assert code == 2 and "newer cleo-tui" in err
    assert file_digest(path) == digest
    record(THEME, "brain whose cleo_tui_meta schema_version is newer than this cleo-tui",
           "opens read-only with the reason; a commit is refused naming it; the file unchanged", "passed")


def test_relative_path_survives_a_change_of_directory(tmp_path, monkeypatch):
    """The deleted-or-replaced check must not mistake a chdir for a replaced brain."""
    path = _brain(tmp_path)
    monkeypatch.chdir(path.parent.parent)
    brain = open_brain(Path(".cleo/brain.db"))
    monkeypatch.chdir(tmp_path.parent)
    assert evict_observation(brain, "O-plain0001") > 0
    brain.close()
