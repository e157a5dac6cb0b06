"""What the app's UI thread was doing when a key was slow (issue 33): a stall logger that
`benchmarks.tui --open-only --stalls` starts inside the app it opens.

A watchdog thread looks at the main thread's stack every SAMPLE_S (`sys._current_frames`).
The main thread is idle when its innermost frame is the event loop's `select`; any other
stretch longer than STALL_S is a stall, written (one JSON line) to the log with: when it began
and ended (`time.monotonic`, which is the benchmark's `perf_counter` clock on Linux), the main
thread's stacks sampled meanwhile (counted), the other threads' innermost frames, each
thread's CPU and run-queue wait over the stall (Linux schedstat: a UI thread that ran little
and waited long on the run queue was starved of a core; one that neither ran nor waited was
waiting for the GIL), the child processes' CPU meanwhile (the scan process and its detector
worker) and every garbage collection that overlapped it. The watchdog itself needs the GIL,
so a C call holding it longer shows as a gap between two samples: written too ("gap").

For measuring only: it costs the app a little (a thread waking every few ms).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

SAMPLE_S = 0.002
STALL_S = 0.030
GAP_S = 0.015
DEPTH = 40
GC_LOGGED_S = 0.003  # a collection taking this much CPU is logged on its own ("gc"), and every full one


def install(log: str) -> None:
    """Start the watchdog in this process, writing to `log` (appended, one JSON object a line)."""
    main = threading.main_thread()
    out = Path(log).open("a", buffering=1)
    collections: list[tuple[float, float, int, str]] = []
    started: dict[str, float] = {}

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        now = time.monotonic()
        if phase == "start":
            started["at"] = now
            started["cpu"] = time.thread_time()
        elif "at" in started:
            at, cpu = started.pop("at"), time.thread_time() - started.pop("cpu")
            collections.append((at, now, info.get("generation", -1), threading.current_thread().name))
            if cpu >= GC_LOGGED_S or info.get("generation") == 2:  # (its own CPU: wall time grows with the load)
                out.write(json.dumps({"kind": "gc", "at": at, "cpu_ms": round(cpu * 1000, 1), "ms": round(
                    (now - at) * 1000, 1), "generation": info.get("generation", -1), "collected": info.get(
                    "collected"), "thread": threading.current_thread().name, "counts": gc.get_count(),
                    "frozen": gc.get_freeze_count()}) + "\n")

    gc.callbacks.append(on_gc)
    out.write(json.dumps({"kind": "start", "at": time.monotonic(), "pid": os.getpid()}) + "\n")
    lags = _Lags(main)
    lags.watch_loops()
    threading.Thread(target=_watch, args=(main, out, collections, lags), name="stall watchdog", daemon=True).start()


def _stack(frame: FrameType | None) -> list[str]:
    lines: list[str] = []
    while frame is not None and len(lines) < DEPTH:
        code = frame.f_code  # (its qualified name: a running frame's locals are not read from another thread)
        lines.append(f"{_short(code.co_filename)}:{frame.f_lineno} {code.co_qualname}")
        frame = frame.f_back
    return lines


def _short(filename: str) -> str:
    for mark in ("/cleo_tui/", "/textual/", "/rich/", "/asyncio/", "/numpy/", "/benchmarks/"):
        at = filename.rfind(mark)
        if at >= 0:
            return filename[at + 1:]
    return filename.rsplit("/", 1)[-1]


_LOOP_FRAMES = ("_run_once", "run_forever", "run_until_complete", "_run", "run", "run_app", "main", "dispatch",
                "run_tui", "<module>", "running", "_process_messages", "_process_messages_loop", "_dispatch_message",
                "_on_message", "on_event", "invoke", "_invoke", "_pre_process", "_tick", "_run_timer")


def _anchor(stack: list[str]) -> str:
    """The outermost frame of `stack` (innermost first) that is not the event loop's or Textual's
    dispatch: what the loop was running (a handler, a timer's refresh, a worker's start…)."""
    for line in reversed(stack):
        name = line.split(" ")[1].rsplit(".", 1)[-1]
        if name not in _LOOP_FRAMES and "asyncio/" not in line and "runpy" not in line:
            return line
    return stack[0] if stack else "?"


def _in_select(frame: FrameType | None) -> bool:
    return frame is not None and frame.f_code.co_name == "select" and frame.f_code.co_filename.endswith("selectors.py")


def _kernel_state(tid: int) -> str:
    """The thread's state and where the kernel has it wait: "S do_epoll_wait" (idle in the event
    loop), "S futex_..." (waiting for the GIL), "R" (running or waiting for a core)."""
    try:
        state = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "R":
            return "R"
        return f"{state} {Path(f'/proc/self/task/{tid}/wchan').read_text()}"
    except (OSError, IndexError):
        return "?"


def _threads() -> dict[str, tuple[int, int]]:
    """Every thread of this process: name → (CPU ns, run-queue wait ns)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    result = {}
    for task in os.listdir("/proc/self/task"):
        try:
            ran, waited = Path(f"/proc/self/task/{task}/schedstat").read_text().split()[:2]
        except (OSError, ValueError):
            continue
        result[names.get(int(task), task)] = (int(ran), int(waited))
    return result


def _children() -> dict[str, tuple[int, int]]:
    """Every descendant process: "pid name" → (CPU ns, run-queue wait ns)."""
    result = {}
    pending = [str(os.getpid())]
    while pending:
        pid = pending.pop()
        kids = []
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                kids += Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        except OSError:
            continue
        for kid in kids:
            pending.append(kid)
            try:
                ran, waited = Path(f"/proc/{kid}/schedstat").read_text().split()[:2]
                cmd = Path(f"/proc/{kid}/cmdline").read_bytes().split(b"\0")
                name = next((c.decode() for c in cmd if b"cleo_tui" in c), cmd[0].decode())
                result[f"{kid} {name}"] = (int(ran), int(waited))
            except (OSError, ValueError):
                continue
    return result


