"""When a brain opened for the first time shows its tags (issue 33): what `python -m
benchmarks.first_tags --db FILE [--db OTHER] [--before TREE] [--runs N]` prints.

`benchmarks.tui --open-only` times one cold open and then waits for the whole scan (minutes at a
million rows), so it gives one figure of a measure that moves by a second from one open to the
next. Here each open stops once the tags are on screen, so many can be alternated between two
trees in one sitting: the real `cleo-tui --db FILE` on a 120×36 pty with an empty cache directory,
page keys pressed meanwhile as in `benchmarks.tui` (a user pages while waiting; the keys take
their share of the app). Read: the first screen, and the tags on screen after it (the first
coverage tag drawn: a large brain's first look). The floor, in the same sitting: the same brain
reopened (its cache kept from a first open of each tree), whose tags come from the snapshot.
Each tree is started once, untimed, before the timed opens (the bytecode written, as an
installed package has it). `--before TREE` alternates the opens with that tree's package.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.tui import PYCACHE
from benchmarks.tui_open import (
    FIRST_ROWS,
    GIVE_UP_S,
    KEY_GAP_S,
    TAGGED,
    OpenRun,
    Terminal,
    add_tree_arguments,
    protection_known,
    start_app,
    timed_key,
    trees,
)


@dataclass
class TagTimes:
    """One tree's opens, in s: the first screens, and the tags after them (cold, and reopened)."""

    first_screen: list[float] = field(default_factory=list)
    tags: list[float] = field(default_factory=list)
    reopened_tags: list[float] = field(default_factory=list)


def tags_after_first_screen(db: Path, tree: Path | None, cache: Path) -> tuple[float, float]:
    """Open `db` with `tree`'s package (None: this checkout's) and `cache` as its cache directory;
    (first screen, tags on screen after it), page keys pressed meanwhile."""
    term = start_app(db, PYCACHE, cache, tree)
    try:
        term.until(FIRST_ROWS, 0)
        run = OpenRun(first_screen=term.until(b"O-", term.output.find(FIRST_ROWS)))
        shown = len(term.output)
        checked = term.output.find(FIRST_ROWS)  # (a reopened brain's tags may come with its first screen)

        def tagged() -> bool:  # (in what was written since the last look, a few bytes back for a split tag)
            nonlocal checked
            found, checked = TAGGED.search(term.output, max(0, checked - 16)), len(term.output)
            return found is not None

        while time.perf_counter() - term.started < GIVE_UP_S:
            if tagged():
                return run.first_screen, time.perf_counter() - term.started - run.first_screen
            timed_key(term, run, shown)
            deadline = time.perf_counter() + KEY_GAP_S
            while time.perf_counter() < deadline:
                if tagged():
                    return run.first_screen, time.perf_counter() - term.started - run.first_screen
                term.read(0.01)
        raise TimeoutError("the tags never showed")
    finally:
        term.close()


def _scan_whole(db: Path, tree: Path | None, cache: Path) -> None:
    """A first open left until its scan's snapshot is saved in `cache` and the app has taken it (its
    status line no longer says "computing"), for the reopenings."""
    term: Terminal = start_app(db, PYCACHE, cache, tree)
    try:
        while not _snapshot_saved(cache) and time.perf_counter() - term.started < GIVE_UP_S:
            term.read(0.05)
        saved = len(term.output)
        while not protection_known(term.output, saved) and time.perf_counter() - term.started < GIVE_UP_S:
            term.read(0.05)
    finally:
        term.close()


def _snapshot_saved(cache: Path) -> bool:
    return any("first-look" not in p.name for p in cache.glob("cleo-tui/scan_snapshots/*.npz"))


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.first_tags", description=__doc__.split("\n\n")[0])
    add_tree_arguments(parser, 8, "cold opens")
    args = parser.parse_args(argv)
    named = trees(args)
    for db in args.db:
        results = {name: TagTimes() for name, _ in named}
        kept = {name: Path(tempfile.mkdtemp(prefix="cleo-tui-first-tags-kept-")) for name, _ in named}
        try:
            for name, tree in named:
                _scan_whole(db, tree, kept[name])  # (untimed: bytecode written, and the snapshot kept)
            for k in range(args.runs):
                for name, tree in named if k % 2 == 0 else named[::-1]:  # (neither tree always first)
                    cache = Path(tempfile.mkdtemp(prefix="cleo-tui-first-tags-"))
                    try:
                        first, tags = tags_after_first_screen(db, tree, cache)
                    finally:
                        shutil.rmtree(cache, ignore_errors=True)
                    results[name].first_screen.append(first)
                    results[name].tags.append(tags)
                    results[name].reopened_tags.append(tags_after_first_screen(db, tree, kept[name])[1])
        finally:
            for path in kept.values():
                shutil.rmtree(path, ignore_errors=True)
        print(f"\n{db} ({args.runs} cold opens and reopenings each, alternated; s, median (range))")
        print("| tree | first screen | tags on screen after it | reopened: tags after it (floor) | ratio |")
        print("|---|---|---|---|---|")
        for name, _ in named:
            t = results[name]
            ratio = statistics.median(t.tags) / statistics.median(t.reopened_tags)
            print(f"| {name} | {_spread(t.first_screen)} | {_spread(t.tags)} | {_spread(t.reopened_tags)} "
                  f"| {ratio:.1f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
