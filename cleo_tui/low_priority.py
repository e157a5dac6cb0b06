"""Run a module of cleo-tui in a child process below the app, from the child's first instruction.

`python -m MODULE` imports the module's packages before the module can lower its own
priority: for the scan's children (`cleo_tui.memory.pool_scan`) about 130 ms of CPU (numpy,
the detectors) at the app's own priority, just as the app draws a brain's first screen,
where a key pressed then waited for a core (34 ms of a 121 ms key, measured on two cores).
`command` starts this module instead, which lowers the child's priority (NICENESS: the app's
threads take a core first, and the child still has every core nobody else wants) and then
runs MODULE as `python -m` would. This module imports nothing of cleo-tui's.
"""

from __future__ import annotations

import os
import runpy
import sys

NICENESS = 10
_THIS = "cleo_tui.low_priority"  # (run as a script its __name__ is "__main__")


def command(module: str, *args: str) -> list[str]:
    """The command that runs `python -m module args` below the app's priority."""
    return [sys.executable, "-m", _THIS, module, *args]


def lower_this_process() -> None:
    """Lower this process's priority by NICENESS, where the platform allows it."""
    try:
        os.nice(NICENESS)
    except (AttributeError, OSError):  # (no os.nice on Windows; a limit reached)
        pass


if __name__ == "__main__":
    lower_this_process()
    sys.argv = sys.argv[1:]  # (MODULE ARGS…: the module reads its ARGS from sys.argv[1:])
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
