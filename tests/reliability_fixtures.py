"""Helpers for the reliability tests: hostile brains, full table dumps, the CLI in-process,
terminal-byte checks and the results file that `tests.reliability_report` renders.

Hostile brains are built with plain sqlite3 the way a careless or older writer could
leave them: NOT NULL relaxed (via `PRAGMA writable_schema`), invalid UTF-8, blobs,
malformed JSON, impossible dates, odd ids, an FTS index out of sync with its content
and a `brain_embeddings` virtual table whose module (`vec0`) this SQLite lacks.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.cli import main as cli_main
from tests.brain_fixtures import make_cleo_consolidated, make_cleo_legacy

RESULTS_DIR = Path(__file__).resolve().parent.parent / ".reliability"

# Pieces of text that have broken terminal apps before; each must show literally.
OSC8 = "\x1b]8;;http://evil.example/\x07click me\x1b]8;;\x07"
OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"
HOSTILE_FRAGMENTS = (
    "[bold red]markup[/]", "[link=http://evil.example]link[/link]", "[/]", "[", "\\[escaped]",
    "\x1b[31mred\x1b[0m", "\x1b[2J\x1b[H", OSC8, OSC52, "\x1b]0;title\x07", "\x9b31m", "\x1bP+q\x1b\\",
    "\x00", "\x07", "\x08\x08", "\r", "\x7f", "\u202eevil\u202c", "\u2066iso\u2069", "🧠", "e\u0301",
    "'; DROP TABLE brain_observations; --", '"', "%_", "\t", "\n",
)
# Data bytes that must never reach a terminal (C0 except TAB/LF/CR, DEL and C1).
_DATA_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]")

BIG_NARRATIVE = ("A one-megabyte narrative. " * 40_330)[:1_048_576]
VEC0_SQL = "CREATE VIRTUAL TABLE brain_embeddings USING vec0(id TEXT PRIMARY KEY, embedding float[384])"

# (id, column values) for rows no CLEO version writes but a brain may hold anyway.
FIXED_ROWS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("O-markup", {"title": "[bold red]x[/] [link=http://evil.example]click[/link]", "narrative": "[/][b]"}),
    ("O-ansi", {"title": "plain", "narrative": "\x1b[31mred\x1b[0m " + OSC8 + " " + OSC52 + " \x1b[2J"}),
    ("O-controls", {"title": "nul\x00bell\x07bs\x08", "narrative": "".join(map(chr, range(32))) + "\x7f\x9b\x9d"}),
    ("O-big", {"title": "big one", "narrative": BIG_NARRATIVE}),
    ("O-nulls", {"title": None, "narrative": None, "type": None, "created_at": None, "source_type": None}),
    ("O-json", {"facts_json": "{not json", "concepts_json": "[1, 2", "files_read_json": '"a string"',
                "files_modified_json": "null"}),
    ("O-dates", {"created_at": "2026-13-45 25:61:61", "valid_at": "yesterday", "updated_at": ""}),
    ("O-date-int", {"created_at": 1_700_000_000}),
    ("O-date-future", {"created_at": "9999-99-99 99:99:99"}),
    ("O with spaces", {"title": "id with spaces"}),
    ("O-'quote\"", {"title": "id with quotes"}),
    ("O-ünï-😀-\u202e", {"title": "id with unicode and a bidi override"}),
    ("O-%_like", {"title": "id with LIKE wildcards"}),
    ("O-\x1b]52;c;aWQ=\x07", {"title": "id holding an OSC 52"}),
    ("O-odd-values", {"quality_score": "high", "memory_tier": "galactic", "citation_count": "many",
                      "verified": "yes", "source_type": "transcript"}),
)
# Rows whose text columns hold invalid UTF-8 (as TEXT) or a BLOB: set with SQL casts.
BYTE_ROWS = (
    ("O-bad-utf8", "CAST(X'fffe41c3281b5b33316d' AS TEXT)"),
    ("O-blob", "X'1b5d35323b633b614756736247383d07'"),
)
GHOST_ROWID = 987_654


def _relax_not_null(conn: sqlite3.Connection, table: str) -> None:
    """Drop NOT NULL from a table's schema (what an older or buggy writer could leave)."""
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE name = ?", (table,))
    conn.execute("PRAGMA writable_schema = OFF")


