"""Duplicate-finder benchmark: scan time at 10,000 and 100,000 observations, beside a floor.

    python -m benchmarks.dedup [--sizes 10000,100000] [--bench /work/bench]

Demo brains come from `/work/bench/10k` and `/work/bench/100k` (built with
`cleo-tui demo DIR --observations N --seed 7` when absent; a brain another
process is still writing, `cleo.db.partial`, is waited for). The demo has no
reworded duplicates, so each run copies the brain and plants `PLANTED` groups of
rewordings in the copy; the scan must find every planted group.

For each size, in its own process with an empty cache directory:
- `scan cold`: the scan with an empty cache directory (no scan cache: every
  signature computed and every pair verified; no tagger cache either: the
  protection detectors read the whole pool); `scan warm`: the same scan again
  (everything from the caches);
- `floor`: the plainest code doing part of the same work — read the live
  pool and group exact duplicates by a hash of the normalised text;
- whole process: `cleo-tui dedup --json` as a subprocess, with its peak RSS:
  cold (empty cache directory), warm, and with only the duplicate finder's scan
  cache removed (the usual first scan of a brain the TUI has opened before).
  Target at 100,000: under 20 s.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLANTED = (
    ("Use uv instead of pip to install dependencies in this repo.",
     "In this repo, dependencies are installed with uv rather than pip."),
    ("Tests must run with pytest -p no:randomly because the fixtures share state.",
     "The fixtures share state, so tests have to be run with pytest -p no:randomly."),
    ("The deploy script must be run from the repository root.",
     "Run the deploy script from the root of the repository."),
    ("The payments API retry loop is capped at 30 seconds.",
     "Retries against the payments API are capped at 30 s."),
    ("The staging database is reset every night at 02:00 UTC.",
     "Every night at 02:00 UTC the staging database gets reset."),
)
NAMES = {10_000: "10k", 100_000: "100k"}


def demo_brain(bench: Path, size: int) -> Path:
    """The shared demo brain of `size` rows, built (or waited for) when absent."""
    folder = bench / NAMES.get(size, str(size))
    path = folder / ".cleo" / "cleo.db"
    partial = path.with_name("cleo.db.partial")
    waited = 0.0
    while not path.exists() and partial.exists() and waited < 600:
        time.sleep(2)  # another process is building it
        waited += 2
    if not path.exists():
        subprocess.run([sys.executable, "-m", "cleo_tui", "demo", str(folder), "--observations", str(size),
                        "--seed", "7"], check=True)
    return path


def planted_copy(source: Path, workdir: Path) -> tuple[Path, list[set[str]]]:
    """A copy of the brain with the planted rewordings added (each a few times over the pool)."""
    target = workdir / "brain" / ".cleo" / "cleo.db"
    target.parent.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    dst = sqlite3.connect(str(target))
    src.backup(dst)
    src.close()
    # Bench brains built by an older cleo-tui carry its older tables: bring the copy up to date,
    # as opening it for writing would (the scan opens it read-only, which never migrates).
    from cleo_tui.brain.migrations import migrate

    migrate(dst)
    groups = []
    for n, texts in enumerate(PLANTED):
        ids = set()
        for k, text in enumerate(texts):
            obs_id = f"O-planted-{n}-{k}"
            dst.execute("INSERT INTO brain_observations (id, type, title, narrative, created_at, quality_score) "
                        "VALUES (?, 'discovery', ?, ?, ?, 0.5)",
                        (obs_id, text[:60], text, f"2026-05-0{k + 1} 10:00:00"))
            ids.add(obs_id)
        groups.append(ids)
    dst.commit()
    dst.close()
    return target, groups


def floor(db: Path) -> tuple[float, int]:
    """Exact-duplicate groups by a hash of the lower-cased, whitespace-normalised text."""
    started = time.process_time()
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    groups: dict[bytes, int] = {}
    for (text,) in conn.execute("SELECT coalesce(nullif(narrative, ''), title, '') FROM brain_observations "
                                "WHERE invalid_at IS NULL"):
        key = hashlib.blake2b(" ".join(text.lower().split()).encode(), digest_size=16).digest()
        groups[key] = groups.get(key, 0) + 1
    conn.close()
    return time.process_time() - started, sum(1 for n in groups.values() if n > 1)


def measure(db: Path, groups: list[set[str]]) -> dict:
    """In this process: cold and warm scans (the cache dir is already private)."""
    from cleo_tui.brain import open_brain
    from cleo_tui.memory.duplicates import scan_duplicates

    brain = open_brain(db, read_only=True)
    result: dict = {}
    try:
        for label in ("cold", "warm"):
            started, cpu = time.perf_counter(), time.process_time()
            scan = scan_duplicates(brain)
            clusters = scan.clusters()
            result[f"scan_{label}"] = time.perf_counter() - started
            result[f"cpu_{label}"] = time.process_time() - cpu
        result["stats"] = {"rows": scan.stats.rows, "candidates": scan.stats.candidates,
                           "verified": scan.stats.verified,
                           "stages": {k: round(v, 2) for k, v in scan.stats.seconds.items()}}
        found = [set(c.ids) for c in clusters]
        result["planted_found"] = sum(1 for g in groups if any(g <= c for c in found))
        result["clusters"] = len(clusters)
    finally:
        brain.close()
    result["floor"], result["floor_groups"] = floor(db)
    return result


def whole_process(db: Path, env: dict) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of `cleo-tui dedup --json` as its own process.

    The machine is shared, so CPU seconds (user + system) are the fairer figure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cleo_tui", "dedup", "--db", str(db), "--json"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return seconds, cpu, after.ru_maxrss / 1024


def run_size(bench: Path, size: int) -> None:
    source = demo_brain(bench, size)
    with tempfile.TemporaryDirectory(prefix="cleo-dedup-bench-") as tmp:
        work = Path(tmp)
        db, groups = planted_copy(source, work)
        env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache-process")}
        cold, cold_cpu, rss_cold = whole_process(db, env)
        warm, warm_cpu, rss_warm = whole_process(db, env)
        for scan_cache in (work / "cache-process").rglob("dedup"):
            shutil.rmtree(scan_cache)
        fresh, fresh_cpu, rss_fresh = whole_process(db, env)
        os.environ["XDG_CACHE_HOME"] = str(work / "cache-inproc")
        result = measure(db, groups)
    print(f"{size:>8,} observations ({result['stats']['rows']:,} live, planted groups found "
          f"{result['planted_found']}/{len(groups)}, {result['clusters']:,} clusters)")
    print(f"  scan, cold caches          : {result['scan_cold']:7.2f} s wall, {result['cpu_cold']:7.2f} s CPU   "
          f"stages (wall, cumulative) {result['stats']['stages']}")
    print(f"  scan, warm caches          : {result['scan_warm']:7.2f} s wall, {result['cpu_warm']:7.2f} s CPU   "
          f"candidates {result['stats']['candidates']:,}, verified {result['stats']['verified']:,}")
    print(f"  floor (exact-duplicate hash grouping): {result['floor']:.2f} s CPU "
          f"({result['floor_groups']:,} groups); "
          f"ratio warm scan CPU / floor {result['cpu_warm'] / result['floor']:.1f}x")
    print(f"  whole process `dedup --json`: cold {cold:.2f} s wall / {cold_cpu:.2f} s CPU, warm {warm:.2f} s wall / "
          f"{warm_cpu:.2f} s CPU, scan cache only cold {fresh:.2f} s wall / {fresh_cpu:.2f} s CPU; "
          f"peak RSS {max(rss_cold, rss_warm, rss_fresh):.0f} MB" + ("  (target < 20 s)" if size >= 100_000 else ""))
    print(f"  machine load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--bench", default="/work/bench")
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        run_size(Path(args.bench), size)


if __name__ == "__main__":
    main()
