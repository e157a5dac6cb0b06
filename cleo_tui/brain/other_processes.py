"""Whether another process has a brain open: the pacer's shortcut on a brain nobody else uses.

Every connection to a WAL database holds a shared POSIX lock on its `-shm` file for as
long as it has the file mapped (SQLite's "DMS" byte), and a writer waiting for the write
lock must have mapped it first. Linux lists every POSIX lock in `/proc/locks` with the
owning process and the file's device and inode, so a lock on the brain's `-shm` file
held by any process but this one means somebody else has the brain open. The answer is
"nobody" only when the listing shows this process's own lock on the file and no other.
(Opening the `-shm` file ourselves to ask with `F_GETLK` is not an option: closing any
descriptor of a file drops every POSIX lock this process holds on it, SQLite's own
included.)

Reading `/proc/locks` makes the kernel wait for an RCU grace period (10-20 ms of wall
time, almost no CPU), so it is read only where a pause would otherwise be taken. When
it cannot be read (another system, no `-shm` file: not WAL), the answer is "yes,
perhaps": the caller then paces as if someone were there.
"""

from __future__ import annotations

import os

LOCKS = "/proc/locks"


def opened_elsewhere(db_path: str) -> bool:
    """True unless it is sure that no other process has the database at `db_path` open (this
    process must have it open in WAL mode: see the module docstring)."""
    if not db_path:
        return True  # an in-memory or temporary database: nothing to look at
    try:
        shm = os.stat(db_path + "-shm")
        with open(LOCKS, "rb") as locks:
            listing = locks.read()
    except OSError:
        return True
    device = f"{os.major(shm.st_dev):02x}:{os.minor(shm.st_dev):02x}:{shm.st_ino}".encode()
    me = str(os.getpid()).encode()
    holders = set()
    for line in listing.splitlines():
        # "3: POSIX  ADVISORY  READ 9046 fe:00:2244632 128 128", or "3: -> POSIX ..." for a waiter
        fields = line.replace(b"->", b"").split()
        if len(fields) >= 6 and fields[5] == device:
            holders.add(fields[4])
    # Our own connection's lock must be there: if it is not, the file is not named as the kernel
    # names it (a file system that reports other device numbers) and the listing proves nothing.
    return holders != {me}
