"""TUI benchmark: first screen, keypress latency and peak RSS at 100k and 1M observations.

    python -m benchmarks.tui [--sizes 100000,1000000] [--workdir DIR]

Builds demo brains once (kept in --workdir for later runs). The first screen is
timed as a user sees it: `cleo-tui --db FILE` started on a pseudo-terminal, until
the first rows of the table have been written to it; with compiled bytecode, as an
installed package has it (an untimed first start writes it to PYCACHE, even where
PYTHONDONTWRITEBYTECODE is set: else every start compiled cleo_tui's modules afresh). Keypresses are driven with
Textual's Pilot in this process. Pilot waits for screen refreshes between keys,
so wall time mostly measures Pilot; the table gives the CPU time this process
(UI thread and workers) spends per key, less what a key the app does not bind
costs ("unbound key"). The help's opening is timed in CPU too, beside its floor: an
empty dialog opened over the same pane. A filter or a search is timed on the wall clock until
its new rows are on screen; the detail panel and the tags fill in afterwards.

Opening, cold and warm (issue 33), all from outside on a pty, as a user meets it:
`open_figures` starts the real command on a brain never opened (an empty XDG cache
directory: no snapshot, no findings) and again on the same brain (the cache it left),
and prints each figure beside its target: first screen; tags on screen after it;
each key's latency (key written to screen quiet) and the app's CPU for it, while the
tags are computed and after; the app's peak RSS. Only those:

    python -m benchmarks.tui --open-only --db /work/bench/100k/.cleo/cleo.db [--db OTHER] [--stalls]

(`--stalls`: what the UI thread did during each slow key, see `benchmarks.tui_open`;
`--uncached`: the cold open reads the brain from the disk, none of its pages cached.)
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import resource
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks import with_bytecode
from benchmarks.prune import demo_brain
from benchmarks.tui_open import open_figures, print_open_figures
from cleo_tui.brain import open_brain

if TYPE_CHECKING:
    from textual.app import App
    from textual.pilot import Pilot

    from cleo_tui.ui.widgets.table import LineTable, Listing

PRESSES = 7
PYCACHE = Path(tempfile.gettempdir()) / "cleo-tui-bench-pycache"  # the started command's bytecode
KEYS = [("down", "down"), ("page down", "pagedown"), ("end", "end"), ("home", "home")]


def first_screen_seconds(path: Path, pycache: Path) -> tuple[float, float]:
    """Start the real command on a 120×36 pty: (wall, CPU) seconds until its first rows are drawn.

    CPU is the command's user+sys time (all its threads) when it is killed there: the reading
    that the load of a shared machine does not inflate. Bytecode is read from and written
    to `pycache`."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
    script = Path(sys.executable).with_name("cleo-tui")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "cleo_tui"]
    command += ["--db", str(path)]
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                            env=start_environment(pycache))
    os.close(slave)
    output = bytearray()
    marker = "observations ·".encode()
    try:
        while time.perf_counter() - started < 60:
            if select.select([master], [], [], 0.02)[0]:
                output += os.read(master, 1 << 16)
                at = output.find(marker)
                if at >= 0 and b"O-" in output[at:]:
                    wall = time.perf_counter() - started
                    proc.kill()
                    usage = os.wait4(proc.pid, 0)[2]
                    proc.returncode = -9  # reaped here: Popen must not signal or wait for it again
                    return wall, usage.ru_utime + usage.ru_stime
        raise TimeoutError("the first screen never appeared")
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        os.close(master)


def start_environment(pycache: Path) -> dict[str, str]:
    """The command's environment: a terminal, and bytecode kept in `pycache` as an install keeps it."""
    return {**with_bytecode(os.environ, pycache), "TERM": "xterm-256color"}


async def settle(app: App[Any], pilot: Pilot[Any]) -> None:
    for _ in range(3):
        await pilot.pause()
        await app.workers.wait_for_complete()
    await pilot.pause()


async def rows_shown(table: LineTable, pilot: Pilot[Any], old_listing: Listing | None = None) -> None:
    """Until the table shows its rows: a new listing when one is expected, no page loading."""
    await pilot.pause()
    while (old_listing is not None and table.listing is old_listing) or table._wanted or (
            table.total and table.current_row() is None):
        await pilot.pause()


async def cpu_per_press(pilot: Pilot[Any], table: LineTable, key: str) -> float:
    """CPU seconds per press of `key`, until its rows are shown (end/home alternate)."""
    started = time.process_time()
    for _ in range(PRESSES):
        await pilot.press(key)
        await rows_shown(table, pilot)
        if key in ("end", "home"):
            await pilot.press("home" if key == "end" else "end")
            await rows_shown(table, pilot)
    presses = PRESSES * (2 if key in ("end", "home") else 1)
    return (time.process_time() - started) / presses


async def cpu_to_open(pilot: Pilot[Any], app: App[Any], open_it: Any, shown: Any) -> float:
    """CPU seconds (median of PRESSES) from `open_it()` until `shown()`, then esc closes it."""
    times = []
    for _ in range(PRESSES):
        started = time.process_time()
        await open_it()
        while not shown():
            await pilot.pause()
        await pilot.pause()  # and drawn
        times.append(time.process_time() - started)
        await pilot.press("escape")
        await pilot.pause()
    return statistics.median(times)


