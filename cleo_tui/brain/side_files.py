"""Leave a brain's directory as cleo-tui found it: the `-wal`/`-shm` SQLite adds for us go again.

Why this exists. A WAL database cannot be read with locking (the only safe way
while CLEO may write) without its `-wal` and `-shm`: a `mode=ro` connection creates
them when they are missing and the directory is writable, and never removes them,
because only a connection that can checkpoint removes them when it closes last. So
a read-only session (`--read-only`, `info`, a hippo store, a reader) left them, with
the brain's own mode: 0444 beside a 0444 brain, which made every later writer, CLEO
included, fail with "attempt to write a readonly database".

The decision (SQLite facts checked against 3.40):

- Keep `mode=ro` with locking. `immutable=1` creates nothing but takes no locks and
  never sees a later commit: with CLEO writing it reads torn or stale pages, so it is
  only the last resort where `mode=ro` cannot open at all (see connection.connect).
- Remember which side files did not exist before our connection opened and did
  after; when the last of this process's connections to the brain closes, remove
  those, and only those, under the lock SQLite itself uses to know that it is the
  last user (what SQLite's own close does before it deletes them):
  1. a write lock on the database file's SHARED byte range. Every connection to a
     WAL database holds a read lock there from its first read until it closes, so
     the lock is refused while anyone (CLEO, another cleo-tui) uses the brain, and
     while we hold it no one can start to (their SHARED lock waits, busy handler);
     where the file cannot be opened for writing (0444, `chattr +i`) only a test
     for that lock (F_GETLK) is possible: then no writer can exist either, and a
     reader starting in the microseconds between test and unlink reads the file
     alone (the -wal we remove holds nothing);
  2. no lock on the `-shm`'s dead-man-switch byte, which every process that has
     the `-shm` mapped holds;
  3. the `-wal` is removed only when empty: a writer that committed while we read
     could not fold its frames in (we held SHARED), and those frames may be the
     only copy of its commits. The `-shm` holds nothing persistent (the next
     opener rebuilds it from the `-wal`), so ours goes even beside such a `-wal`;
  4. each file is removed only if it is still the one (device, inode) we saw
     created, and nothing that existed before is ever touched.
- POSIX record locks belong to the process, and closing any descriptor of a file
  drops all of the process's locks on it. So the files are only opened here when no
  connection of this process is open on the brain (the registry below counts them),
  and the locks used are Linux's open-file-description locks, which conflict with
  every other lock, this process's included.

Limits: a session killed before it closes leaves the files, as before; a
connection never closed keeps its brain's count up, so its files stay; where
open-file-description locks do not exist (macOS, Windows) nothing is removed.
"""

from __future__ import annotations

import errno
import os
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path

SIDE_SUFFIXES = ("-wal", "-shm")

# SQLite's unix VFS lock layout (os_unix.c): the SHARED range of the database file and the
# dead-man-switch byte of the -shm (UNIX_SHM_BASE + SQLITE_SHM_NLOCK = 120 + 8).
_PENDING_BYTE = 0x40000000
_SHARED_FIRST = _PENDING_BYTE + 2
_SHARED_SIZE = 510
_SHM_DMS = 128

try:
    import fcntl
    _GETLK: int | None = fcntl.F_OFD_GETLK
    _SETLK: int | None = fcntl.F_OFD_SETLK
except (ImportError, AttributeError):  # no open-file-description locks: leave the files
    _GETLK = _SETLK = None
_FLOCK = "hhqqi4x"  # Linux's struct flock: type, whence, start, len, pid (padded to 32 bytes)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

Identity = tuple[int, int]  # device, inode


@dataclass
class _Open:
    """This process's connections to one brain file, and the side files they created."""

    count: int = 0
    created: dict[str, Identity] = field(default_factory=dict)  # side file path -> identity


_lock = threading.RLock()  # re-entrant: a collected connection's finalizer may run inside a locked section
_open: dict[Identity, _Open] = {}


