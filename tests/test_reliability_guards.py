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

from cleo_tui.demo.traces import add_demo_traces
from cleo_tui.files import (
    ExportExists,
    ExportRefused,
    check_export_target,
    write_export_atomically,
)
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
    code, _out, err = run_cli("traces", "--db", str(traced), "--export", str(existing))
    _one_paragraph(code, err)
    assert "already exists" in err and "--force" in err
    assert existing.read_text(encoding="utf-8") == "keep me\n"
    code, _out, err = run_cli("traces", "--db", str(traced), "--export", str(existing), "--force")
    assert code == 0, err
    assert stat.S_IMODE(existing.stat().st_mode) == 0o644
    assert existing.read_text(encoding="utf-8").startswith("{")
    link = tmp_path / "link.jsonl"
    link.symlink_to(existing)
    code, _out, err = run_cli("traces", "--db", str(traced), "--export", str(link), "--force")
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(existing)
    assert stat.S_IMODE(existing.stat().st_mode) == 0o644
    new = tmp_path / "new.jsonl"
    code, _out, err = run_cli("traces", "--db", str(traced), "--export", str(new))
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


# --- odd --db files, layouts, integers: one paragraph, exit 2 ---------------------------

def _plain_cleo_brain(folder: Path) -> Path:
    """A brain in CLEO's layout (no cleo-tui tables yet), no WAL."""
    path = folder / "brain.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE brain_observations (id TEXT PRIMARY KEY, title TEXT, narrative TEXT)")
    conn.execute("INSERT INTO brain_observations VALUES ('O-1', 't', 'n')")
    conn.close()
    return path


def test_fifo_and_symlink_loop_as_db_are_refused_before_opening(tmp_path):
    fifo = tmp_path / "brain.db"
    os.mkfifo(fifo)  # opening a FIFO for reading blocks until a writer comes: never open it
    loop = tmp_path / "loop.db"
    loop.symlink_to(loop)
    cases = {"a FIFO": fifo, "a symlink loop": loop}
    for _, target in cases.items():
        code, _out, err = run_cli("info", "--db", str(target))
        _one_paragraph(code, err)
    project = tmp_path / "project"
    project.symlink_to(project)
    code, _out, err = run_cli("info", "--project", str(project))
    _one_paragraph(code, err)
    record(THEME, "--db names a FIFO or a symlink loop; --project a symlink loop",
           "exit 2 with one paragraph, at once (a FIFO is never opened)", "passed",
           fixed="a FIFO hung forever, a symlink loop gave exit 70 (issue 19.8, 19.13)")


