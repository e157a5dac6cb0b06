"""Opening a brain in a real terminal, cold and warm (issue 33): what `python -m benchmarks.tui
--open-only --db FILE` prints.

Everything is read from outside, as a user meets it: the real `cleo-tui --db FILE` on a
pseudo-terminal of 120×36, its output read as it is written, its CPU and peak RSS from
/proc. Cold is a brain never opened: an empty XDG cache directory (no scan snapshot, no
findings, no token cache). Warm is the same brain opened again with the cache the cold
run left. The warm run is the floor the cold one is judged against, beside the targets.

- first screen: from the start until the table's first rows are drawn;
- tags on screen: from the first screen until a coverage tag ("uncited", "cited N",
  "reinf. N") is drawn in the table (before, it shows "…"); on a first scan in a process
  these are its first look, protection still pending;
- protection known: from the first screen until the status line no longer says
  "protection: computing" (the same moment as the tags when it never said so);
- a key: page down and page up in turns, each timed from its bytes written to the pty
  until the screen stops changing (output quiet for QUIET_S, not counted); while the tags
  are computed, and after (PRESSES keys). The app's CPU for them (user+sys of its process,
  every thread: with the scan in a thread of the app, the scan's share is in it);
- CPU to tags: the app's CPU and its finished children's (the scan process), at tags;
- peak RSS: the app process's high-water mark (VmHWM) once the tags are on screen and
  the keys after were pressed.

Each key over SLOW_S while the tags are computed is printed with when it came (after the first
screen) and what the status line said then. With `--stalls`, the app runs with a stall logger
(`benchmarks.ui_stalls`) and each slow key is printed with what the UI thread did meanwhile:
its stacks, its CPU and its wait for a core, the scan processes' CPU, the garbage collections; and
the table says how many full collections ran while computing, on the UI thread and on the app's
other threads, with their CPU.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import with_bytecode

QUIET_S = 0.04        # a key's response is over when the app wrote nothing for this long
KEY_GAP_S = 0.25      # pause between keys while the tags are computed
PRESSES = 10          # keys timed once the tags are on screen
GIVE_UP_S = 1200.0
FIRST_ROWS = "observations ·".encode()
TAGGED = re.compile(rb"uncited|cited \d|reinf\. \d")
STATUS = b"sorted by "  # the status line, redrawn when what it says changes…
PENDING = b"computing"  # …saying this (within its next STATUS_BYTES) while protection is not known
STATUS_BYTES = 160
KEYS = (b"\x1b[6~", b"\x1b[5~")  # page down, page up
TARGETS = {"first screen": "< 1 s", "tags on screen after it": "≤ 6 s at 1M", "key while computing": "< 50 ms",
           "key after": "< 50 ms", "peak RSS": "≤ 400 MB at 1M"}
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class OpenRun:
    """What one opening showed (seconds, MB)."""

    first_screen: float = float("nan")
    tags_after_first: float = float("nan")
    protection_after_first: float = float("nan")
    cpu_to_tags: float = float("nan")
    keys_computing: list[float] = field(default_factory=list)
    cpu_computing: float = float("nan")  # per key
    keys_after: list[float] = field(default_factory=list)
    cpu_after: float = float("nan")      # per key
    peak_rss_mb: float = float("nan")
    # the keys over SLOW_S while computing: (sent, s after the first screen; took, s; the status line then)
    slow_keys: list[tuple[float, float, str]] = field(default_factory=list)
    stalls: list[str] = field(default_factory=list)  # what the UI thread did during them (--stalls)
    # (--stalls) the UI thread's CPU that a callback handed to its loop waited behind, while computing:
    # the longest, and how many waits were over 30 ms of it (the part of a key's wait a quiet machine keeps)
    loop_cpu_max_ms: float = float("nan")
    loop_cpu_over_30: int = 0
    # (--stalls) the full garbage collections while computing, each one's CPU (ms): on the UI thread, and
    # on the app's other threads (which hold the GIL meanwhile: a key waits for them too)
    full_collections_ui: list[float] = field(default_factory=list)
    full_collections_other: list[float] = field(default_factory=list)


def add_tree_arguments(parser: argparse.ArgumentParser, runs: int, what: str) -> None:
    """`--db` (repeatable), `--before TREE` and `--runs N`: the arguments of a benchmark that opens
    brains with this checkout's package and, alternately, another tree's (`trees`)."""
    parser.add_argument("--db", action="append", required=True, type=Path, help="a brain (repeatable)")
    parser.add_argument("--before", type=Path, help="a tree whose cleo_tui package is timed alternately")
    parser.add_argument("--runs", type=int, default=runs, help=f"{what} per tree (default {runs})")


def trees(args: argparse.Namespace) -> list[tuple[str, Path | None]]:
    """The packages to time, named: `--before`'s tree first if given, then this checkout's (None)."""
    named: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.before is not None:
        named.insert(0, ("before", args.before.resolve()))
    return named


def _end_apps_on_sigterm() -> None:
    """A benchmark ended by SIGTERM (`timeout`) runs its `finally` blocks, which close the apps it
    started: each runs in a session of its own without a controlling terminal, so no hangup ends it,
    and Textual, reading end-of-file from the closed pty again and again, kept one at a whole core."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))


