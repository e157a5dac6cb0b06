"""How long the tags' arrival holds the interpreter from the UI thread (issue 33): what
`python -m benchmarks.tags_arrival --db FILE [--db OTHER]` prints.

A first open scans the brain in another process and then loads what it wrote into the app
(`tags._first_scan`: the snapshot loaded, the rows added since folded in, the table made
ready); a reopening loads the snapshot too (`tags.tag_brain`). That loading runs in a worker
thread beside the UI thread, and a C call that holds the GIL for 100 ms holds every key for
as long. The pty benchmark (`benchmarks.tui --open-only`) times keys from outside, where the
load of a shared machine blurs a few tens of ms; this one measures the holding itself.

The tags are computed in a worker thread of this process, as the app does, while the main
thread plays the UI thread: it sleeps 0.5 ms again and again, and for every wake-up later
than 5 ms takes how long it waited for the GIL: the wake-up's lateness less the time it ran
or waited for a core (Linux's schedstat), and at most the CPU the worker spent meanwhile (its
thread clock). So the machine's load (this thread waiting for a core, the worker waiting for
one while it holds the GIL) does not count, only the worker's running. Printed: the longest
such hold, how many exceeded 20 and 40 ms, the worker's CPU, the wall time and the peak RSS
of this process (from its RSS before), for the cold open (an empty cache directory) and the
warm one (the cache it left), with where the worker was after the longest holds. The floor:
the same main-thread loop beside a worker that runs plain Python bytecode for one second
(what the switch interval allows).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cleo_tui.brain import open_brain
from cleo_tui.ui.switching import hand_the_gil_back_sooner

LATE_S = 0.005  # a wake-up later than this is looked at
SLEEP_S = 0.0005


@dataclass
class Holding:
    """What the main thread saw while a worker ran `work`."""

    holds_ms: list[float] = field(default_factory=list)  # worker CPU during each late wake-up
    where: list[str] = field(default_factory=list)  # the worker's line when each was seen
    worker_cpu: float = 0.0
    wall: float = 0.0
    peak_rss_mb: float = 0.0

    def line(self, name: str) -> str:
        longest = max(self.holds_ms, default=0.0)
        over = sum(h > 20 for h in self.holds_ms), sum(h > 40 for h in self.holds_ms)
        return (f"| {name:<28} | {longest:8.1f} ms | {over[0]:5d} | {over[1]:5d} | {self.worker_cpu:7.2f} s "
                f"| {self.wall:7.2f} s | {self.peak_rss_mb:6.0f} MB |")


def held(work: Callable[[], object]) -> Holding:
    """Run `work` in a worker thread while this thread wakes every 0.5 ms (see the module docstring)."""
    result = Holding()
    done = threading.Event()
    clock: list[int] = []
    ready = threading.Event()

    def run() -> None:
        clock.append(time.pthread_getcpuclockid(threading.get_ident()))
        ready.set()
        started = time.thread_time()
        try:
            work()
        finally:
            result.worker_cpu = time.thread_time() - started
            done.set()

    worker = threading.Thread(target=run, name="tags worker")
    _reset_peak()
    started = time.perf_counter()
    worker.start()
    ready.wait()
    while not done.is_set():
        before, cpu, own = time.perf_counter(), time.clock_gettime(clock[0]), _scheduled()
        time.sleep(SLEEP_S)
        late = time.perf_counter() - before
        if late > LATE_S and not done.is_set():
            worker_cpu = time.clock_gettime(clock[0]) - cpu
            # (waiting for the GIL, this thread neither ran nor waited for a core)
            now = _scheduled()
            waited = late - SLEEP_S - (now - own) if own is not None and now is not None else worker_cpu
            result.holds_ms.append(max(0.0, min(worker_cpu, waited)) * 1000)
            result.where.append(_line_of(worker))
    worker.join()
    result.wall = time.perf_counter() - started
    result.peak_rss_mb = _peak_rss_mb()
    return result


def _scheduled() -> float | None:
    """Seconds this thread has run or waited for a core (Linux schedstat), None where unknown."""
    try:
        ran, waited, _ = Path("/proc/thread-self/schedstat").read_text().split()
    except (OSError, ValueError):
        return None
    return (int(ran) + int(waited)) / 1e9


def _line_of(thread: threading.Thread) -> str:
    """Where `thread` is now, in cleo_tui (file:line function), as a hint at what held the GIL."""
    innermost = frame = sys._current_frames().get(thread.ident or 0)
    while frame is not None and "cleo_tui" not in frame.f_code.co_filename:
        frame = frame.f_back
    frame = frame or innermost
    if frame is None:
        return "?"
    return f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno} {frame.f_code.co_name}"


def _peak_rss_mb() -> float:
    """This process's peak RSS since `_reset_peak` (VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak() -> None:
    """Start the peak RSS again from the current RSS (Linux: "5" to clear_refs), so that each
    figure's peak is its own."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _python_for(seconds: float) -> None:
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n += 1


def arrival(path: Path) -> dict[str, Holding]:
    """The cold open's tags (first scan in a child process, then loaded here), the warm one's,
    and the floor, each in a worker thread beside this one."""
    from cleo_tui.memory import tags

    figures = {"floor (plain Python)": held(lambda: _python_for(1.0))}
    kept: list[object] = []  # (the tags outlive the measure, as the app keeps them: freeing them is not timed)
    with tempfile.TemporaryDirectory(prefix="cleo-tui-arrival-cache-") as home:
        os.environ["XDG_CACHE_HOME"] = home
        brain = open_brain(path, read_only=True)
        try:
            figures["cold (first open)"] = held(lambda: kept.append(tags.tag_brain(brain).ready()))
            kept.clear()
            figures["warm (reopened)"] = held(lambda: kept.append(tags.tag_brain(brain).ready()))
        finally:
            brain.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", action="append", required=True, type=Path, help="a brain (read only; repeatable)")
    args = parser.parse_args()
    hand_the_gil_back_sooner()  # as the app does
    for path in args.db:
        figures = arrival(path)
        print(f"\n{path}  (load average {os.getloadavg()[0]:.2f}; python {sys.version.split()[0]})")
        print(f"| {'tags computed':<28} | longest hold | >20ms | >40ms | worker CPU | wall      | peak RSS |")
        print(f"|{'-' * 30}|{'-' * 14}|{'-' * 7}|{'-' * 7}|{'-' * 12}|{'-' * 11}|{'-' * 10}|")
        for name, holding in figures.items():
            print(holding.line(name))
        print("(target: no hold over 40 ms, so that no key waits 50 ms)")
        for name, holding in figures.items():
            longest = sorted(zip(holding.holds_ms, holding.where, strict=True), reverse=True)[:3]
            print(f"longest, {name}: " + "; ".join(f"{ms:.0f} ms at {where}" for ms, where in longest))


if __name__ == "__main__":
    main()
