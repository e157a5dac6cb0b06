"""Locate, open, create and describe a brain.

A `Brain` wraps one SQLite connection in autocommit mode behind a lock, so a
worker thread may use it, no read transaction outlives a query, and every write
is one short `BEGIN IMMEDIATE` transaction that a read-only brain refuses.
"""

from __future__ import annotations

import errno
import functools
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.connection import BUSY_TIMEOUT_MS, check_sqlite_file, connect, is_writable, open_sqlite
from cleo_tui.brain.errors import (
    BrainBusy,
    BrainError,
    BrainNotFound,
    BrainUnreadable,
    BrainUnwritable,
    NotABrain,
    NotSQLite,
    ReadOnlyBrain,
    UnsupportedLayout,
)
from cleo_tui.brain.journal import interrupted_notes, recover_interrupted
from cleo_tui.brain.kinds import BrainKind, Capability, detect_kind
from cleo_tui.brain.migrations import LATEST_VERSION, MIGRATIONS, migrate, schema_version
from cleo_tui.brain.sweep_gate import ensure_no_sweep, sweep_active
from cleo_tui.safe_text import plural, safe_path, safe_text

# cleo-tui's own brain in a project CLEO has not set up: outside .cleo/, which CLEO owns
# (see brain/create.py for why not .cleo/cleo.db or .cleo/brain.db).
OWN_BRAIN = Path(".cleo-tui") / "brain.db"
# A reader's query checks whether reads were stopped every this many SQLite instructions: about
# 6 ms of a scan. Each check takes the GIL: checking much more often would slow the UI's thread.
STOP_CHECK_EVERY = 500_000

@dataclass
class Features:
    """Which optional tables and columns this brain has (read from the file, not assumed)."""

    conn: sqlite3.Connection
    tables: frozenset[str]
    # The brain's lock (Brain.lock): a worker asks what the file holds while another thread may
    # close the connection, and a statement racing a close crashes the process.
    lock: threading.RLock = field(default_factory=threading.RLock)
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
                with self.lock:
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
                with self.lock:
                    self.conn.execute(f"SELECT rowid FROM {cs.OBSERVATIONS_FTS} LIMIT 0").fetchall()
                self._columns["_fts_ok"] = frozenset({"yes"})
            except sqlite3.DatabaseError:
                self._columns["_fts_ok"] = frozenset()
        return bool(self._columns["_fts_ok"])


@dataclass
class Brain:
    path: Path
    conn: sqlite3.Connection
    kind: BrainKind  # what the file is and supports (brain/kinds.py); equal to its name
    read_only: bool
    read_only_reason: str | None
    features: Features
    identity: tuple[str, int, int] | None = None  # absolute path, device and inode when opened
    recovered: list[str] = field(default_factory=list)  # interrupted runs rolled back on open (or, read-only: waiting)
    stale_reason: str | None = None  # why what it reads may miss committed changes (see connection.open_sqlite)
    # Set by `stop_reads`; shared with every reader made from this brain, whose queries it ends.
    reads_stopped: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.identity = self.identity or _file_identity(os.path.abspath(self.path))

    @property
    def lock(self) -> threading.RLock:
        """Held by every statement on `conn` (one thread at a time), and by `close`."""
        return self.features.lock

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
        return self.kind.label

    def supports(self, capability: Capability) -> bool:
        """This file has `capability` (brain/kinds.py): its kind promises it, or its tables hold it."""
        return self.kind.supports(capability, self.features)

    def capabilities(self) -> frozenset[Capability]:
        """Everything this file supports (brain/kinds.py)."""
        return self.kind.capabilities(self.features)

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
        the lock that the UI's page reads wait on. Close it when done. Its queries
        end with "interrupted" once `stop_reads` was called on this brain.
        """
        conn = connect(self.path, True)
        conn.set_progress_handler(self.reads_stopped.is_set, STOP_CHECK_EVERY)
        return Brain(path=self.path, conn=conn, kind=self.kind, read_only=True, read_only_reason="a reader",
                     features=Features(conn, self.features.tables), stale_reason=conn.stale_reason,
                     reads_stopped=self.reads_stopped)

    def stop_reads(self) -> None:
        """End every query of this brain's readers, now and later (the app quits: a read of a
        million rows must not keep the process alive). Its own connection, which every write
        uses, is left alone."""
        self.reads_stopped.set()

    def data_version(self, wait: bool = True) -> int | None:
        """SQLite's `data_version` on this connection: it moves only when another connection commits.

        With `wait=False`, None when this brain's lock is busy (or the file cannot be read).
        """
        if not self.lock.acquire(blocking=wait):
            return None
        try:
            return int(self.conn.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error:
            return None
        finally:
            self.lock.release()

    def busy_timeout_ms(self) -> int:
        """How long a write on this connection waits for another writer's lock."""
        with self.lock:
            return int(self.conn.execute("PRAGMA busy_timeout").fetchone()[0])

    def refresh(self) -> None:
        """Re-read the table list (after another process created tables)."""
        with self.lock:
            self.features = Features(self.conn, _table_names(self.conn), self.lock)

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
        blocking = side_file_problems(path)
        if blocking:
            return BrainUnwritable(f"{path} cannot be written ({message}): {'; '.join(blocking)} — left by a "
                                   "read-only session (an older cleo-tui's or another tool's) or made by another "
                                   "user. Nothing was written. Once no program has the brain open, make them writable "
                                   "(chmod u+w) or remove the -shm; or open the brain with --read-only.")
        return BrainUnwritable(f"{path} cannot be written ({message}); nothing was written. "
                               "Check the file's permissions, or open it with --read-only.")
    if "disk I/O" in message or "no such table" in message:
        return BrainUnwritable(f"{path} could not be written ({message}): was it moved, deleted or "
                               "replaced while open? Nothing was written; reopen the brain.")
    return exc


