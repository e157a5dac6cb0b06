"""Locate, open, create and describe a brain.

A `Brain` wraps one SQLite connection in autocommit mode behind a lock, so a
worker thread may use it, no read transaction outlives a query, and every write
is one short `BEGIN IMMEDIATE` transaction that a read-only brain refuses.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.connection import BUSY_TIMEOUT_MS, check_sqlite_file, connect, is_writable
from cleo_tui.brain.errors import BrainBusy, BrainNotFound, BrainUnwritable, NotABrain, ReadOnlyBrain
from cleo_tui.brain.journal import interrupted_notes, recover_interrupted
from cleo_tui.brain.migrations import LATEST_VERSION, META, migrate, schema_version
from cleo_tui.brain.sweep_gate import ensure_no_sweep, sweep_active

KIND_CLEO = "cleo"              # consolidated .cleo/cleo.db (brain beside tasks etc.)
KIND_CLEO_LEGACY = "cleo-legacy"  # .cleo/brain.db of CLEO before 2026.6.0
KIND_CLEO_TUI = "cleo-tui"      # created by `cleo-tui init` or `cleo-tui demo`
KIND_HIPPO = "hippo"            # hippo-memory store, opened for its traces

# cleo-tui's own brain in a project CLEO has not set up: outside .cleo/, which CLEO owns
# (see brain/create.py for why not .cleo/cleo.db or .cleo/brain.db).
OWN_BRAIN = Path(".cleo-tui") / "brain.db"

KIND_LABELS = {
    KIND_CLEO: "CLEO brain",
    KIND_CLEO_LEGACY: "CLEO legacy brain",
    KIND_CLEO_TUI: "cleo-tui brain",
    KIND_HIPPO: "hippo store",
}

# Tables that a brain-only file may hold besides CLEO's brain_* tables.
_OWN_PREFIXES = ("brain_", "sqlite_", "cleo_tui_", "recall_trace")


@dataclass
class Features:
    """Which optional tables and columns this brain has (read from the file, not assumed)."""

    conn: sqlite3.Connection
    tables: frozenset[str]
    _columns: dict[str, frozenset[str]] = field(default_factory=dict)

    def has_table(self, table: str) -> bool:
        return table in self.tables

    def columns(self, table: str) -> frozenset[str]:
        """The column names of `table` (empty when it does not exist), read once.

        Plain PRAGMA, not sqlite-utils' `Table.columns`: every command asks this, and
        importing sqlite-utils costs ~0.4 s (it loads numpy) for one PRAGMA.
        """
        if table not in self._columns:
            if table not in self.tables:
                self._columns[table] = frozenset()
            else:
                rows = self.conn.execute(f'PRAGMA table_info("{table}")').fetchall()
                self._columns[table] = frozenset(r[1] for r in rows)
        return self._columns[table]

    def has_column(self, table: str, column: str) -> bool:
        return column in self.columns(table)

    @property
    def fts(self) -> bool:
        """The observations FTS5 table exists and this SQLite can read it."""
        if cs.OBSERVATIONS_FTS not in self.tables:
            return False
        if "_fts_ok" not in self._columns:
            try:
                self.conn.execute(f"SELECT rowid FROM {cs.OBSERVATIONS_FTS} LIMIT 0").fetchall()
                self._columns["_fts_ok"] = frozenset({"yes"})
            except sqlite3.DatabaseError:
                self._columns["_fts_ok"] = frozenset()
        return bool(self._columns["_fts_ok"])


@dataclass
class Brain:
    path: Path
    conn: sqlite3.Connection
    kind: str
    read_only: bool
    read_only_reason: str | None
    features: Features
    lock: threading.RLock = field(default_factory=threading.RLock)
    identity: tuple[str, int, int] | None = None  # absolute path, device and inode when opened
    recovered: list[str] = field(default_factory=list)  # interrupted runs rolled back on open (or, read-only: waiting)

    def __post_init__(self) -> None:
        self.identity = self.identity or _file_identity(os.path.abspath(self.path))

    def ensure_same_file(self) -> None:
        """Refuse to write when the file was deleted or replaced since it was opened.

        SQLite would go on writing into the old, unlinked file: every change lost.
        """
        where = self.identity[0] if self.identity else os.path.abspath(self.path)
        if _file_identity(where) != self.identity:
            raise BrainUnwritable(f"{self.path} was deleted, moved or replaced since cleo-tui opened it; "
                                  "nothing was written. Quit and open the brain again.")

    @property
    def kind_label(self) -> str:
        return KIND_LABELS.get(self.kind, self.kind)

    def query(self, sql: str, params: Any = ()) -> list[sqlite3.Row]:
        """Run one read statement and return all rows (autocommit: no lingering transaction)."""
        with self.lock:
            return self.conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Any = ()) -> sqlite3.Row | None:
        with self.lock:
            row: sqlite3.Row | None = self.conn.execute(sql, params).fetchone()
            return row

    def scalar(self, sql: str, params: Any = ()) -> Any:
        row = self.query_one(sql, params)
        return None if row is None else row[0]

    def ensure_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyBrain(f"This brain is read-only ({self.read_only_reason}); nothing was written.")

    @contextmanager
    def write(self, sweep_check: bool = True) -> Iterator[sqlite3.Connection]:
        """One short write transaction: all of it commits, or none of it does.

        Refused while CLEO's sweep runs (brain/sweep_gate.py); a chunked run's later
        chunks pass `sweep_check=False` so a run that started also finishes.
        """
        self.ensure_writable()
        self.ensure_same_file()
        if sweep_check:
            ensure_no_sweep(self.path)
        with self.lock:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise write_failure(self.path, exc) from None
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException as exc:
                if self.conn.in_transaction:  # a failed COMMIT can leave it open too
                    self.conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.OperationalError):
                    raise write_failure(self.path, exc) from None
                raise

    def reader(self) -> Brain:
        """A second, read-only view of the same file with its own connection.

        Long reads in a worker (tagging a whole brain) use it, so they never hold
        the lock that the UI's page reads wait on. Close it when done.
        """
        conn = connect(self.path, True)
        return Brain(path=self.path, conn=conn, kind=self.kind, read_only=True,
                     read_only_reason="a reader", features=Features(conn, self.features.tables))

    def refresh(self) -> None:
        """Re-read the table list (after another process created tables)."""
        self.features = Features(self.conn, _table_names(self.conn))

    def close(self) -> None:
        with self.lock:
            self.conn.close()


def _file_identity(path: str) -> tuple[str, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return path, stat.st_dev, stat.st_ino


def write_failure(path: Path, exc: sqlite3.OperationalError) -> Exception:
    """A clear BrainError for a write SQLite refused (busy, full, read-only, gone); else `exc`."""
    message = str(exc)
    if "locked" in message or "busy" in message:
        return BrainBusy(f"{path} stayed locked by another process (CLEO writing?) for "
                         f"{BUSY_TIMEOUT_MS // 1000} s; nothing was written. Try again in a moment.")
    if "full" in message:
        return BrainUnwritable(f"The disk holding {path} is full ({message}); nothing was written. "
                               "Free some space and try again.")
    if "readonly" in message or "read-only" in message:
        return BrainUnwritable(f"{path} cannot be written ({message}); nothing was written. "
                               "Check the file's permissions, or open it with --read-only.")
    if "disk I/O" in message or "no such table" in message:
        return BrainUnwritable(f"{path} could not be written ({message}): was it moved, deleted or "
                               "replaced while open? Nothing was written; reopen the brain.")
    return exc


def _table_names(conn: sqlite3.Connection) -> frozenset[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
    return frozenset(r[0] for r in rows)


def detect_kind(path: Path, conn: sqlite3.Connection, tables: frozenset[str]) -> str:
    """Tell a CLEO brain (consolidated or legacy), a cleo-tui brain and a hippo store apart."""
    if cs.OBSERVATIONS not in tables:
        if "memories" in tables:
            return KIND_HIPPO
        raise NotABrain(
            f"{path} is a SQLite database but not a brain: it has no {cs.OBSERVATIONS} table "
            "(CLEO) and no memories table (hippo). Point --db at .cleo/cleo.db or .cleo/brain.db."
        )
    if META in tables:
        row = conn.execute(f"SELECT value FROM {META} WHERE key = 'created_by'").fetchone()
        if row and row[0] == "cleo-tui":
            return KIND_CLEO_TUI
    if any(not t.startswith(_OWN_PREFIXES) for t in tables):
        return KIND_CLEO
    return KIND_CLEO_LEGACY


def open_brain(path: str | Path, read_only: bool = False) -> Brain:
    """Open a brain file; fall back to read-only (with the reason) when it cannot be written.

    cleo-tui's own tables are migrated on a writable CLEO or cleo-tui brain; hippo
    stores and brains from a newer cleo-tui are always opened read-only.
    """
    path = Path(path).expanduser()
    check_sqlite_file(path)
    reason = "opened with --read-only" if read_only else None
    if not read_only and not is_writable(path):
        read_only, reason = True, "the file or its directory is not writable"
    conn = connect(path, read_only)
    try:
        tables = _table_names(conn)
        kind = detect_kind(path, conn, tables)
    except BaseException:
        conn.close()
        raise
    if not read_only and kind == KIND_HIPPO:
        read_only, reason = True, "hippo stores are opened for reading"
    elif not read_only and schema_version(conn) > LATEST_VERSION:
        read_only, reason = True, "it was written by a newer cleo-tui"
    if read_only and not reason:
        reason = "read-only"
    if read_only:
        conn.close()
        conn = connect(path, True)
    recovered: list[str] = []
    if not read_only:
        migrate(conn)
        tables = _table_names(conn)
        if not sweep_active(path):  # a crashed run is rolled back later, not under CLEO's sweep
            recovered = recover_interrupted(conn)
    else:
        recovered = interrupted_notes(conn)
    return Brain(path=path, conn=conn, kind=kind, read_only=read_only,
                 read_only_reason=reason, features=Features(conn, tables), recovered=recovered)


def _holds_brain(path: Path) -> bool:
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            row = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (cs.OBSERVATIONS,)
            ).fetchone()
        finally:
            conn.close()
        return row is not None
    except sqlite3.DatabaseError:
        return False


def brain_candidates(directory: Path) -> list[Path]:
    """Where `locate_brain` looks, in order, walking up from `directory`."""
    places = []
    for folder in [directory, *directory.parents]:
        places += [folder / ".cleo" / "cleo.db", folder / ".cleo" / "brain.db", folder / OWN_BRAIN]
    return places


def locate_brain(directory: str | Path = ".") -> Path:
    """Find the brain of the project at or above `directory`, as CLEO lays it out.

    `.cleo/cleo.db` counts only when it holds brain tables; otherwise
    `.cleo/brain.db`, then cleo-tui's own `.cleo-tui/brain.db`; then the same one
    directory up, and so on.
    """
    start = Path(directory).expanduser().resolve()
    if not start.is_dir():
        raise BrainNotFound(f"{start} is not a directory. Pass a project directory, or a brain file with --db FILE.")
    for candidate in brain_candidates(start):
        if candidate.is_file() and (candidate.name != "cleo.db" or _holds_brain(candidate)):
            return candidate
    global_store = global_brain_path()
    hint = (f" CLEO's global store is at {global_store}: open it with --db {global_store}."
            if global_store.is_file() else "")
    raise BrainNotFound(
        f"No brain found in {start} or any directory above it (looked for .cleo/cleo.db holding "
        f"brain tables, then .cleo/brain.db and .cleo-tui/brain.db). Create one with `cleo-tui init {start}`, try "
        f"`cleo-tui demo DIR` for a demo brain, or open a file with --db FILE.{hint}"
    )


def global_brain_path() -> Path:
    """CLEO's global store: `$XDG_DATA_HOME/cleo/cleo.db` (normally ~/.local/share/cleo/cleo.db)."""
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "cleo" / "cleo.db"
