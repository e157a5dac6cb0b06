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
narratives, 5–10 s against 100 s).

The child runs the detectors in worker processes too, on the cores beyond its own
(`detector_workers`): each worker ends as soon as the child does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cleo_tui.brain import cleo_schema as cs
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


def worth_a_process(brain: Brain) -> bool:
    """Whether the brain is large enough for its first scan to run in another process: `APART_FROM`
    rows (the largest rowid, read from the b-tree at once, stands for the row count), or about
    `APART_FROM_CHARACTERS` of title and narrative (rows times the mean of a sample spread over them)."""
    high = int(brain.scalar(f"SELECT coalesce(max(rowid), 0) FROM {cs.OBSERVATIONS}") or 0)
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
                           progress: Progress | None = None, looked: Callable[[], None] | None = None) -> bool:
    """Scan the brain in a child process that saves its snapshot; True when it did.

    False (the caller scans in its own process then) when the child could not run, failed,
    or could not keep a snapshot (e.g. a read-only cache directory); False too, the child
    ended at once, when `cancel` is set meanwhile (the app quits or opens another brain).
    `progress(done, total)` hears how far the child got (from a thread of its own); `looked()`
    is called in this thread, once, when the child saved its first look (`first_look_path`) and
    is still scanning."""
    command = [sys.executable, "-m", _MODULE, str(brain.path)]
    try:
        child = subprocess.Popen(command, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE if progress or looked else subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, env=child_environment())
    except OSError:
        return False
    follower = None
    saw_look = threading.Event()
    if progress is not None or looked is not None:
        follower = threading.Thread(target=_follow, args=(child, progress, saw_look), name="scan progress",
                                    daemon=True)
        follower.start()

    def tick() -> bool:
        if looked is not None and saw_look.is_set():
            looked()
            return True  # (once)
        return False

    try:
        return wait_or_cancel(child, cancel, tick) == 0
    finally:
        if child.stdin is not None:
            child.stdin.close()
        if child.poll() is None:  # (cancelled, or the waiting thread was interrupted)
            child.kill()
            child.wait()
        if follower is not None:
            follower.join(timeout=1.0)  # (its last lines told before this returns; the pipe is at its end)


def wait_or_cancel(child: subprocess.Popen[bytes], cancel: threading.Event | None,
                   tick: Callable[[], bool] | None = None) -> int | None:
    """The child's exit status once it ended; None (the child still running) as soon as `cancel` is set.
    `tick()` is called between two looks at `cancel` until it returns True."""
    while True:
        try:
            return child.wait(timeout=CANCEL_CHECK if cancel is not None or tick is not None else None)
        except subprocess.TimeoutExpired:
            if cancel is not None and cancel.is_set():
                return None
            if tick is not None and tick():
                tick = None


def _follow(child: subprocess.Popen[bytes], progress: Progress | None, saw_look: threading.Event) -> None:
    """Hand each "DONE TOTAL" line of the child's stdout to `progress`, and set `saw_look` on its
    "LOOK" line, until it closes."""
    assert child.stdout is not None
    with child.stdout:
        for line in child.stdout:
            if line.startswith(_LOOK):
                saw_look.set()
                continue
            done, _, total = line.decode("ascii", "replace").partition(" ")
            if progress is not None and done.isdigit() and total.strip().isdigit():
                progress(int(done), int(total))


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
    """End this process when the parent's end of stdin closes (the parent ended or gave up)."""

    def watch() -> None:
        try:
            while os.read(0, 1 << 12):  # (the raw descriptor: a buffered reader's lock would stall exit)
                pass
        finally:
            os._exit(3)

    threading.Thread(target=watch, name="parent watch", daemon=True).start()


def scan_and_save(path: str) -> int:
    """Scan the brain at `path` (read-only) and save its snapshot; the process's exit status."""
    from cleo_tui import collector
    from cleo_tui.brain.store import open_brain
    from cleo_tui.memory import scan_snapshot
    from cleo_tui.memory.pool_scan.detector_workers import helping
    from cleo_tui.memory.pool_scan.first_look import first_look
    from cleo_tui.memory.pool_scan.scan_pass import scan_brain

    brain = open_brain(path, read_only=True)
    try:
        with collector.paused():
            try:
                looked = scan_snapshot.save_snapshot(brain, first_look(brain), scan_snapshot.first_look_path(brain))
            except Exception:  # (only a preview: whatever failed, the whole scan still runs)
                looked = False
            if looked:
                sys.stdout.write(f"{_LOOK.decode()}\n")
                sys.stdout.flush()
        with collector.paused(), helping():  # (the detectors in worker processes too: issue 33)
            scan = scan_brain(brain, row_keys=True, progress=_said)
            return 0 if scan_snapshot.save_snapshot(brain, scan) else 1
    finally:
        brain.close()


def main(argv: list[str] | None = None) -> int:
    """`python -m cleo_tui.memory.pool_scan.in_subprocess DB`: scan DB and save its snapshot."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m cleo_tui.memory.pool_scan.in_subprocess DB", file=sys.stderr)
        return 2
    yield_the_cores()  # (the UI thread takes a core at once when it wakes for a key: issue 33)
    exit_with_parent()
    return scan_and_save(args[0])


if __name__ == "__main__":
    sys.exit(main())
