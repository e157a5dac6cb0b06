"""Redacting secrets from every byte of a brain: rows, full-text index, WAL, free pages and caches.

A redaction replaces each secret in place with its marker (`[redacted:aws-access-key]`) as one
run, in these steps:

1. **Rows**, in short chunks CLEO interleaves with (`journal.write_in_chunks`): each row is re-read
   and re-scanned inside its chunk, so what is replaced is what is there now. Where CLEO derives a
   column from the text, it is recomputed as CLEO computes it (`content_hash`: the first 16 hex of
   sha256 of the trimmed, lower-cased text; see CLEO's `retrieval/observe.ts`, `learnings.ts`,
   `patterns.ts`, `decisions.ts`), so CLEO's hash dedup keeps working; `updated_at` is set so
   CLEO's watchers see the change. The journal records that the run happened and where
   (table, row, column, kind), never a secret; the run cannot be undone.
2. **Full-text index**: FTS5 keeps a deleted token in its older segments until they are merged.
   Every FTS5 table is merged into one segment with incremental `merge` steps (each a short
   transaction), which drops the old tokens.
3. **The file**: `VACUUM` rewrites it without free pages or the unused space inside pages where
   earlier versions of rows linger (CLEO writes without `secure_delete`). It holds CLEO's writes
   for as long as it runs; the confirmation says how long that is expected to be
   (`vacuum_estimate`). Then the WAL is checkpointed and truncated.
4. **cleo-tui's caches** of this brain (scan snapshots, findings, duplicates) are deleted, and
   cached detector findings naming a secret are removed from the shared token cache.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.journal import Slice, finish_run, start_run, write_in_chunks
from cleo_tui.brain.store import Brain
from cleo_tui.config import brain_cache_name, cache_dir
from cleo_tui.memory.cache_files import KINDS as CACHE_KINDS
from cleo_tui.memory.mapping import as_text
from cleo_tui.memory.secrets import Finding, SecretScan, key_columns, may_hold_text, redact_text, row_key_values
from cleo_tui.memory.token_cache import cache_path as token_cache_path
from cleo_tui.safe_text import plural

REDACT_KIND = "redact"
VACUUM_BYTES_PER_SECOND = 40 * 1024 * 1024  # measured on this machine's disk: 60-120 MB/s; estimate low
MERGE_PAGES = 200  # pages an FTS5 merge step writes: a short transaction

# The text each table's content_hash is computed from, as CLEO computes it.
_HASHED_TEXT: dict[str, tuple[str, ...]] = {
    cs.OBSERVATIONS: ("narrative",),
    cs.LEARNINGS: ("insight",),
    cs.PATTERNS: ("pattern",),
    cs.DECISIONS: ("decision", "rationale"),
}


@dataclass
class RedactionResult:
    """What a redaction did."""

    run_id: int | None = None
    rows: int = 0
    secrets: int = 0
    fts_merged: list[str] = field(default_factory=list)
    vacuum_seconds: float = 0.0
    longest_chunk_ms: float = 0.0  # the longest the rows' and the index's short steps held CLEO's writes
    wal_truncated: bool = False
    caches_removed: int = 0
    problems: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """What was done, in words (the CLI and the TUI)."""
        out = [f"Redacted {plural(self.secrets, 'secret')} in {plural(self.rows, 'row')} (run {self.run_id}; it "
               "cannot be undone).",
               f"Full-text indexes merged: {', '.join(self.fts_merged) or 'none'}; the longest step held CLEO's "
               f"writes {self.longest_chunk_ms:.0f} ms; the file was rewritten in {self.vacuum_seconds:.1f} s.",
               f"cleo-tui cache files and entries removed: {self.caches_removed}."]
        return out + [f"Note: {p}" for p in self.problems]

    def to_json(self) -> dict[str, object]:
        return {"run_id": self.run_id, "rows": self.rows, "secrets": self.secrets, "fts_merged": self.fts_merged,
                "vacuum_seconds": round(self.vacuum_seconds, 3),
                "longest_chunk_ms": round(self.longest_chunk_ms, 1), "wal_truncated": self.wal_truncated,
                "caches_removed": self.caches_removed, "problems": self.problems}


def content_hash(table: str, values: dict[str, object]) -> str | None:
    """CLEO's content_hash of a row of `table` from its text columns (None where CLEO keeps none)."""
    columns = _HASHED_TEXT.get(table)
    if columns is None:
        return None
    text = "\n".join(as_text(values.get(c)).strip() for c in columns)
    return hashlib.sha256(text.lower().encode("utf-8", "surrogatepass")).hexdigest()[:16]