class Terminal:
    """The command on a pty: its output as it comes, and keys written to it."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        _end_apps_on_sigterm()
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                                     env=env, cwd=cwd)
        os.close(slave)
        self.output = bytearray()

    def read(self, timeout: float) -> bytes:
        """What the app writes within `timeout` seconds (at most one read)."""
        if select.select([self.master], [], [], timeout)[0]:
            try:
                chunk = os.read(self.master, 1 << 16)
            except OSError:
                return b""
            self.output += chunk
            return chunk
        return b""

    def until(self, found: re.Pattern[bytes] | bytes, start: int, limit: float = GIVE_UP_S) -> float:
        """The time (since start) at which `found` appears in the output after offset `start`."""
        while time.perf_counter() - self.started < limit:
            self.read(0.02)
            at = self.output.find(found, start) if isinstance(found, bytes) else \
                (m.start() if (m := found.search(self.output, start)) else -1)
            if at >= 0:
                return time.perf_counter() - self.started
        raise TimeoutError(f"{found!r} never appeared")

    def key(self, sequence: bytes) -> float:
        """Seconds from writing the key until the screen is quiet again (the quiet not counted):
        its first output is waited for (up to 5 s), then until none came for QUIET_S."""
        sent = time.perf_counter()
        os.write(self.master, sequence)
        while not self.read(0.01):
            if time.perf_counter() - sent > 5:
                return float("nan")
        last = time.perf_counter()
        while time.perf_counter() - last < QUIET_S and time.perf_counter() - sent < 5:
            if self.read(QUIET_S):
                last = time.perf_counter()
        return last - sent

    def cpu(self, children: bool = False) -> float:
        """The app's user+sys seconds (and its waited-for children's, with `children`)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if children else 0)
        return ticks / _TICK

    def peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        os.close(self.master)


def start_app(path: Path, pycache: Path, cache_home: Path, app_root: Path | None,
              hook: tuple[str, Path] | None = None) -> Terminal:
    """`cleo-tui --db path` on a pty, with `cache_home` as its XDG cache directory; with `hook`
    (a module of `benchmarks` and a log), the app first calls that module's `install(log)`
    (`benchmarks.ui_stalls`: its UI thread's stalls; `benchmarks.key_hooks`: its keys and frames)."""
    script = Path(sys.executable).with_name("cleo-tui")
    command = [str(script)] if script.exists() and app_root is None else [sys.executable, "-m", "cleo_tui"]
    env = {**with_bytecode(os.environ, pycache), "TERM": "xterm-256color", "XDG_CACHE_HOME": str(cache_home)}
    if app_root is not None:
        env["PYTHONPATH"] = str(app_root)
    if hook is not None:
        module, log = hook
        here = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), here) if p)
        command = [sys.executable, "-c", f"import sys; from {module} import install; "
                   f"install({str(log)!r}); from cleo_tui.cli import main; sys.exit(main())"]
    # (in app_root: `python -m` puts the working directory first on the path, so started from a
    # checkout it ran that checkout's package, not app_root's)
    return Terminal([*command, "--db", str(path)], env, cwd=app_root)


