"""Bulk curation and export benchmark: a bulk evict of a whole pool while a CLEO-like writer runs, and an
export of every row, each beside a floor measured in the same run.

    python -m benchmarks.bulk [--brain /work/bench/100k] [--workdir DIR]

- `bulk evict`: `apply_bulk('evict')` of every live observation (the CLI's `evict --yes` with no
  filter) on a copy of the brain, with `benchmarks.live_writes`' writer inserting a row every 10 ms;
  its worst and 99th-percentile wait beside the writer alone (the floor); the bound is 250 ms.
- `export`: `export --format jsonl` of every observation with its tags (the tags computed first, as
  the CLI does), beside the floor: every row read with sqlite3 and written with orjson, no tags.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import orjson

from benchmarks.live_writes import BOUND_MS, Writer, _brain_file, _copy, _summary


def export_floor(db: Path, out: Path) -> float:
    import sqlite3
    started = time.perf_counter()
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    conn.text_factory = lambda b: b.decode("utf-8", "replace")  # the demo plants invalid UTF-8
    with open(out, "wb") as handle:
        for row in conn.execute("SELECT * FROM brain_observations"):
            handle.write(orjson.dumps(dict(row)) + b"\n")
    conn.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brain", default="/work/bench/100k")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    from cleo_tui.brain import open_brain
    from cleo_tui.memory.bulk import apply_bulk
    from cleo_tui.memory.export_rows import export_rows
    from cleo_tui.memory.selection import Selection, selected_rows, whole_rows
    from cleo_tui.memory.tags import tag_brain

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="cleo-bulk-"))
    db = _copy(_brain_file(Path(args.brain)), workdir)
    brain = open_brain(db)
    try:
        started = time.perf_counter()
        tags = tag_brain(brain)  # a first open's tags (the app and a warm CLI have them already)
        tags_s = time.perf_counter() - started
        started = time.perf_counter()
        rows = whole_rows(brain, selected_rows(brain, Selection(state="all"), tags))
        count = export_rows(workdir / "all.jsonl", rows, "jsonl", tags, "all")
        export_s = time.perf_counter() - started
        floor_s = export_floor(db, workdir / "floor.jsonl")
        print(f"export of {count:,} observations as JSONL with tags: {export_s:.2f} s (floor {floor_s:.2f} s, "
              f"ratio {export_s / floor_s:.1f}x; target < 5 s), after the tags of a cold brain: {tags_s:.2f} s")
        stop_at = time.perf_counter() + 3
        floor = Writer(db)
        while time.perf_counter() < stop_at:
            time.sleep(0.05)  # the writer works; this process only waits for the floor period to end
        alone = _summary(floor.stop())
        ids = [str(r["id"]) for r in selected_rows(brain, Selection(state="live"))]
        with brain.lock:
            brain.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        live = Writer(db)
        started = time.perf_counter()
        result = apply_bulk(brain, "evict", ids, "every live observation")
        wall = time.perf_counter() - started
        during = _summary(live.stop())
        print(f"bulk evict of {len(result.done):,} rows in {wall:.1f} s: writer worst/p99 {during['worst_ms']}/"
              f"{during['p99_ms']} ms (alone {alone['worst_ms']}/{alone['p99_ms']} ms; bound {BOUND_MS:.0f} ms; "
              f"{during['over_bound']} writes over it)")
    finally:
        brain.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
