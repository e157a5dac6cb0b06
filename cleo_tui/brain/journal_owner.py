"""Who owns a journal run: the writer process, told by its pid and its start time.

A run records its writer's pid and start (`process_start`), so crash recovery can
tell a writer that still runs (another cleo-tui: its run is left alone) from a dead
one, even when the system has since given the pid to a later process.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def process_start(pid: int) -> str | None:
    """When process `pid` started, as text that differs for a later process given the same pid.

    Linux: the boot id and field 22 of /proc/PID/stat (clock ticks since boot); elsewhere
    `ps -o lstart=` (BSD, macOS). None when it cannot be told (no such process, no ps).
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        return f"{boot}:{stat.rpartition(b')')[2].split()[19].decode('ascii')}"
    except (OSError, IndexError, UnicodeDecodeError):
        pass
    if Path("/proc/self/stat").exists():
        return None  # Linux without that process: gone
    try:
        done = subprocess.run(["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True,
                              timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


_STARTS: dict[int, str | None] = {}


def own_start() -> str | None:
    """This process's start (read once per process: a fork has its own pid)."""
    pid = os.getpid()
    if pid not in _STARTS:
        _STARTS[pid] = process_start(pid)
    return _STARTS[pid]


def owner_alive(pid: int | None, started: str | None = None) -> bool:
    """The run's owner still runs: its pid is alive and, when its start time was recorded (runs
    before migration 6 have none), it is the same process, not a later one given the same pid."""
    if not pid or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except OverflowError:  # not a pid this system can have
        return False
    if started is None:
        return True
    now = process_start(pid)
    return now is None or now == started