def open_once(path: Path, pycache: Path, cache_home: Path, app_root: Path | None = None,
              stall_log: Path | None = None) -> OpenRun:
    """Start the app on `path` with `cache_home` as its XDG cache directory and time its opening.

    `app_root`: run the cleo_tui package found there (e.g. an older commit's tree, for a
    before/after in one sitting) instead of the installed one. `stall_log`: the app logs its UI
    thread's stalls there, and the run keeps those that overlap a slow key."""
    term = start_app(path, pycache, cache_home, app_root,
                     None if stall_log is None else ("benchmarks.ui_stalls", stall_log))
    run = OpenRun()
    try:
        term.until(FIRST_ROWS, 0)
        run.first_screen = term.until(b"O-", term.output.find(FIRST_ROWS))
        shown = len(term.output)
        cpu = term.cpu()
        tagged_at = None
        while tagged_at is None and time.perf_counter() - term.started < GIVE_UP_S:
            before = len(term.output)
            timed_key(term, run, shown)
            deadline = time.perf_counter() + KEY_GAP_S
            while time.perf_counter() < deadline:
                term.read(0.01)
            if TAGGED.search(term.output, min(before, shown)):
                tagged_at = time.perf_counter() - term.started
        if tagged_at is None:
            raise TimeoutError("the tags never showed")
        run.tags_after_first = tagged_at - run.first_screen
        known_at = None
        while known_at is None and time.perf_counter() - term.started < GIVE_UP_S:
            if protection_known(term.output, shown):
                known_at = time.perf_counter() - term.started
                break
            timed_key(term, run, shown)
            deadline = time.perf_counter() + KEY_GAP_S
            while time.perf_counter() < deadline:
                term.read(0.01)
        if known_at is None:
            raise TimeoutError("protection was never known")
        run.protection_after_first = known_at - run.first_screen
        run.cpu_to_tags = term.cpu(children=True)
        run.cpu_computing = (term.cpu() - cpu) / max(1, len(run.keys_computing))
        time.sleep(0.5)
        term.read(0.05)
        cpu = term.cpu()
        run.keys_after = [term.key(KEYS[k % 2]) for k in range(PRESSES)]
        run.cpu_after = (term.cpu() - cpu) / PRESSES
        run.peak_rss_mb = term.peak_rss_mb()
    finally:
        term.close()
    if stall_log is not None:
        with stall_log.open("a") as log:  # (for reading the log later: when the first screen came)
            log.write(f'{{"kind": "first screen", "at": {term.started + run.first_screen}}}\n')
        run.stalls = stalls_during(stall_log, run.slow_keys, term.started + run.first_screen)
        _loop_waits(run, stall_log, term.started + run.first_screen, term.started + known_at)
    return run


SLOW_S = 0.05


def timed_key(term: Terminal, run: OpenRun, shown: int) -> None:
    """Press the next key while the tags are computed; a slow one is kept with when it came and
    what the status line said then."""
    sent = time.perf_counter()
    took = term.key(KEYS[len(run.keys_computing) % 2])
    run.keys_computing.append(took)
    if not took < SLOW_S:
        run.slow_keys.append((sent - term.started - run.first_screen, took, _status(term.output, shown)))


_ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|[\x00-\x1f]")


def _status(output: bytes | bytearray, since: int) -> str:
    """The text of the status line last drawn after `since` (escape sequences dropped)."""
    at = output.rfind(STATUS, since)
    if at < 0:
        return "?"
    text = _ESCAPES.sub(b"", bytes(output[at:at + 400])).decode(errors="replace")
    return " ".join(text.split())[:90]


