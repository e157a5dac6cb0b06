"""Read-only sessions leave the brain's directory as they found it (issue 19, item 3).

SQLite creates `-wal`/`-shm` beside a WAL database even for a `mode=ro` connection
and, being read-only, never removes them; for a 0444 brain they are created 0444 and
every later writer fails. These tests open WAL brains read-only every way cleo-tui
does (the API, `info`, a hippo store, a reader, the TUI) and check that no file is
left behind, that files someone else uses are kept, and that a brain whose `-wal`
cannot be read says its data may be stale.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cleo_tui.brain import open_brain
from cleo_tui.brain.errors import BrainUnwritable
from cleo_tui.brain.observations import count_observations
from cleo_tui.ui.widgets.chrome import STALE_MARK, BrainHeader, header_text
from tests.brain_fixtures import insert_observations, make_cleo_consolidated, make_hippo, observation
from tests.reliability_fixtures import record, run_cli
from tests.test_reliability_files import unwritable

THEME = "file problems"
ROWS = 12
ROOT = Path(__file__).resolve().parent.parent


def _wal_brain(folder: Path) -> Path:
    """A CLEO brain in WAL mode, closed by its writer: no -wal/-shm beside it."""
    path = make_cleo_consolidated(folder / ".cleo" / "cleo.db")
    insert_observations(path, [observation(i) for i in range(ROWS)])
    assert _listing(path.parent) == {"cleo.db"}
    return path


def _listing(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def _states(folder: Path) -> dict[str, tuple[int, int, int, int]]:
    """Each file's inode, size, mode and mtime: what "untouched" compares."""
    return {p.name: (s.st_ino, s.st_size, s.st_mode, s.st_mtime_ns)
            for p in folder.iterdir() for s in [p.stat()]}


def _count(path: Path) -> int:
    conn = sqlite3.connect(path)  # a writer, as CLEO: its close folds the -wal in and removes both
    try:
        return int(conn.execute("SELECT count(*) FROM brain_observations").fetchone()[0])
    finally:
        conn.close()


