"""CLEO's own rules about a project's `.cleo/` directory, restated for tests (CLEO v2026.8.9).

- `.cleo/cleo.db` is an existing project database only when it holds `tasks_tasks` and
  the migration journal `__drizzle_migrations` (108 rows at v2026.8.9). Any other
  file there gets CLEO's baseline migration again, whose CREATE TABLEs fail on any
  table already present, and then every CLEO command in the project fails.
- On first open of an empty `cleo.db`, CLEO adopts the legacy stores in `.cleo/`
  (`tasks.db`, `brain.db`, `conduit.db`): copies them in and moves them to `.cleo/_archive/`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

CLEO_JOURNAL = "__drizzle_migrations"
CLEO_BASE_TABLE = "tasks_tasks"
CLEO_JOURNAL_ROWS = 108
LEGACY_SOURCES = ("tasks.db", "brain.db", "conduit.db")


def _tables(db: Path) -> set[str]:
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


def cleo_treats_as_existing(db: Path) -> bool:
    """CLEO's test: this project database is one it made (its base table and journal are there)."""
    if not db.is_file():
        return False
    tables = _tables(db)
    if not {CLEO_BASE_TABLE, CLEO_JOURNAL} <= tables:
        return False
    conn = sqlite3.connect(db)
    try:
        rows: int = conn.execute(f"SELECT count(*) FROM {CLEO_JOURNAL}").fetchone()[0]
        return rows > 0
    finally:
        conn.close()


def cleo_would_choke_on(project: Path) -> bool:
    """CLEO would re-run its baseline on `.cleo/cleo.db` and fail on the tables already in it."""
    db = project / ".cleo" / "cleo.db"
    return db.is_file() and not cleo_treats_as_existing(db) and bool(_tables(db))


def cleo_would_adopt(project: Path) -> list[Path]:
    """The files in `.cleo/` CLEO would copy into its cleo.db and move to `.cleo/_archive/`."""
    return [project / ".cleo" / name for name in LEGACY_SOURCES if (project / ".cleo" / name).is_file()]


FAKE_CLEO = '''#!{python}
"""A stand-in for CLEO's `cleo init`: what it leaves behind, by CLEO's rules (tests/cleo_rule.py)."""
import os, sqlite3, sys
if sys.argv[1:] != ["init"]:
    sys.exit("fake cleo: only `cleo init` is faked")
if os.environ.get("FAKE_CLEO_FAIL"):
    print("E_INIT: " + os.environ["FAKE_CLEO_FAIL"], file=sys.stderr)
    sys.exit(3)
if not os.path.isdir(".git"):
    sys.exit("E_NOT_GIT: CLEO needs a git repository")
os.makedirs(".cleo", exist_ok=True)
conn = sqlite3.connect(".cleo/cleo.db")
conn.execute("PRAGMA journal_mode = WAL")
conn.execute("CREATE TABLE {journal} (id INTEGER PRIMARY KEY, hash TEXT, created_at INTEGER)")
conn.executemany("INSERT INTO {journal}(hash, created_at) VALUES (?, 0)", [(str(i),) for i in range({rows})])
conn.execute("CREATE TABLE {base} (id TEXT PRIMARY KEY, title TEXT)")
conn.execute("CREATE TABLE brain_observations (id TEXT PRIMARY KEY, type TEXT, title TEXT, narrative TEXT, "
             "created_at TEXT, invalid_at TEXT)")
conn.commit()
conn.close()
open(".cleo/config.json", "w").write("{{}}")
'''


def install_fake_cleo(bin_dir: Path, python: str) -> Path:
    """Write an executable `cleo` into `bin_dir` (put it on PATH) and return it."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    program = bin_dir / "cleo"
    program.write_text(FAKE_CLEO.format(python=python, journal=CLEO_JOURNAL, base=CLEO_BASE_TABLE,
                                        rows=CLEO_JOURNAL_ROWS))
    program.chmod(0o755)
    return program