def vacuum_estimate(path: Path) -> float:
    """Seconds the VACUUM is expected to hold CLEO's writes, from the file's size."""
    try:
        size = Path(path).stat().st_size
    except OSError:
        return 0.0
    return size / VACUUM_BYTES_PER_SECOND


def scanned(scan: SecretScan) -> str:
    """What was read: "2,000 rows of 3 tables"."""
    return f"{plural(scan.scanned_rows, 'row')} of {plural(len(scan.tables), 'table')}"


def scan_summary(scan: SecretScan) -> str:
    """"3 aws-access-key, 1 jwt in brain_observations.narrative (3), brain_retrieval_log.query (1)"."""
    kinds = Counter(f.kind for f in scan.findings)
    places = Counter(f"{f.table}.{f.column}" for f in scan.findings)
    return (", ".join(f"{n} {kind}" for kind, n in kinds.most_common()) + " in "
            + ", ".join(f"{place} ({n})" for place, n in places.most_common(8))
            + (", …" if len(places) > 8 else ""))


def redaction_question(scan: SecretScan, path: Path) -> str:
    """What the confirmation says before a redaction (the CLI and the TUI alike)."""
    rows = len({(f.table, f.row_id) for f in scan.findings})
    return (f"Redact {plural(len(scan.findings), 'secret')} in {plural(rows, 'row')}: {scan_summary(scan)}. "
            "Each is replaced by a marker such as [redacted:aws-access-key] in the rows, the full-text index, the "
            "WAL and the free space of the file, which is rewritten at the end: CLEO's writes wait about "
            f"{max(vacuum_estimate(path), 0.1):.1f} s then. cleo-tui's caches of this brain are deleted. "
            "This CANNOT be undone: the secrets are not kept anywhere.")


def _rows(findings: Iterable[Finding]) -> list[tuple[str, str]]:
    """(table, row id) of each row holding a finding, once each, in order."""
    return list(dict.fromkeys((f.table, f.row_id) for f in findings))


def _redact_row(conn: sqlite3.Connection, table: str, row_id: str, secrets: set[str]) -> int:
    """Redact one row as it is now; how many secrets it held. Their text is added to `secrets`."""
    info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    sql = str(conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()[0])
    columns = [str(r[1]) for r in info]
    key = key_columns(info, "WITHOUT ROWID" in sql.upper())
    texts = [str(r[1]) for r in info if may_hold_text(r[2])]
    where = " AND ".join(f'"{k}" = ?' for k in key)
    key_values = row_key_values(row_id, key)
    selected = ", ".join(f'"{c}"' for c in texts)
    row = conn.execute(f'SELECT {selected} FROM "{table}" WHERE {where}', key_values).fetchone()
    if row is None:
        return 0  # deleted since the scan (CLEO's consolidation): nothing of it is left to redact
    changed: dict[str, object] = {}
    found = 0
    for column, value in zip(texts, row, strict=True):
        if value is None or isinstance(value, int | float):
            continue
        text = as_text(value)
        redacted, matches = redact_text(text)
        if matches:
            found += len(matches)
            secrets.update(text[m.start:m.end] for m in matches)
            changed[column] = redacted
    if not changed:
        return 0
    current = dict(zip(texts, row, strict=True)) | changed
    if table in _HASHED_TEXT and current.get("content_hash") is not None:
        changed["content_hash"] = content_hash(table, current)
    if "updated_at" in columns:
        changed["updated_at"] = cleo_timestamp()
    sets = ", ".join(f'"{c}" = ?' for c in changed)
    conn.execute(f'UPDATE "{table}" SET {sets} WHERE {where}', [*changed.values(), *key_values])
    return found


@contextmanager
def _secure_delete(brain: Brain) -> Iterator[None]:
    with brain.lock:
        prior = int(brain.conn.execute("PRAGMA secure_delete").fetchone()[0])
        brain.conn.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        with brain.lock:
            brain.conn.execute(f"PRAGMA secure_delete = {prior}")


def fts_tables(brain: Brain) -> list[str]:
    """Every FTS5 table in the file."""
    return [str(r[0]) for r in brain.query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%' "
        "ORDER BY name")]