LAYOUTS = {
    "brain_observations as a view": [
        "CREATE TABLE obs_real (id TEXT PRIMARY KEY, title TEXT, narrative TEXT)",
        "CREATE VIEW brain_observations AS SELECT * FROM obs_real"],
    "brain_observations WITHOUT ROWID": [
        "CREATE TABLE brain_observations (id TEXT PRIMARY KEY, title TEXT, narrative TEXT) WITHOUT ROWID"],
    "a plain table named like the FTS table": [
        "CREATE TABLE brain_observations (id TEXT PRIMARY KEY, title TEXT, narrative TEXT)",
        "CREATE TABLE brain_observations_fts (id TEXT, title TEXT, narrative TEXT)"],
    "brain_page_edges without edge_type": [
        "CREATE TABLE brain_observations (id TEXT PRIMARY KEY, title TEXT, narrative TEXT)",
        "CREATE TABLE brain_page_edges (from_id TEXT, to_id TEXT)"],
    "a foreign cleo_tui_runs table": [
        "CREATE TABLE brain_observations (id TEXT PRIMARY KEY, title TEXT, narrative TEXT)",
        "CREATE TABLE cleo_tui_runs (name TEXT)"],
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_unsupported_layouts_give_one_paragraph(tmp_path, layout):
    path = tmp_path / "brain.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in LAYOUTS[layout]:
        conn.execute(statement)
    conn.close()
    before = file_digest(path)
    for args in (("info", "--db", str(path)), ("prune", "--db", str(path), "--budget", "10"),
                 ("recall", "--db", str(path), "x")):
        code, _out, err = run_cli(*args)
        _one_paragraph(code, err)
        assert "unsupported" in err or "not a brain" in err, err
    assert file_digest(path) == before
    record(THEME, f"unsupported layout: {layout}", "info, prune and recall: exit 2 with one paragraph naming "
           "the layout; the file unchanged", "passed", fixed="exit 70 / internal error (issue 19.13)")


HUGE = str(2**70)


@pytest.mark.parametrize("args", [
    ("prune", "--undo", HUGE), ("traces", "--show", HUGE), ("traces", "--limit", HUGE),
    ("recall", "x", "--limit", HUGE), ("reflect", "--apply", "--proposal", HUGE), ("reflect", "--show", HUGE),
    ("reflect", "--undo", HUGE), ("observe", "--store", HUGE), ("traces", "--show", "-" + HUGE),
], ids=lambda a: " ".join(a[:2]) if isinstance(a, tuple) else a)
def test_integers_beyond_sqlite_range_are_a_user_mistake(tmp_path, args):
    path = _plain_cleo_brain(tmp_path)
    code, _out, err = run_cli(*args, "--db", str(path))
    _one_paragraph(code, err)
    record(THEME, f"{' '.join(a if a != HUGE else '2**70' for a in args)}", "exit 2 with one paragraph",
           "passed", fixed="OverflowError: exit 70 (issue 19.13)")


# --- where the brain would be: never "no brain found" for a damaged candidate ------------

def test_creating_a_brain_inside_cleos_project_database_is_refused(tmp_path):
    from cleo_tui.brain import create_brain
    from cleo_tui.brain.errors import NotABrain
    path = tmp_path / ".cleo" / "cleo.db"
    path.parent.mkdir()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE tasks (id TEXT PRIMARY KEY, title TEXT)")
    conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY)")
    conn.close()
    before = file_digest(path)
    with pytest.raises(NotABrain, match="tasks") as caught:
        create_brain(path)
    assert "no brain tables" in str(caught.value)
    assert file_digest(path) == before
    code, _out, err = run_cli("info", "--project", str(tmp_path))
    _one_paragraph(code, err)
    record(THEME, "'Create an empty brain here' (create_brain) on a .cleo/cleo.db holding CLEO's tasks but no "
                  "brain tables", "refused with what the file holds and what to do; the file unchanged", "passed",
           fixed="16 tables and a cleo-tui stamp were written into CLEO's project database (issue 19.2)")


@pytest.mark.parametrize("state", ["damaged", "unreadable"])
def test_a_candidate_that_cannot_be_read_is_reported_as_such(tmp_path, state):
    path = tmp_path / ".cleo" / "cleo.db"
    path.parent.mkdir()
    if state == "damaged":
        path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    else:
        _plain_cleo_brain(path.parent).rename(path)
        path.chmod(0)
        if os.access(path, os.R_OK):  # root reads anything: a directory in its place is unreadable too
            path.chmod(0o644)
            path.unlink()
            path.mkdir()
    code, _out, err = run_cli("info", "--project", str(tmp_path))
    _one_paragraph(code, err)
    assert "No brain found" not in err and "cleo.db" in err, err
    record(THEME, f"the project's .cleo/cleo.db is {state}", "exit 2 saying what is wrong with that file, not "
           "'No brain found'", "passed", fixed="reported as 'No brain found' (issue 19.2)")


def test_paths_and_exception_text_never_reach_the_terminal_raw(tmp_path):
    evil = tmp_path / "p\x1b]0;owned\x07\x1b[31mred\nline"
    evil.mkdir()
    outputs = [run_cli("info", "--project", str(evil))]                       # no brain found
    junk = evil / "junk.db"
    junk.write_text("not sqlite", encoding="utf-8")
    outputs.append(run_cli("info", "--db", str(junk)))                         # not a SQLite file
    outputs.append(run_cli("init", str(evil)))                                 # success line
    outputs.append(run_cli("init", str(evil)))                                 # already exists
    outputs.append(run_cli("info", "--db", str(evil / "missing.db")))          # does not exist
    for _, out, err in outputs:
        assert "\x1b" not in out + err and "\x07" not in out + err, (out, err)
        assert (out + err).count("\n") == 1, (out, err)
    assert outputs[2][0] == 0 and outputs[3][0] == 2
    record(THEME, "a directory name holding OSC/CSI escapes and a newline: no brain found, not SQLite, init, "
                  "init again (already exists), missing file", "every message one line, escapes shown as visible "
           "characters", "passed", fixed="the path reached the terminal raw (issue 19.14)", messages=len(outputs))