def stalls_during(log: Path, slow: list[tuple[float, float, str]], origin: float) -> list[str]:
    """For each slow key, what the app logged while it waited (`benchmarks.ui_stalls`), a line each:
    the UI thread's stalls (its CPU, its wait for a core, the scan processes' CPU, collections, what
    it ran), the sampler's gaps (the GIL held from it) and the loop's lags (`origin`: the first
    screen, on the perf_counter clock, which is the app's monotonic one)."""
    import json

    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    lines = []
    for sent, took, status in slow:
        start, end = origin + sent, origin + sent + took
        lines.append(f"key at +{sent:.2f} s took {took * 1000:.0f} ms; status: {status}")
        for r in records:
            if r["kind"] in ("stall", "gap", "lag") and r.get("to", 0) >= start and r.get("from", 1e18) <= end:
                lines.append("    " + _said(r, origin))
    return lines


def _said(r: dict[str, Any], origin: float) -> str:
    """One line for a record of the stall log."""
    at = f"{r['from'] - origin:+.2f}..{r['to'] - origin:+.2f} s"
    if r["kind"] == "lag":
        return f"loop lag {at}: {r['ms']:.0f} ms, of it {r['cpu_ms']:.0f} ms of UI-thread CPU"
    if r["kind"] == "gap":
        return f"sampler held off {at} ({r['ms']:.0f} ms: no GIL or no core), UI at {(r['main'] or ['?'])[0]}"
    ran, waited = r["threads"].get("MainThread", [0, 0])
    children = ", ".join(f"{name.split('.')[-1]} {c[0]:.0f}" for name, c in r["children"].items())
    gcs = ", ".join(f"gen{g} {ms:.0f} ms" for _, ms, g, who in r["gc"] if who == "MainThread" and ms >= 5)
    what: dict[str, int] = {}
    for _, anchor, n in r.get("timeline", []):
        what[anchor] = what.get(anchor, 0) + n
    busiest = "; ".join(f"{a.split(' ', 1)[-1]} x{n}" for a, n in sorted(what.items(), key=lambda i: -i[1])[:4])
    return (f"UI busy {at} ({r['ms']:.0f} ms): ran {ran:.0f} ms, waited for a core {waited:.0f} ms; "
            f"scan processes ran: {children or '-'}; UI collections: {gcs or '-'}; running: {busiest}")


def _loop_waits(run: OpenRun, log: Path, start: float, end: float) -> None:
    """The longest UI-thread CPU a callback waited behind between `start` and `end` (the app's
    "lag" records, `benchmarks.ui_stalls`), and how many were over 30 ms."""
    import json

    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    waits = [r["cpu_ms"] for r in records if r.get("kind") == "lag" and start <= r["from"] <= end]
    run.loop_cpu_max_ms = max(waits, default=0.0)
    run.loop_cpu_over_30 = sum(w > 30 for w in waits)
    full = [r for r in records if r.get("kind") == "gc" and r["generation"] == 2 and start <= r["at"] <= end]
    run.full_collections_ui = [r["cpu_ms"] for r in full if r["thread"] == "MainThread"]
    run.full_collections_other = [r["cpu_ms"] for r in full if r["thread"] != "MainThread"]


def protection_known(output: bytes | bytearray, since: int) -> bool:
    """Whether the status line last drawn after `since` no longer says that anything is computing."""
    at = output.rfind(STATUS, since)
    return at >= 0 and PENDING not in output[at:at + STATUS_BYTES]


def open_figures(path: Path, pycache: Path, app_root: Path | None = None,
                 stalls: bool = False, uncached: bool = False) -> dict[str, OpenRun]:
    """The cold opening (a fresh cache directory), then the warm one (the cache it left); with
    `stalls`, what the UI thread did during each slow key (`benchmarks.ui_stalls`); with
    `uncached`, the cold opening also finds none of the brain's pages in the OS's page cache."""
    with tempfile.TemporaryDirectory(prefix="cleo-tui-cold-cache-") as home:
        _compile_once(path, pycache, Path(home), app_root)
    if uncached:
        drop_from_page_cache(path)
    with tempfile.TemporaryDirectory(prefix="cleo-tui-cold-cache-") as home:
        logs: list[Path | None] = [None, None]
        if stalls:
            kept = Path(tempfile.mkdtemp(prefix="cleo-tui-stalls-"))
            logs = [kept / "cold.jsonl", kept / "warm.jsonl"]
            print(f"stall logs: {kept}", flush=True)
        cold = open_once(path, pycache, Path(home), app_root, logs[0])
        warm = open_once(path, pycache, Path(home), app_root, logs[1])
    return {"cold": cold, "warm": warm}