def add_vec0_table(conn: sqlite3.Connection) -> None:
    """A `brain_embeddings` vec0 table as CLEO leaves it; without sqlite-vec any read of it fails."""
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("INSERT INTO sqlite_master(type, name, tbl_name, rootpage, sql) "
                 "VALUES ('table', 'brain_embeddings', 'brain_embeddings', 0, ?)", (VEC0_SQL,))
    conn.execute("PRAGMA writable_schema = OFF")


def insert_rows(conn: sqlite3.Connection, rows: Iterable[Mapping[str, Any]]) -> int:
    """Insert observation rows, keeping only columns the table has; returns how many."""
    have = {r[1] for r in conn.execute(f"PRAGMA table_info({cs.OBSERVATIONS})")}
    count = 0
    for row in rows:
        keep = {k: v for k, v in row.items() if k in have}
        cols = ", ".join(f'"{c}"' for c in keep)
        conn.execute(f"INSERT INTO {cs.OBSERVATIONS} ({cols}) VALUES ({', '.join('?' for _ in keep)})",
                     list(keep.values()))
        count += 1
    return count


def plain_rows(count: int, prefix: str = "O-plain") -> list[dict[str, Any]]:
    """Ordinary live rows, so a prune has something to drop."""
    return [{"id": f"{prefix}{i:04d}", "type": "discovery", "title": f"plain row {i}",
             "narrative": f"Plain narrative {i} about src/mod_{i % 5}.py and task T{i % 7}.",
             "created_at": f"2026-03-{1 + i % 27:02d} 09:{i % 60:02d}:00", "source_type": "agent"}
            for i in range(count)]


def fixed_hostile_rows() -> list[dict[str, Any]]:
    base = {"type": "discovery", "title": "t", "narrative": "n", "created_at": "2026-04-01 10:00:00",
            "source_type": "agent"}
    return [{**base, "id": oid, **values} for oid, values in FIXED_ROWS]


def _break_fts(conn: sqlite3.Connection) -> None:
    """Leave the FTS index out of sync: a ghost entry, and rows written with the trigger off."""
    conn.execute(f"INSERT INTO {cs.OBSERVATIONS_FTS}(rowid, id, title, narrative) VALUES (?, ?, ?, ?)",
                 (GHOST_ROWID, "O-ghost", "ghost plain entry", "ghost narrative"))
    conn.execute("DROP TRIGGER brain_observations_ai")
    insert_rows(conn, plain_rows(3, prefix="O-unindexed"))
    conn.execute(cs.OBSERVATIONS_FTS_SQL[1])  # the insert trigger again, as CLEO has it


def _hostile_records(conn: sqlite3.Connection) -> None:
    """A pattern, a learning and edges holding hostile text too (the reflections' side)."""
    if "brain_patterns" in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}:
        _relax_not_null(conn, cs.PATTERNS)
    conn.execute(f"INSERT INTO {cs.PATTERNS}(id, type, pattern, context, extracted_at) VALUES (?, ?, ?, ?, ?)",
                 ("P-hostile", "workflow", "cites O-markup " + OSC8, "[bold]ctx[/]", "not a date"))
    conn.execute(f"INSERT INTO {cs.EDGES}(from_id, to_id, edge_type) VALUES (?, ?, ?)",
                 ("pattern:P-hostile", "observation:O-never-existed\x1b[5m", "supersedes"))


def build_hostile_brain(path: Path, extra_rows: Iterable[Mapping[str, Any]] = (), plain: int = 40) -> Path:
    """A CLEO `cleo.db` holding every hostile case (see the module docstring); returns its path."""
    make_cleo_consolidated(path)
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        _relax_not_null(conn, cs.OBSERVATIONS)
        conn.close()
        conn = sqlite3.connect(str(path), isolation_level=None)  # re-read the relaxed schema
        conn.execute("BEGIN")
        insert_rows(conn, plain_rows(plain))
        insert_rows(conn, fixed_hostile_rows())
        for oid, expr in BYTE_ROWS:
            conn.execute(f"INSERT INTO {cs.OBSERVATIONS}(id, type, title, narrative, created_at, source_type) "
                         f"VALUES (?, 'discovery', {expr}, {expr}, '2026-04-02 10:00:00', 'agent')", (oid,))
        conn.execute(f"INSERT INTO {cs.OBSERVATIONS}(id, type, title, created_at) VALUES "
                     "(NULL, 'discovery', 'a row whose id is NULL', '2026-04-03 10:00:00')")
        insert_rows(conn, extra_rows)
        _hostile_records(conn)
        _break_fts(conn)
        conn.execute("COMMIT")
        add_vec0_table(conn)
    finally:
        conn.close()
    return path


