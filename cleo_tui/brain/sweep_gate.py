"""CLEO's sweep gate: while `cleo memory sweep` applies, no other writer should write.

CLEO sets `sweepGateActive: true` (with `sweepRunId`) in `.cleo/sentient-state.json`,
beside the project's database, while a sweep applies and clears it after.
`Brain.write()` calls `ensure_no_sweep` before every write transaction cleo-tui
opens (curation, prune commits, undo, review apply); the migrations on open and
the crash recovery's rollback are deferred instead. The TUI shows `sweep_active`
in its header.
"""

from __future__ import annotations

import json
from pathlib import Path

from cleo_tui.brain.errors import BrainError
from cleo_tui.safe_text import one_line

STATE_FILE = "sentient-state.json"


class SweepActive(BrainError):
    """CLEO's sweep is applying: cleo-tui writes nothing until it clears."""


def state_path(brain_path: str | Path) -> Path:
    """Where CLEO keeps its sentient state for the brain at `brain_path` (`.cleo/sentient-state.json`)."""
    return Path(brain_path).expanduser().parent / STATE_FILE


def sweep_active(brain_path: str | Path) -> str | None:
    """A sentence saying CLEO is sweeping this brain, or None when it is not.

    A missing, unreadable or half-written state file counts as no sweep (CLEO
    rewrites it as it goes; refusing on a torn read would block every write).
    """
    try:
        state = json.loads(state_path(brain_path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(state, dict) or state.get("sweepGateActive") is not True:
        return None
    run = state.get("sweepRunId")
    which = f" (sweep run {one_line(str(run), 60)})" if run else ""
    return (f"CLEO is sweeping this brain{which}; cleo-tui writes nothing while the sweep runs. "
            "Nothing was written: try again when it finishes.")


def ensure_no_sweep(brain_path: str | Path) -> None:
    """Raise SweepActive while CLEO's sweep gate is up."""
    message = sweep_active(brain_path)
    if message:
        raise SweepActive(message)