def side_file_problems(path: Path) -> list[str]:
    """What is wrong with the brain's -wal/-shm for a writer: each existing one that is not a
    writable regular file (such files make every writer fail, CLEO's included)."""
    real = Path(os.path.realpath(path))
    problems = []
    for suffix in ("-wal", "-shm"):
        side = real.with_name(real.name + suffix)
        if not (side.exists() or side.is_symlink()):
            continue
        if side.is_symlink() or not side.is_file():
            problems.append(f"{safe_path(side.name)} beside it is not a regular file")
        elif not os.access(side, os.W_OK):
            problems.append(f"{safe_path(side.name)} beside it is not writable (mode "
                            f"{stat.S_IMODE(side.stat().st_mode):04o})")
    return problems


def _table_names(conn: sqlite3.Connection) -> frozenset[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
    return frozenset(r[0] for r in rows)


_EDGE_COLUMNS = frozenset({"from_id", "to_id", "edge_type"})


@functools.cache
def _own_table_columns(version: int = LATEST_VERSION) -> dict[str, frozenset[str]]:
    """The columns of every table cleo-tui's migrations up to `version` create (built once each, in memory).

    A brain of an older cleo-tui holds its tables as that version made them (the
    open then migrates them), so its layout is checked against those.
    """
    conn = sqlite3.connect(":memory:")
    try:
        for migration in MIGRATIONS:
            if migration.version > version:
                break
            for statement in migration.statements:
                if isinstance(statement, str):  # a Python step alters CLEO's tables, not cleo-tui's own
                    conn.execute(statement)
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {n: frozenset(r[1] for r in conn.execute(f'PRAGMA table_info("{n}")')) for n in names}
    finally:
        conn.close()


def _unsupported(path: Path, what: str) -> UnsupportedLayout:
    return UnsupportedLayout(f"{safe_path(path)} has an unsupported layout: {what}. cleo-tui reads brains in "
                             "CLEO's layout and never changes CLEO's tables; nothing was opened or written.")


def check_layout(path: Path, conn: sqlite3.Connection) -> None:
    """Refuse table shapes cleo-tui cannot read or write safely (before anything is migrated)."""
    rows = conn.execute("SELECT type, name, coalesce(sql, '') FROM sqlite_master "
                        "WHERE type IN ('table', 'view')").fetchall()
    shapes = {r[1]: (r[0], " ".join(str(r[2]).upper().split())) for r in rows}

    def columns(table: str) -> frozenset[str]:
        return frozenset(r[1] for r in conn.execute(f'PRAGMA table_info("{table}")'))

    if cs.OBSERVATIONS in shapes:
        kind, sql = shapes[cs.OBSERVATIONS]
        if kind != "table":
            raise _unsupported(path, f"{cs.OBSERVATIONS} is a view, not a table")
        if "WITHOUT ROWID" in sql:
            raise _unsupported(path, f"{cs.OBSERVATIONS} is a WITHOUT ROWID table (the search index needs rowids)")
    if cs.OBSERVATIONS_FTS in shapes and not shapes[cs.OBSERVATIONS_FTS][1].startswith("CREATE VIRTUAL TABLE"):
        raise _unsupported(path, f"{cs.OBSERVATIONS_FTS} is a plain {shapes[cs.OBSERVATIONS_FTS][0]}, not CLEO's "
                                 "full-text index")
    if cs.EDGES in shapes and not _EDGE_COLUMNS <= columns(cs.EDGES):
        missing = ", ".join(sorted(_EDGE_COLUMNS - columns(cs.EDGES)))
        raise _unsupported(path, f"{cs.EDGES} has no {missing} column")
    version = schema_version(conn)
    if version > LATEST_VERSION:
        return  # a newer cleo-tui's tables: opened read-only, never written
    at_version = _own_table_columns(version)  # an older cleo-tui's tables get the later columns on migration
    for table, latest in _own_table_columns().items():
        wanted = at_version.get(table, latest)
        if table in shapes and not wanted <= columns(table):
            raise _unsupported(path, f"a table named {table} that cleo-tui did not create (it lacks "
                                     f"{', '.join(sorted(wanted - columns(table)))})")


WAIT_NOTICE_MS = 1000
WAITING_MESSAGE = "waiting for CLEO's write lock…"


LOCK_PROBE_MS = 250  # a wait for the lock is made of probes this long, so ctrl+c ends it at once


def _migrate_under_lock(path: Path, conn: sqlite3.Connection, busy_timeout_ms: int,
                        on_wait: Callable[[str], None] | None) -> bool:
    """Migrate cleo-tui's tables; say so once another process has held the lock for ~1 s.

    The wait is made of short probes (SQLite sleeps inside one call, where ctrl+c
    cannot end it). Returns False when the lock stayed held for the whole busy
    timeout (the caller opens read-only and migrates another time).
    """
    started = time.monotonic()
    told = False
    try:
        while True:
            waited_ms = (time.monotonic() - started) * 1000
            conn.execute(f"PRAGMA busy_timeout = {max(0, int(min(LOCK_PROBE_MS, busy_timeout_ms - waited_ms)))}")
            try:
                migrate(conn)
                return True
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise _migration_failure(path, exc) from None
            except sqlite3.DatabaseError as exc:
                raise _migration_failure(path, exc) from None
            waited_ms = (time.monotonic() - started) * 1000
            if waited_ms >= busy_timeout_ms:
                return False
            if not told and waited_ms >= min(WAIT_NOTICE_MS, busy_timeout_ms) and on_wait is not None:
                told = True
                on_wait(WAITING_MESSAGE)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def _migration_failure(path: Path, exc: sqlite3.DatabaseError) -> BrainError:
    """A write refused while adding cleo-tui's tables, as one paragraph (never an internal error)."""
    if isinstance(exc, sqlite3.OperationalError):
        failure = write_failure(path, exc)  # read-only file or side files, full disk ...
        if isinstance(failure, BrainError):
            return failure
    blocking = side_file_problems(path)
    return BrainUnwritable(f"{safe_path(path)} could not get cleo-tui's tables ({safe_text(exc)})"
                           + (f": {'; '.join(blocking)}" if blocking else "")
                           + ". Nothing was written; open it with --read-only to look at it.")


def open_brain(path: str | Path, read_only: bool = False, busy_timeout_ms: int = BUSY_TIMEOUT_MS,
               on_wait: Callable[[str], None] | None = None) -> Brain:
    """Open a brain file; fall back to read-only (with the reason) when it cannot be written.

    cleo-tui's own tables are migrated on a writable CLEO or cleo-tui brain; hippo
    stores and brains from a newer cleo-tui are always opened read-only.
    """
    path = Path(path).expanduser()
    check_sqlite_file(path)
    reason = "opened with --read-only" if read_only else None
    if not read_only and not is_writable(path):
        read_only, reason = True, "the file or its directory is not writable"
    probe = connect(path, True)  # the layout is checked before anything (even WAL mode) is written
    try:
        kind = detect_kind(path, probe, _table_names(probe))
        check_layout(path, probe)
        newer = schema_version(probe) > LATEST_VERSION
    finally:
        probe.close()
    if not read_only and not kind.writable:
        read_only, reason = True, kind.read_only_reason
    elif not read_only and newer:
        read_only, reason = True, "it was written by a newer cleo-tui"
    if read_only and not reason:
        reason = "read-only"
    conn = connect(path, read_only)
    recovered: list[str] = []
    try:
        if not read_only and not _migrate_under_lock(path, conn, busy_timeout_ms, on_wait):
            conn.close()
            conn = connect(path, True)
            read_only = True
            reason = (f"another process (CLEO?) held the write lock for {busy_timeout_ms / 1000:g} s, so "
                      "cleo-tui could not add its tables; reopen it to curate")
        tables = _table_names(conn)
        if not read_only:
            if not sweep_active(path):  # a crashed run is rolled back later, not under CLEO's sweep
                recovered = recover_interrupted(conn)
            else:
                recovered = interrupted_notes(conn, "CLEO's sweep is running")
        else:
            recovered = interrupted_notes(conn, f"the brain is read-only ({reason})")
    except BaseException:
        conn.close()
        raise
    return Brain(path=path, conn=conn, kind=kind, read_only=read_only, read_only_reason=reason,
                 features=Features(conn, tables), recovered=recovered, stale_reason=conn.stale_reason)


def _probe_candidate(path: Path) -> tuple[bool, str | None]:
    """(holds brain tables, why it could not be told): a damaged, unreadable or locked
    candidate is a problem to report, never silently "no brain here"."""
    try:
        return _probe(path)
    except BrainError as exc:
        return False, str(exc)
    except (OSError, RuntimeError) as exc:
        return False, f"{safe_path(path)} cannot be read ({safe_text(exc)})."


def _probe(path: Path) -> tuple[bool, str | None]:
    try:
        check_sqlite_file(path)
    except NotSQLite:
        if path.stat().st_size == 0:
            return False, None  # an empty file is no brain (and no damaged one)
        raise
    try:
        conn = open_sqlite(path, True, timeout_s=1.0)  # leaves no -wal/-shm behind
        try:
            row = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (cs.OBSERVATIONS,)
            ).fetchone()
        finally:
            conn.close()
        return row is not None, None
    except sqlite3.DatabaseError as exc:
        message = str(exc)
        if "locked" in message or "busy" in message:
            return False, (f"{safe_path(path)} is locked by another process, so cleo-tui cannot tell whether it "
                           "holds a brain. Try again in a moment, or open it with --db.")
        return False, (f"{safe_path(path)} cannot be read as a SQLite database ({safe_text(message)}): it may be "
                       "damaged. Check it with `sqlite3 FILE 'PRAGMA integrity_check'`.")


