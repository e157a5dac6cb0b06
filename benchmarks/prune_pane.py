"""Prune pane benchmark: pool preparation and budget-change latency at 100k observations.

    python -m benchmarks.prune_pane [--size 100000] [--workdir DIR]

Drives the real app headless with Pilot. "handler" is the work a budget change does
on the UI thread (preview from the prepared pool, new list windows, texts); "keypress"
is a whole `+` press until the screen has been redrawn (wall and CPU time), next to
an unbound key's press (`z`) as the baseline of Pilot's own overhead.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

from benchmarks.tui import demo_brain, settle
from cleo_tui.brain import open_brain

if TYPE_CHECKING:
    from cleo_tui.ui.panes.prune import PruneScreen


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


async def measure(path: Path) -> dict[str, float]:
    from cleo_tui.ui.app import CleoApp

    figures: dict[str, float] = {}
    brain = open_brain(path, read_only=True)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        started = time.perf_counter()
        await pilot.press("2")
        screen = cast("PruneScreen", app.screen)
        while screen.pool is None:
            await pilot.pause()
        figures["pool prepared (s)"] = round(time.perf_counter() - started, 2)
        await settle(app, pilot)
        figures["live rows"] = len(screen.pool)
        screen.table("dropped").focus()
        handler = []
        for step in range(200):
            t0 = time.perf_counter()
            screen.set_budget(screen.pool.tokens_before // 4 + step * 97)
            handler.append(time.perf_counter() - t0)
        figures["handler median (ms)"] = median_ms(handler)
        figures["handler max (ms)"] = round(max(handler) * 1000, 2)
        presses: dict[str, list[float]] = {"z": [], "plus": [], "minus": []}
        cpu: dict[str, list[float]] = {key: [] for key in presses}
        for _ in range(10):
            for key in presses:
                t0, c0 = time.perf_counter(), time.process_time()
                await pilot.press(key)
                await pilot.pause()
                presses[key].append(time.perf_counter() - t0)
                cpu[key].append(time.process_time() - c0)  # steadier than wall time on a busy machine
        for key, samples in presses.items():
            figures[f"keypress {key} median (ms)"] = median_ms(samples)
            figures[f"keypress {key} CPU median (ms)"] = median_ms(cpu[key])
    brain.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/cleo-tui-bench"))
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = demo_brain(args.workdir, args.size)
    for name, value in asyncio.run(measure(path)).items():
        print(f"{name:32} {value}")


if __name__ == "__main__":
    main()
