"""A first open's first look (issue 33): what `python -m benchmarks.first_look --db FILE [--db
OTHER] [--before TREE] [--runs N]` prints.

A brain opened for the first time shows its coverage and relevance once the scan process has
made its first look and saved it for the app (`pool_scan.first_look`, `in_subprocess`): at a
million rows that is most of the wait for the tags. Timed here in a child process each, as the
scan process runs it (the collector paused, every cache empty): the CPU of `first_look(brain,
to_save=True)` and `save_snapshot`, best of `--runs`. The floor, in the same run: the same
columns (id, date, session, source type, confidence, type, quality, eviction) read the plainest
way, one pass over the table with a tuple per row. `--before TREE` times that tree's look too
(its package first on the path), alternately with this one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_OURS = """
import gc, inspect, json, sys, tempfile, time
gc.disable()
from cleo_tui.brain.store import open_brain
from cleo_tui.memory import scan_snapshot
from cleo_tui.memory.pool_scan import first_look as looking
brain = open_brain(sys.argv[1], read_only=True)
saved = "to_save" in inspect.signature(looking.first_look).parameters  # (an older tree's look has no such flag)
started = time.process_time()
look = looking.first_look(brain, to_save=True) if saved else looking.first_look(brain)
scan_snapshot.save_snapshot(brain, look, scan_snapshot.first_look_path(brain))
print(json.dumps({"cpu": time.process_time() - started, "rows": len(look), "from": looking.__file__}))
"""

_FLOOR = """
import gc, json, sqlite3, sys, time
gc.disable()
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
have = {r[1] for r in conn.execute("PRAGMA table_info(brain_observations)")}
wanted = [c for c in ("id", "created_at", "source_session_id", "source_type", "source_confidence", "type",
                      "quality_score", "invalid_at") if c in have]
started = time.process_time()
rows = conn.execute(f"SELECT rowid, {', '.join(wanted)} FROM brain_observations").fetchall()
print(json.dumps({"cpu": time.process_time() - started, "rows": len(rows)}))
"""


def timed(script: str, db: Path, root: Path | None) -> dict[str, float]:
    """One run of `script` on `db` in a fresh process with an empty cache directory."""
    with tempfile.TemporaryDirectory(prefix="cleo-tui-look-") as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache}
        if root is not None:
            env["PYTHONPATH"] = f"{root}{os.pathsep}{env.get('PYTHONPATH', '')}"
        done = subprocess.run([sys.executable, "-c", script, str(db.resolve())], capture_output=True, text=True,
                              check=True, env=env, cwd=cache)  # (not this directory: `-c` puts it first on the path)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", action="append", type=Path, required=True, help="a brain (repeatable)")
    parser.add_argument("--before", type=Path, help="another tree whose look is timed alternately")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parents[1]
    trees = [("this tree", here)] + ([("before", args.before.resolve())] if args.before else [])
    print("| brain | rows | floor (a pass, a tuple per row) | " + " | ".join(name for name, _ in trees)
          + " | ratio to the floor |")
    print("|---|---|---|" + "---|" * len(trees) + "---|")
    for db in args.db:
        best: dict[str, float] = {}
        rows = 0.0
        for _ in range(args.runs):
            floor = timed(_FLOOR, db, None)
            best["floor"] = min(best.get("floor", floor["cpu"]), floor["cpu"])
            for name, root in trees:
                ours = timed(_OURS, db, root)
                best[name] = min(best.get(name, ours["cpu"]), ours["cpu"])
                rows = ours["rows"]
        ratios = " / ".join(f"{best[name] / best['floor']:.2f}×" for name, _ in trees)
        print(f"| {db} | {rows:,.0f} | {best['floor']:.2f} s | "
              + " | ".join(f"{best[name]:.2f} s" for name, _ in trees) + f" | {ratios} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
