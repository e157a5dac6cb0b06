"""A brain's first scan in another process, so that the app's interpreter stays free for keys.

A brain opened for the first time (no snapshot in the cache) must be scanned whole: at
100,000 rows several seconds of Python (hashing, detectors, columns), which in a thread
of the app would hold the GIL in turns with the UI thread (a page key took up to 380 ms
then). Here a child process (`python -m cleo_tui.memory.pool_scan.in_subprocess DB`)
scans the brain and writes its snapshot (`scan_snapshot.save_snapshot`); the app then
loads the snapshot as a reopening does, while its own interpreter did nothing meanwhile
but wait on the child (a wait that releases the GIL). On two cores the child also runs
beside the UI instead of sharing its core.

The child reads the brain on a read-only connection and writes only cache files. It
ends when the parent does: it watches its stdin, a pipe the parent holds open. On its
stdout it says how far it got, a line "DONE TOTAL" (rows) per chunk read, which the
app shows while the user waits ("protection: computing… 34%").

Before that whole scan the child saves a first look (`pool_scan.first_look`: every row's
columns but no text, with citations, in seconds) and says "LOOK": the app shows its coverage
and relevance while the detectors still read every text (at a million rows of CLEO's long
narratives, 5–10 s against 100 s). The child waits for the app to have loaded the look (a line
on its stdin, `LOOK_WAIT` at most) before it starts the whole scan on both cores: loading a
million rows' look beside that scan took the app 3.4 s instead of 1.7.

The child runs the detectors in worker processes too, on the cores beyond its own
(`detector_workers`): each worker ends as soon as the child does.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cleo_tui import low_priority
from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.observation_reads import largest_rowid
from cleo_tui.brain.store import Brain
from cleo_tui.memory.pool_scan.background import yield_the_cores

if TYPE_CHECKING:
    from cleo_tui.memory.token_cache import Progress

APART_FROM = 20_000  # rows (by the largest rowid): fewer scan in a thread in about a second or less…
# …unless their texts are long: CLEO's narratives run to thousands of characters, and the detectors'
# cost follows the characters (~4 million: about half a second in a thread, whose keys wait on it)
APART_FROM_CHARACTERS = 4_000_000
_SAMPLE = 64  # rows whose text lengths stand for every row's
_MODULE = "cleo_tui.memory.pool_scan.in_subprocess"
_LOOK = b"LOOK"  # the child's line once its first look is saved
LOOK_WAIT = 30.0  # seconds the child waits at most for the app to load its first look
_looked = threading.Event()  # (in the child: the parent loaded the first look, or is gone)


def worth_a_process(brain: Brain) -> bool:
    """Whether the brain is large enough for its first scan to run in another process: `APART_FROM`
    rows (the largest rowid, read from the b-tree at once, stands for the row count), or about
    `APART_FROM_CHARACTERS` of title and narrative (rows times the mean of a sample spread over them)."""
    high = largest_rowid(brain)
    if high >= APART_FROM:
        return True
    have = brain.features.columns(cs.OBSERVATIONS)
    lengths = " + ".join(f"coalesce(length(CAST({c} AS BLOB)), 0)" for c in ("title", "narrative") if c in have)
    if not lengths:
        return False
    at = sorted({high * k // _SAMPLE for k in range(1, _SAMPLE + 1)})
    mean = brain.scalar(f"SELECT avg({lengths}) FROM {cs.OBSERVATIONS} WHERE rowid IN ({','.join(map(str, at))})")
    return high * float(mean or 0) >= APART_FROM_CHARACTERS


CANCEL_CHECK = 0.1  # seconds between two looks at the caller's cancel event while the child runs


def snapshot_in_subprocess(brain: Brain, cancel: threading.Event | None = None,
                           progress: Progress | None = None, looked: Callable[[], None] | None = None,
                           started: ScanProcess | None = None) -> bool:
    """Scan the brain in a child process that saves its snapshot; True when it did.

    False (the caller scans in its own process then) when the child could not run, failed,
    or could not keep a snapshot (e.g. a read-only cache directory); False too, the child
    ended at once, when `cancel` is set meanwhile (the app quits or opens another brain).
    `progress(done, total)` hears how far the child got (from a thread of its own); `looked()`
    is called in this thread, once, when the child saved its first look (`first_look_path`) and
    is still scanning. `started`: the child, started ahead (`ScanProcess.start`, with its look)."""
    process = started or ScanProcess.start(brain, look=looked is not None)
    return process is not None and process.finish(cancel, progress, looked)


class ScanProcess:
    """A first scan's child process, and the thread that follows what it says on stdout.

    It may be started ahead of the wait for it (`start`): the app starts it with the brain's
    first screen, so that the child's start-up and first look run beside it."""

    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        self.child = child
        self.progress: Progress | None = None  # (set by `finish`: the follower reads it per line)
        self.saw_look = threading.Event()
        self._follower = threading.Thread(target=self._follow, name="scan progress", daemon=True)
        self._follower.start()

    @classmethod
    def start(cls, brain: Brain, look: bool) -> ScanProcess | None:
        """The child scanning `brain` (after its first look, with `look`); None if it could not start."""
        command = low_priority.command(_MODULE, str(brain.path), *(["--look"] if look else []))
        try:
            return cls(subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=child_environment()))
        except OSError:
            return None

    def finish(self, cancel: threading.Event | None = None, progress: Progress | None = None,
               looked: Callable[[], None] | None = None) -> bool:
        """Wait for the child (see `snapshot_in_subprocess`); True when it saved the snapshot."""
        self.progress = progress
        try:
            return self._hand_over_the_look(cancel, looked) and wait_or_cancel(self.child, cancel) == 0
        finally:
            self.stop()

    def _hand_over_the_look(self, cancel: threading.Event | None, looked: Callable[[], None] | None) -> bool:
        """Once the child said "LOOK", call `looked()` at once (not at the next look at `cancel`: 50 ms
        later on average) and let the child go on; False if `cancel` was set first. A child that ends
        without a look (started without one, or failed) is left to `wait_or_cancel`."""
        while not self.saw_look.wait(CANCEL_CHECK):
            if cancel is not None and cancel.is_set():
                return False
            if self.child.poll() is not None:
                return True
        try:
            if looked is not None:
                looked()
        finally:
            self._carry_on()  # (the child waits for it, even if nobody shows its look)
        return True

    def stop(self) -> None:
        """End the child if it still runs (given up), and let the follower hear its last lines."""
        if self.child.stdin is not None:
            self.child.stdin.close()
        if self.child.poll() is None:  # (cancelled, or the waiting thread was interrupted)
            self.child.kill()
            self.child.wait()
        self._follower.join(timeout=1.0)  # (its last lines told before this returns; the pipe is at its end)

    def _carry_on(self) -> None:
        """Tell the child its first look was loaded: its whole scan may take both cores."""
        with contextlib.suppress(OSError):  # (the child ended meanwhile)
            assert self.child.stdin is not None
            self.child.stdin.write(b"\n")
            self.child.stdin.flush()

    def _follow(self) -> None:
        """Hand each "DONE TOTAL" line of the child's stdout to `progress`, and set `saw_look` on
        its "LOOK" line, until it closes."""
        assert self.child.stdout is not None
        with self.child.stdout:
            for line in self.child.stdout:
                if line.startswith(_LOOK):
                    self.saw_look.set()
                    continue
                done, _, total = line.decode("ascii", "replace").partition(" ")
                if self.progress is not None and done.isdigit() and total.strip().isdigit():
                    self.progress(int(done), int(total))


