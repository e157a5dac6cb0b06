"""The scan's processes yield the cores to the app: they run only when nothing else wants them.

A first scan runs in a child process and its detector workers (`in_subprocess`,
`detector_workers`): on two cores they keep both busy for seconds (minutes at a million
rows), and the app's UI thread, waking for a key, had to wait on the run queue for one of
them. Seen from inside the app (`benchmarks.tui --open-only --stalls`): keys of 60–440 ms
while the UI thread ran 10–40 ms of them and waited for a core the rest, the scan process
and its worker running meanwhile. Under Linux's SCHED_IDLE policy a process runs only on a
core nobody else wants, and a waking thread of any other process takes the core at once; a
machine with cores to spare runs the scan as fast as before, less the little the UI takes.
Where the policy is unavailable (not Linux), the lowest niceness instead.
"""

from __future__ import annotations

import os

LOWEST_NICENESS = 19


def yield_the_cores() -> str:
    """Put this process (and the processes it starts after) below every other: SCHED_IDLE on
    Linux, else niceness 19. Which one it got: "idle", "nice" or "" (neither could be set)."""
    idle = getattr(os, "SCHED_IDLE", None)
    if idle is not None:
        try:
            os.sched_setscheduler(0, idle, os.sched_param(0))
            return "idle"
        except OSError:
            pass
    try:
        os.nice(LOWEST_NICENESS - os.nice(0))
        return "nice"
    except OSError:
        return ""
