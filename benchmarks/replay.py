"""Replay benchmark: 1,000 logged CLEO queries replayed on 100,000 observations, beside a floor.

    python -m benchmarks.replay [--size 100000] [--queries 1000] [--bench /work/bench]

The demo brain of `--size` rows (built with `cleo-tui demo DIR --observations N --seed 7`
when absent) is copied; the copy gets CLEO's FTS indexes for learnings, patterns and
decisions (as CLEO's first search creates them) and a `brain_retrieval_log` of `--queries`
distinct queries of one to three words taken from the brain's own text (seeded), each
logged with the ids the reproduced find returns (so the agreement must be exact).

Timed, in this process, CPU and wall:
- `replay`: `replay(brain, step, bound=queries)` — every query run on the current brain and
  in both modes after the step (the prune preview at a budget of a quarter of the live
  pool's tokens: a large step, so many queries lose results); target < 10 s;
- `floor`: the bare FTS5 MATCH of each query on the observations index
  (`ORDER BY rank LIMIT 10`, the AND expression), the least any find must do.
The prune preview that makes the step is timed apart (it is the Prune pane's work).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAMES = {10_000: "10k", 100_000: "100k"}
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{3,}")


def demo_brain(bench: Path, size: int) -> Path:
    folder = bench / NAMES.get(size, str(size))
    path = folder / ".cleo" / "cleo.db"
    if not path.exists():
        subprocess.run([sys.executable, "-m", "cleo_tui", "demo", str(folder), "--observations", str(size),
                        "--seed", "7"], check=True)
    return path


def prepared_copy(source: Path, target: Path, queries: int) -> list[str]:
    """Copy the brain, add CLEO's other FTS indexes and a log of `queries` distinct queries."""
    from cleo_tui.brain import open_brain
    from cleo_tui.brain.cleo_schema import RETRIEVAL_LOG_SQL
    from cleo_tui.brain.migrations import migrate
    from cleo_tui.recall.cleo_find import TABLES, PreparedQuery, fts_ddl, prepare_find

    target.parent.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    dst = sqlite3.connect(str(target))
    src.backup(dst)
    src.close()
    migrate(dst)
    for spec in TABLES[:3]:
        for sql in fts_ddl(spec):
            dst.execute(sql)
        dst.execute(f"INSERT INTO {spec.fts}({spec.fts}) VALUES ('rebuild')")
    for sql in RETRIEVAL_LOG_SQL:
        dst.execute(sql)
    dst.commit()
    rng = random.Random(7)
    texts = [r[0] for r in dst.execute("SELECT narrative FROM brain_observations WHERE narrative IS NOT NULL "
                                       "ORDER BY rowid LIMIT 20000")]
    chosen: dict[str, None] = {}
    while len(chosen) < queries:
        words = WORD.findall(rng.choice(texts))
        if words:
            chosen[" ".join(rng.sample(words, min(len(words), rng.randint(1, 3))))] = None
    dst.close()
    brain = open_brain(target, read_only=True)
    try:
        setup = prepare_find(brain)
        logged = [(q, PreparedQuery(setup, q).find()) for q in chosen]
    finally:
        brain.close()
    conn = sqlite3.connect(str(target))
    conn.executemany("INSERT INTO brain_retrieval_log(query, entry_ids, entry_count, source, tokens_used, created_at) "
                     "VALUES (?, ?, ?, 'find-rrf', ?, '2026-11-30 10:00:00')",
                     [(q, json.dumps(ids), len(ids), 50 * len(ids)) for q, ids in logged])
    conn.commit()
    conn.close()
    return list(chosen)


def floor(db: Path, queries: list[str]) -> tuple[float, float]:
    """CPU and wall seconds of the bare FTS5 MATCH of each query (observations index, top 10 by rank)."""
    from cleo_tui.recall.cleo_find import fts_queries

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    expressions = [fts_queries(q).conjunctive for q in queries]
    started, cpu = time.perf_counter(), time.process_time()
    for expression in expressions:
        conn.execute("SELECT rowid FROM brain_observations_fts WHERE brain_observations_fts MATCH ? "
                     "ORDER BY rank LIMIT 10", (expression,)).fetchall()
    result = time.process_time() - cpu, time.perf_counter() - started
    conn.close()
    return result


def run(bench: Path, size: int, queries: int) -> None:
    from cleo_tui.brain import open_brain
    from cleo_tui.memory.pruner import prepare_pool
    from cleo_tui.recall.replay import replay, step_of

    source = demo_brain(bench, size)
    with tempfile.TemporaryDirectory(prefix="cleo-replay-bench-") as tmp:
        db = Path(tmp) / "brain" / ".cleo" / "cleo.db"
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        chosen = prepared_copy(source, db, queries)
        brain = open_brain(db, read_only=True)
        try:
            started = time.perf_counter()
            pool = prepare_pool(brain, "chars4")
            budget = max(1, pool.tokens_before // 4)
            preview = pool.preview(budget)
            step = step_of(preview.dropped_ids, hide=False, label=f"prune at {budget:,}")
            step_seconds = time.perf_counter() - started
            floor_cpu, floor_wall = floor(db, chosen)
            started, cpu = time.perf_counter(), time.process_time()
            report = replay(brain, step, bound=queries)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            floor_cpu2, floor_wall2 = floor(db, chosen)  # again after: the page cache is warm for both
        finally:
            brain.close()
    counts = report.agreement_counts()
    intends, today = report.summary("intends"), report.summary("cleo_today")
    best_floor_cpu, best_floor_wall = min(floor_cpu, floor_cpu2), min(floor_wall, floor_wall2)
    print(f"{size:,} observations, {len(report.queries):,} distinct logged queries; step: prune at {budget:,} tokens "
          f"dropping {len(step.evict):,} rows (prune preview {step_seconds:.2f} s, not counted)")
    print(f"  replay (current brain + both modes): {wall:6.2f} s wall, {cpu:6.2f} s CPU   (target < 10 s)")
    print(f"  floor (bare FTS5 MATCH of each query, observations only, top 10): {best_floor_wall:6.2f} s wall, "
          f"{best_floor_cpu:6.2f} s CPU; ratio replay CPU / floor CPU {cpu / max(best_floor_cpu, 1e-9):.1f}x")
    print(f"  agreement with the log: {counts['exact']:,} exact of {len(report.queries):,}; "
          f"as eviction intends {intends.affected:,} queries lose results ({intends.lost:,}), "
          f"as CLEO behaves today {today.affected:,}")
    print(f"  machine load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--bench", default="/work/bench")
    args = parser.parse_args()
    run(Path(args.bench), args.size, args.queries)


if __name__ == "__main__":
    main()