def first_scan_ahead(brain: Brain) -> ScanProcess | None:
    """The process of the brain's first scan, started now, if the brain has no snapshot and is large
    enough for one (`worth_a_process`): started before the app's modules load, or with its first
    screen, for `tag_brain(..., started=)`. None otherwise, or if the brain could not be read (the
    tags' worker then finds out as it would have)."""
    from cleo_tui.memory import scan_snapshot

    try:
        if scan_snapshot.snapshot_path(brain).exists() or not worth_a_process(brain):
            return None
    except (sqlite3.Error, OSError):
        return None
    return ScanProcess.start(brain, look=True)


class ScanAhead:
    """A first scan's process started ahead in one thread (`start`) and taken in another (`take`, by
    the tags' worker, which waits while it starts); ended if the session ends first (`ended` set,
    then `end`)."""

    def __init__(self, ended: threading.Event, started: ScanProcess | None = None) -> None:
        self._process = started  # (`started`: one started already, e.g. before the app)
        self._ended = ended  # (the session's)
        self._started = threading.Event()
        self._started.set()  # (until `expect`: nothing to wait for)

    @property
    def has_process(self) -> bool:
        """Whether a process was started and not taken yet."""
        return self._process is not None

    def expect(self) -> None:
        """A `start` is on its way: `take` waits for it."""
        self._started.clear()

    def start(self, reader: Callable[[], Brain]) -> None:
        """Start the brain's first scan if it needs one (`first_scan_ahead`), on a connection of its own."""
        try:
            brain = reader()
            try:
                self._process = first_scan_ahead(brain)
            finally:
                brain.close()
        finally:
            self._started.set()
        if self._ended.is_set():  # (the session ended meanwhile: nobody will take it)
            self.take()

    def take(self) -> ScanProcess | None:
        """The process started ahead, once; None if there is none (or the session ended: it is ended)."""
        self._started.wait()
        process, self._process = self._process, None
        if process is not None and self._ended.is_set():
            process.stop()
            return None
        return process

    def end(self) -> None:
        """The session ended (`ended` is set): a process not taken is ended (now, or once started)."""
        if self._started.is_set():
            self.take()