def identity(path: str | Path) -> Identity | None:
    """(device, inode) of a file, without following a final symlink; None when absent."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def side_paths(db: str | Path) -> list[str]:
    return [f"{db}{suffix}" for suffix in SIDE_SUFFIXES]


def side_identities(db: str | Path) -> dict[str, Identity | None]:
    """Which side files exist now, and which files they are."""
    return {side: identity(side) for side in side_paths(db)}


def in_use_here(key: Identity) -> bool:
    """True while a connection of this process is open on the file `key` names.

    Opening and closing any other descriptor of that file would drop its locks.
    """
    with _lock:
        entry = _open.get(key)
        return entry is not None and entry.count > 0


def register(key: Identity) -> None:
    """Count a connection about to open (before it opens: a cleanup must not run meanwhile)."""
    with _lock:
        _open.setdefault(key, _Open()).count += 1


def note_created(key: Identity, before: dict[str, Identity | None], db: str | Path) -> None:
    """Remember the side files that appeared while our connection opened."""
    with _lock:
        entry = _open.setdefault(key, _Open())
        for side, now in side_identities(db).items():
            if before.get(side) is None and now is not None:
                entry.created[side] = now


def release(key: Identity, db: str | Path) -> None:
    """A connection closed: when it was this process's last on the file, remove what we created."""
    with _lock:  # held throughout, so no connection of ours opens while files are removed
        entry = _open.get(key)
        if entry is None:
            return
        entry.count -= 1
        if entry.count > 0:
            return
        del _open[key]
        if entry.created:
            remove_created(db, key, entry.created)


def _flock(kind: int, start: int, length: int) -> bytes:
    return struct.pack(_FLOCK, kind, os.SEEK_SET, start, length, 0)


def _lock_free(fd: int, start: int, length: int) -> bool:
    """True when no process, this one included, holds a lock on the range."""
    assert _GETLK is not None
    answer = fcntl.fcntl(fd, _GETLK, _flock(fcntl.F_WRLCK, start, length))
    return bool(struct.unpack(_FLOCK, answer)[0] == fcntl.F_UNLCK)


def _take_write_lock(fd: int, start: int, length: int) -> bool:
    """Take a write lock on the range without waiting; False when someone holds a lock there."""
    assert _SETLK is not None
    try:
        fcntl.fcntl(fd, _SETLK, _flock(fcntl.F_WRLCK, start, length))
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            return False
        raise
    return True


def _open_db(db: str | Path) -> tuple[int, bool] | None:
    """The database file opened for locking: (descriptor, writable); None when it cannot be."""
    for flags, writable in ((os.O_RDWR, True), (os.O_RDONLY, False)):
        try:
            return os.open(db, flags | os.O_NOFOLLOW | _CLOEXEC), writable
        except OSError:
            continue
    return None


def _nobody_uses(db_fd: int, writable: bool, shm: str) -> bool:
    """No connection anywhere uses the brain (and, writable, none can start until `db_fd` closes)."""
    if writable:
        if not _take_write_lock(db_fd, _SHARED_FIRST, _SHARED_SIZE):
            return False
    elif not _lock_free(db_fd, _SHARED_FIRST, _SHARED_SIZE):
        return False
    try:
        shm_fd = os.open(shm, os.O_RDONLY | os.O_NOFOLLOW | _CLOEXEC)
    except FileNotFoundError:
        return True
    except OSError:
        return False  # not a file we can look at: leave everything
    try:
        return _lock_free(shm_fd, _SHM_DMS, 1)
    finally:
        os.close(shm_fd)


def _removable(side: str, created: Identity) -> bool:
    """Still the file we saw created; a -wal also holds no frame (no one's commits)."""
    try:
        info = os.lstat(side)
    except OSError:
        return False
    if (info.st_dev, info.st_ino) != created:
        return False
    return not side.endswith("-wal") or info.st_size == 0


def remove_created(db: str | Path, key: Identity, created: dict[str, Identity]) -> list[str]:
    """Remove the side files we created if nobody uses the brain; returns those removed.

    Never raises: a file that cannot be removed is left as SQLite made it.
    """
    removed: list[str] = []
    if _GETLK is None:
        return removed
    try:
        opened = _open_db(db)
        if opened is None:
            return removed
        fd, writable = opened
        try:
            if (os.fstat(fd).st_dev, os.fstat(fd).st_ino) != key:
                return removed  # the brain was replaced since: not ours to judge
            wal, shm = side_paths(db)
            if not _nobody_uses(fd, writable, shm):
                return removed
            for side in (wal, shm):  # the -wal first: a -shm left alone is harmless
                if side in created and _removable(side, created[side]):
                    os.unlink(side)
                    removed.append(side)
        finally:
            os.close(fd)  # drops our lock
    except OSError:
        pass
    return removed
