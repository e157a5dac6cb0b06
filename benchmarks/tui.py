"""TUI benchmark: first screen, keypress latency and peak RSS at 100k and 1M observations.

    python -m benchmarks.tui [--sizes 100000,1000000] [--workdir DIR]

Builds demo brains once (kept in --workdir for later runs), then drives the real
app headless with Textual's Pilot. A keypress counts as answered when every
worker it started has finished and the screen has been refreshed.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from pathlib import Path

from cleo_tui.brain import open_brain

KEYS = [("down", "down"), ("page down", "pagedown"), ("end", "end"), ("home", "home")]


def demo_brain(workdir: Path, size: int) -> Path:
    target = workdir / f"demo-{size}"
    path = target / ".cleo" / "cleo.db"
    if not path.exists():
        from cleo_tui.brain.demo import generate_demo
        started = time.perf_counter()
        generate_demo(target, observations=size, seed=7)
        print(f"  built demo brain of {size:,} rows in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return path


async def settle(app, pilot) -> None:
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def table_answered(table, pilot) -> None:
    """The keypress is answered: the table shows its new rows (no page still loading)."""
    await pilot.pause()
    while table._wanted or table.current_row() is None and table.total:
        await pilot.pause()


async def measure(path: Path) -> dict[str, float]:
    from cleo_tui.ui.app import CleoApp
    from cleo_tui.ui.table import LineTable

    figures: dict[str, float] = {}
    started = time.perf_counter()
    brain = open_brain(path)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        table = app.screen.query_one("#obs-table", LineTable)
        while table.total == 0 or table.current_row() is None:
            await pilot.pause()
        figures["first screen"] = time.perf_counter() - started
        await settle(app, pilot)  # tags finish in the background; not part of the first screen
        figures["tags ready"] = time.perf_counter() - started
        table.focus()
        for label, key in KEYS:
            t0 = time.perf_counter()
            await pilot.press(key)
            await table_answered(table, pilot)
            figures[f"key: {label}"] = time.perf_counter() - t0
            await settle(app, pilot)
            if key == "down":
                figures["  detail follows"] = time.perf_counter() - t0
        for label, field, value in (("filter: live", "f-state", "live"),):
            t0 = time.perf_counter()
            app.screen.query_one(f"#{field}").value = value
            await settle(app, pilot)
            figures[label] = time.perf_counter() - t0
        search = app.screen.query_one("#search")
        search.focus()
        search.value = "migration"
        t0 = time.perf_counter()
        await pilot.press("enter")
        await settle(app, pilot)
        figures["search"] = time.perf_counter() - t0
    brain.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--workdir", default="/tmp/cleo-tui-bench")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    paths = {size: demo_brain(workdir, size) for size in sizes}
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results = {size: asyncio.run(measure(paths[size])) for size in sizes}
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    names = list(next(iter(results.values())))
    print(f"{'measure':<18}" + "".join(f"{size:>14,}" for size in sizes))
    for name in names:
        print(f"{name:<18}" + "".join(f"{results[s][name] * 1000:>11.1f} ms" for s in sizes))
    print(f"peak RSS of the app runs: {rss_mb:.0f} MB (one process for every size; run one size "
          f"alone for its own figure; {base_rss:.0f} MB before the app started)")


if __name__ == "__main__":
    main()
