"""CLEO's noise sweep and consolidation steps restated as the SQL CLEO runs (v2026.8.9), for tests.

- `stage_sweep`: what `detectNoiseCandidates` (brain-noise-detector.ts) writes: a
  `brain_backfill_runs` row (kind noise-sweep-2440, status staged) and one staging row per
  candidate (action purge, new_invalid_at = detection time, new_provenance_class noise-purged,
  validation_status pending).
- `cleo_approve`: the statements of `executeSweep` (brain-sweep-executor.ts): only a staged run;
  only its `pending` rows; purge → invalid_at = now ISO, provenance_class = 'noise-purged'; others →
  provenance_class = 'swept-clean'; the loaded rows → applied; the run → approved, approved_at = now.
- `cleo_rollback`: `rollbackSweep`: a staged run → rolled-back, its pending rows → skipped.
- `cleo_flag_and_hard_delete`: consolidation steps 9a.5 (`correlateOutcomes`' flag) and 9f
  (`runPruneSweep`) on brain_observations.
- `write_stand_in_cleo(bin_dir)`: an executable `cleo` that records its arguments and, for
  `memory sweep --approve|--rollback RUN`, applies the above to `./.cleo/cleo.db`.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from cleo_tui.brain import cleo_schema as cs

REPO = Path(__file__).resolve().parent.parent


def iso_now() -> str:
    """`new Date().toISOString()`."""
    moment = datetime.now(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def add_sweep_tables(conn: sqlite3.Connection) -> None:
    for sql in cs.SWEEP_TABLES_SQL:
        conn.execute(sql)


def stage_sweep(path: Path, run_id: str, candidates: Iterable[tuple[str, str]], at: str = "2026-05-30T10:00:00.000Z",
                actions: dict[str, str] | None = None) -> list[str]:
    """Stage a run over (source_table, source_id) candidates; returns the staging ids in order."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        add_sweep_tables(conn)
        pairs = list(candidates)
        conn.execute("BEGIN")
        conn.execute(f"INSERT INTO {cs.BACKFILL_RUNS} (id, kind, status, rows_affected, source, target_table, "
                     "rollback_snapshot_json, approved_at, approved_by, created_at) VALUES (?, 'noise-sweep-2440', "
                     "'staged', ?, 'T1147-W7-auto-sweep', "
                     "'brain_observations,brain_learnings,brain_decisions,brain_patterns', NULL, NULL, NULL, ?)",
                     (run_id, len(pairs), at))
        ids = []
        for n, (table, source_id) in enumerate(pairs):
            staging_id = f"bos-{run_id[-6:]}-{n:04d}"
            action = (actions or {}).get(source_id, "purge")
            conn.execute(f"INSERT INTO {cs.SWEEP_STAGING} (id, source_table, source_id, sweep_run_id, action, "
                         "new_quality_score, new_invalid_at, new_provenance_class, validation_status, created_at) "
                         "VALUES (?, ?, ?, ?, ?, NULL, ?, ?, 'pending', ?)",
                         (staging_id, table, source_id, run_id, action, at if action == "purge" else None,
                          "noise-purged" if action == "purge" else "swept-clean", at))
            ids.append(staging_id)
        conn.execute("COMMIT")
        return ids
    finally:
        conn.close()


def cleo_approve(conn: sqlite3.Connection, run_id: str, now: str | None = None) -> dict:
    """executeSweep's statements; returns its result shape."""
    now = now or iso_now()
    run = conn.execute(f"SELECT status FROM {cs.BACKFILL_RUNS} WHERE id = ?", (run_id,)).fetchone()
    if run is None:
        return {"success": False, "errorMessage": f"Run '{run_id}' not found in brain_backfill_runs"}
    if run[0] != "staged":
        return {"success": False,
                "errorMessage": f"Run '{run_id}' has status '{run[0]}' — only 'staged' runs can be approved"}
    candidates = conn.execute(f"SELECT id, source_table, source_id, action FROM {cs.SWEEP_STAGING} "
                              "WHERE sweep_run_id = ? AND validation_status = 'pending'", (run_id,)).fetchall()
    if not candidates:
        return {"success": False, "errorMessage": f"No pending candidates found for run '{run_id}'"}
    purged = kept = skipped = 0
    conn.execute("BEGIN")
    by_table: dict[str, list[tuple]] = {}
    for c in candidates:
        by_table.setdefault(c[1], []).append(c)
    for table, rows in by_table.items():
        purge = [r[2] for r in rows if r[3] == "purge"]
        keep = [r[2] for r in rows if r[3] != "purge"]
        if purge:
            n = conn.execute(f"UPDATE {table} SET invalid_at = '{now}', provenance_class = 'noise-purged' "
                             f"WHERE id IN ({','.join('?' * len(purge))})", purge).rowcount
            purged += n
            skipped += len(purge) - n
        if keep:
            n = conn.execute(f"UPDATE {table} SET provenance_class = 'swept-clean' "
                             f"WHERE id IN ({','.join('?' * len(keep))})", keep).rowcount
            kept += n
            skipped += len(keep) - n
    ids = [c[0] for c in candidates]
    conn.execute(f"UPDATE {cs.SWEEP_STAGING} SET validation_status = 'applied' WHERE id IN "
                 f"({','.join('?' * len(ids))})", ids)
    conn.execute(f"UPDATE {cs.BACKFILL_RUNS} SET status = 'approved', approved_at = ?, approved_by = ? WHERE id = ?",
                 (now, "cleo-cli", run_id))
    conn.execute("COMMIT")
    return {"success": True, "runId": run_id, "totalCandidates": len(candidates), "purged": purged, "kept": kept,
            "skipped": skipped}


