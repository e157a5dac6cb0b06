"""A reopened brain's check against its snapshot, in another process, so that the app's interpreter
stays free for keys.

Reopening a brain shows the tags of its snapshot at once, then checks every row up to the
snapshot's high-water mark against it (`scan_snapshot.compare_rows`: one hash per row of
everything the scan read of it). At a million rows that is seconds of Python which, in a
thread of the app, would hold the GIL in turns with the UI thread. Here a child process
(`python -m cleo_tui.memory.pool_scan.check_in_subprocess DB`) runs the same comparison: it
receives only the snapshot's rowids and row hashes (16 bytes a row, on its stdin), reads the
brain on a read-only connection, and hands back on its stdout what differs (rowids, small).
The app then names the changed rows (`scan_snapshot.changes_of`) as the check in its own
thread would have: the result is the same either way.

When the child cannot run or fails, the check runs in the caller's thread instead. The
child ends with the parent (its stdin closes), and at once when the caller's `cancel` is set.
"""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import threading
from typing import IO, TYPE_CHECKING, Any, Literal

import numpy as np
import orjson

from cleo_tui import low_priority
from cleo_tui.memory.pool_scan import in_subprocess
from cleo_tui.memory.pool_scan.background import yield_the_cores
from cleo_tui.memory.pool_scan.in_subprocess import child_environment, exit_with_parent, wait_or_cancel

if TYPE_CHECKING:
    from cleo_tui.brain.store import Brain
    from cleo_tui.memory.pool_scan.model import BrainScan
    from cleo_tui.memory.scan_snapshot import RowChanges, RowDiff

_MODULE = "cleo_tui.memory.pool_scan.check_in_subprocess"
_HEADER = struct.Struct("<qq")  # the snapshot's high-water mark, its row count; then its rowids and row keys


class CheckCancelled(Exception):
    """The check was given up: the caller's `cancel` was set while it ran."""


def worth_a_process(scan: BrainScan) -> bool:
    """Whether the snapshot is large enough (`in_subprocess.APART_FROM` rows) for its check to run
    in another process (a smaller one is checked in a fraction of a second, less than a child's start)."""
    return len(scan) >= in_subprocess.APART_FROM


def changed_rows(brain: Brain, scan: BrainScan, cancel: threading.Event | None = None,
                 apart: bool = True) -> RowChanges | None:
    """`scan_snapshot.changed_rows(brain, scan)`, the rows compared in a child process (`apart`, and
    the child could run and answered), else in this thread. Raises CheckCancelled when `cancel`
    is set while the child runs (the child is ended at once)."""
    from cleo_tui.memory import scan_snapshot

    diff = compare_in_subprocess(brain, scan, cancel) if apart else None
    if diff is False:
        return scan_snapshot.changed_rows(brain, scan)
    return scan_snapshot.changes_of(brain, scan, diff)


def compare_in_subprocess(brain: Brain, scan: BrainScan,
                          cancel: threading.Event | None = None) -> RowDiff | Literal[False] | None:
    """`scan_snapshot.compare_rows` for the scan's columns, run in a child process: its RowDiff, or
    None (too many rows changed); False when the child could not run or failed. Raises
    CheckCancelled when `cancel` is set meanwhile."""
    assert scan.row_keys is not None
    rowids = np.ascontiguousarray(scan.rowids, dtype=np.int64)
    keys = np.ascontiguousarray(scan.row_keys, dtype=np.uint64)
    command = low_priority.command(_MODULE, str(brain.path))
    try:
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, env=child_environment())
    except OSError:
        return False
    stdin, stdout = child.stdin, child.stdout
    assert stdin is not None and stdout is not None
    answer: list[bytes] = []
    columns = [_HEADER.pack(scan.high_water, len(rowids)), rowids.data, keys.data]
    threads = [threading.Thread(target=_send, args=(stdin, columns), name="check columns", daemon=True),
               threading.Thread(target=lambda: answer.append(stdout.read()), name="check answer", daemon=True)]
    for thread in threads:  # (in threads: the wait below sees `cancel` while the child still starts)
        thread.start()
    try:
        status = wait_or_cancel(child, cancel)
        if status is None:
            raise CheckCancelled
        threads[1].join()
        return _diff_of(answer[0]) if status == 0 and answer else False
    finally:
        if child.poll() is None:  # (cancelled, or the waiting thread was interrupted)
            child.kill()
            child.wait()
        for thread in threads:
            thread.join()
        try:
            stdin.close()
        except OSError:
            pass


def _send(stdin: IO[bytes], columns: list[Any]) -> None:
    """Write the columns to the child's stdin, and leave it open (the child ends when it closes);
    a child that ended before reading them all says so by its exit status."""
    try:  # (writes release the GIL)
        for column in columns:
            stdin.write(column)
        stdin.flush()
    except OSError:
        pass


def _diff_of(answer: bytes) -> RowDiff | Literal[False] | None:
    """The RowDiff the child wrote (None: too many changed); False when its answer does not read."""
    from cleo_tui.memory.scan_snapshot import RowDiff

    try:
        found = orjson.loads(answer)
    except orjson.JSONDecodeError:
        return False
    if found is None:
        return None
    try:
        changed, was, gone = found["changed"], found["was"], found["gone"]
    except (KeyError, TypeError):
        return False
    fits = all(isinstance(v, list) and all(type(x) is int for x in v) for v in (changed, was, gone))
    return RowDiff(changed, was, gone) if fits and len(changed) == len(was) else False


def _read_exactly(size: int) -> bytearray:
    """`size` bytes from stdin (unbuffered), or fewer if it ends first."""
    buffer = bytearray(size)
    view, got, stdin = memoryview(buffer), 0, io.FileIO(0, closefd=False)
    while got < size:
        n = stdin.readinto(view[got:])
        if not n:
            break
        got += n
    del view
    return buffer if got == size else buffer[:got]


def check_and_answer(path: str) -> int:
    """Read the snapshot's columns from stdin, compare the brain at `path` (read-only) with them,
    write the RowDiff (or null) as JSON to stdout; the process's exit status."""
    from cleo_tui import collector
    from cleo_tui.brain.store import open_brain
    from cleo_tui.memory import scan_snapshot

    header = _read_exactly(_HEADER.size)
    if len(header) != _HEADER.size:
        return 1
    high_water, rows = _HEADER.unpack(header)
    columns = _read_exactly(16 * rows)
    if len(columns) != 16 * rows:
        return 1
    exit_with_parent()  # (the rest of stdin: nothing, until the parent closes it)
    rowids = np.frombuffer(columns, dtype=np.int64, count=rows)
    keys = np.frombuffer(columns, dtype=np.uint64, count=rows, offset=8 * rows)
    brain = open_brain(path, read_only=True)
    try:
        with collector.paused():
            diff = scan_snapshot.compare_rows(brain, rowids, keys, high_water)
    finally:
        brain.close()
    answer = None if diff is None else {"changed": diff.changed, "was": diff.was, "gone": diff.gone}
    sys.stdout.buffer.write(orjson.dumps(answer))
    sys.stdout.buffer.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m cleo_tui.memory.pool_scan.check_in_subprocess DB`: the check, its columns on stdin."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m cleo_tui.memory.pool_scan.check_in_subprocess DB", file=sys.stderr)
        return 2
    yield_the_cores()  # (a reopened brain's tags are on screen: this check is background work, issue 33)
    return check_and_answer(args[0])


if __name__ == "__main__":
    sys.exit(main())