def drop_from_page_cache(path: Path) -> None:
    """Ask the OS to forget the brain file's cached pages (`posix_fadvise(DONTNEED)`: no root
    needed for a file nobody has dirty pages of), so the next open reads them from the disk, as
    after a reboot or with a brain larger than the memory left for caching."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _compile_once(path: Path, pycache: Path, cache_home: Path, app_root: Path | None) -> None:
    """An untimed start up to the first screen: it writes the bytecode the timed starts read
    (an installed package has it; compiling every module is no part of opening a brain)."""
    term = start_app(path, pycache, cache_home, app_root)
    try:
        term.until(FIRST_ROWS, 0)
    finally:
        term.close()


def _ms(values: list[float]) -> str:
    values = [v for v in values if v == v]  # (nan: no response within 5 s)
    if not values:
        return "-"
    p95 = sorted(values)[min(len(values) - 1, int(len(values) * 0.95))]
    slow = sum(v >= SLOW_S for v in values)
    return (f"{statistics.median(values) * 1000:.0f} ms (p95 {p95 * 1000:.0f}, max {max(values) * 1000:.0f}, "
            f"{slow}/{len(values)} ≥ {SLOW_S * 1000:.0f})")


def _collections(cpu_ms: list[float]) -> str:
    """How many collections, their CPU together and the longest (ms)."""
    return f"{len(cpu_ms)}, {sum(cpu_ms):.0f} ms (max {max(cpu_ms, default=0):.0f})" if cpu_ms else "0"


def print_open_figures(results: dict[str, dict[str, OpenRun]]) -> None:
    """One table per brain: cold, warm (the floor) and the target, row by row."""
    for path, runs in results.items():
        cold, warm = runs["cold"], runs["warm"]
        rows = [
            ("first screen", lambda r: f"{r.first_screen:.2f} s"),
            ("tags on screen after it", lambda r: f"{r.tags_after_first:.2f} s"),
            ("protection known after it", lambda r: f"{r.protection_after_first:.2f} s"),
            ("CPU to protection (app + scan process)", lambda r: f"{r.cpu_to_tags:.2f} s"),
            ("key while computing", lambda r: _ms(r.keys_computing)),
            ("app CPU per key while computing", lambda r: f"{r.cpu_computing * 1000:.0f} ms"),
            ("key after", lambda r: _ms(r.keys_after)),
            ("app CPU per key after", lambda r: f"{r.cpu_after * 1000:.0f} ms"),
            ("peak RSS", lambda r: f"{r.peak_rss_mb:.0f} MB"),
        ]
        if cold.loop_cpu_max_ms == cold.loop_cpu_max_ms:  # (--stalls)
            rows.append(("UI CPU a key waits behind, max (>30 ms)",
                         lambda r: f"{r.loop_cpu_max_ms:.0f} ms ({r.loop_cpu_over_30})"))
            rows.append(("full collections (CPU): UI; other threads",
                         lambda r: f"{_collections(r.full_collections_ui)}; {_collections(r.full_collections_other)}"))
        print(f"\n{path}  (load average {os.getloadavg()[0]:.2f})")
        print(f"| {'measure':<38} | {'cold':<30} | {'warm (floor)':<30} | {'target':<15} |")
        print(f"|{'-' * 40}|{'-' * 32}|{'-' * 32}|{'-' * 17}|")
        for name, show in rows:
            print(f"| {name:<38} | {show(cold):<30} | {show(warm):<30} | {TARGETS.get(name, ''):<15} |")
        for which, run in runs.items():
            for sent, took, status in run.slow_keys:
                print(f"  {which}: a key at +{sent:.2f} s took {took * 1000:.0f} ms; status line: {status}")
            for line in run.stalls:
                print(f"  {which} stall: {line}")