def wait_or_cancel(child: subprocess.Popen[bytes], cancel: threading.Event | None) -> int | None:
    """The child's exit status once it ended; None (the child still running) as soon as `cancel` is set."""
    while True:
        try:
            return child.wait(timeout=CANCEL_CHECK if cancel is not None else None)
        except subprocess.TimeoutExpired:
            if cancel is not None and cancel.is_set():
                return None


def _said(done: int, total: int) -> None:
    """In the child: how far the scan got, for the parent's `_follow`."""
    sys.stdout.write(f"{done} {total}\n")
    sys.stdout.flush()


def child_environment() -> dict[str, str]:
    """The parent's environment (the same cache directory), with this package importable."""
    root = str(Path(__file__).resolve().parents[3])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root if not path else f"{root}{os.pathsep}{path}"}


def exit_with_parent() -> None:
    """End this process when the parent's end of stdin closes (the parent ended or gave up); a line
    on it sets `_looked`."""

    def watch() -> None:
        try:
            while os.read(0, 1 << 12):  # (the raw descriptor: a buffered reader's lock would stall exit)
                _looked.set()
        finally:
            os._exit(3)

    threading.Thread(target=watch, name="parent watch", daemon=True).start()


def scan_and_save(path: str, look: bool = False) -> int:
    """Scan the brain at `path` (read-only) and save its snapshot, after its first look if `look`;
    the process's exit status."""
    from cleo_tui import collector
    from cleo_tui.brain.store import open_brain
    from cleo_tui.memory import scan_snapshot
    from cleo_tui.memory.pool_scan.detector_workers import helping
    from cleo_tui.memory.pool_scan.scan_pass import scan_brain

    brain = open_brain(path, read_only=True)
    try:
        if look:
            _look_first(brain)  # (below the app, not idle: the user waits for it; `low_priority`)
        yield_the_cores()  # (the UI thread takes a core at once when it wakes for a key: issue 33)
        with collector.paused(), helping():  # (the detectors in worker processes too: issue 33)
            scan = scan_brain(brain, row_keys=True, progress=_said)
            return 0 if scan_snapshot.save_snapshot(brain, scan) else 1
    finally:
        brain.close()


def _look_first(brain: Brain) -> None:
    """Save the brain's first look, say "LOOK", and wait for the parent to have loaded it."""
    from cleo_tui import collector
    from cleo_tui.memory import scan_snapshot
    from cleo_tui.memory.pool_scan.first_look import first_look

    with collector.paused():
        try:
            looked = scan_snapshot.save_snapshot(brain, first_look(brain, to_save=True),
                                                  scan_snapshot.first_look_path(brain))
        except Exception:  # (only a preview: whatever failed, the whole scan still runs)
            looked = False
    if looked:
        sys.stdout.write(f"{_LOOK.decode()}\n")
        sys.stdout.flush()
        _looked.wait(LOOK_WAIT)


def main(argv: list[str] | None = None) -> int:
    """`python -m cleo_tui.memory.pool_scan.in_subprocess DB [--look]`: scan DB and save its
    snapshot (after its first look with `--look`)."""
    args = sys.argv[1:] if argv is None else argv
    look = "--look" in args
    paths = [a for a in args if a != "--look"]
    if len(paths) != 1:
        print("usage: python -m cleo_tui.memory.pool_scan.in_subprocess DB [--look]", file=sys.stderr)
        return 2
    exit_with_parent()
    return scan_and_save(paths[0], look)


if __name__ == "__main__":
    sys.exit(main())
