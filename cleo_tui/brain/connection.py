"""Open SQLite connections the way CLEO does, or strictly read-only."""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from pathlib import Path

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
    comes, and a device may be anything.
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


def connect(path: Path, read_only: bool) -> sqlite3.Connection:
    """Connect in autocommit mode, so no read transaction outlives a statement.

    Writes open their own short `BEGIN IMMEDIATE` transaction (see Brain.write).
    Read-only connections use SQLite's `mode=ro`; when the directory cannot hold
    the -shm file of a WAL database, `immutable=1` is the only way to read it.
    """
    try:
        if read_only:
            uri = path.resolve().as_uri() + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                                   isolation_level=None, check_same_thread=False)
            try:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.OperationalError:
                conn.close()
                if os.access(path.parent, os.W_OK):
                    raise
                conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro&immutable=1", uri=True,
                                       isolation_level=None, check_same_thread=False)
        else:
            conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000,
                                   isolation_level=None, check_same_thread=False)
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
        message = safe_text(exc)
        path = safe_path(path)  # type: ignore[assignment]  # shown from here on
        if "locked" in message or "busy" in message:
            raise BrainUnreadable(f"{path} is locked by another process and stayed locked for "
                                  f"{BUSY_TIMEOUT_MS // 1000} s. Try again when it finishes, or open with "
                                  "--read-only.") from None
        if "not a database" in message or "malformed" in message:
            raise NotSQLite(f"{path} is not a readable SQLite database ({message}).") from None
        raise BrainUnreadable(f"{path} could not be opened: {message}.") from None
