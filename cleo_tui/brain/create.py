"""Create brains: an empty one at a path, or a project's brain that CLEO can live with.

CLEO treats `<project>/.cleo/cleo.db` as an existing project database only when it
holds `tasks_tasks` and its migration journal `__drizzle_migrations`; any other
file there makes CLEO re-run its baseline migration, which fails on the brain
tables, and every CLEO command in that project then fails. CLEO also adopts a
legacy `.cleo/brain.db` (it copies it into `cleo.db` and moves it to
`.cleo/_archive/`, leaving cleo-tui's own tables behind). So a project brain is
made either by CLEO itself (`cleo init`, when `cleo` is on PATH and the project
is a git repository, as CLEO requires) or at `.cleo-tui/brain.db`, a path CLEO
never looks at. `locate_brain` finds both; CLEO's wins once it exists.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.errors import BrainError, BrainUnwritable
from cleo_tui.brain.migrations import META
from cleo_tui.brain.store import OWN_BRAIN, Brain, brain_candidates, open_brain, refuse_non_brain
from cleo_tui.safe_text import one_line, safe_path, safe_text

CLEO_DB = Path(".cleo") / "cleo.db"
CLEO_INIT_TIMEOUT_S = 300
CleoChoice = Literal["auto", "always", "never"]


@dataclass(frozen=True)
class CreatedBrain:
    """Where a project's new brain is, who made it, and what to tell the user about it."""

    path: Path
    by_cleo: bool
    message: str


def remove_database(path: Path) -> None:
    """Delete a database file and its -wal/-shm/-journal companions, if present."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


@contextmanager
def _made_dirs(directory: Path) -> Iterator[None]:
    """Create `directory` (and parents); on failure remove the ones made here, if still empty."""
    made = [p for p in (directory, *directory.parents) if not p.exists()]
    try:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # /proc/nope, a read-only mount, a file in the way
            raise BrainUnwritable(f"Cannot create the directory {safe_path(directory)} "
                                  f"({safe_text(exc.strerror or exc)}); nothing was written. Choose a "
                                  "directory you can write to.") from None
        yield
    except BaseException:
        for folder in made:  # deepest first
            try:
                folder.rmdir()
            except OSError:
                break
        raise


def _fill_new_brain(path: Path) -> None:
    """CLEO's brain layout plus cleo-tui's marker, in one transaction, in a new file."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("BEGIN IMMEDIATE")
        cs.create_cleo_tables(conn)
        conn.execute(f"CREATE TABLE IF NOT EXISTS {META} (key TEXT PRIMARY KEY, value TEXT)")
        conn.execute(f"INSERT OR IGNORE INTO {META}(key, value) VALUES ('created_by', 'cleo-tui')")
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the file alone is the brain when renamed
    finally:
        conn.close()


def create_brain(path: str | Path) -> Brain:
    """Create a new brain file in CLEO's layout (plus cleo-tui's tables) and open it.

    It is built under a temporary name and renamed when complete: a failure (a full
    disk, a read-only directory) leaves neither a half brain nor an empty file behind.
    """
    path = Path(path).expanduser()
    refuse_non_brain(path)
    partial = path.with_name(path.name + ".partial")
    with _made_dirs(path.parent):
        try:
            remove_database(partial)
            _fill_new_brain(partial)
        except BaseException as exc:
            remove_database(partial)
            if isinstance(exc, (OSError, sqlite3.OperationalError)):
                raise BrainUnwritable(f"Cannot create {path}: {exc}. Nothing was left behind; free some "
                                      "space or choose a directory you can write to.") from None
            raise
        partial.replace(path)
    return open_brain(path)


def existing_project_brain(directory: Path) -> Path | None:
    """A brain (or CLEO project database) already in `directory` itself, if any."""
    for candidate in [*brain_candidates(directory)[:3], directory / CLEO_DB]:
        if candidate.exists():
            return candidate
    return None


