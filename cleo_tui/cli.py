"""The command line: `cleo-tui [PROJECT_DIR]` opens the TUI; subcommands script the rest.

Every subcommand lives in a module of `cleo_tui/commands/`, named in its COMMANDS
registry; only the module of the command being run is imported, so `--version`
and light commands never load the LLM clients or Textual. A user's mistake
(`BrainError`) prints one paragraph and exits 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sqlite3
import sys
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NoReturn

from cleo_tui import __version__, collector
from cleo_tui.brain import BrainError
from cleo_tui.commands import COMMANDS
from cleo_tui.commands.argtypes import nonempty_path
from cleo_tui.commands.common import (
    EXIT_INTERNAL,
    EXIT_USER_ERROR,
    CommandParser,
    UsageError,
    is_terminal,
    say_setting_problems,
)
from cleo_tui.commands.text_width import fitted_to_terminal, say_error
from cleo_tui.safe_text import one_line, safe_text

__all__ = ["EXIT_INTERNAL", "EXIT_USER_ERROR", "UsageError", "build_parser", "main", "run"]


def _modules(names: Iterable[str]) -> list[str]:
    """The command modules that define `names`, each once, in registry order."""
    wanted = set(names)
    return list(dict.fromkeys(module for name, module in COMMANDS.items() if name in wanted))


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The subcommand parser; with `commands`, only the modules defining them are imported."""
    parser = CommandParser(
        prog="cleo-tui",
        description="Inspect and curate an AI coding agent's long-term memory. "
                    "Without a subcommand, opens the terminal UI on the project's brain.",
    )
    parser.add_argument("--version", action="version", version=f"cleo-tui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    for module in _modules(COMMANDS if commands is None else commands):
        importlib.import_module(module).register(sub.add_parser)
    return parser


def tui_parser() -> argparse.ArgumentParser:
    parser = CommandParser(prog="cleo-tui", description="Open the terminal UI.")
    parser.add_argument("project", nargs="?", default=".", metavar="PROJECT_DIR",
                        type=nonempty_path("PROJECT_DIR", "a directory"),
                        help="project directory to look for a brain in (default: .)")
    parser.add_argument("--db", metavar="FILE", type=nonempty_path("--db", "a brain file"),
                        help="open this brain file directly")
    parser.add_argument("--read-only", action="store_true", help="open the brain read-only")
    parser.add_argument("--version", action="version", version=f"cleo-tui {__version__}")
    return parser


_SURROGATE = re.compile("[\udc80-\udcff]")
PATH_ARGUMENTS = frozenset({"db", "project", "dir", "export"})  # may hold any bytes (a file name on Linux)


def check_text_arguments(args: argparse.Namespace, argv: Sequence[str]) -> None:
    """Refuse an id, session, query ... that is not valid UTF-8 text (Python keeps the bytes as
    lone surrogates, which SQLite cannot take): one paragraph naming the argument. Paths may hold
    any bytes and are let through."""
    for name, given in vars(args).items():
        values = given if isinstance(given, list) else [given]  # (a list: the ids `evict ID…` names)
        value = next((v for v in values if isinstance(v, str) and _SURROGATE.search(v)), None)
        if name in PATH_ARGUMENTS or value is None:
            continue
        flag = "--" + name.replace("_", "-")
        label = flag if any(a == flag or a.startswith(flag + "=") for a in argv) else name.upper()
        raise UsageError(f"{label} is not valid UTF-8 text ('{shown_bytes(value)}'): cleo-tui stores and "
                         "looks up ids, sessions and queries as text. Check the terminal's or the script's "
                         "encoding.")


def shown_bytes(value: str) -> str:
    """An argument as one safe line, bytes that are not UTF-8 shown as \\xff."""
    return one_line(value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"), 60)


def unknown_command(word: str) -> UsageError:
    """`cleo-tui nosuch`: not a command, and no directory of that name; the commands listed."""
    import difflib  # (only for a mistyped command)

    close = difflib.get_close_matches(word, list(COMMANDS), n=1)
    hint = f" Did you mean `cleo-tui {close[0]}`?" if close else ""
    return UsageError(f"'{shown_bytes(word)}' is not a cleo-tui command, nor a directory here.{hint} The "
                      f"commands are: {', '.join(COMMANDS)} (`cleo-tui --help` says what each does). To open "
                      "the terminal UI on a project, give its directory (`cleo-tui ./DIR`).")


def looks_like_path(word: str) -> bool:
    """A word a user means as a path: it exists, or it has a path's shape (a separator, ~, a dot)."""
    return (os.path.lexists(word) or os.sep in word or (os.altsep or os.sep) in word
            or word.startswith(("~", ".")))


def require_terminal() -> None:
    """The TUI only on a terminal: on a pipe it would write escape codes into it and wait forever.

    `cleo-tui serve` runs each browser tab's app over pipes with Textual's web driver: that is its terminal.
    """
    if os.environ.get("TEXTUAL_DRIVER", "").endswith(":WebDriver"):
        return
    if not (is_terminal(sys.stdin) and is_terminal(sys.stdout)):
        which = "standard input" if not is_terminal(sys.stdin) else "standard output"
        raise UsageError(f"The terminal UI needs a terminal, and {which} is not one; nothing was opened. "
                         "Run it in a terminal, or use a command (`cleo-tui info`, `cleo-tui --help` lists "
                         "them) in scripts and pipes.")


def run_tui(args: argparse.Namespace) -> int:
    require_terminal()
    from cleo_tui.ui.first_brain import open_first_brain  # (before the app's modules: see there)

    first = open_first_brain(Path(args.project), Path(args.db) if args.db else None, args.read_only)
    from cleo_tui.ui.switching import frames_sooner
    frames_sooner()
    from cleo_tui.ui.app import run_app
    return run_app(first, args.read_only)


_end_at_once = False  # the command just run asked for its process to end at once (see `run`)


def command_first(argv: list[str]) -> list[str]:
    """`argv` with a command typed after the TUI's options moved first (`cleo-tui --db FILE info` is
    `cleo-tui info --db FILE`, as `git -C DIR status` reads); unchanged when the first word that is
    not an option is no command, or is a directory here (the TUI's project, as before)."""
    at = 0
    while at < len(argv) and argv[at].startswith("-") and argv[at] != "--":
        at += 2 if argv[at] == "--db" else 1  # (--db takes a value; --db=FILE and the flags do not)
    if 0 < at < len(argv) and argv[at] in COMMANDS and not os.path.isdir(argv[at]):
        return [argv[at], *argv[:at], *argv[at + 1:]]
    return argv


def dispatch(argv: list[str]) -> int:
    """Run the subcommand `argv` names, or the TUI when it names none."""
    global _end_at_once
    argv = command_first(argv)
    if argv and argv[0] in COMMANDS:
        args, extra = build_parser([argv[0]]).parse_known_args(argv)
        if extra and isinstance(getattr(args, "ids", None), list) and not any(e.startswith("-") for e in extra):
            args.ids += extra  # ids on both sides of an option (`evict O-1 --db F O-2`): argparse took one run
            extra = []
        if extra:  # (said for the command: its --help has the options, not cleo-tui's)
            raise UsageError(f"{argv[0]}: unrecognized arguments: {' '.join(map(shown_bytes, extra))}. "
                             f"Run `cleo-tui {argv[0]} --help` for the options.")
        check_text_arguments(args, argv)
        say_setting_problems()
        # A command builds its pool once and exits: its objects live to the end, and collections
        # would only walk them (0.2-0.5 s at a million rows; `skip_young_on_leave`).
        with collector.paused(), fitted_to_terminal(stdout=not getattr(args, "json", False), stderr=True):
            collector.skip_young_on_leave()
            code = int(args.func(args) or 0)
        _end_at_once = bool(getattr(args, "end_at_once", False))
        return code
    if argv and argv[0] in ("-h", "--help"):
        build_parser().parse_args(argv)
        return 0
    args = tui_parser().parse_args(argv)
    if not looks_like_path(args.project):
        raise unknown_command(args.project)
    return run_tui(args)


def run() -> NoReturn:
    """The console script's and `python -m cleo_tui`'s entry: `main`, then the end of the process.

    After a command that asks for it (`end_at_once` among its parser's defaults), and when no other
    thread runs, the process ends at once (`os._exit`) once its output is flushed: the interpreter's
    teardown would walk every object the command made in a last collection and free them one by one,
    which the kernel does at once (`dedup` at 100,000 demo rows: 0.2 s of CPU, with the scan it
    leaves unfreed, `dedup_cmd`, 0.4 s)."""
    code = main()
    if _end_at_once and threading.active_count() == 1:
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:  # (None: closed before the start)
                    stream.flush()
            except (OSError, ValueError):
                pass  # (a closed pipe: what normal exit would have done with it, silently)
        os._exit(code)
    raise SystemExit(code)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return dispatch(list(sys.argv[1:] if argv is None else argv))
    except BrainError as exc:
        say_error(f"cleo-tui: {safe_text(exc, 4000)}")
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("cleo-tui: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug, not the user's mistake: short message, details on request
        if isinstance(exc, sqlite3.DatabaseError) and ("malformed" in str(exc) or "not a database" in str(exc)):
            say_error(f"cleo-tui: the brain file is damaged ({safe_text(exc)}): SQLite cannot read part of it. "
                      "Nothing was written. Check it with `sqlite3 FILE 'PRAGMA integrity_check'`, or restore it "
                      "from a backup.")
            return EXIT_USER_ERROR
        if os.environ.get("CLEO_TUI_DEBUG"):
            import traceback

            traceback.print_exc()
        say_error(f"cleo-tui: internal error: {type(exc).__name__}: {safe_text(exc)}. "
                  "Run again with CLEO_TUI_DEBUG=1 for details.")
        return EXIT_INTERNAL
