"""Pruner benchmark: tag, prepare and preview demo brains of 10k, 100k and 1M observations.

    python -m benchmarks.prune [--sizes 10000,100000,1000000] [--workdir DIR]
                               [--naive-seconds 3] [--commit-max 100000]

Demo brains are built once (seed 7) and kept in --workdir. Each size is measured
in its own process, so its peak RSS is its own, with a fresh token cache, so the
first o200k_base preparation counts every line ("cold") and the second reads
the cache ("warm"); a second process then tags and prepares again on the caches
the first one filled (token counts and detector findings), as the CLI or a new
TUI session would. A preview at a new budget is timed over 300 random budgets.
The naive baseline drops rows one at a time in the same order and re-counts
the whole rendered pool after each drop; it runs for --naive-seconds and is
extrapolated to the drops the budget needs. Targets: preview < 10 ms and warm
prepare < 2 s at 100k.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from cleo_tui.brain import Brain
    from cleo_tui.memory.pruner import PreparedPool

T = TypeVar("T")

PREVIEWS = 300


def demo_brain(workdir: Path, size: int) -> Path:
    """The demo brain of `size` rows in workdir, built on first use."""
    target = workdir / f"demo-{size}"
    path = target / ".cleo" / "cleo.db"
    if not path.exists():
        from cleo_tui.demo import generate_demo
        started = time.perf_counter()
        generate_demo(target, observations=size, seed=7)
        print(f"  built demo brain of {size:,} rows in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return path


def _timed_cpu(call: Callable[[], T]) -> tuple[T, float, float]:
    """(value, wall seconds, CPU seconds) of one call."""
    started, cpu = time.perf_counter(), time.process_time()
    value = call()
    return value, time.perf_counter() - started, time.process_time() - cpu


def _timed(call: Callable[[], T]) -> tuple[T, float]:
    """(value, wall seconds) of one call."""
    value, wall, _ = _timed_cpu(call)
    return value, wall


def _heavy(result: dict[str, Any], key: str, call: Callable[[], T]) -> T:
    """Run `call`, keeping its wall and CPU seconds under key and key_cpu."""
    value, result[key], result[key + "_cpu"] = _timed_cpu(call)
    return value


def _preview_ms(pool: PreparedPool) -> tuple[float, float]:
    """Median and max milliseconds of a preview at a budget not asked before."""
    rng = random.Random(1)
    times = []
    for _ in range(PREVIEWS):
        budget = rng.randint(1, max(2, int(pool.tokens_before * 1.1)))
        _, seconds = _timed(functools.partial(pool.preview, budget))
        times.append(seconds * 1000)
    return statistics.median(times), max(times)


def _naive_seconds(brain: Brain, pool: PreparedPool, budget: int, limit: float) -> tuple[float, int, int]:
    """(estimated seconds, drops needed, drops timed) of a re-count-after-each-drop loop (chars4)."""
    from cleo_tui.memory import mapping
    from cleo_tui.memory.seed_types import render_line
    from cleo_tui.memory.tokenizers import utf16_length

    relevance = {e.id: e.relevance for e in pool.droppable + pool.protected}
    lines = {}
    for obs_id, created, title, narrative in brain.query(
            "SELECT id, created_at, title, narrative FROM brain_observations WHERE invalid_at IS NULL "
            "ORDER BY created_at, rowid"):
        obs_id = mapping.as_text(obs_id)
        lines[obs_id] = render_line(obs_id, mapping.minute_timestamp(created), relevance[obs_id],
                                    mapping.content_of({"title": title, "narrative": narrative}))
    needed = pool.preview(budget).drop_count
    target = pool.preview(budget).target
    started = time.perf_counter()
    done = 0
    for entry in pool.droppable:
        if math.ceil(utf16_length("\n".join(lines.values())) / 4) <= target:
            break
        del lines[entry.id]
        done += 1
        if time.perf_counter() - started > limit:
            break
    spent = time.perf_counter() - started
    return (spent / max(done, 1)) * max(needed, 1), needed, done


def measure(db: Path, naive_limit: float, commit: bool) -> dict:
    """Everything for one brain, in this process (run with a fresh XDG_CACHE_HOME)."""
    from cleo_tui.brain import open_brain
    from cleo_tui.memory import curation
    from cleo_tui.memory.pruner import commit_prune, prepare_pool
    from cleo_tui.memory.tags import tag_brain
    from cleo_tui.memory.tokenizers import get_encoding

    result: dict = {}
    brain = open_brain(db)
    try:
        result["live"] = int(brain.scalar("SELECT count(*) FROM brain_observations WHERE invalid_at IS NULL"))
        _heavy(result, "prepare_first_s", lambda: prepare_pool(brain, "chars4"))  # a fresh process, as the CLI
        _heavy(result, "tag_s", lambda: tag_brain(brain))
        chars4 = _heavy(result, "prepare_chars4_s", lambda: prepare_pool(brain, "chars4"))
        _heavy(result, "encoding_load_s", lambda: get_encoding("o200k_base"))
        cold = _heavy(result, "prepare_o200k_cold_s", lambda: prepare_pool(brain, "o200k_base"))
        warm = _heavy(result, "prepare_o200k_warm_s", lambda: prepare_pool(brain, "o200k_base"))
        result["count_cold_s"], result["count_warm_s"] = cold.count_stats.seconds, warm.count_stats.seconds
        del cold
        result["warm_from_cache"] = warm.count_stats.from_cache
        result["preview_chars4_ms"] = _preview_ms(chars4)
        result["preview_o200k_ms"] = _preview_ms(warm)
        budget = chars4.tokens_before // 2
        curve_budgets = [chars4.tokens_before * k // 20 for k in range(1, 21)]
        _, result["curve20_ms"] = _timed(lambda: chars4.curve(curve_budgets))
        result["curve20_ms"] *= 1000
        single = chars4.preview(budget)
        _, result["preview_half_ms"] = _timed(lambda: chars4.preview(budget))
        result["preview_half_ms"] *= 1000
        result["drops_at_half"] = single.drop_count
        result["protected"] = len(chars4.protected)
        result["rss_prepared_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        naive, needed, timed = _naive_seconds(brain, chars4, budget, naive_limit)
        result.update(naive_s=naive, naive_needed=needed, naive_timed=timed)
        if commit:
            run_id = _heavy(result, "commit_s", lambda: commit_prune(brain, single))
            _heavy(result, "undo_s", lambda: curation.undo(brain, run_id))
    finally:
        brain.close()
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def measure_warm(db: Path) -> dict:
    """A new process on caches filled by an earlier one: what the CLI and the TUI's start see."""
    from cleo_tui.brain import open_brain
    from cleo_tui.memory.pruner import prepare_pool
    from cleo_tui.memory.tags import tag_brain

    result: dict = {}
    brain = open_brain(db, read_only=True)
    try:
        _heavy(result, "new_process_tag_s", lambda: tag_brain(brain))
        _heavy(result, "new_process_prepare_s", lambda: prepare_pool(brain, "o200k_base"))
    finally:
        brain.close()
    return result