def build_minimal_brain(path: Path) -> Path:
    """An old CLEO brain.db: no FTS, newer columns missing, optional tables dropped, vec0 present."""
    make_cleo_legacy(path, fts=False)
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        for table in (cs.PATTERNS, cs.LEARNINGS, cs.DECISIONS, cs.NODES, cs.EDGES, cs.MEMORY_LINKS):
            conn.execute(f"DROP TABLE {table}")
        _relax_not_null(conn, cs.OBSERVATIONS)
        conn.close()
        conn = sqlite3.connect(str(path), isolation_level=None)  # re-read the relaxed schema
        conn.execute("BEGIN")
        insert_rows(conn, plain_rows(20) + fixed_hostile_rows()[:6])
        conn.execute("COMMIT")
        add_vec0_table(conn)
    finally:
        conn.close()
    return path


# --- checks ------------------------------------------------------------------------


def data_controls(data: bytes | str) -> list[str]:
    """Control bytes in output that did not come from a terminal's own styling.

    `data` is plain text output (the CLI, an exported screen): it must hold no ESC,
    no NUL and no other C0/C1 control except tab, newline and carriage return.
    """
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    found = [repr(m.group()) for m in _DATA_CONTROL.finditer(raw)]
    found += ["ESC"] * raw.count(b"\x1b")
    text = raw.decode("utf-8", "replace")
    found += [f"U+{ord(c):04X}" for c in text if 0x80 <= ord(c) <= 0x9F]
    return found


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run `cleo-tui ARGS` in this process; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(list(args))
    return code, out.getvalue(), err.getvalue()


def table_dump(path: Path, skip: Iterable[str] = ()) -> dict[str, list[tuple]]:
    """Every row of every ordinary table of a brain file, sorted.

    Virtual tables and FTS shadow tables are skipped: FTS5 rewrites its index pages on
    any update, so their bytes differ even when the indexed content is the same.
    """
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' "
            "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%_fts_%' ORDER BY name")]  # FTS shadow pages
        conn.text_factory = bytes  # compare stored bytes, invalid UTF-8 included
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr)
                for t in tables if t not in set(skip)}
    finally:
        conn.close()


def without_restored_updated_at(dump: dict[str, list[tuple]], path: Path,
                                restored: Iterable[bytes]) -> dict[str, list[tuple]]:
    """A `table_dump` with `updated_at` blanked in the observations whose id is in `restored`
    (ids as stored bytes), and nothing else: undo stamps that column with its own time
    (issue 20 item 1)."""
    wanted = set(restored)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(brain_observations)")]
    finally:
        conn.close()
    key, stamp = columns.index("id"), columns.index("updated_at")
    rows = (tuple(None if c == stamp and row[key] in wanted else v for c, v in enumerate(row))
            for row in dump["brain_observations"])
    return {**dump, "brain_observations": sorted(rows, key=repr)}


def integrity(path: Path) -> str:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return ";".join(r[0] for r in conn.execute("PRAGMA integrity_check"))
    finally:
        conn.close()


# --- results for RELIABILITY.md ----------------------------------------------------


def record(theme: str, case: str, expected: str, result: str, fixed: str = "", note: str = "",
           **counts: int) -> None:
    """Write one case's outcome to `.reliability/` (ignored by git) for the report.

    `fixed` names the bug this case found (and that was fixed), if any; `note` a limit it
    showed that is not fixed (yet).
    """
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / ".gitignore").write_text("*\n", encoding="utf-8")
    slug = re.sub(r"[^a-z0-9]+", "-", f"{theme}-{case}".lower()).strip("-")[:80]
    entry = {"theme": theme, "case": case, "expected": expected, "result": result, "counts": counts,
             "fixed": fixed, "note": note}
    (RESULTS_DIR / f"{slug}.json").write_text(json.dumps(entry, indent=1), encoding="utf-8")


async def settle_expecting_failure(app, pilot) -> None:
    """`settle`, when a worker is expected to fail: waiting on a failing worker re-raises its
    error (WorkerFailed); the app has shown its popup by then, so settle again."""
    from textual.worker import WorkerFailed

    from tests.ui_helpers import settle
    try:
        await settle(app, pilot)
    except WorkerFailed:
        await settle(app, pilot)