async def help_figures(app: Any, pilot: Pilot[Any]) -> dict[str, float]:
    """The help's opening (F1) against a floor: an empty dialog opened over the same pane (which
    draws the pane beneath through its translucent backdrop; the help is opaque).

    The help is prepared first, as the app does in the background a few seconds after start."""
    from cleo_tui.ui.widgets.help_view import HelpRender, HelpText, help_text_width
    from cleo_tui.ui.widgets.modals import HelpScreen, MessageModal

    width = help_text_width(app.size.width)
    started = time.perf_counter()
    HelpRender().lines(app.help_text(), width)  # what the background thread does (timed afresh)
    prepared = time.perf_counter() - started
    app.help_render.lines(app.help_text(), width)

    async def open_floor() -> None:
        app.push_screen(MessageModal("floor", "an empty dialog"))
        await pilot.pause()

    async def open_help() -> None:
        await pilot.press("f1")

    floor = await cpu_to_open(pilot, app, open_floor, lambda: isinstance(app.screen, MessageModal))
    help_open = await cpu_to_open(pilot, app, open_help, lambda: isinstance(app.screen, HelpScreen)
                                  and app.screen.query_one(HelpText).ready)
    return {"help: prepared (background)": prepared, "help: open, F1 (CPU)": help_open,
            "empty dialog: open (floor, CPU)": floor}


async def measure(path: Path, pycache: Path = PYCACHE) -> dict[str, float]:
    from textual.widgets import Input

    from cleo_tui.ui.app import CleoApp
    from cleo_tui.ui.widgets.table import LineTable

    first_screen_seconds(path, pycache)  # untimed: writes the bytecode the next starts read
    starts = [first_screen_seconds(path, pycache) for _ in range(3)]
    figures: dict[str, float] = {"first screen (pty)": statistics.median(wall for wall, _ in starts),
                                 "first screen (pty, CPU)": statistics.median(cpu for _, cpu in starts)}
    brain = open_brain(path)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        started = time.perf_counter()
        table = app.screen.query_one("#obs-table", LineTable)
        while app.session.tags is None:
            await pilot.pause()
        figures["tags ready (background)"] = time.perf_counter() - started
        await settle(app, pilot)
        table.focus()
        baseline = await cpu_per_press(pilot, table, "f12")
        figures["unbound key (Pilot, CPU)"] = baseline
        for label, key in KEYS:
            figures[f"key: {label} (CPU)"] = max(0.0, await cpu_per_press(pilot, table, key) - baseline)
            await settle(app, pilot)
        for label, change in (("filter: live", lambda: setattr(app.screen.query_one("#f-state"), "value", "live")),
                              ("search", lambda: app.screen.query_one("#search", Input).post_message(
                                  Input.Submitted(app.screen.query_one("#search", Input), "migration")))):
            old = table.listing
            t0 = time.perf_counter()
            if label == "search":
                app.screen.query_one("#search", Input).value = "migration"
            change()
            await rows_shown(table, pilot, old)
            figures[label] = time.perf_counter() - t0
            await settle(app, pilot)
        figures.update(await help_figures(app, pilot))
    brain.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--workdir", default="/tmp/cleo-tui-bench")
    parser.add_argument("--db", action="append", default=[], help="a brain to open cold and warm (repeatable)")
    parser.add_argument("--open-only", action="store_true", help="only the cold and warm opening figures")
    parser.add_argument("--app-root", type=Path, help="open with the cleo_tui package in this tree (a before)")
    parser.add_argument("--stalls", action="store_true",
                        help="with --open-only: what the UI thread did in each slow key (benchmarks.ui_stalls)")
    parser.add_argument("--uncached", action="store_true",
                        help="with --open-only: the cold open also finds none of the brain's pages in the page cache")
    args = parser.parse_args()
    if args.db or args.open_only:
        dbs = [Path(d) for d in args.db] or [demo_brain(Path(args.workdir), int(s)) for s in args.sizes.split(",")]
        print_open_figures({str(db): open_figures(db, PYCACHE, args.app_root, args.stalls, args.uncached)
                            for db in dbs})
        if args.open_only:
            return
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    paths = {size: demo_brain(workdir, size) for size in sizes}
    results = {size: asyncio.run(measure(paths[size])) for size in sizes}
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    names = list(next(iter(results.values())))
    print(f"| {'measure':<26} |" + "".join(f" {size:>12,} |" for size in sizes))
    print("|" + "-" * 28 + "|" + "".join("-" * 15 + "|" for _ in sizes))
    for name in names:
        print(f"| {name:<26} |" + "".join(f" {results[s][name] * 1000:>9.1f} ms |" for s in sizes))
    print(f"\nload average {os.getloadavg()[0]:.2f}; peak RSS of this process (the app ran in it): {rss_mb:.0f} MB; "
          f"for one size alone, run with --sizes N")


if __name__ == "__main__":
    main()
