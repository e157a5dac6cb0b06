"""What the app opens on, made before its modules load (no Textual here): the brain, and a very
large brain's first scan, already started.

The app's modules take 0.3-0.45 s to import. A brain opened for the first time waits for its first
scan's first look (`pool_scan.first_look`) for its tags; started here, that process runs beside those
imports, and the tags come about 0.3 s sooner (issue 33: at a million real-layout rows, 3.57 → 3.26 s
after the first screen, `benchmarks.first_tags`). It costs the first screen 20-90 ms (the child's
imports and look beside the app's, on two cores), so it is done only where the look takes seconds
(`BEFORE_THE_APP_FROM` rows): a smaller brain's scan starts with the first screen, as the session does,
and the scan's modules are not imported here (imported before the app's, they cost a 100,000-row
brain's first screen 20-70 ms more).
"""

from __future__ import annotations

import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cleo_tui.brain import Brain, BrainNotFound, locate_brain, open_brain
from cleo_tui.brain.observation_reads import largest_rowid

if TYPE_CHECKING:
    from cleo_tui.memory.pool_scan.in_subprocess import ScanProcess

BEFORE_THE_APP_FROM = 250_000  # rows: the first look takes about a second at 250,000, 3 s at a million


@dataclass
class FirstBrain:
    """The brain the app opens on (None: the welcome screen says `problem`), and its first scan's
    process if one was started (`first_scan_ahead`)."""

    project: Path
    brain: Brain | None
    problem: str = ""
    first_scan: ScanProcess | None = None


def open_first_brain(project: Path, db: Path | None, read_only: bool) -> FirstBrain:
    """Open `db` (or the project's brain) and start its first scan if it needs one in a process.

    CLEO holding the write lock is said on stderr meanwhile (the app is not up yet), and ctrl+c ends
    the wait. No brain at the project: the welcome screen says so; none at `db`: BrainNotFound."""
    project = project.expanduser().resolve()
    try:
        brain = open_brain(db if db else locate_brain(project), read_only=read_only,
                           on_wait=lambda text: print(f"cleo-tui: {text} (ctrl+c cancels)", file=sys.stderr,
                                                      flush=True))
    except BrainNotFound as exc:
        if db is not None:
            raise
        return FirstBrain(project, None, str(exc))
    return FirstBrain(project, brain, first_scan=_first_scan_of_a_very_large(brain))


def _first_scan_of_a_very_large(brain: Brain) -> ScanProcess | None:
    """`first_scan_ahead` for a brain of `BEFORE_THE_APP_FROM` rows or more (its largest rowid, read
    at once), else None."""
    try:
        if not brain.supports("tags") or largest_rowid(brain) < BEFORE_THE_APP_FROM:
            return None
    except sqlite3.Error:
        return None
    from cleo_tui.memory.pool_scan.in_subprocess import first_scan_ahead

    return first_scan_ahead(brain)