def brain_candidates(directory: Path) -> list[Path]:
    """Where `locate_brain` looks, in order, walking up from `directory`."""
    places = []
    for folder in [directory, *directory.parents]:
        places += [folder / ".cleo" / "cleo.db", folder / ".cleo" / "brain.db", folder / OWN_BRAIN]
    return places


def _resolve_dir(directory: str | Path) -> Path:
    """`directory` made absolute with its symlinks followed; a loop is the user's problem."""
    given = Path(directory).expanduser()
    try:
        start = given.resolve(strict=False)
        os.stat(start)
    except FileNotFoundError:
        raise BrainNotFound(f"{safe_path(given)} does not exist. Pass a project directory, or a brain file "
                            "with --db FILE.") from None
    except (OSError, RuntimeError) as exc:  # Python 3.11 raises RuntimeError for a symlink loop
        why = "is a symlink loop" if "loop" in str(exc) or getattr(exc, "errno", None) == errno.ELOOP \
            else f"cannot be read ({safe_text(exc)})"
        raise BrainNotFound(f"{safe_path(given)} {why}. Pass a project directory, or a brain file with "
                            "--db FILE.") from None
    return start


def locate_brain(directory: str | Path = ".") -> Path:
    """Find the brain of the project at or above `directory`, as CLEO lays it out.

    `.cleo/cleo.db` counts only when it holds brain tables; otherwise
    `.cleo/brain.db`, then cleo-tui's own `.cleo-tui/brain.db`; then the same one
    directory up, and so on. A candidate that exists but cannot be read (damaged,
    locked, unreadable) stops the search with what is wrong with it.
    """
    start = _resolve_dir(directory)
    if not start.is_dir():
        raise BrainNotFound(f"{safe_path(start)} is not a directory. "
                            "Pass a project directory, or a brain file with --db FILE.")
    for candidate in brain_candidates(start):
        if not (candidate.exists() or candidate.is_symlink()):
            continue
        if candidate.name == "brain.db":
            return candidate  # open_brain says what is wrong with it, if anything
        holds, problem = _probe_candidate(candidate)
        if holds:
            return candidate
        if problem:
            raise BrainUnreadable(
                f"{problem} (It is where CLEO keeps the brain of {safe_path(candidate.parent.parent)}.)")
    hint = "".join(f" {what} is at {safe_path(path)}: open it with --db {safe_path(path)}{why}."
                   for what, why, path in files_to_suggest(start))
    raise BrainNotFound(
        f"No brain found in {safe_path(start)} or any directory above it (looked for .cleo/cleo.db holding "
        f"brain tables, then .cleo/brain.db and .cleo-tui/brain.db). "
        f"Create one with `cleo-tui init {safe_path(start)}`, try "
        f"`cleo-tui demo DIR` for a demo brain, or open a file with --db FILE.{hint}"
    )


