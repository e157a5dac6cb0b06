"""The key pressed at a brain's first screen (issue 33): what `python -m benchmarks.first_key --db FILE
[--db OTHER] [--before TREE] [--runs N] [--warm]` prints.

`benchmarks.tui --open-only` times a key from outside, until the screen is quiet for 40 ms: a key
pressed while the app still draws its first screen's detail is charged that drawing too. Here the
app runs with two hooks (`key_hooks`): the moment PageDown's action runs, and the moment each
frame is written. Each open (`cleo-tui --db FILE` on a 120×36 pty, an empty cache directory, or
with `--warm` the same brain opened once before) presses PageDown as soon as the first rows show,
and reads: key written → its action ran → the first frame after it. The floor, in the same open:
the same key pressed once the app is idle (protection known, then half a second), onto rows not
drawn before as the first key's were, read the same way. `--before TREE` alternates the opens with
that tree's package (its `cleo_tui` first on the path).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.tui import PYCACHE
from benchmarks.tui_open import FIRST_ROWS, GIVE_UP_S, Terminal, add_tree_arguments, protection_known, start_app, trees

PAGE_DOWN = b"\x1b[6~"
IDLE_S = 0.5  # after protection is known, before the floor's key


@dataclass
class KeyTimes:
    """One tree's opens: the key at the first screen and the idle floor, in ms; the first screens, in s."""

    action: list[float] = field(default_factory=list)
    frame: list[float] = field(default_factory=list)
    floor_frame: list[float] = field(default_factory=list)
    first_screen: list[float] = field(default_factory=list)


def _start(db: Path, tree: Path | None, cache: Path, log: Path) -> Terminal:
    return start_app(db, PYCACHE, cache, tree, ("benchmarks.key_hooks", log))


def _until_protection_known(term: Terminal) -> None:
    shown = len(term.output)
    while not protection_known(term.output, shown) and time.perf_counter() - term.started < GIVE_UP_S:
        term.read(0.05)


def _key(term: Terminal, log: Path, key: bytes) -> tuple[float, float]:
    """Write `key`; (ms until its action ran, ms until the first frame written after that)."""
    sent = time.monotonic()  # (the app's clock: both are CLOCK_MONOTONIC)
    os.write(term.master, key)
    while time.monotonic() - sent < 5:
        term.read(0.005)
        marks = [line.split() for line in log.read_text().splitlines()]
        acted = [float(at) for what, at in marks if what == "act" and float(at) >= sent]
        if acted:
            frames = [float(at) for what, at in marks if what == "frame" and float(at) >= acted[0]]
            if frames:
                return (acted[0] - sent) * 1000, (frames[0] - sent) * 1000
    return float("nan"), float("nan")


def open_once(db: Path, tree: Path | None, warm: bool, times: KeyTimes) -> None:
    """One open of `db` with `tree`'s package (None: this checkout's): its key times into `times`."""
    cache = Path(tempfile.mkdtemp(prefix="cleo-tui-first-key-"))
    log = cache / "keys.log"
    try:
        if warm:  # opened once, its scan saved: the open timed below is a reopening
            term = _start(db, tree, cache, log)
            try:
                _until_protection_known(term)
            finally:
                term.close()
        term = _start(db, tree, cache, log)
        try:
            term.until(FIRST_ROWS, 0)
            times.first_screen.append(term.until(b"O-", term.output.find(FIRST_ROWS)))
            action, frame = _key(term, log, PAGE_DOWN)
            times.action.append(action)
            times.frame.append(frame)
            _until_protection_known(term)
            deadline = time.perf_counter() + IDLE_S
            while time.perf_counter() < deadline:
                term.read(0.01)
            times.floor_frame.append(_key(term, log, PAGE_DOWN)[1])  # (rows not drawn before, as the first key's)
        finally:
            term.close()
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} ({min(values):.0f}–{max(values):.0f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.first_key", description=__doc__.split("\n\n")[0])
    add_tree_arguments(parser, 6, "opens")
    parser.add_argument("--warm", action="store_true", help="reopen a brain opened once (default: never opened)")
    args = parser.parse_args(argv)
    named = trees(args)
    for db in args.db:
        results = {name: KeyTimes() for name, _ in named}
        for _ in range(args.runs):
            for name, tree in named:
                open_once(db, tree, args.warm, results[name])
        print(f"\n{db} ({'warm' if args.warm else 'cold'}, {args.runs} opens each; medians, range in brackets)")
        print("| tree | key at the first screen → its action | → its frame | the same key when idle (floor) "
              "| ratio | first screen |")
        print("|---|---|---|---|---|---|")
        for name, _ in named:
            t = results[name]
            ratio = statistics.median(t.frame) / statistics.median(t.floor_frame)
            print(f"| {name} | {_spread(t.action)} ms | {_spread(t.frame)} ms | {_spread(t.floor_frame)} ms "
                  f"| {ratio:.1f}× | {statistics.median(t.first_screen):.2f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
