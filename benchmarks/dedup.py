"""Duplicate-finder benchmark: `dedup` at 10,000 and 100,000 observations, beside a floor, before and after.

    python -m benchmarks.dedup [--sizes 10000,100000] [--bench /work/bench] [--brain DB ...] [--before REF]
                               [--repeats N] [--cold-only]

Demo brains come from `/work/bench/10k` and `/work/bench/100k` (built with
`cleo-tui demo DIR --observations N --seed 7` when absent; a brain another
process is still writing, `cleo.db.partial`, is waited for); `--brain DB` adds
any other brain, such as a real-layout one (`python -m benchmarks.real_layout
DIR --observations N`), and `--sizes ''` leaves the demo brains out. The demo
has no reworded duplicates, so each run copies the brain and plants `PLANTED`
groups of rewordings in the copy; the scan must find every planted group.

For each brain, with empty cache directories:
- whole process: `cleo-tui dedup --json` as a subprocess, with its peak RSS:
  cold (every cache empty: a fresh XDG_CACHE_HOME), warm, and with only the
  duplicate finder's scan cache removed (the usual first scan of a brain the
  TUI has opened before). Target at 100,000: cold at most 8 s of CPU.
- with `--before REF` (a git ref, e.g. `main`): the same whole-process runs with
  cleo-tui as it was at REF (its package exported with `git archive`),
  interleaved with this tree's so both see the same machine load, and whether
  the two printed the same JSON; with `--repeats N`, the whole-process runs are
  made N times over (interleaved, each with empty caches to start) and the run of
  median CPU is shown (a shared machine's load comes and goes); `--cold-only` makes only
  the cold whole-process runs (the issue's figure), a third of the time;
- `scan cold` / `scan warm`: the scan in this process, with empty caches, then
  again (everything from the caches);
- `floor`: the plainest code doing part of the same work — read the live pool
  and group exact duplicates by a hash of the normalised text — in this process
  (beside the in-process scans) and as a whole process of its own, Python's
  start-up included (beside the whole-process figures).

The machine may be shared: compare CPU seconds (user + system) of one sitting.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
ROOT = Path(__file__).resolve().parent.parent


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


def measure(db: Path, groups: list[set[str]]) -> dict[str, Any]:
    """In this process: cold and warm scans (the cache dir is already private)."""
    from cleo_tui.brain import open_brain
    from cleo_tui.memory.duplicates import scan_duplicates

    brain = open_brain(db, read_only=True)
    result: dict[str, Any] = {}
    try:
        for label in ("cold", "warm"):
            started, cpu = time.perf_counter(), time.process_time()
            scan = scan_duplicates(brain)
            clusters = scan.clusters()
            result[f"scan_{label}"] = time.perf_counter() - started
            result[f"cpu_{label}"] = time.process_time() - cpu
            result[f"stages_{label}"] = {k: round(v, 2) for k, v in scan.stats.seconds.items()}
        result["stats"] = {"rows": scan.stats.rows, "candidates": scan.stats.candidates,
                           "verified": scan.stats.verified}
        found = [set(c.ids) for c in clusters]
        result["planted_found"] = sum(1 for g in groups if any(g <= c for c in found))
        result["clusters"] = len(clusters)
    finally:
        brain.close()
    result["floor"], result["floor_groups"] = floor(db)
    return result


def whole_process(db: Path, env: dict[str, str], package: Path | None = None, output: Path | None = None
                  ) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of `cleo-tui dedup --json` as its own process
    (cleo-tui from `package`, a directory holding an exported `cleo_tui`, when given).

    The machine is shared, so CPU seconds (user + system) are the fairer figure."""
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}  # (this machine sets it: see
    # `_processes`; else every start compiled cleo_tui's modules again, which no user's run pays)
    if package is not None:
        env = {**env, "PYTHONPATH": str(package)}
    return _child([sys.executable, "-m", "cleo_tui", "dedup", "--db", str(db), "--json"], env, output,
                  cwd=package or ROOT)


def _child(command: list[str], env: dict[str, str], output: Path | None = None,
           cwd: Path = ROOT) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB) of one child process (with the
    children it waited for), read with `wait4`: that child's own figures, whatever ran before it."""
    started = time.perf_counter()
    with open(output or os.devnull, "wb") as out:
        child = subprocess.Popen(command, env=env, stdout=out, cwd=cwd)
        _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise subprocess.CalledProcessError(child.returncode, command)
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def floor_process(db: Path) -> float:
    """CPU seconds of `floor` as a whole process of its own (Python's start-up included)."""
    return _child([sys.executable, "-m", "benchmarks.dedup", "--floor-only", str(db)], dict(os.environ))[1]


