"""`cleo-tui info`, `cleo-tui init` and `cleo-tui demo`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from cleo_tui.brain import create_brain
from cleo_tui.brain.demo import (
    BATCH_ROWS as DEMO_BATCH_ROWS, DEFAULT_OBSERVATIONS, DEFAULT_SEED, MAX_OBSERVATIONS, MIN_OBSERVATIONS,
    generate_demo,
)
from cleo_tui.brain.summary import brain_summary
from cleo_tui.cli import UsageError, add_brain_options, brain_from_args, emit_json
from cleo_tui.commands.history_cmd import liveness_lines
from cleo_tui.memory.liveness import brain_liveness
from cleo_tui.safe_text import one_line


def register(sub: argparse._SubParsersAction) -> None:
    info = sub.add_parser("info", help="what brain is here and what it holds")
    add_brain_options(info, read_only_flag=False)
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=cmd_info)

    init = sub.add_parser("init", help="create an empty brain in CLEO's layout")
    init.add_argument("dir", nargs="?", default=".", metavar="DIR", help="project directory (default: .)")
    init.set_defaults(func=cmd_init)

    demo = sub.add_parser("demo", help="write a realistic, deterministic demo brain to DIR/.cleo/cleo.db")
    demo.add_argument("dir", metavar="DIR", help="project directory for the demo brain")
    demo.add_argument("--observations", metavar="N", default=str(DEFAULT_OBSERVATIONS),
                      help=f"how many observations (default: {DEFAULT_OBSERVATIONS}; "
                           f"{MIN_OBSERVATIONS}-{MAX_OBSERVATIONS})")
    demo.add_argument("--seed", metavar="S", default=str(DEFAULT_SEED),
                      help=f"random seed: the same seed gives the same brain (default: {DEFAULT_SEED})")
    demo.set_defaults(func=cmd_demo)


def cmd_info(args: argparse.Namespace) -> int:
    brain = brain_from_args(args, read_only=True)
    try:
        summary = brain_summary(brain)
        summary["liveness"] = brain_liveness(brain).to_dict()  # issue 17: are the agents alive?
    finally:
        brain.close()
    if args.json:
        emit_json(summary)
    else:
        obs = summary["observations"]
        print(f"brain:        {one_line(summary['db'])}")
        print(f"kind:         {summary['kind_label']}")
        print(f"observations: {obs['live']} live, {obs['evicted']} evicted")
        print(f"patterns:     {summary['patterns']}")
        print(f"learnings:    {summary['learnings']}")
        print(f"traces:       {summary['traces']}")
        print("\n".join(liveness_lines(summary["liveness"])))
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    path = Path(args.dir).expanduser() / ".cleo" / "cleo.db"
    if path.exists():
        raise UsageError(f"{path} already exists; nothing was changed. Open it with `cleo-tui {args.dir}`.")
    brain = create_brain(path)
    brain.close()
    print(f"Created an empty brain at {path}")
    return 0


def _int_option(value: str, flag: str, low: int, high: int) -> int:
    """A whole number within [low, high], or a UsageError naming the flag."""
    try:
        number = int(value.replace("_", ""))
    except ValueError:
        raise UsageError(f"{flag} wants a whole number, not {one_line(value, 40)!r}.") from None
    if not low <= number <= high:
        raise UsageError(f"{flag} must be between {low:,} and {high:,}; got {number:,}.")
    return number


PROGRESS_EVERY = 50_000


def _stderr_progress(done: int, total: int) -> None:
    """A line on stderr each time another PROGRESS_EVERY observations are written."""
    if done == total or done % PROGRESS_EVERY < DEMO_BATCH_ROWS:
        print(f"demo: {done:,}/{total:,} observations", file=sys.stderr, flush=True)


def cmd_demo(args: argparse.Namespace) -> int:
    observations = _int_option(args.observations, "--observations", MIN_OBSERVATIONS, MAX_OBSERVATIONS)
    seed = _int_option(args.seed, "--seed", 0, 2**63 - 1)
    progress = _stderr_progress if observations >= PROGRESS_EVERY else None
    started = time.monotonic()
    path = generate_demo(args.dir, observations=observations, seed=seed, progress=progress)
    print(f"Wrote a demo brain with {observations:,} observations to {one_line(str(path))} "
          f"in {time.monotonic() - started:.1f} s. Open it with `cleo-tui {one_line(args.dir)}`.")
    return 0