def brains_left_behind(found: str | Path) -> list[Path]:
    """Other brains in the project folder of `found` that `locate_brain` passes over.

    After `cleo init` in a project that had cleo-tui's own `.cleo-tui/brain.db`, CLEO's
    `.cleo/cleo.db` is found first; the brain curated until then stays where it was,
    and the faces name it. A `.cleo/cleo.db` counts only when it holds brain tables.
    """
    found = Path(found).expanduser().absolute()
    if found.parent.name not in (".cleo", OWN_BRAIN.parent.name):
        return []
    others = []
    for candidate in brain_candidates(found.parent.parent)[:3]:
        if candidate == found or not candidate.is_file():
            continue
        if candidate.name == "cleo.db" and not _probe_candidate(candidate)[0]:
            continue
        others.append(candidate)
    return others


def files_to_suggest(start: Path) -> list[tuple[str, str, Path]]:
    """(what, what for, path) of the files `locate_brain` never opens by itself but a user at `start`
    may mean, those that exist: the project's hippo store (`.hippo/hippo.db` here or above; it holds
    recall traces and memories, not a brain to curate), hippo's global store and CLEO's."""
    project = next((store for store in (d / ".hippo" / "hippo.db" for d in (start, *start.parents))
                    if store.is_file()), None)
    found = [("A hippo store", " for its recall traces", project)] if project is not None else []
    hippo_home = hippo_global_path()
    if hippo_home.is_file() and hippo_home != project:
        found.append(("hippo's global store", " for its recall traces", hippo_home))
    if global_brain_path().is_file():
        found.append(("CLEO's global store", "", global_brain_path()))
    return found


