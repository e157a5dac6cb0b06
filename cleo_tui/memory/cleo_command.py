"""Running CLEO's own sweep command: `cleo memory sweep --approve RUN` / `--rollback RUN`.

cleo-tui never approves or rolls back a sweep itself: CLEO's `executeSweep` also raises its
sweep gate in `.cleo/sentient-state.json` around the write, and is the one place that knows how.
CLEO finds its brain from the working directory (`<project>/.cleo/cleo.db`), so the command runs
in the project directory of the brain. When `cleo` is not on PATH, or the brain is not in a
`.cleo` directory, the exact command is shown and nothing runs.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cleo_tui.safe_text import one_line

APPROVE, ROLLBACK = "approve", "rollback"
TIMEOUT_S = 600
ANSWER_CHARS = 4000


@dataclass(frozen=True)
class CleoCommand:
    """The command for one sweep action: its argv, where it runs, how to show it, and why it cannot run."""

    argv: tuple[str, ...]
    cwd: Path | None
    shown: str
    why_not: str | None  # None: it can run here

    @property
    def runnable(self) -> bool:
        return self.why_not is None


@dataclass(frozen=True)
class CleoAnswer:
    """What CLEO said: its exit status and its output (cut to ANSWER_CHARS, shown literally)."""

    returncode: int | None
    stdout: str
    stderr: str
    error: str | None = None  # it could not run at all

    @property
    def ok(self) -> bool:
        return self.error is None and self.returncode == 0

    def text(self) -> str:
        if self.error:
            return self.error
        parts = [f"exit status {self.returncode}"]
        parts += [p.strip()[-ANSWER_CHARS:] for p in (self.stdout, self.stderr) if p.strip()]
        return "\n".join(parts)


def project_dir(brain_path: str | Path) -> Path | None:
    """The project directory CLEO would run in for this brain (the parent of `.cleo`), or None."""
    path = Path(brain_path).expanduser().resolve()
    return path.parent.parent if path.parent.name == ".cleo" else None


def check_run_id(run_id: str) -> str | None:
    """Why this run id cannot go on CLEO's command line (None: it can)."""
    if not run_id or run_id.startswith("-") or any(ord(ch) < 32 or ch == "\x7f" for ch in run_id):
        return f"the run id {one_line(run_id, 60)!r} cannot be passed to `cleo` safely"
    return None


def sweep_command(brain_path: str | Path, action: str, run_id: str, cleo: str | None = None) -> CleoCommand:
    """`cleo memory sweep --approve|--rollback RUN`, to run in the brain's project directory."""
    if action not in (APPROVE, ROLLBACK):
        raise ValueError(action)
    found = cleo if cleo is not None else shutil.which("cleo")
    project = project_dir(brain_path)
    argv = (found or "cleo", "memory", "sweep", f"--{action}", run_id)
    where = f"cd {shlex.quote(str(project))} && " if project is not None else ""
    shown = where + " ".join(shlex.quote(a) for a in ("cleo", *argv[1:]))
    why_not = check_run_id(run_id)
    if why_not is None and project is None:
        why_not = ("CLEO finds its brain from a project directory (<project>/.cleo/cleo.db); this brain is not in a "
                   ".cleo directory, so `cleo` cannot be pointed at it")
    if why_not is None and found is None:
        why_not = "`cleo` is not on PATH"
    return CleoCommand(argv, project, shown, why_not)


def run_cleo(command: CleoCommand, timeout: float = TIMEOUT_S) -> CleoAnswer:
    """Run the command (no shell) and return CLEO's answer; never raises for CLEO's failures."""
    if command.why_not is not None:
        return CleoAnswer(None, "", "", f"not run: {command.why_not}")
    try:
        done = subprocess.run(list(command.argv), cwd=command.cwd, capture_output=True, text=True,
                              errors="replace", timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return CleoAnswer(None, "", "", f"`cleo` could not run ({one_line(str(exc), 200)})")
    return CleoAnswer(done.returncode, done.stdout or "", done.stderr or "")
