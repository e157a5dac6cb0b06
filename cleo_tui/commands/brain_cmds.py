"""`cleo-tui info`, `cleo-tui init` and `cleo-tui demo`."""

from __future__ import annotations

import argparse
from pathlib import Path

from cleo_tui.brain import create_brain
from cleo_tui.brain.summary import brain_summary
from cleo_tui.cli import UsageError, add_brain_options, brain_from_args, emit_json
from cleo_tui.safe_text import one_line


def register(sub: argparse._SubParsersAction) -> None:
    info = sub.add_parser("info", help="what brain is here and what it holds")
    add_brain_options(info, read_only_flag=False)
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=cmd_info)

    init = sub.add_parser("init", help="create an empty brain in CLEO's layout")
    init.add_argument("dir", nargs="?", default=".", metavar="DIR", help="project directory (default: .)")
    init.set_defaults(func=cmd_init)


def cmd_info(args: argparse.Namespace) -> int:
    brain = brain_from_args(args, read_only=True)
    try:
        summary = brain_summary(brain)
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
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    path = Path(args.dir).expanduser() / ".cleo" / "cleo.db"
    if path.exists():
        raise UsageError(f"{path} already exists; nothing was changed. Open it with `cleo-tui {args.dir}`.")
    brain = create_brain(path)
    brain.close()
    print(f"Created an empty brain at {path}")
    return 0