def hippo_global_path() -> Path:
    """hippo's global store: `$HIPPO_HOME`, else `$XDG_DATA_HOME/hippo`, else `~/.hippo`; its hippo.db."""
    home = os.environ.get("HIPPO_HOME") or (str(Path(os.environ["XDG_DATA_HOME"]) / "hippo")
                                            if os.environ.get("XDG_DATA_HOME") else str(Path.home() / ".hippo"))
    return Path(home) / "hippo.db"


def global_brain_path() -> Path:
    """CLEO's global store: `$XDG_DATA_HOME/cleo/cleo.db` (normally ~/.local/share/cleo/cleo.db)."""
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "cleo" / "cleo.db"


def refuse_non_brain(path: Path) -> None:
    """Refuse to create a brain inside an existing file that is not an (empty) brain.

    `.cleo/cleo.db` is also CLEO's project database (tasks, sessions ...): before
    CLEO has created its brain tables there, writing cleo-tui's would put a
    second schema into CLEO's file.
    """
    if not (path.exists() or path.is_symlink()):
        return
    if path.is_file() and path.stat().st_size == 0:
        return  # an empty file: SQLite starts a fresh database in it
    check_sqlite_file(path)
    try:
        conn = open_sqlite(path, True, timeout_s=1.0)
    except sqlite3.DatabaseError as exc:
        raise BrainUnreadable(f"{safe_path(path)} cannot be read ({safe_text(exc)}); no brain was created.") from None
    try:
        names = sorted(r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"))
    except sqlite3.DatabaseError as exc:
        raise BrainUnreadable(f"{safe_path(path)} cannot be read ({safe_text(exc)}); no brain was created.") from None
    finally:
        conn.close()
    if cs.OBSERVATIONS in names:
        raise BrainError(f"{safe_path(path)} already holds a brain; nothing was changed. Open it instead.")
    if names:
        shown = ", ".join(safe_text(n, 40) for n in names[:6]) + (" …" if len(names) > 6 else "")
        raise NotABrain(
            f"{safe_path(path)} is a SQLite database with {plural(len(names), 'table')} ({shown}) but no brain tables: "
            "probably CLEO's project database before CLEO created its brain. cleo-tui will not write into it; "
            "let CLEO create its brain (run CLEO's memory commands once), or open another brain with --db FILE."
        )