def cleo_rollback(conn: sqlite3.Connection, run_id: str) -> bool:
    """rollbackSweep's statements."""
    run = conn.execute(f"SELECT status FROM {cs.BACKFILL_RUNS} WHERE id = ?", (run_id,)).fetchone()
    if run is None or run[0] != "staged":
        return False
    conn.execute(f"UPDATE {cs.BACKFILL_RUNS} SET status = 'rolled-back' WHERE id = ?", (run_id,))
    conn.execute(f"UPDATE {cs.SWEEP_STAGING} SET validation_status = 'skipped' WHERE sweep_run_id = ? "
                 "AND validation_status = 'pending'", (run_id,))
    return True


def cleo_flag_and_hard_delete(conn: sqlite3.Connection, now: str) -> int:
    """runConsolidation's steps 9a.5 (the prune_candidate flag) and 9f (the DELETE) on brain_observations,
    judged at `now` (`YYYY-MM-DD HH:MM:SS`); returns the rows deleted."""
    try:
        conn.execute("ALTER TABLE brain_observations ADD COLUMN prune_candidate INTEGER DEFAULT 0")
    except sqlite3.OperationalError:
        pass  # already there
    cutoff = conn.execute("SELECT datetime(?, '-30 days')", (now,)).fetchone()[0]
    conn.execute("UPDATE brain_observations SET prune_candidate = 1 WHERE COALESCE(citation_count, 0) = 0 "
                 "AND created_at < ?", (cutoff,))
    return conn.execute("DELETE FROM brain_observations WHERE id IN (SELECT id FROM brain_observations "
                        "WHERE prune_candidate = 1 AND COALESCE(quality_score, 0.5) < 0.2 "
                        "AND COALESCE(citation_count, 0) = 0 AND julianday(?) - julianday(created_at) > 30 "
                        "LIMIT 500)", (now,)).rowcount


STAND_IN = '''#!{python}
"""A stand-in `cleo` for tests: records its arguments, applies CLEO's sweep SQL to ./.cleo/cleo.db."""
import json, sqlite3, sys
sys.path.insert(0, {repo!r})
from tests.cleo_sweep import cleo_approve, cleo_rollback
with open({log!r}, "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
args = sys.argv[1:]
if args[:2] != ["memory", "sweep"] or len(args) != 4 or args[2] not in ("--approve", "--rollback"):
    print("stand-in cleo: unexpected arguments", file=sys.stderr)
    sys.exit(64)
conn = sqlite3.connect(".cleo/cleo.db", isolation_level=None)
if args[2] == "--approve":
    result = cleo_approve(conn, args[3])
else:
    ok = cleo_rollback(conn, args[3])
    result = {{"success": ok, "rolledBack": args[3]}} if ok else {{"success": False,
              "errorMessage": "Run '" + args[3] + "' not found or not in staged status"}}
print(json.dumps({{"success": result.get("success"), "data": result}}))
sys.exit(0 if result.get("success") else 1)
'''


def write_stand_in_cleo(bin_dir: Path) -> Path:
    """An executable `cleo` in `bin_dir`; returns the path of the log of its argument lists (JSON lines)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    log = bin_dir / "cleo-args.log"
    script = bin_dir / "cleo"
    script.write_text(STAND_IN.format(python=sys.executable, repo=str(REPO), log=str(log)))
    script.chmod(0o755)
    return log


def logged_calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
