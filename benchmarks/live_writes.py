"""Live-writes benchmark: how long a CLEO-like writer waits while cleo-tui commits and undoes.

    python -m benchmarks.live_writes [--brains /work/bench/100k,/work/bench/1m] [--workdir DIR] [--no-undo]
                                     [--floor-seconds 3] [--share 0.1] [--only quiet|arrival|live]

Three cases per brain. **Quiet** (nobody else writes): the whole-pool commit against its
floor, a bare `UPDATE` of the same rows with the same values in one transaction on
another copy (CLEO's triggers fire in both), wall and CPU seconds and their ratio: the
pauses that let CLEO in should cost nothing when CLEO is not there. **Arrival**: the
same commit on a brain no other process has open (so it leaves its probe pauses out),
and a CLEO-like writer (below) that opens the brain `ARRIVAL_S` into it: its worst
wait, against the same bound. **Live**, below.

For each brain (a project directory holding .cleo/cleo.db, or a .db file) a copy is
made in --workdir, so the shared benchmark brains are never written. A writer process
(`--writer DB`, below) inserts one observation every 10 ms as CLEO does (own connection,
WAL, busy_timeout 30 s, one BEGIN IMMEDIATE … COMMIT each) and records how long each
insert took from BEGIN to the end of COMMIT. It runs:
- alone for --floor-seconds: the floor (the writer's own cost and the machine's noise);
- during a whole-pool `prune --apply` (budget = --share of the pool's tokens, so most of
  the pool drops) on a pool prepared beforehand (preparing only reads);
- during the undo of that commit.
It prints, per size, the worst and 99th-percentile wait next to the floor's, the wall
seconds of the commit and the undo, their longest chunk (as the runs measured it), and the
load average before and after (the machine is shared: waits stretch with load); the bound
is 250 ms. --json adds CPU seconds, how many writes waited 250 ms or more, the writer's
longest COMMIT (a checkpoint of cleo-tui's pages would show there), and each run's
own figures (chunks, seconds holding the lock, checkpoints, chunks cut by slow rows).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BOUND_MS = 250.0
PERIOD_S = 0.010
ARRIVAL_S = 1.5  # the arrival case: CLEO starts this long into a commit nobody else had the brain open for


def writer(db: str) -> None:
    """Insert one row every 10 ms until stdin closes; print each write's timing as JSON.

    Per write: when it started (`time.monotonic`, comparable across processes), how
    long its BEGIN IMMEDIATE waited for the lock, how long its COMMIT took (SQLite's
    auto-checkpoint runs there, when the WAL holds 1,000 frames) and the whole write (ms).
    """
    import threading
    stop = threading.Event()

    def wait_for_stdin_to_close() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_for_stdin_to_close, daemon=True).start()
    conn = sqlite3.connect(db, isolation_level=None, timeout=30)
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA synchronous = NORMAL")
    commits: list[float] = []
    starts: list[float] = []
    begins: list[float] = []
    waits: list[float] = []
    n = 0
    print("ready", flush=True)
    while not stop.is_set():
        started = time.perf_counter()
        starts.append(time.monotonic())
        conn.execute("BEGIN IMMEDIATE")
        begins.append((time.perf_counter() - started) * 1000)
        conn.execute("INSERT INTO brain_observations(id, type, title, narrative, created_at, source_type) "
                     "VALUES (?, 'change', ?, ?, datetime('now'), 'agent')",
                     (f"O-live{os.getpid()}-{n}", f"live write {n}", f"CLEO wrote this while cleo-tui worked {n}"))
        committing = time.perf_counter()
        conn.execute("COMMIT")
        commits.append((time.perf_counter() - committing) * 1000)
        waits.append((time.perf_counter() - started) * 1000)
        n += 1
        rest = PERIOD_S - (time.perf_counter() - started)
        if rest > 0:
            stop.wait(rest)
    conn.close()
    print(json.dumps({"waits": waits, "lock_waits": begins, "starts": starts, "commits": commits}), flush=True)


class Writer:
    """The writer subprocess: start, then `stop()` returns its waits."""

    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.live_writes", "--writer", str(db)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def stop(self) -> dict[str, list[float]]:
        """The writer's timings: `waits` (whole writes), `lock_waits` (their BEGIN), `starts`."""
        out, _ = self.proc.communicate("", timeout=120)
        timings: dict[str, list[float]] = json.loads(out.strip().splitlines()[-1])
        return timings


