"""Open SQLite connections the way CLEO does, or strictly read-only."""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import weakref
from pathlib import Path

from cleo_tui.brain import side_files
from cleo_tui.brain.errors import BrainUnreadable, NotSQLite
from cleo_tui.safe_text import safe_path, safe_text

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 30_000


def decode_text(raw: bytes) -> str:
    """Decode TEXT values leniently: brains may hold invalid UTF-8."""
    return raw.decode("utf-8", "replace")


def check_sqlite_file(path: Path) -> None:
    """Raise a clear error when `path` is missing, unreadable, not a regular file or not SQLite.

    The file is stat-ed before it is opened: opening a FIFO blocks until a writer
    comes, and a device may be anything. A file one of our connections has open is
    not opened again (POSIX drops a process's locks when any descriptor closes).
    """
    shown = safe_path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise BrainUnreadable(
            f"{shown} does not exist. Check the path, or create a brain with `cleo-tui init`.") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise BrainUnreadable(f"{shown} is a symlink loop (a link that points back at itself). "
                                  "Pass the brain's real path with --db.") from None
        raise BrainUnreadable(f"{shown} cannot be read ({safe_text(exc.strerror or exc)}). "
                              "Check the path and its permissions.") from None
    if stat.S_ISDIR(info.st_mode):
        raise BrainUnreadable(f"{shown} is a directory, not a brain file. "
                              "Pass the project directory without --db, or the .db file with --db.")
    if not stat.S_ISREG(info.st_mode):
        raise BrainUnreadable(f"{shown} is not a regular file (a FIFO, device or socket); a brain is a "
                              "SQLite file such as .cleo/cleo.db. Nothing was opened.")
    if side_files.in_use_here((info.st_dev, info.st_ino)):
        return  # open here already (so SQLite); closing another descriptor would drop its locks
    try:
        with open(path, "rb") as handle:
            header = handle.read(16)
    except PermissionError:
        raise BrainUnreadable(f"{shown} cannot be read: permission denied. Check the file's permissions.") from None
    except OSError as exc:
        raise BrainUnreadable(f"{shown} cannot be read ({safe_text(exc.strerror or exc)}).") from None
    if header != SQLITE_MAGIC:
        what = "is empty" if not header else "is not a SQLite database"
        raise NotSQLite(f"{shown} {what}. cleo-tui opens SQLite brains such as .cleo/cleo.db or .cleo/brain.db.")


def inserted_id(cursor: sqlite3.Cursor) -> int:
    """The rowid an INSERT just made (sqlite3 types it as optional: no INSERT, no id)."""
    if cursor.lastrowid is None:
        raise RuntimeError("the statement inserted no row")
    return cursor.lastrowid


def is_writable(path: Path) -> bool:
    """True when both the file and its directory (for -wal/-shm) can be written."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


class BrainConnection(sqlite3.Connection):
    """A connection that, on close, removes the -wal/-shm its opening created (brain/side_files.py).

    `stale_reason` says why what it reads may be out of date (None: it reads the
    brain as it is).
    """

    stale_reason: str | None = None
    _release: weakref.finalize[[side_files.Identity, str], BrainConnection] | None = None

    def track(self, key: side_files.Identity, real: Path) -> None:
        """Count this connection as open on the file `key` until it is closed or collected."""
        self._release = weakref.finalize(self, side_files.release, key, str(real))
        self._release.atexit = False  # at exit the process's locks go anyway; never touch files then

    def close(self) -> None:
        super().close()
        if self._release is not None:
            self._release()  # once: later calls and the collector do nothing


def _sqlite_connect(target: str, uri: bool, timeout_s: float) -> BrainConnection:
    return sqlite3.connect(target, uri=uri, timeout=timeout_s, isolation_level=None,
                           check_same_thread=False, factory=BrainConnection)


def _stale_reason(real: Path) -> str | None:
    """Why an `immutable=1` read misses committed data: a -wal with frames it ignores."""
    try:
        size = os.path.getsize(f"{real}-wal")
    except OSError:
        return None
    if size == 0:
        return None
    shm = "cannot be read" if os.path.lexists(f"{real}-shm") else "is missing"
    return (f"the brain's directory is not writable and its {real.name}-shm {shm}, so the changes "
            f"waiting in {real.name}-wal ({size:,} bytes) cannot be read: what is shown may miss the latest "
            "writes. Open it where the directory is writable, or once CLEO has run there")


def open_sqlite(path: Path, read_only: bool, timeout_s: float | None = None) -> BrainConnection:
    """A connection in autocommit mode that has read the schema once; raw sqlite3 errors.

    Read-only: `mode=ro`, which keeps SQLite's locking, so CLEO may write meanwhile;
    the -wal/-shm it has to create beside a WAL brain are removed again when the
    last of our connections closes (brain/side_files.py says how, safely). Only
    where `mode=ro` cannot open at all, because the directory is not writable and
    the -wal/-shm cannot be made, does it read with `immutable=1` (no locks, no
    files); committed changes still in a -wal are then invisible, which
    `stale_reason` says.
    """
    if timeout_s is None:  # read at each call, not at import: a caller (or a test) may lower it
        timeout_s = BUSY_TIMEOUT_MS / 1000
    real = path.resolve()
    key = side_files.identity(real)
    if key is None:
        return _sqlite_connect(str(path), False, timeout_s)  # gone: let SQLite say so
    side_files.register(key)
    before = side_files.side_identities(real)
    conn: BrainConnection | None = None
    try:
        if read_only:
            conn = _sqlite_connect(real.as_uri() + "?mode=ro", True, timeout_s)
            try:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.OperationalError:
                conn.close()
                conn = None
                if os.access(real.parent, os.W_OK):
                    raise
                conn = _sqlite_connect(real.as_uri() + "?mode=ro&immutable=1", True, timeout_s)
                conn.stale_reason = _stale_reason(real)
        else:
            conn = _sqlite_connect(str(path), False, timeout_s)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        if conn is not None:
            conn.close()
        side_files.note_created(key, before, real)
        side_files.release(key, real)
        raise
    side_files.note_created(key, before, real)
    conn.track(key, real)
    return conn


def connect(path: Path, read_only: bool) -> BrainConnection:
    """Connect in autocommit mode, so no read transaction outlives a statement.

    Writes open their own short `BEGIN IMMEDIATE` transaction (see Brain.write).
    Read-only connections: see `open_sqlite`. Errors become one-paragraph BrainErrors.
    """
    conn: BrainConnection | None = None
    try:
        conn = open_sqlite(path, read_only)
        conn.text_factory = decode_text
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        if read_only:
            conn.execute("PRAGMA query_only = ON")
        else:
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.DatabaseError as exc:
        if conn is not None:
            conn.close()
        message = safe_text(exc)
        path = safe_path(path)  # type: ignore[assignment]  # shown from here on
        if "locked" in message or "busy" in message:
            raise BrainUnreadable(f"{path} is locked by another process and stayed locked for "
                                  f"{BUSY_TIMEOUT_MS // 1000} s. Try again when it finishes, or open with "
                                  "--read-only.") from None
        if "not a database" in message or "malformed" in message:
            raise NotSQLite(f"{path} is not a readable SQLite database ({message}).") from None
        raise BrainUnreadable(f"{path} could not be opened: {message}.") from None