# --- NUL in a title -----------------------------------------------------------------------

def test_a_nul_in_a_title_is_shown_as_a_visible_mark_not_cut(tmp_path):
    from cleo_tui.brain import open_brain
    from cleo_tui.recall.reader import trace_results
    from cleo_tui.recall.traces import RecallTraceInput, TraceResultInput, write_recall_trace
    from cleo_tui.safe_text import cut_text
    brain = make_brain(tmp_path)
    with brain.write() as conn:
        conn.execute("INSERT INTO brain_observations (id, type, title, narrative) VALUES (?, ?, ?, ?)",
                     ("O-nul", "discovery", "before\x00after the NUL", "body\x00tail"))
    trace_id = write_recall_trace(brain, RecallTraceInput("q", "api", (TraceResultInput("O-nul", 0.5),)))
    brain.close()
    brain = open_brain(tmp_path / ".cleo" / "cleo.db", read_only=True)
    try:
        memory = trace_results(brain, trace_id)[0].memory
    finally:
        brain.close()
    assert memory.title == "before\x00after the NUL" and memory.summary == "body\x00tail"
    code, out, err = run_cli("traces", "--db", str(tmp_path / ".cleo" / "cleo.db"), "--show", str(trace_id))
    assert code == 0, err
    assert "before\u2400after the NUL" in out
    assert cut_text(b"ab\x00c\xc3\xa9\xc3", 10) == "ab\x00c\u00e9"  # a cut UTF-8 sequence is dropped
    record("hostile data", "a NUL inside an observation's title and narrative, through a trace's results and "
           "traces --show", "the whole title, the NUL shown as ␀ (cut in Python, not by SQLite)", "passed",
           fixed="SQLite's substr cut the title at the NUL in the Traces pane and traces --show (issue 19.15)")


# --- terminal input ----------------------------------------------------------------------

def test_invalid_utf8_typed_into_the_tui_does_not_kill_it(tmp_path):
    from tests.pty_capture import python_argv, run_in_pty
    from tests.reliability_fixtures import build_minimal_brain
    path = build_minimal_brain(tmp_path / "brain.db")
    output = run_in_pty(python_argv("--db", str(path)), [
        (b"O-plain", b"\xe9"),          # a Latin-1 "é": not UTF-8
        (b"", b"\x9b"),                 # an 8-bit CSI
        (b"", b"/"), (b"m/\x1b[0m", b"ZZZZ"),  # the app still takes keys: the search box echoes them
        (b"ZZZZ", b"\x11"),             # ctrl+q
    ], cwd=str(tmp_path), timeout=40)
    assert b"Traceback" not in output and b"UnicodeDecodeError" not in output
    assert b"ZZZZ" in output
    record("hostile data", "one invalid UTF-8 byte typed into the TUI on a real pty (0xE9, then an 8-bit CSI "
           "0x9B)", "the app goes on drawing and taking keys; quits cleanly", "passed",
           fixed="UnicodeDecodeError killed the TUI with a traceback (issue 19.11)")


def test_first_open_under_another_process_write_lock(tmp_path):
    from cleo_tui.brain import open_brain
    from cleo_tui.brain.store import WAITING_MESSAGE
    path = _plain_cleo_brain(tmp_path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA journal_mode = WAL")
    holder.execute("BEGIN IMMEDIATE")  # CLEO in the middle of a write
    messages: list[str] = []
    try:
        brain = open_brain(path, busy_timeout_ms=1500, on_wait=messages.append)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    try:
        assert brain.read_only and "write lock" in (brain.read_only_reason or "")
        assert brain.query("SELECT id FROM brain_observations")[0][0] == "O-1"
    finally:
        brain.close()
    assert messages == [WAITING_MESSAGE]
    again = open_brain(path)  # the lock is gone: migrated now
    assert not again.read_only
    again.close()
    record("concurrency", "first open of a never-migrated brain while another process holds the write lock",
           "after ~1 s 'waiting for CLEO's write lock…'; at the busy timeout it opens read-only with the reason, "
           "and migrates on the next open", "passed",
           fixed="30 s of silence, then 'internal error' (issue 19.9)")
