"""Recall impact benchmark: the impact line at every budget, once the drop order is prepared.

    python -m benchmarks.impact [--size 100000] [--retrievals 20000] [--workdir DIR] [--json]

On a copy of the demo brain of `size` observations, CLEO's `brain_retrieval_log` gets
`retrievals` rows (each returning 1–10 ids of the pool, in rank order, a tenth of them also
decisions' and patterns' ids) and `brain_usage_log` a use for one recalled id in twenty. The
pool is prepared as the Prune pane prepares it; then:

- ours: `RecallIndex.load` and `plan(drop order)` once, then per budget the pane's work
  (`pool.preview(budget)` and `plan.at(drop_count)`);
- the floor, in the same run: the plainest code giving the same figures per budget — the
  dropped prefix as a set, then for each retrieval whether its ids meet it (and its used ids).

Both are checked to agree at every budget measured.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.prune import demo_brain
from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain import open_brain

BUDGETS = 200


def add_logs(path: Path, retrievals: int, seed: int = 7) -> None:
    """CLEO's two logs, filled as its `memory find` and task runs would fill them."""
    rng = random.Random(seed)
    conn = sqlite3.connect(path)
    ids = [r[0] for r in conn.execute(f"SELECT id FROM {cs.OBSERVATIONS} WHERE invalid_at IS NULL")]
    for sql in (*cs.RETRIEVAL_LOG_SQL, *cs.USAGE_LOG_SQL):
        conn.execute(sql)
    rows, usage = [], []
    for k in range(retrievals):
        returned = rng.sample(ids, rng.randint(1, 10))
        if k % 10 == 0:
            returned.append(f"D-{k:05d}")
        stamp = f"2026-{1 + k % 5:02d}-{1 + k % 28:02d} {k % 24:02d}:00:00"
        rows.append((f"query {k}", json.dumps(returned), len(returned), "find-rrf", stamp))
        if k % 20 == 0:
            usage.append((returned[0], f"T{k}", 1, "positive", stamp))
    conn.executemany(f"INSERT INTO {cs.RETRIEVAL_LOG} (query, entry_ids, entry_count, source, created_at) "
                     "VALUES (?, ?, ?, ?, ?)", rows)
    conn.executemany(f"INSERT INTO {cs.USAGE_LOG} (entry_id, task_id, used, outcome, created_at) "
                     "VALUES (?, ?, ?, ?, ?)", usage)
    conn.commit()
    conn.close()


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


def measure(path: Path) -> dict[str, Any]:
    from cleo_tui.memory.pruner import prepare_pool
    from cleo_tui.recall.impact import RecallIndex
    from cleo_tui.recall.recorded import entry_usage, recorded_retrievals

    figures: dict[str, Any] = {}
    brain = open_brain(path, read_only=True)
    try:
        pool = prepare_pool(brain, "chars4")
        started = time.perf_counter()
        index = RecallIndex.load(brain)
        figures["read the logs and index them (s)"] = round(time.perf_counter() - started, 3)
        started = time.perf_counter()
        drop_order = pool.droppable.ids()
        plan = index.plan(drop_order)
        figures["prepare the drop order (s)"] = round(time.perf_counter() - started, 3)
        retrievals, usage = recorded_retrievals(brain), entry_usage(brain)
    finally:
        brain.close()
    figures["live rows"], figures["retrievals"] = len(pool), len(index)
    low, high = pool.tokens_after_dropping(len(pool.droppable)), pool.tokens_before
    budgets = [int((low + (high - low) * k / BUDGETS) / 0.8) + 1 for k in range(BUDGETS)]
    ours, floor = [], []
    used = {entry for entry, found in usage.items() if found.used}
    returned = [set(r.returned) for r in retrievals]
    for budget in budgets:
        t0 = time.perf_counter()
        preview = pool.preview(budget)
        impact = plan.at(preview.drop_count)
        ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        preview = pool.preview(budget)
        evicted = set(drop_order[:preview.drop_count])
        affected = [ids for ids in returned if not evicted.isdisjoint(ids)]
        affected_used = sum(1 for ids in affected if not evicted.isdisjoint(ids & used))
        floor.append(time.perf_counter() - t0)
        assert (impact.affected_retrievals, impact.affected_used) == (len(affected), affected_used), budget
    figures["per budget, ours: median / max (ms)"] = f"{median_ms(ours)} / {round(max(ours) * 1000, 3)}"
    figures["per budget, floor: median / max (ms)"] = f"{median_ms(floor)} / {round(max(floor) * 1000, 3)}"
    figures["floor ÷ ours (median)"] = round(statistics.median(floor) / statistics.median(ours), 1)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--retrievals", type=int, default=20_000)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/cleo-tui-bench"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    source = demo_brain(args.workdir, args.size)
    target = args.workdir / f"impact-{args.size}-{args.retrievals}" / ".cleo" / "cleo.db"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        add_logs(target, args.retrievals)
    figures = measure(target)
    if args.json:
        print(json.dumps(figures))
        return
    for name, value in figures.items():
        print(f"{name:40} {value}")


if __name__ == "__main__":
    main()