def _cleo_init(directory: Path, cleo: str) -> str | None:
    """Run `cleo init` in `directory`; None when it worked, else why not (one line)."""
    try:
        done = subprocess.run([cleo, "init"], cwd=directory, capture_output=True, text=True,
                              timeout=CLEO_INIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"`cleo init` could not run ({exc})"
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
        return f"`cleo init` failed (exit {done.returncode}: {one_line(tail[0], 200)})"
    if not (directory / CLEO_DB).is_file():
        return f"`cleo init` finished but made no {CLEO_DB}"
    return None


def _through_cleo(directory: Path, cleo: str) -> CreatedBrain | str:
    """The project set up by CLEO and opened once (adding cleo-tui's tables); or why not."""
    problem = _cleo_init(directory, cleo)
    if problem:
        return problem
    path = directory / CLEO_DB
    open_brain(path).close()  # NotABrain when CLEO made no brain tables: the user is told so
    return CreatedBrain(path, True, f"CLEO set up the project (`cleo init`); its brain is {path}.")


@dataclass(frozen=True)
class BrainPlan:
    """Where `create_project_brain` will put a project's new brain, and why there.

    `cleo` is the `cleo` program that will set the project up, or None for cleo-tui's own
    brain; then `reason` says why CLEO does not.
    """

    path: Path
    cleo: str | None
    reason: str

    def describe(self) -> str:
        """One sentence for the user: who makes the brain and where it will be."""
        if self.cleo:
            return f"CLEO sets the project up (`cleo init`); its brain will be {self.path}."
        return (f"cleo-tui makes its own brain at {self.path}, outside .cleo/ where CLEO never looks "
                f"({self.reason}).")


def plan_project_brain(directory: str | Path, cleo: CleoChoice = "auto") -> BrainPlan:
    """Who would make the brain of the project at `directory`, and where (nothing is written).

    CLEO's `cleo init` when `cleo` is on PATH and the directory is a git repository (CLEO sets
    up only those) unless `cleo` is "never"; otherwise cleo-tui's own `.cleo-tui/brain.db`.
    """
    directory = Path(directory).expanduser().absolute()
    if cleo == "never":
        return BrainPlan(directory / OWN_BRAIN, None, "--standalone was given")
    program = shutil.which("cleo")
    if program is None:
        return BrainPlan(directory / OWN_BRAIN, None, "there is no `cleo` on PATH")
    if not (directory / ".git").exists():
        return BrainPlan(directory / OWN_BRAIN, None, "CLEO sets up only git repositories and there is no .git here")
    return BrainPlan(directory / CLEO_DB, program, "")


def create_project_brain(directory: str | Path, cleo: CleoChoice = "auto") -> CreatedBrain:
    """A new, empty brain for the project at `directory`, made so CLEO keeps working there.

    `cleo`: "auto" uses `cleo init` when CLEO is on PATH and the project is a git
    repository, else makes cleo-tui's own brain at `.cleo-tui/brain.db`; "always"
    requires CLEO; "never" always makes cleo-tui's own brain (see `plan_project_brain`).
    """
    directory = Path(directory).expanduser().absolute()
    found = existing_project_brain(directory)
    if found is not None:
        raise BrainError(f"{found} already exists; nothing was changed. Open it with `cleo-tui {directory}`.")
    plan = plan_project_brain(directory, cleo)
    reason = plan.reason
    if plan.cleo is not None:
        outcome = _through_cleo(directory, plan.cleo)
        if isinstance(outcome, CreatedBrain):
            return outcome
        reason = outcome
    if cleo == "always":
        raise BrainError(f"Cannot set the project up through CLEO: {reason}. Nothing was changed; "
                         "run `cleo-tui init --standalone` for cleo-tui's own brain.")
    path = directory / OWN_BRAIN
    create_brain(path).close()
    return CreatedBrain(path, False, (
        f"Created cleo-tui's own brain at {path}. CLEO did not set the project up: {reason}. The brain lives "
        "outside .cleo/, so CLEO neither adopts it nor trips over it; once CLEO sets this project up, "
        "cleo-tui opens CLEO's .cleo/cleo.db instead."))
