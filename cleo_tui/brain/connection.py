"""Open SQLite connections the way CLEO does, or strictly read-only."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from cleo_tui.brain.errors import BrainUnreadable, NotSQLite

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 30_000


def decode_text(raw: bytes) -> str:
    """Decode TEXT values leniently: brains may hold invalid UTF-8."""
    return raw.decode("utf-8", "replace")


def check_sqlite_file(path: Path) -> None:
    """Raise a clear error when `path` is missing, unreadable or not SQLite."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(16)
    except FileNotFoundError:
        raise BrainUnreadable(f"{path} does not exist. Check the path, or create a brain with `cleo-tui init`."
                              ) from None
    except IsADirectoryError:
        raise BrainUnreadable(f"{path} is a directory, not a brain file. Pass the project directory without --db, "
                              "or the .db file with --db.") from None
    except PermissionError:
        raise BrainUnreadable(f"{path} cannot be read: permission denied. Check the file's permissions.") from None
    if header != SQLITE_MAGIC:
        what = "is empty" if not header else "is not a SQLite database"
        raise NotSQLite(f"{path} {what}. cleo-tui opens SQLite brains such as .cleo/cleo.db or .cleo/brain.db.")


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
        message = str(exc)
        if "locked" in message or "busy" in message:
            raise BrainUnreadable(f"{path} is locked by another process and stayed locked for "
                                  f"{BUSY_TIMEOUT_MS // 1000} s. Try again when it finishes, or open with "
                                  "--read-only.") from None
        if "not a database" in message or "malformed" in message:
            raise NotSQLite(f"{path} is not a readable SQLite database ({message}).") from None
        raise BrainUnreadable(f"{path} could not be opened: {message}.") from None