def _cleo_process(path: Path, script: str) -> subprocess.Popen:
    """A CLEO stand-in in its own process, driven line by line over stdin/stdout."""
    return subprocess.Popen([sys.executable, "-c", script, str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)


def test_read_only_api_open_leaves_no_side_files(tmp_path):
    path = _wal_brain(tmp_path)
    brain = open_brain(path, read_only=True)
    assert count_observations(brain) == ROWS
    reader = brain.reader()  # a second connection of ours: files stay until the last one closes
    brain.close()
    assert count_observations(reader) == ROWS
    reader.close()
    assert _listing(path.parent) == {"cleo.db"}
    record(THEME, "read-only open of a WAL brain (API, with a second reader), then close",
           "no -wal/-shm left beside the brain", "passed",
           fixed="SQLite's -wal/-shm stayed after every read-only session (issue 19.3)")


def test_info_leaves_no_side_files(tmp_path):
    path = _wal_brain(tmp_path)
    code, out, _err = run_cli("info", "--db", str(path))
    assert code == 0 and f"observations:  {ROWS - 1} live" in out
    assert _listing(path.parent) == {"cleo.db"}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "cleo_tui", "info", "--project", str(tmp_path)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert _listing(path.parent) == {"cleo.db"}  # locating the brain opens it too
    record(THEME, "cleo-tui info (in process, and `python -m cleo_tui info --project`) on a WAL brain",
           "no -wal/-shm left", "passed", fixed="info left -wal/-shm beside the brain (issue 19.3)")


def test_hippo_store_leaves_no_side_files(tmp_path):
    path = make_hippo(tmp_path / "hippo.db")
    assert _listing(tmp_path) == {"hippo.db"}
    brain = open_brain(path)
    assert brain.read_only
    brain.close()
    assert _listing(tmp_path) == {"hippo.db"}


def test_read_only_0444_brain_leaves_no_side_files_and_writers_work_after(tmp_path):
    path = _wal_brain(tmp_path)
    path.chmod(0o444)
    brain = open_brain(path, read_only=True)
    assert count_observations(brain) == ROWS
    brain.close()
    assert _listing(path.parent) == {"cleo.db"}  # none created 0444 to block the next writer
    path.chmod(0o644)
    insert_observations(path, [observation(ROWS)])
    assert _count(path) == ROWS + 1
    record(THEME, "read-only open of a 0444 WAL brain in a writable directory, then the brain made writable",
           "no -wal/-shm left (they would be 0444); the next writer works", "passed",
           fixed="0444 -wal/-shm stayed and made every writer fail (issue 19.3)")


def test_0444_brain_in_0555_directory(tmp_path):
    path = _wal_brain(tmp_path)
    path.chmod(0o444)
    path.parent.chmod(0o555)
    try:
        with unwritable(path.parent) as how:
            brain = open_brain(path)
            assert brain.read_only and brain.stale_reason is None
            assert count_observations(brain) == ROWS
            brain.close()
            code, out, _err = run_cli("info", "--db", str(path))
            assert code == 0 and "stale" not in out
            assert _listing(path.parent) == {"cleo.db"}
    finally:
        path.parent.chmod(0o755)
        path.chmod(0o644)
    record(THEME, f"0444 WAL brain in a 0555 directory ({how})", "opens read-only, reads every row, "
           "creates nothing, no stale notice", "passed")


def _brain_with_pending_wal(folder: Path) -> Path:
    """A brain whose committed rows are still in its -wal, and no -shm (copied while CLEO had it open)."""
    source = _wal_brain(folder / "source")
    conn = sqlite3.connect(source, isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("PRAGMA journal_mode").fetchone()
    conn.execute("INSERT INTO brain_observations(id, type, title, narrative, created_at) "
                 "VALUES ('O-in-wal', 'change', 'only in the wal', 'x', '2026-05-01 10:00:00')")
    target = folder / "copy" / ".cleo"
    target.mkdir(parents=True)
    shutil.copy(source, target / "cleo.db")
    shutil.copy(f"{source}-wal", target / "cleo.db-wal")
    conn.close()
    assert _listing(target) == {"cleo.db", "cleo.db-wal"}
    return target / "cleo.db"


def _tui_header(path: Path) -> str:
    """The header line of the app opened on `path` (read-only), once it has drawn."""
    from cleo_tui.ui.app import CleoApp

    async def run() -> str:
        app = CleoApp(brain=open_brain(path, read_only=True))
        async with app.run_test(size=(160, 30)) as pilot:
            await pilot.pause()
            text = str(app.screen.query_one(BrainHeader).render())
        app.close_brains()
        return text

    return asyncio.run(run())


def test_unreadable_wal_gives_a_stale_notice(tmp_path):
    path = _brain_with_pending_wal(tmp_path)
    before = _states(path.parent)
    with unwritable(path.parent):
        brain = open_brain(path)
        try:
            assert brain.read_only
            assert brain.stale_reason and "-shm" in brain.stale_reason and "-wal" in brain.stale_reason
            assert count_observations(brain) == ROWS  # the row in the -wal cannot be read
        finally:
            brain.close()
        code, out, _err = run_cli("info", "--db", str(path))
        assert code == 0 and "stale:" in out and "-wal" in out
        code, out, _err = run_cli("info", "--db", str(path), "--json")
        assert code == 0 and '"stale_reason":' in out and '"stale_reason": null' not in out
        assert STALE_MARK in _tui_header(path)
        assert _states(path.parent) == before
    line = header_text(None, str(path), "CLEO brain", "read-only", 200, stale="may be stale")
    assert "STALE" in line.plain and "may be stale" in line.plain
    narrow = header_text(None, str(path), "CLEO brain", "read-only", 40, stale="may be stale")
    assert "STALE" in narrow.plain
    record(THEME, "committed rows only in the -wal, no -shm, directory not writable",
           "opens read-only with a stale notice (API, info, info --json, the TUI header); nothing created",
           "passed", fixed="the -wal's rows were silently ignored (issue 19.3)")


def test_existing_side_files_stay_untouched(tmp_path):
    path = _brain_with_pending_wal(tmp_path)
    wal = Path(f"{path}-wal")
    before = wal.read_bytes()
    brain = open_brain(path, read_only=True)  # the directory is writable: SQLite adds a -shm
    assert count_observations(brain) == ROWS + 1 and brain.stale_reason is None
    brain.close()
    assert _listing(path.parent) == {"cleo.db", "cleo.db-wal"}  # only what it created is gone
    assert wal.read_bytes() == before
    assert _count(path) == ROWS + 1


HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("SELECT count(*) FROM brain_observations").fetchone()
print("ready", flush=True)
sys.stdin.readline()
conn.execute("INSERT INTO brain_observations(id, type, title, narrative, created_at) "
             "VALUES ('O-holder', 'change', 'held', 'x', '2026-05-02 10:00:00')")
conn.close()
print("done", flush=True)
"""


def test_side_files_another_process_uses_are_kept(tmp_path):
    path = _wal_brain(tmp_path)
    brain = open_brain(path, read_only=True)
    count_observations(brain)  # our connection made the -wal/-shm
    holder = _cleo_process(path, HOLDER)
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "ready"
        brain.close()
        assert _listing(path.parent) == {"cleo.db", "cleo.db-wal", "cleo.db-shm"}  # CLEO has them open
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "done"
    finally:
        holder.kill()
        holder.wait()
    assert _listing(path.parent) == {"cleo.db"}  # CLEO, the last one out, folded them in
    assert _count(path) == ROWS + 1
    record(THEME, "read-only session closes while a CLEO process still has the brain open",
           "its -wal/-shm are kept; CLEO's later write lands", "passed")


def test_cleo_rows_written_meanwhile_are_never_lost(tmp_path):
    path = _wal_brain(tmp_path)
    brain = open_brain(path, read_only=True)
    count_observations(brain)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "tests.cleo_writer", str(path), "30", "10"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and "done 30" in done.stdout, done.stdout
    assert os.path.getsize(f"{path}-wal") > 0  # CLEO could not fold its rows in while we read
    assert count_observations(brain) == ROWS + 30
    brain.close()
    assert _count(path) == ROWS + 30
    record(THEME, "CLEO writes 30 rows and exits while a read-only session reads, then the session closes",
           "the -wal holding CLEO's rows is kept; every row is there afterwards", "passed",
           cleo_rows_written=30)


def test_tui_read_only_session_leaves_no_side_files(tmp_path):
    from cleo_tui.ui.app import CleoApp

    path = _wal_brain(tmp_path)

    async def run() -> None:
        app = CleoApp(brain=open_brain(path, read_only=True))
        async with app.run_test() as pilot:
            await pilot.pause()
            app.session.watcher.check_now()  # the watcher's own connection is open too
        app.close_brains()

    asyncio.run(run())
    assert _listing(path.parent) == {"cleo.db"}


@pytest.mark.parametrize("what", ["unwritable -wal/-shm (left by an old read-only session)",
                                  "a directory as its -shm"])
def test_first_migration_refused_is_one_paragraph(tmp_path, what):
    path = _wal_brain(tmp_path)
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    wal.write_bytes(b"")
    if what == "a directory as its -shm":
        shm.mkdir()
        locked: list[Path] = []
    else:
        shm.write_bytes(b"")
        locked = [wal, shm]
    for side in locked:  # what an old read-only session left: not writable
        side.chmod(0o444)
        if os.geteuid() == 0:
            subprocess.run(["chattr", "+i", str(side)], check=True)
    try:
        with pytest.raises(BrainUnwritable) as raised:
            open_brain(path)
        message = str(raised.value)
        assert "nothing was written" in message.lower() and "\n" not in message
        assert ("cleo.db-wal" if locked else "cleo.db-shm") in message and "--read-only" in message
        code, _out, err = run_cli("prune", "--budget", "100", "--apply", "--yes", "--db", str(path))
        assert code == 2 and err.startswith("cleo-tui: ") and "internal error" not in err
    finally:
        for side in locked:
            if os.geteuid() == 0:
                subprocess.run(["chattr", "-i", str(side)], check=True)
    record(THEME, f"first migration of a CLEO brain with {what}",
           "BrainUnwritable: one paragraph naming the side file; exit 2", "passed",
           fixed="the message blamed the brain file's permissions, which were fine (issue 19.3)" if locked else "")


def test_brain_of_an_older_cleo_tui_is_migrated_not_refused(tmp_path):
    """Not item 3, found while measuring it: the layout check wanted today's columns in tables
    an older cleo-tui made (the bench brains, at schema version 3), and refused the brain."""
    from cleo_tui.brain.migrations import LATEST_VERSION, MIGRATIONS, migrate, schema_version

    path = _wal_brain(tmp_path)
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, MIGRATIONS[:3]) == 3
    conn.close()
    brain = open_brain(path)
    try:
        assert not brain.read_only and schema_version(brain.conn) == LATEST_VERSION
    finally:
        brain.close()
    record(THEME, "brain written by an older cleo-tui (schema version 3)", "opens and is migrated to the "
           "latest version", "passed", fixed="refused as 'unsupported layout: a table named cleo_tui_runs that "
           "cleo-tui did not create' (it lacked the columns later versions add)")