def merge_fts(brain: Brain, table: str) -> float:
    """Merge one FTS5 index into a single segment in short steps; the longest step, in seconds.

    A negative `merge` argument merges segments whatever their level. The index is one
    segment, with every deleted token dropped, once a step leaves its structure record
    (row 10 of the `_data` shadow table) as it was.
    """
    structure = f'SELECT block FROM "{table}_data" WHERE id = 10'
    longest = 0.0
    while True:
        started = time.perf_counter()
        with brain.write(sweep_check=False) as conn:
            before = conn.execute(structure).fetchone()
            conn.execute(f'INSERT INTO "{table}"("{table}", rank) VALUES (\'merge\', ?)', (-MERGE_PAGES,))
            changed = conn.execute(structure).fetchone() != before
        longest = max(longest, time.perf_counter() - started)
        if not changed:
            return longest


def _vacuum(brain: Brain) -> float:
    """VACUUM the file (temporary copy in memory, so no secret reaches a temp file); seconds it held the lock."""
    with brain.lock:
        conn = brain.conn
        conn.execute("PRAGMA temp_store = MEMORY")
        started = time.perf_counter()
        conn.execute("VACUUM")
        return time.perf_counter() - started


def _truncate_wal(brain: Brain, tries: int = 20) -> bool:
    """Checkpoint everything and truncate the WAL to zero bytes; False when a reader keeps it."""
    with brain.lock:
        mode = str(brain.conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
        if mode != "wal":
            return True
        for _ in range(tries):
            busy, _frames, _copied = brain.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy:
                return True
    return False


def _drop_caches(brain_path: Path, secrets: set[str]) -> int:
    """Delete this brain's cache files and every cached detector finding naming a secret; how many went."""
    name = brain_cache_name(brain_path)
    removed = 0
    for kind in CACHE_KINDS:
        for file in (cache_dir() / kind).glob(f"{name}-*"):
            try:
                file.unlink()
                removed += 1
            except OSError:
                pass
    path = token_cache_path()
    if not path.exists() or not secrets:
        return removed
    try:
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=5)
        try:
            conn.execute("PRAGMA secure_delete = ON")
            have = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "text_findings" in have:
                for secret in secrets:
                    removed += conn.execute("DELETE FROM text_findings WHERE instr(findings, ?) > 0",
                                            (secret,)).rowcount
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    except sqlite3.Error:
        pass  # an unusable cache holds nothing we could read back either
    return removed


def redact(brain: Brain, findings: list[Finding], vacuum: bool = True) -> RedactionResult:
    """Replace every secret of the rows named by `findings` with its marker, everywhere in the file.

    The rows are re-scanned as they are now (a row CLEO deleted is skipped, one it changed is
    redacted as changed). Cannot be undone: the journal keeps where, never what.
    """
    brain.ensure_writable()
    result = RedactionResult()
    rows = _rows(findings)
    secrets: set[str] = set()
    where = [{"table": f.table, "row_id": f.row_id, "column": f.column, "kind": f.kind} for f in findings]

    def step(conn: sqlite3.Connection, batch: list[tuple[str, str]], part: Slice) -> int | None:
        for table, row_id in batch:
            found = _redact_row(conn, table, row_id, secrets)
            result.secrets += found
            result.rows += bool(found)
        return None

    def start(conn: sqlite3.Connection) -> None:
        pass

    def finish(conn: sqlite3.Connection) -> None:
        run_id = start_run(conn, REDACT_KIND, f"redacted {plural(result.secrets, 'secret')} in "
                           f"{plural(result.rows, 'row')}; a redaction cannot be undone", {"where": where})
        finish_run(conn, run_id)
        result.run_id = run_id

    with _secure_delete(brain):  # bytes our writes free are zeroed at once, VACUUM or not
        stats = write_in_chunks(brain, rows, step, start, finish)
        result.longest_chunk_ms = stats.longest * 1000
        for table in fts_tables(brain):
            result.longest_chunk_ms = max(result.longest_chunk_ms, merge_fts(brain, table) * 1000)
            result.fts_merged.append(table)
        if vacuum:
            result.vacuum_seconds = _vacuum(brain)
        result.wal_truncated = _truncate_wal(brain)
    if not result.wal_truncated:
        result.problems.append("another process keeps reading an old state of the brain, so its WAL could not be "
                               "truncated yet; run `cleo-tui secrets --redact --yes` again once CLEO is idle")
    result.caches_removed = _drop_caches(brain.path, secrets)
    secrets.clear()
    return result