def _brain_file(place: Path) -> Path:
    return place if place.is_file() else place / ".cleo" / "cleo.db"


def _copy(source: Path, workdir: Path, name: str = "") -> Path:
    conn = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    target = workdir / f"{source.parent.parent.name or 'brain'}{name}" / ".cleo" / "cleo.db"
    target.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(str(target) + suffix).unlink(missing_ok=True)
    dest = sqlite3.connect(target)
    conn.backup(dest)  # a consistent copy, whatever -wal the source has
    dest.close()
    conn.close()
    return target


def _summary(timings: dict[str, list[float]]) -> dict:
    """Worst, p99 and median of the writes' waits; how many passed the bound; the worst lock wait alone.

    A write's wait is its BEGIN's lock wait plus its own insert and commit (CLEO's
    full-text triggers merge segments now and then inside the writer's own commit).
    """
    waits, lock_waits = timings["waits"], timings["lock_waits"]
    ordered = sorted(waits)
    own = sorted(w - b for w, b in zip(waits, lock_waits, strict=True))
    commits = timings["commits"]
    return {"writes": len(waits), "worst_ms": round(ordered[-1], 1) if ordered else None,
            "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))], 1) if ordered else None,
            "median_ms": round(statistics.median(ordered), 2) if ordered else None,
            "over_bound": sum(1 for w in ordered if w >= BOUND_MS),
            "worst_lock_wait_ms": round(max(lock_waits), 1) if lock_waits else None,
            "worst_own_ms": round(own[-1], 1) if own else None,
            "worst_commit_ms": round(max(commits), 1) if commits else None}


def _timed(call):  # type: ignore[no-untyped-def]
    """(value, wall s, CPU s of this process) of one call."""
    started, cpu = time.perf_counter(), time.process_time()
    value = call()
    return value, round(time.perf_counter() - started, 2), round(time.process_time() - cpu, 2)


def _prepared(db: Path, share: float):  # type: ignore[no-untyped-def]
    """(brain, preview, prepare seconds) of a copy, its caches checkpointed (see `measure`)."""
    from cleo_tui.brain import open_brain
    from cleo_tui.memory.pruner import prepare_pool

    brain = open_brain(db)
    started = time.perf_counter()
    pool = prepare_pool(brain)
    prepared = round(time.perf_counter() - started, 1)
    preview = pool.preview(max(1, int(pool.tokens_before * share)))
    with brain.lock:
        brain.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    return brain, preview, prepared


def _bare_update(brain, preview) -> None:  # type: ignore[no-untyped-def]
    """The floor of a commit: the same rows, the same values, one transaction, no journal, no pauses.

    In rowid order as the commit writes them; COMMIT and a passive checkpoint included,
    as the commit ends with one.
    """
    from cleo_tui.brain.clock import cleo_timestamp
    from cleo_tui.memory import curation

    values = curation.eviction_values(brain, cleo_timestamp())
    sets = ", ".join(f'"{c}" = ?' for c in values)
    ids = [r[0] for r in brain.query("SELECT id FROM brain_observations WHERE id IN (SELECT value FROM "
                                     "json_each(?)) ORDER BY rowid", (json.dumps(preview.dropped_ids),))]
    with brain.write() as conn:
        conn.executemany(f'UPDATE brain_observations SET {sets} WHERE id = ? AND invalid_at IS NULL',
                         [(*values.values(), i) for i in ids])
    with brain.lock:
        brain.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def measure_quiet(place: Path, workdir: Path, share: float) -> dict:
    """The whole-pool commit with nobody else writing, beside the bare UPDATE of the same rows."""
    from cleo_tui.memory.pruner import commit_preview

    result: dict = {"brain": str(place)}
    for name, run in (("floor", _bare_update), ("commit", commit_preview)):
        db = _copy(_brain_file(place), workdir, f"-quiet-{name}")
        brain, preview, _prepared_s = _prepared(db, share)
        result["dropped"] = preview.drop_count
        value, result[f"{name}_s"], result[f"{name}_cpu_s"] = _timed(lambda: run(brain, preview))  # noqa: B023
        if name == "commit":
            result["commit_run"] = value.stats.to_json() if value.stats else None
        brain.close()
        shutil.rmtree(db.parent.parent, ignore_errors=True)
    result["ratio"] = round(result["commit_s"] / max(result["floor_s"], 0.001), 2)
    return result


