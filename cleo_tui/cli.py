"""The command line: `cleo-tui [PROJECT_DIR]` opens the TUI; subcommands script the rest.

Every subcommand lives in `cleo_tui/commands/` and registers itself here. A
user's mistake (`BrainError`) prints one paragraph and exits 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import traceback
from pathlib import Path
from typing import Any, Sequence

from cleo_tui import __version__
from cleo_tui.brain import Brain, BrainError, locate_brain, open_brain

EXIT_USER_ERROR = 2
EXIT_INTERNAL = 70


class UsageError(BrainError):
    """A bad flag value or combination."""


def add_brain_options(parser: argparse.ArgumentParser, read_only_flag: bool = True) -> None:
    """`--db FILE` and `--project DIR` (default: the current directory)."""
    parser.add_argument("--db", metavar="FILE", help="open this brain file directly")
    parser.add_argument("--project", metavar="DIR", default=".",
                        help="look for .cleo/cleo.db or .cleo/brain.db here and above (default: .)")
    if read_only_flag:
        parser.add_argument("--read-only", action="store_true", help="open the brain read-only")


def brain_from_args(args: argparse.Namespace, read_only: bool | None = None) -> Brain:
    """Open the brain the flags name; `read_only` overrides the --read-only flag."""
    path = Path(args.db) if args.db else locate_brain(args.project)
    if read_only is None:
        read_only = bool(getattr(args, "read_only", False))
    return open_brain(path, read_only=read_only)


def emit_json(value: Any) -> None:
    """Print `value` as JSON; non-ASCII escaped so no control byte reaches a terminal."""
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=True, default=str) + "\n")


def _subcommand_modules() -> list:
    from cleo_tui.commands import brain_cmds, history_cmd, llm_cmds, prune_cmd, recall_cmds
    return [brain_cmds, prune_cmd, llm_cmds, recall_cmds, history_cmd]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cleo-tui",
        description="Inspect and curate an AI coding agent's long-term memory. "
                    "Without a subcommand, opens the terminal UI on the project's brain.",
    )
    parser.add_argument("--version", action="version", version=f"cleo-tui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _subcommand_modules():
        module.register(sub)
    return parser


def tui_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cleo-tui", description="Open the terminal UI.")
    parser.add_argument("project", nargs="?", default=".", metavar="PROJECT_DIR",
                        help="project directory to look for a brain in (default: .)")
    parser.add_argument("--db", metavar="FILE", help="open this brain file directly")
    parser.add_argument("--read-only", action="store_true", help="open the brain read-only")
    parser.add_argument("--version", action="version", version=f"cleo-tui {__version__}")
    return parser


def run_tui(args: argparse.Namespace) -> int:
    from cleo_tui.ui.app import run_app
    return run_app(project=Path(args.project), db=Path(args.db) if args.db else None,
                   read_only=args.read_only)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()
        commands = set(parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
        if argv and (argv[0] in commands or argv[0] in ("-h", "--help")):
            args = parser.parse_args(argv)
            return int(args.func(args) or 0)
        return run_tui(tui_parser().parse_args(argv))
    except BrainError as exc:
        print(f"cleo-tui: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("cleo-tui: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug, not the user's mistake: short message, details on request
        if isinstance(exc, sqlite3.DatabaseError) and ("malformed" in str(exc) or "not a database" in str(exc)):
            print(f"cleo-tui: the brain file is damaged ({exc}): SQLite cannot read part of it. Nothing "
                  "was written. Check it with `sqlite3 FILE 'PRAGMA integrity_check'`, or restore it from a "
                  "backup.", file=sys.stderr)
            return EXIT_USER_ERROR
        if os.environ.get("CLEO_TUI_DEBUG"):
            traceback.print_exc()
        print(f"cleo-tui: internal error: {type(exc).__name__}: {exc}. "
              "Run again with CLEO_TUI_DEBUG=1 for details.", file=sys.stderr)
        return EXIT_INTERNAL