def exported(ref: str, into: Path) -> Path:
    """cleo-tui's package as it was at git ref `ref`, exported into `into` (a directory for PYTHONPATH)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "cleo_tui"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


CONDITIONS = ("cold", "warm", "finder cold")
Run = tuple[float, float, float]  # wall s, CPU s, peak RSS MB


def _processes(db: Path, work: Path, before: Path | None, repeats: int = 1,
               conditions: tuple[str, ...] = CONDITIONS) -> tuple[dict[str, dict[str, Run]], bool]:
    """Whole-process runs, cold, warm and with only the finder's scan cache cold, for this tree
    ('after') and, when given, the exported `before` package, interleaved (same machine load);
    with `repeats`, each sequence that many times (each with empty caches to start), and the
    run of median CPU seconds kept for each. Also whether every run printed the same JSON."""
    versions = {"after": None, **({"before": before} if before else {})}
    for package in versions.values():  # (bytecode beside the sources, as an installed package has it)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str((package or ROOT) / "cleo_tui")], check=True)
    every: dict[str, dict[str, list[Run]]] = {name: {c: [] for c in conditions} for name in versions}
    same = True
    for repeat in range(repeats):
        for condition in conditions:
            for name, package in versions.items():
                cache = work / f"cache-{name}-{repeat}"
                if condition == "finder cold":
                    for scan_cache in cache.rglob("dedup"):
                        shutil.rmtree(scan_cache)
                output = work / f"{name}-{condition}-{repeat}.json"
                every[name][condition].append(
                    whole_process(db, {**os.environ, "XDG_CACHE_HOME": str(cache)}, package, output))
                same = same and output.read_bytes() == (work / f"after-{condition}-0.json").read_bytes()
    runs = {name: {c: sorted(found, key=lambda run: run[1])[len(found) // 2] for c, found in by.items()}
            for name, by in every.items()}
    return runs, same


def run_brain(label: str, source: Path, before: Path | None, repeats: int = 1,
              conditions: tuple[str, ...] = CONDITIONS) -> None:
    """Every figure of one brain, printed."""
    with tempfile.TemporaryDirectory(prefix="cleo-dedup-bench-") as tmp:
        work = Path(tmp)
        db, groups = planted_copy(source, work)
        runs, all_same = _processes(db, work, before, repeats, conditions)
        same = None if before is None else all_same
        process_floor = floor_process(db)
        os.environ["XDG_CACHE_HOME"] = str(work / "cache-inproc")
        result = measure(db, groups)
    print(f"{label} ({result['stats']['rows']:,} live, planted groups found "
          f"{result['planted_found']}/{len(groups)}, {result['clusters']:,} clusters)")
    floor_cpu = result["floor"]
    print(f"  floor (exact-duplicate hash grouping): {floor_cpu:.2f} s CPU in this process "
          f"({result['floor_groups']:,} groups); {process_floor:.2f} s CPU as a whole process")
    print(f"  scan, cold caches: {result['scan_cold']:7.2f} s wall, {result['cpu_cold']:7.2f} s CPU "
          f"({result['cpu_cold'] / floor_cpu:.1f}x floor)   stages (wall, cumulative) {result['stages_cold']}")
    print(f"  scan, warm caches: {result['scan_warm']:7.2f} s wall, {result['cpu_warm']:7.2f} s CPU "
          f"({result['cpu_warm'] / floor_cpu:.1f}x floor)   candidates {result['stats']['candidates']:,}, "
          f"verified {result['stats']['verified']:,}")
    print("  whole process `dedup --json`: CPU s (x the whole-process floor), wall s, peak RSS MB"
          + (f" (the run of median CPU of {repeats})" if repeats > 1 else "")
          + ("; target at 100,000: cold <= 8 s CPU" if result["stats"]["rows"] >= 90_000 else ""))
    for condition in conditions:
        line = [f"{name} {cpu:6.2f} s CPU ({cpu / process_floor:4.1f}x), {wall:6.2f} s wall, {rss:4.0f} MB"
                for name in ("before", "after") if name in runs for wall, cpu, rss in [runs[name][condition]]]
        print(f"    {condition:11s}: " + " | ".join(line))
    if same is not None:
        print(f"  before and after printed {'the same JSON' if same else 'DIFFERENT JSON'}"
              + (" in every run" if repeats > 1 else ""))
    print(f"  machine load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="demo brains by size ('' for none)")
    parser.add_argument("--bench", default="/work/bench")
    parser.add_argument("--brain", action="append", default=[], metavar="DB", help="another brain (repeatable)")
    parser.add_argument("--before", metavar="REF", help="also run cleo-tui as it was at this git ref")
    parser.add_argument("--repeats", type=int, default=1, metavar="N",
                        help="whole-process runs N times each, interleaved; the median is shown")
    parser.add_argument("--cold-only", action="store_true", help="whole-process runs with every cache empty only")
    parser.add_argument("--floor-only", metavar="DB", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_only:
        floor(Path(args.floor_only))
        return
    brains = [(f"{size:,} observations (demo)", demo_brain(Path(args.bench), size))
              for size in (int(s) for s in args.sizes.split(",") if s)]
    brains += [(path, Path(path)) for path in args.brain]
    with tempfile.TemporaryDirectory(prefix="cleo-dedup-before-") as tmp:
        before = exported(args.before, Path(tmp) / "before") if args.before else None
        for label, source in brains:
            run_brain(label, source, before, max(1, args.repeats), ("cold",) if args.cold_only else CONDITIONS)


if __name__ == "__main__":
    main()
