"""`cleo-tui info`, `cleo-tui init` and `cleo-tui demo`."""

from __future__ import annotations

import argparse
import sys
import time

from cleo_tui.brain import KIND_HIPPO, create_project_brain
from cleo_tui.brain.store import brains_left_behind
from cleo_tui.brain.summary import brain_summary
from cleo_tui.commands.argtypes import nonempty_path
from cleo_tui.commands.common import AddCommand, add_brain_options, brain_from_args, emit_json, int_option
from cleo_tui.commands.history_cmd import info_field, liveness_lines
from cleo_tui.demo import BATCH_ROWS as DEMO_BATCH_ROWS
from cleo_tui.demo import DEFAULT_OBSERVATIONS, DEFAULT_SEED, MAX_OBSERVATIONS, MIN_OBSERVATIONS, generate_demo
from cleo_tui.memory.liveness import brain_liveness
from cleo_tui.recall.recorded import count_cleo_retrievals
from cleo_tui.safe_text import one_line


def register(add: AddCommand) -> None:
    info = add("info", help="what brain is here and what it holds")
    add_brain_options(info, read_only_flag=False)
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=cmd_info)

    init = add("init", help="create an empty brain for a project (through CLEO when it is installed)",
               description="Create an empty brain for the project in DIR. When `cleo` is on PATH and DIR is a "
                           "git repository, CLEO sets the project up (`cleo init`) and cleo-tui opens its "
                           ".cleo/cleo.db; otherwise cleo-tui makes its own brain at .cleo-tui/brain.db, "
                           "where CLEO never looks.")
    init.add_argument("dir", nargs="?", default=".", metavar="DIR", type=nonempty_path("DIR", "a directory"),
                      help="project directory (default: .)")
    how = init.add_mutually_exclusive_group()
    how.add_argument("--with-cleo", dest="cleo", action="store_const", const="always", default="auto",
                     help="set the project up through CLEO, or fail")
    how.add_argument("--standalone", dest="cleo", action="store_const", const="never",
                     help="make cleo-tui's own brain even when CLEO is installed")
    init.set_defaults(func=cmd_init)

    demo = add("demo", help="write a realistic, deterministic demo brain to DIR/.cleo/cleo.db")
    demo.add_argument("dir", metavar="DIR", type=nonempty_path("DIR", "a directory"),
                      help="project directory for the demo brain")
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
        summary["recovered"] = list(brain.recovered)  # interrupted runs rolled back (or waiting to be)
        summary["stale_reason"] = brain.stale_reason  # committed changes it could not read, if any
        summary["cleo_retrievals"] = count_cleo_retrievals(brain)  # issue 27: CLEO's own brain_retrieval_log
        summary["left_behind"] = [str(p) for p in brains_left_behind(brain.path)]  # e.g. after `cleo init`
    finally:
        brain.close()
    if args.json:
        emit_json(summary)
    else:
        obs = summary["observations"]
        print(info_field("brain", one_line(summary["db"])))
        print(info_field("kind", summary["kind_label"]))
        if summary["kind"] == KIND_HIPPO:  # its memories and traces; no CLEO agents, patterns or marks
            print(info_field("memories", f"{obs['live']:,} live, {obs['evicted']:,} superseded"))
            print(info_field("traces", f"{summary['traces']:,}"))
            return 0
        print(info_field("observations", f"{obs['live']:,} live, {obs['evicted']:,} evicted"))
        print(info_field("patterns", f"{summary['patterns']:,}"))
        print(info_field("learnings", f"{summary['learnings']:,}"))
        print(info_field("traces", f"{summary['traces']:,}"))
        print(info_field("CLEO recalls", f"{summary['cleo_retrievals']:,} logged retrievals "
                                         "(cleo-tui traces --kind cleo)"))
        print(info_field("CLEO marks", f"{summary.get('at_risk', 0):,} at risk (its next consolidation deletes "
                                       f"them), {summary.get('hidden_from_cleo_search', 0):,} hidden from its search"))
        if summary["stale_reason"]:
            print(info_field("stale", one_line(summary["stale_reason"], 1000)))
        print("\n".join(liveness_lines(summary["liveness"])))
        for note in summary["recovered"]:
            print(info_field("recovered", one_line(note, 1000)))
        for other in summary["left_behind"]:
            print(info_field("left behind", f"{one_line(other)} (another brain of this project, not opened; "
                                            "--db opens it)"))
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    created = create_project_brain(args.dir, cleo=args.cleo)
    print(one_line(created.message, 1000))
    return 0


PROGRESS_EVERY = 50_000


def _stderr_progress(done: int, total: int) -> None:
    """A line on stderr each time another PROGRESS_EVERY observations are written."""
    if done == total or done % PROGRESS_EVERY < DEMO_BATCH_ROWS:
        print(f"demo: {done:,}/{total:,} observations", file=sys.stderr, flush=True)


def cmd_demo(args: argparse.Namespace) -> int:
    observations = int_option(args.observations, "--observations", MIN_OBSERVATIONS, MAX_OBSERVATIONS)
    seed = int_option(args.seed, "--seed", 0, 2**63 - 1)
    progress = _stderr_progress if observations >= PROGRESS_EVERY else None
    started = time.monotonic()
    path = generate_demo(args.dir, observations=observations, seed=seed, progress=progress)
    print(f"Wrote a demo brain with {observations:,} observations to {one_line(str(path))} "
          f"in {time.monotonic() - started:.1f} s. Open it with `cleo-tui {one_line(args.dir)}`.")
    return 0