def _run_child(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "benchmarks.prune", *args], env=env, check=True,
                         capture_output=True, text=True)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _child(size: int, db: Path, naive_limit: float, commit: bool) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache}
        result = _run_child(["--child", str(db), "--naive-seconds", str(naive_limit)]
                            + (["--commit"] if commit else []), env)
        result.update(_run_child(["--child-warm", str(db)], env))
    return result


def _fmt(value: float, digits: int = 2) -> str:
    return f"{value:.{digits}f}"


def _cpu_wall(key: str) -> Callable[[dict[str, Any]], str]:
    """A table cell: CPU seconds, then wall seconds in brackets (they differ on a busy machine)."""
    return lambda r: f"{r[key + '_cpu']:.2f} ({r[key]:.2f})"


def print_table(rows: dict[int, dict]) -> None:
    sizes = list(rows)
    lines = [
        ("live observations", lambda r: f"{r['live']:,}"),
        ("prepare chars4, new process, empty caches: cpu (wall) s", _cpu_wall("prepare_first_s")),
        ("tag_brain, new process, warm caches: cpu (wall) s", _cpu_wall("new_process_tag_s")),
        ("prepare o200k, new process, warm caches: cpu (wall) s", _cpu_wall("new_process_prepare_s")),
        ("tag_brain, texts already seen: cpu (wall) s", _cpu_wall("tag_s")),
        ("prepare chars4, texts already seen: cpu (wall) s", _cpu_wall("prepare_chars4_s")),
        ("prepare o200k, cold token cache: cpu (wall) s", _cpu_wall("prepare_o200k_cold_s")),
        ("prepare o200k, warm token cache: cpu (wall) s", _cpu_wall("prepare_o200k_warm_s")),
        ("  of which token counting, cold / cached (wall s)",
         lambda r: f"{_fmt(r['count_cold_s'])} / {_fmt(r['count_warm_s'])}"),
        ("o200k encoding load: cpu (wall) s", _cpu_wall("encoding_load_s")),
        ("preview, new budget, chars4: median / max (ms)",
         lambda r: f"{_fmt(r['preview_chars4_ms'][0], 3)} / {_fmt(r['preview_chars4_ms'][1], 3)}"),
        ("preview, new budget, o200k: median / max (ms)",
         lambda r: f"{_fmt(r['preview_o200k_ms'][0], 3)} / {_fmt(r['preview_o200k_ms'][1], 3)}"),
        ("curve of 20 budgets (ms)", lambda r: _fmt(r["curve20_ms"], 3)),
        ("rows dropped at half the pool", lambda r: f"{r['drops_at_half']:,}"),
        ("protected rows", lambda r: f"{r['protected']:,}"),
        ("naive re-count loop, same budget (s, est.)",
         lambda r: f"{r['naive_s']:,.1f} ({r['naive_timed']:,}/{r['naive_needed']:,} drops timed)"),
        ("naive ÷ preview", lambda r: f"{r['naive_s'] * 1000 / max(r['preview_half_ms'], 1e-6):,.0f}×"),
        ("naive ÷ (prepare chars4 + preview)",
         lambda r: f"{r['naive_s'] / (r['prepare_first_s'] + r['preview_half_ms'] / 1000):,.0f}×"),
        ("commit (incl. re-prepare) / undo: cpu (wall) s",
         lambda r: f"{_cpu_wall('commit_s')(r)} / {_cpu_wall('undo_s')(r)}" if "commit_s" in r else "skipped"),
        ("peak RSS after prepares and previews (MB)", lambda r: f"{r['rss_prepared_mb']:.0f}"),
        ("peak RSS at the end (MB)", lambda r: f"{r['peak_rss_mb']:.0f}"),
    ]
    print("| measure | " + " | ".join(f"{s:,}" for s in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for label, cell in lines:
        print(f"| {label} | " + " | ".join(cell(rows[s]) for s in sizes) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.prune", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--workdir", default="/tmp/cleo-prune-bench")
    parser.add_argument("--naive-seconds", type=float, default=3.0)
    parser.add_argument("--commit-max", type=int, default=100_000, help="commit and undo only up to this size")
    parser.add_argument("--child", metavar="DB", help=argparse.SUPPRESS)
    parser.add_argument("--commit", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-warm", metavar="DB", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_warm:
        print(json.dumps(measure_warm(Path(args.child_warm))))
        return 0
    if args.child:
        print(json.dumps(measure(Path(args.child), args.naive_seconds, args.commit)))
        return 0
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    rows = {}
    for size in [int(s) for s in args.sizes.split(",")]:
        db = demo_brain(workdir, size)
        print(f"  measuring {size:,} …", file=sys.stderr)
        rows[size] = _child(size, db, args.naive_seconds, size <= args.commit_max)
    print_table(rows)
    print(f"\nload average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