def _delta(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> dict[str, list[float]]:
    return {name: [round((ran - before.get(name, (0, 0))[0]) / 1e6, 1),
                   round((waited - before.get(name, (0, 0))[1]) / 1e6, 1)]
            for name, (ran, waited) in after.items()
            if ran - before.get(name, (0, 0))[0] > 500_000 or waited - before.get(name, (0, 0))[1] > 500_000}


LAG_EVERY_S = 0.01
LAG_LOGGED_S = 0.015


class _Lags:
    """The event loop's lag as a key meets it: a callback handed to the loop from another thread
    (as Textual's input thread hands it a key) every LAG_EVERY_S, and how long it waited to run, in
    wall time and in the UI thread's own CPU meanwhile (what a quiet machine would still wait)."""

    def __init__(self, main: threading.Thread) -> None:
        self.clock = time.pthread_getcpuclockid(main.ident or 0)
        self.loop: Any = None
        self.pending = False
        self.next = 0.0
        self.done: list[tuple[float, float, float]] = []  # (posted, wall s, UI CPU s)

    def watch_loops(self) -> None:
        """Know the event loop once it runs (`run_forever` wrapped)."""
        import asyncio.base_events

        run_forever = asyncio.base_events.BaseEventLoop.run_forever
        lags = self

        def running(loop: Any) -> Any:
            if threading.current_thread() is threading.main_thread():
                lags.loop = loop
            return run_forever(loop)

        asyncio.base_events.BaseEventLoop.run_forever = running  # type: ignore[method-assign, assignment]

    def post(self, now: float) -> None:
        if self.loop is None or self.pending or now < self.next:
            return
        self.pending = True
        self.next = now + LAG_EVERY_S
        try:
            self.loop.call_soon_threadsafe(self.arrived, now, time.clock_gettime(self.clock))
        except RuntimeError:  # (the loop closed)
            self.loop = None

    def arrived(self, posted: float, cpu: float) -> None:
        self.done.append((posted, time.monotonic() - posted, time.thread_time() - cpu))
        self.pending = False


def _watch(main: threading.Thread, out: Any, collections: list[tuple[float, float, int, str]], lags: _Lags) -> None:
    me = threading.get_ident()
    busy_since: float | None = None
    stacks: Counter[tuple[str, ...]] = Counter()
    others: Counter[str] = Counter()
    states: Counter[str] = Counter()
    timeline: list[list[Any]] = []  # [since the stall began (s), anchor, samples] as it changes
    tid = main.native_id or 0
    at_start: tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]] = ({}, {})
    last = time.monotonic()
    every_second = last + 1.0
    while True:
        time.sleep(SAMPLE_S)
        now = time.monotonic()
        frames = sys._current_frames()
        frame = frames.get(main.ident or 0)
        if now - last > GAP_S:
            out.write(json.dumps({"kind": "gap", "from": last, "to": now, "ms": round((now - last) * 1000, 1),
                                  "main": _stack(frame)[:12],
                                  "others": {str(i): _stack(f)[:6] for i, f in frames.items()
                                             if i not in (me, main.ident)}}) + "\n")
        last = now
        if now >= every_second:  # each thread's and child's CPU so far (ms), to see who ran when
            every_second = now + 1.0
            out.write(json.dumps({"kind": "cpu", "at": now, "threads": _delta({}, _threads()),
                                  "children": _delta({}, _children())}) + "\n")
        lags.post(now)
        while lags.done:
            posted, wall, cpu = lags.done.pop(0)
            if wall >= LAG_LOGGED_S:
                out.write(json.dumps({"kind": "lag", "from": posted, "to": posted + wall, "ms": round(wall * 1000, 1),
                                      "cpu_ms": round(cpu * 1000, 1)}) + "\n")
        state = _kernel_state(tid)
        if not _in_select(frame) or "epoll" not in state:
            if busy_since is None:
                busy_since = now
                stacks.clear()
                others.clear()
                states.clear()
                timeline = []
                at_start = (_threads(), _children())
            stack = _stack(frame)
            stacks[tuple(stack)] += 1
            anchor = _anchor(stack)
            if timeline and timeline[-1][1] == anchor:
                timeline[-1][2] += 1
            else:
                timeline.append([round(now - busy_since, 3), anchor, 1])
            states[state] += 1
            for ident, other in frames.items():
                if ident not in (me, main.ident) and not _in_select(other):
                    top = _stack(other)[:3]
                    others[" < ".join(top)] += 1
            continue
        if busy_since is not None:
            if now - busy_since >= STALL_S:
                gcs = [[round(a, 4), round((b - a) * 1000, 1), g, name] for a, b, g, name in list(collections)
                       if b >= busy_since - 0.005 and a <= now]
                out.write(json.dumps({
                    "kind": "stall", "from": busy_since, "to": now, "ms": round((now - busy_since) * 1000, 1),
                    "threads": _delta(at_start[0], _threads()), "children": _delta(at_start[1], _children()),
                    "gc": gcs, "load": os.getloadavg()[0], "states": states.most_common(),
                    "stacks": [[n, list(s)] for s, n in stacks.most_common(6)],
                    "others": others.most_common(8), "timeline": timeline}) + "\n")
            busy_since = None