def measure_arrival(place: Path, workdir: Path, share: float, after_s: float = ARRIVAL_S) -> dict:
    """The whole-pool commit on a brain no other process has open (so without probe pauses, `other_processes`),
    and a CLEO-like writer that opens the brain `after_s` into it: how long its writes wait."""
    import threading

    from cleo_tui.memory.pruner import commit_preview

    db = _copy(_brain_file(place), workdir, "-arrival")
    brain, preview, _prepared_s = _prepared(db, share)
    outcome: dict = {}
    commit = threading.Thread(target=lambda: outcome.update(result=commit_preview(brain, preview)))
    started = time.perf_counter()
    commit.start()
    time.sleep(after_s)  # the commit runs alone until CLEO starts
    arriving = Writer(db)
    commit.join()
    result: dict = {"brain": str(place), "dropped": preview.drop_count, "arrived_s": after_s,
                    "commit_s": round(time.perf_counter() - started, 2), "commit": _summary(arriving.stop())}
    stats = outcome["result"].stats
    result["commit_run"] = stats.to_json() if stats else None
    brain.close()
    shutil.rmtree(db.parent.parent, ignore_errors=True)
    return result


def report_arrival(results: list[dict]) -> None:
    print(f"{'arrival: rows':>14}  {'CLEO from':>9}  {'commit s':>8}  {'probes left out':>15}  {'pauses':>6}  "
          f"{'CLEO worst/p99':>15}  (bound {BOUND_MS:.0f} ms)")
    for r in results:
        run, c = r.get("commit_run") or {}, r["commit"]
        print(f"{r['dropped']:>14,}  {r['arrived_s']:>8}s  {r['commit_s']:>8}  {run.get('unneeded_pauses', '-'):>15}  "
              f"{run.get('pauses', '-'):>6}  {c['worst_ms']:>7.1f}/{c['p99_ms']:<5.1f}ms  "
              f"{'ok' if (c['worst_ms'] or 0) < BOUND_MS else 'OVER'}")


def report_quiet(results: list[dict]) -> None:
    print(f"{'quiet: rows':>12}  {'commit s (CPU)':>15}  {'bare UPDATE s (CPU)':>20}  {'ratio':>6}  "
          f"{'chunks':>6}  {'paused s':>8}   (goal: ratio <= 1.5)")
    for r in results:
        run = r.get("commit_run") or {}
        print(f"{r['dropped']:>12,}  {r['commit_s']:>6} ({r['commit_cpu_s']:>5})  {r['floor_s']:>11} "
              f"({r['floor_cpu_s']:>5})  {r['ratio']:>6}  {run.get('chunks', '-'):>6}  "
              f"{run.get('paused_s', '-'):>8}")


def measure(place: Path, workdir: Path, floor_seconds: float, share: float, undo: bool = True) -> dict:
    from cleo_tui.brain import open_brain
    from cleo_tui.memory import curation
    from cleo_tui.memory.pruner import commit_preview, prepare_pool

    db = _copy(_brain_file(place), workdir)
    brain = open_brain(db)
    rows = brain.scalar("SELECT count(*) FROM brain_observations WHERE invalid_at IS NULL")
    result: dict = {"brain": str(place), "live_rows": rows}
    stop_at = time.perf_counter() + floor_seconds
    floor = Writer(db)
    while time.perf_counter() < stop_at:
        time.sleep(0.05)  # the writer works; this process only waits for the floor period to end
    result["floor"] = _summary(floor.stop())
    started = time.perf_counter()
    pool = prepare_pool(brain)
    result["prepare_s"] = round(time.perf_counter() - started, 1)
    preview = pool.preview(max(1, int(pool.tokens_before * share)))
    result["dropped"] = preview.drop_count
    # A first prepare of a copy writes its caches; in the app the preview is read long before the
    # commit and CLEO's commits have checkpointed them by then. Here the writer's first insert
    # would copy them (hundreds of ms) and count it against the commit, so checkpoint them now.
    with brain.lock:
        brain.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    live = Writer(db)
    result["load_before"] = round(os.getloadavg()[0], 1)
    commit, result["commit_s"], result["commit_cpu_s"] = _timed(lambda: commit_preview(brain, preview))
    result["commit"] = _summary(live.stop())
    result["evicted"], result["new_rows_during_commit"] = len(commit.evicted), commit.new_rows
    result["commit_run"] = commit.stats.to_json() if commit.stats else None
    if undo:
        live = Writer(db)
        outcome, result["undo_s"], result["undo_cpu_s"] = _timed(lambda: curation.undo_detailed(brain, commit.run_id))
        result["undo"] = _summary(live.stop())
        result["undo_run"] = outcome.stats.to_json() if outcome.stats else None
        result["restored"] = outcome.restored
    result["load_after"] = round(os.getloadavg()[0], 1)
    brain.close()
    shutil.rmtree(db.parent.parent, ignore_errors=True)
    return result


def report(results: list[dict]) -> None:
    print(f"{'live rows':>10} {'dropped':>8}  {'floor worst/p99':>15}  {'commit worst/p99':>16}  "
          f"{'undo worst/p99':>14}  {'commit s':>8} {'undo s':>7}  {'longest chunk':>13}  load  "
          f"(bound {BOUND_MS:.0f} ms)")
    for r in results:
        none = {"worst_ms": 0.0, "p99_ms": 0.0}
        f, c, u = r["floor"], r["commit"], r.get("undo", none)
        worst = max(c["worst_ms"] or 0, u["worst_ms"] or 0)
        print(f"{r['live_rows']:>10,} {r['dropped']:>8,}  {f['worst_ms']:>7.1f}/{f['p99_ms']:<5.1f}ms  "
              f"{c['worst_ms']:>8.1f}/{c['p99_ms']:<5.1f}ms  {u['worst_ms']:>6.1f}/{u['p99_ms']:<5.1f}ms  "
              f"{r['commit_s']:>8} {r.get('undo_s', '-'):>7}  {_longest(r):>13}  {r['load_before']}-{r['load_after']}"
              f"  {'ok' if worst < BOUND_MS else 'OVER'}")


def _longest(r: dict) -> str:
    """The longest chunk of the commit / of the undo (ms), as their runs measured them."""
    runs = [r.get("commit_run"), r.get("undo_run")]
    return "/".join(f"{run['longest_ms']:.0f}" if run else "-" for run in runs) + " ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brains", default="/work/bench/100k,/work/bench/1m")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--floor-seconds", type=float, default=3.0)
    parser.add_argument("--share", type=float, default=0.1)
    parser.add_argument("--writer", metavar="DB",
                        help="only be the CLEO-like writer on DB: one observation every 10 ms until stdin "
                             "closes (what the benchmark starts; run it by hand beside the TUI)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-undo", action="store_true", help="measure the commit only (a 1M undo takes long)")
    parser.add_argument("--only", choices=("quiet", "arrival", "live"), help="run one case only (default: all)")
    args = parser.parse_args(argv)
    if args.writer:
        writer(args.writer)
        return 0
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="live-writes-"))
    quiet: list[dict] = []
    arrivals: list[dict] = []
    results: list[dict] = []
    for place in args.brains.split(","):
        if not _brain_file(Path(place)).is_file():
            print(f"skipping {place}: no brain there (build it with `python -m cleo_tui demo {place} ...`)",
                  file=sys.stderr)
            continue
        if args.only in (None, "quiet"):
            quiet.append(measure_quiet(Path(place), workdir, args.share))
            print(json.dumps(quiet[-1]), file=sys.stderr)
        if args.only in (None, "arrival"):
            arrivals.append(measure_arrival(Path(place), workdir, args.share))
            print(json.dumps(arrivals[-1]), file=sys.stderr)
        if args.only in (None, "live"):
            results.append(measure(Path(place), workdir, args.floor_seconds, args.share, not args.no_undo))
            print(json.dumps(results[-1]), file=sys.stderr)
    if args.json:
        print(json.dumps({"quiet": quiet, "arrival": arrivals, "live": results}))
    else:
        if quiet:
            report_quiet(quiet)
        if arrivals:
            report_arrival(arrivals)
        if results:
            report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
